"""JSON-RPC as the spec wants it, where pygls 2.1 falls short: every malformed request is answered.

- A request whose params do not decode is answered with InvalidParams naming the bad field
  (pygls drops it and the client waits forever); a malformed notification is logged.
- Decoding stops at the first bad value; only a pruned copy of a bad message (long lists cut)
  is decoded again to name the field, so a malformed message of hundreds of kilobytes costs
  milliseconds, not the tens of seconds cattrs and traceback formatting take on its thousands
  of errors, and the error stays short.
- A message that is not a JSON-RPC object is ignored with one log line.
- After `shutdown`, requests are refused with InvalidRequest; `exit` sets the spec's exit code.
- The `workDoneToken` of an executeCommand request is kept for the command (see `progress`).

Answering needs the base class's own `_send_response` (pygls has no public way to answer a
request it could not decode); that override is this module's job and no other module's.
"""

from __future__ import annotations

import logging
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

log = logging.getLogger(__name__)

MAX_LIST_ITEMS_DECODED_AGAIN = 20  # a bad message is re-decoded with its lists cut to this
MAX_PROBLEMS_SHOWN = 5
MAX_PROBLEM_CHARS = 1000


class _Answered:
    """A request already answered with an error while it was decoded: nothing left to do."""

    jsonrpc = None


ANSWERED = _Answered()


def _first_error_converter() -> Converter:
    """pygls's converter, stopping at the first bad value instead of collecting all of them."""
    converter = default_converter()
    converter.detailed_validation = False
    return converter


def _pruned(value: Any) -> Any:
    """A copy of a decoded JSON value with every list cut to its first items."""
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

    # -- decoding --------------------------------------------------------------------------
    def structure_message(self, data: Any) -> Any:
        if not (
            isinstance(data, dict)
            and "jsonrpc" in data
            and isinstance(data.get("method"), str)
            and "error" not in data
        ):
            return super().structure_message(data)  # answers to our requests, nested objects
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
            message = f"invalid params for {data['method']}: {self._problem(data, message_type, exc)}"
        if "id" not in data:
            raise JsonRpcInvalidParams(message) from None  # a notification: logged, no answer
        self._send_response(data["id"], error=JsonRpcInvalidParams(message).to_response_error())
        return ANSWERED

    def _problem(self, data: dict[str, Any], message_type: type, first: Exception) -> str:
        """What was wrong, with cattrs' paths (`$.params.command`), bounded in size and time."""
        try:
            self.detailed_converter.structure(_pruned(data), message_type)
        except Exception as exc:
            try:
                return _bounded(transform_error(exc, path="$"))
            except Exception:
                return _bounded([str(exc)])
        return _bounded([f"{type(first).__name__}: {first}"])  # the bad value was past the cut

    # -- dispatch --------------------------------------------------------------------------
    def handle_message(self, message: Any) -> None:
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
        super().handle_message(message)

    @lsp_method(types.WORKSPACE_EXECUTE_COMMAND)
    def lsp_workspace__execute_command(self, params: types.ExecuteCommandParams) -> Any:
        """pygls passes a command only its arguments: keep the client's progress token aside."""
        if params.command not in self.fm.commands:  # pygls would echo a huge name whole
            raise JsonRpcInvalidParams(f"Command name {params.command[:100]!r} is not defined")
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
