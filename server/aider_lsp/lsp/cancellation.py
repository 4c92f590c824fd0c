"""The one link to a pygls internal: `$/cancelRequest` reaches a command's own task.

pygls 2.1 answers `$/cancelRequest` by cancelling the future it keeps for the request in
`JsonRPCProtocol._request_futures` (message id → future) and offers no public hook for it. A
command that runs its work in a task of its own (or awaits long calls) would not notice: this
module adds a done-callback to that future, so the cancel reaches the command's task, and tells
a cancelled request (already answered by pygls) from a task cancelled for another reason.

The same table is what `shutdown` must empty: `cancel_pending_requests` cancels every request
still running, over a copy of the table (see its docstring for why pygls's own loop cannot).

tests/lsp/test_lsp_cancellation_shim.py fails when pygls renames or reshapes the table.
"""

from __future__ import annotations

import asyncio
from concurrent.futures import Future as ThreadFuture
from typing import Any

from pygls.protocol import JsonRPCProtocol

AnyFuture = asyncio.Future[Any] | ThreadFuture[Any]


def request_future(protocol: JsonRPCProtocol) -> AnyFuture | None:
    """The future pygls keeps for the request being handled (None outside a request)."""
    msg_id = protocol.msg_id
    if msg_id is None:
        return None
    return protocol._request_futures.get(msg_id)  # the private table this module exists for


def cancel_task_with_request(protocol: JsonRPCProtocol, task: asyncio.Task[Any]) -> None:
    """When the client cancels the current request, cancel `task` too."""
    outer = request_future(protocol)
    if outer is None:
        return

    def on_outer_done(future: AnyFuture) -> None:
        if future.cancelled() and not task.done():
            task.cancel()

    outer.add_done_callback(on_outer_done)


def request_cancelled(protocol: JsonRPCProtocol) -> bool:
    """Did the client cancel the current request? (pygls then has already answered it.)"""
    outer = request_future(protocol)
    return outer is None or outer.cancelled()


def cancel_pending_requests(protocol: JsonRPCProtocol) -> int:
    """Cancel every request still running but the current one (the `shutdown`); how many.

    Why not pygls's own loop (`lsp_shutdown`): it cancels while iterating the table, and
    cancelling an executeCommand's future runs its done-callbacks at once, one of which
    removes it from the table: "dictionary changed size during iteration", and the shutdown
    is answered with that error. Iterating a copy is safe. Each cancelled request is answered
    "cancelled" by pygls, and its command's task is cancelled (`cancel_task_with_request`).
    The server's own requests to the client (a `workspace/configuration`, a question) share the
    table, marked by an expected result type: they are left to their answer (a cancelled one
    makes the client's answer fail: "InvalidStateError: CANCELLED")."""
    current = protocol.msg_id
    own_task = asyncio.current_task()
    outgoing = protocol._result_types
    cancelled = 0
    for msg_id, future in list(protocol._request_futures.items()):
        if msg_id == current or msg_id in outgoing or future is own_task or future.done():
            continue
        if future.cancel():
            cancelled += 1
    return cancelled
