"""JSON-RPC as the spec wants it, where pygls 2.1 falls short: every malformed request is answered.

- A request whose params do not decode is answered with InvalidParams naming the bad field
  (pygls drops it and the client waits forever); a malformed notification is logged.
- Decoding stops at the first bad value; only a pruned copy of a bad message (long lists cut)
  is decoded again to name the field, so a malformed message of hundreds of kilobytes costs
  milliseconds, not the tens of seconds cattrs and traceback formatting take on its thousands
  of errors, and the error stays short.
- A message whose params hold more than MAX_MESSAGE_ITEMS list items and fields is not decoded
  (counting them takes milliseconds, decoding them seconds; `screen_body` spares even the
  parsing of one made of many strings): a request is answered
  InvalidParams, a notification is logged, or its method's `oversized_handlers` entry runs.
- A message that is not a JSON-RPC object is ignored with one log line.
- `shutdown` cancels the requests still running first (pygls's own cancelling answers the
  shutdown with a RuntimeError when a command is running), then runs the server's handler.
- After `shutdown`, requests are refused with InvalidRequest; `exit` sets the spec's exit code.
- The `workDoneToken` of an executeCommand request is kept for the command (see `progress`).

Answering needs the base class's own `_send_response` (pygls has no public way to answer a
request it could not decode); that override is this module's job and no other module's.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Callable
from typing import Any

from cattrs import Converter, transform_error
from lsprotocol import types
from pygls.exceptions import JsonRpcInvalidParams, JsonRpcInvalidRequest
from pygls.protocol import (
    JsonRPCNotification,
    JsonRPCRequestMessage,
    LanguageServerProtocol,
    default_converter,
    lsp_method,
)

from .cancellation import cancel_pending_requests

log = logging.getLogger(__name__)

MAX_MESSAGE_ITEMS = 20_000  # list items + object fields in one message's params (~0.2 s to decode)
MAX_LIST_ITEMS_DECODED_AGAIN = 20  # a bad message is re-decoded with its lists cut to this
MAX_STRING_DECODED_AGAIN = 200  # … and its strings to this
MAX_PROBLEMS_SHOWN = 5
MAX_PROBLEM_CHARS = 1000


# notifications whose field pygls looks up in a dict (a list there: TypeError, traceback)
_LOOKED_UP = {
    types.CANCEL_REQUEST: "id",
    types.WINDOW_WORK_DONE_PROGRESS_CANCEL: "token",
    types.PROGRESS: "token",
}


def _is_id(value: Any) -> bool:
    """A JSON-RPC id or progress token: a number or a string (not a bool)."""
    return isinstance(value, (int, str)) and not isinstance(value, bool)


class _Answered:
    """A request already answered with an error while it was decoded: nothing left to do."""

    jsonrpc = None


ANSWERED = _Answered()


def _first_error_converter() -> Converter:
    """pygls's converter, stopping at the first bad value instead of collecting all of them."""
    converter = default_converter()
    converter.detailed_validation = False
    return converter


def exceeds(value: Any, limit: int) -> bool:
    """True when `value` holds more than `limit` list items and object fields in all, found
    without recursion and in at most `limit` steps (the decoded JSON is counted, not walked)."""
    count = 0
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, list):
            children: Any = item
        elif isinstance(item, dict):
            children = item.values()
        else:
            continue
        count += len(children)
        if count > limit:
            return True
        stack.extend(child for child in children if isinstance(child, (list, dict)))
    return False


SCREEN_BYTES = 256_000  # bodies larger than this are screened before json parses them
OVERSIZED = "aider-lsp/oversized"  # the params of a message the screen replaced
_HEAD_FIELD = re.compile(rb'"(method|id)"\s*:\s*("(?:[^"\\]{0,200})"|-?\d{1,18})')


def screen_body(body: bytes) -> bytes:
    """A message body as json should parse it: one with more strings than MAX_MESSAGE_ITEMS
    could hold is replaced, before parsing (which alone takes a second for 15 MB of small
    objects), by a small one keeping its method and id (the fields found before `params`)
    and OVERSIZED params, which `structure_message` refuses. Counting quotes takes
    milliseconds; a file's text (its quotes escaped) is never mistaken for many strings."""
    if len(body) <= SCREEN_BYTES:
        return body
    strings = (body.count(b'"') - body.count(b'\\"')) // 2
    if strings <= 2 * MAX_MESSAGE_ITEMS:  # every string is a field or a list item, or a key of one
        return body
    head = body[: body.find(b'"params"') if b'"params"' in body[:4096] else 0]
    fields = {name.decode(): json.loads(value) for name, value in _HEAD_FIELD.findall(head)}
    if not isinstance(fields.get("method"), str):
        log.warning(
            "ignored a client message of %d bytes: too large, and no method before its params", len(body)
        )
        return b"[]"  # not a JSON-RPC object: ignored with one log line
    replacement: dict[str, Any] = {"jsonrpc": "2.0", "method": fields["method"], "params": {OVERSIZED: True}}
    if "id" in fields:
        replacement["id"] = fields["id"]
    return json.dumps(replacement).encode()


