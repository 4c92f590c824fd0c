"""Every line from the client screened before the SDK reads it: the SDK parses a line as one
JSON-RPC object and its receive loop stops on anything else (a JSON array, an unhashable id),
which would end the connection. A line that is not a JSON-RPC object is answered with the
JSON-RPC error it deserves (parse error, invalid request) and logged on one line. A
notification this agent cannot take (an unknown method, params that do not fit) has no answer
to send: it is dropped with one line in the log, where the SDK would log a traceback.
A request for a method the schema has and the SDK does not route (`session/delete` in 0.12) is
answered here by the agent's own handler (`local`)."""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from acp.schema import CancelNotification
from pydantic import BaseModel, ValidationError

log = logging.getLogger(__name__)

PARSE_ERROR, INVALID_REQUEST = -32700, -32600
Answer = Callable[[dict[str, Any]], None]
LocalRequest = Callable[[dict[str, Any]], Awaitable[dict[str, Any]]]  # params → result
INVALID_PARAMS, INTERNAL_ERROR = -32602, -32603
NOTIFICATIONS: dict[str, type[BaseModel]] = {"session/cancel": CancelNotification}  # the ones we take
DROPPED = 0  # problem()'s code for a notification dropped unanswered


def problem(line: bytes) -> tuple[int, str, Any] | None:
    """Why a line is not a JSON-RPC message this agent can take: (code, message, id), or None."""
    try:
        message = json.loads(line)
    except (ValueError, RecursionError):
        return PARSE_ERROR, "Parse error: a line is not JSON", None
    if not isinstance(message, dict):
        return INVALID_REQUEST, "Invalid request: one JSON-RPC object per line (no batches)", None
    ident = message.get("id")
    if ident is not None and (isinstance(ident, bool) or not isinstance(ident, (str, int))):
        return INVALID_REQUEST, "Invalid request: the id must be a string or a number", None
    method = message.get("method")
    if method is not None and not isinstance(method, str):
        return INVALID_REQUEST, "Invalid request: the method must be a string", ident
    if method is None and "id" not in message:
        return INVALID_REQUEST, "Invalid request: neither a method nor an id", None
    if method is not None and "id" not in message:
        return _notification_problem(method, message.get("params"))
    return None


def _notification_problem(method: str, params: Any) -> tuple[int, str, Any] | None:
    """Why a notification cannot be taken (DROPPED, the reason, no id), or None."""
    model = NOTIFICATIONS.get(method)
    if model is None:
        return DROPPED, f"ignored the notification {method[:80]!r}: not one this agent takes", None
    try:
        model.model_validate(params)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(part) for part in first["loc"]) or "params"
        return DROPPED, f"ignored a malformed {method} notification: {where}: {first['msg']}", None
    return None


def screened(
    source: asyncio.StreamReader, answer: Answer, limit: int, local: dict[str, LocalRequest] | None = None
) -> tuple[asyncio.StreamReader, asyncio.Task[None]]:
    """A reader that holds only the source's well-formed lines, and the task that feeds it;
    requests for a method in `local` are answered by its handler instead."""
    target = asyncio.StreamReader(limit=limit)
    handlers = local or {}
    answering: set[asyncio.Task[None]] = set()

    async def pump() -> None:
        try:
            while line := await _next_line(source, answer):
                if not line.strip():
                    continue
                found = problem(line)
                request = _local_request(line, handlers) if found is None else None
                if request is not None:
                    task = asyncio.create_task(_answer_locally(*request, answer), name="acp-local-request")
                    answering.add(task)
                    task.add_done_callback(answering.discard)
                    continue
                if found is None:
                    target.feed_data(line if line.endswith(b"\n") else line + b"\n")
                    continue
                code, message, ident = found
                log.info("%s (%d bytes)", message, len(line))
                if code != DROPPED:
                    answer({"jsonrpc": "2.0", "id": ident, "error": {"code": code, "message": message}})
        finally:
            target.feed_eof()

    return target, asyncio.get_running_loop().create_task(pump(), name="acp-screen")


def _local_request(
    line: bytes, handlers: dict[str, LocalRequest]
) -> tuple[Any, LocalRequest, dict[str, Any]] | None:
    """(id, handler, params) of a well-formed request for a method in `handlers`, else None."""
    if not handlers:
        return None
    message = json.loads(line)
    handler = handlers.get(str(message.get("method")))
    if handler is None or "id" not in message:
        return None
    params = message.get("params")
    return message["id"], handler, params if isinstance(params, dict) else {}


async def _answer_locally(ident: Any, handler: LocalRequest, params: dict[str, Any], answer: Answer) -> None:
    """The handler's result, or its error as JSON-RPC says (a bad request: invalid params)."""
    from acp import RequestError

    reply: dict[str, Any] = {"jsonrpc": "2.0", "id": ident}
    try:
        reply["result"] = await handler(params)
    except RequestError as exc:
        reply["error"] = exc.to_error_obj()
    except ValidationError as exc:
        reply["error"] = {"code": INVALID_PARAMS, "message": f"Invalid params: {exc.errors()[0]['msg']}"}
    except Exception:  # a bug here is the log's, the client gets an answer all the same
        log.exception("answering a request")
        reply["error"] = {"code": INTERNAL_ERROR, "message": "Internal error (the agent's log says why)"}
    answer(reply)


async def _next_line(source: asyncio.StreamReader, answer: Answer) -> bytes:
    """The next line (b"" at the end); an over-long line is answered and skipped."""
    while True:
        try:
            return await source.readline()
        except ValueError:  # longer than the limit: the reader dropped it
            log.info("a message longer than the limit was dropped")
            answer(
                {
                    "jsonrpc": "2.0",
                    "id": None,
                    "error": {"code": INVALID_REQUEST, "message": "message too long"},
                }
            )