_SURROGATE = re.compile("[\ud800-\udfff]")


def lone_surrogate_at(value: Any, path: str = "$.params") -> str | None:
    """Where a string holds a lone surrogate (`"\\ud800"` is valid JSON, but no text: it
    cannot be encoded, written or sent on), as a JSONPath, or None. Iterative; the message
    was counted first (MAX_MESSAGE_ITEMS), so this is bounded too."""
    stack: list[tuple[Any, str]] = [(value, path)]
    while stack:
        item, where = stack.pop()
        if isinstance(item, str):
            if _SURROGATE.search(item):
                return where
        elif isinstance(item, dict):
            for key, child in item.items():
                if isinstance(key, str) and _SURROGATE.search(key):
                    return where
                stack.append((child, f"{where}.{key}"))
        elif isinstance(item, list):
            stack.extend((child, f"{where}[{index}]") for index, child in enumerate(item))
    return None


def _pruned(value: Any) -> Any:
    """A copy of a decoded JSON value with every list cut to its first items, and every long
    string too (cattrs iterates a string given for a list, one error per character)."""
    if isinstance(value, str) and len(value) > MAX_STRING_DECODED_AGAIN:
        return value[:MAX_STRING_DECODED_AGAIN]
    if isinstance(value, list):
        return [_pruned(item) for item in value[:MAX_LIST_ITEMS_DECODED_AGAIN]]
    if isinstance(value, dict):
        return {key: _pruned(item) for key, item in value.items()}
    return value


def _bounded(problems: list[str]) -> str:
    shown = "; ".join(problems[:MAX_PROBLEMS_SHOWN])
    if len(problems) > MAX_PROBLEMS_SHOWN:
        shown += f"; and {len(problems) - MAX_PROBLEMS_SHOWN} more"
    return shown if len(shown) <= MAX_PROBLEM_CHARS else shown[:MAX_PROBLEM_CHARS] + "…"


class AiderProtocol(LanguageServerProtocol):
    """The server's protocol: pygls's, answering what pygls would leave unanswered."""

    def __init__(self, server: Any, converter: Converter) -> None:
        super().__init__(server, converter)
        self.detailed_converter = converter
        self.first_error_converter: Converter | None = None  # built after `initialize`
        self.work_done_tokens: dict[Any, types.ProgressToken] = {}  # request id → client's token
        self.shutdown_received = False
        self.exit_code = 0
        # method → what to do instead of decoding a message too large to decode (see `_oversized`)
        self.oversized_handlers: dict[str, Callable[[], None]] = {}

    # -- decoding --------------------------------------------------------------------------
    def structure_message(self, data: Any) -> Any:
        """Nothing: pygls hands this to json as its object_hook, so it sees every object of a
        message, nested ones first, and cannot tell a message from an object inside one (an
        argument with a "jsonrpc" key). Messages are decoded whole in `handle_message`."""
        return data

    def _decode(self, data: dict[str, Any]) -> Any:
        """A whole message decoded: a request, a notification, or an answer to our requests."""
        if "method" in data and "id" in data and not isinstance(data["id"], (int, str)):
            # the spec's ids are numbers or strings; answered with a null id, as the spec says
            # for a request whose id cannot be read (echoing an object back breaks clients)
            error = JsonRpcInvalidRequest(
                f"a request id must be a number or a string, not {data['id']!r:.100}"
            )
            self._send_response(None, error=error.to_response_error())  # type: ignore[arg-type]  # the spec's null id
            return ANSWERED
        if not ("jsonrpc" in data and isinstance(data.get("method"), str) and "error" not in data):
            return super().structure_message(data)  # answers to our requests
        params = data.get("params")
        if (isinstance(params, dict) and OVERSIZED in params) or exceeds(params, MAX_MESSAGE_ITEMS):
            return self._oversized(data)
        where = lone_surrogate_at(params)
        if where is not None:
            return self._refuse(data, f"{where} is not valid text (it holds a lone UTF-16 surrogate)")
        default = JsonRPCRequestMessage if "id" in data else JsonRPCNotification
        message_type = self.get_message_type(data["method"]) or default
        # `initialize` decodes with pygls's own converter: building the second one (~10 ms)
        # waits until after the initialize answer, off the start-up path
        if data["method"] == "initialize":
            converter = self.detailed_converter
        else:
            if self.first_error_converter is None:
                self.first_error_converter = _first_error_converter()
            converter = self.first_error_converter
        try:
            return converter.structure(data, message_type)
        except Exception as exc:
            problem = self._problem(data, message_type, exc)
        return self._refuse(data, problem)

    def _refuse(self, data: dict[str, Any], problem: str) -> Any:
        """InvalidParams: a request is answered with it, a notification's is logged."""
        message = f"invalid params for {data['method']}: {problem}"
        if "id" not in data:
            raise JsonRpcInvalidParams(message) from None  # a notification: logged, no answer
        self._send_response(data["id"], error=JsonRpcInvalidParams(message).to_response_error())
        return ANSWERED

    def _oversized(self, data: dict[str, Any]) -> Any:
        """A message too large to decode in good time is not decoded: its method's handler in
        `oversized_handlers` runs instead (e.g. thousands of watched-file events → one
        re-index), else a request is answered InvalidParams and a notification logged."""
        method = data["method"]
        handler = self.oversized_handlers.get(method)
        if handler is not None:
            log.info("%s: more than %d items; handled as a whole", method, MAX_MESSAGE_ITEMS)
            handler()
            return ANSWERED
        problem = f"more than {MAX_MESSAGE_ITEMS} items in one message; refused unread (send less at a time)"
        params = data.get("params")
        if not (isinstance(params, dict) and OVERSIZED in params):  # a bad value among the first?
            default = JsonRPCRequestMessage if "id" in data else JsonRPCNotification
            problem = self._pruned_problem(data, self.get_message_type(method) or default) or problem
        return self._refuse(data, problem)

    def _problem(self, data: dict[str, Any], message_type: type, first: Exception) -> str:
        """What was wrong, with cattrs' paths (`$.params.command`), bounded in size and time."""
        problem = self._pruned_problem(data, message_type)
        return problem or _bounded([f"{type(first).__name__}: {first}"])  # the bad value was past the cut

    def _pruned_problem(self, data: dict[str, Any], message_type: type) -> str | None:
        """What is wrong among the first items of each list (cattrs' paths), or None."""
        try:
            self.detailed_converter.structure(_pruned(data), message_type)
        except Exception as exc:
            try:
                return _bounded(transform_error(exc, path="$"))
            except Exception:
                return _bounded([str(exc)])
        return None

    # -- dispatch --------------------------------------------------------------------------
    def handle_message(self, message: Any) -> None:
        if isinstance(message, dict):
            message = self._decode(message)
        if message is ANSWERED:
            return
        if not hasattr(message, "jsonrpc"):  # e.g. a JSON array: not a JSON-RPC message at all
            log.warning("ignored a client message that is not a JSON-RPC object: %.200r", message)
            return
        method = getattr(message, "method", None)
        is_request = getattr(message, "id", None) is not None
        if method == "exit":
            self.exit_code = (
                0 if self.shutdown_received else 1
            )  # the spec's codes; pygls' sys.exit is swallowed
        if self.shutdown_received and method and is_request:
            # pygls drops requests after shutdown silently; the spec wants an InvalidRequest answer
            error = JsonRpcInvalidRequest(f"the server is shutting down: {method} refused")
            self._send_response(message.id, error=error.to_response_error())
            return
        if method == types.SHUTDOWN and is_request:
            self.shutdown_received = True
        key = _LOOKED_UP.get(method or "")
        if key is not None and not _is_id(getattr(message.params, key, None)):
            log.warning("ignored a %s whose %s is not a number or a string", method, key)
            return  # pygls would look it up in a dict: TypeError for a list
        super().handle_message(message)

    @lsp_method(types.SHUTDOWN)
    def lsp_shutdown(self, *args: Any) -> Any:
        """pygls's shutdown, its cancelling done first and over a copy of the request table
        (cancellation.cancel_pending_requests says why): the commands still running are
        cancelled (each stops its own children) before the server's handler closes the folders."""
        cancelled = cancel_pending_requests(self)
        if cancelled:
            log.info("shutdown: cancelled %d request(s) still running", cancelled)
        if (handler := self.fm.features.get(types.SHUTDOWN)) is not None:
            yield handler, args, None
        self._shutdown = True

    @lsp_method(types.WORKSPACE_EXECUTE_COMMAND)
    def lsp_workspace__execute_command(self, params: types.ExecuteCommandParams) -> Any:
        """pygls passes a command only its arguments: keep the client's progress token aside."""
        if params.command not in self.fm.commands:  # pygls would echo a huge name whole
            raise JsonRpcInvalidParams(f"Command name {params.command[:100]!r} is not defined")
        if params.work_done_token is not None and not _is_id(params.work_done_token):
            raise JsonRpcInvalidParams("workDoneToken must be a number or a string")
        msg_id = self.msg_id
        if msg_id is not None and params.work_done_token is not None:
            self.work_done_tokens[msg_id] = params.work_done_token
        try:
            return (yield from super().lsp_workspace__execute_command(params))
        finally:
            if msg_id is not None:
                self.work_done_tokens.pop(msg_id, None)

    def take_work_done_token(self) -> types.ProgressToken | None:
        """The `workDoneToken` of the executeCommand request being handled, if it had one."""
        msg_id = self.msg_id
        return self.work_done_tokens.pop(msg_id, None) if msg_id is not None else None
