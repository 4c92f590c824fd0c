"""The one link to a pygls internal: `$/cancelRequest` reaches a command's own task.

pygls 2.1 answers `$/cancelRequest` by cancelling the future it keeps for the request in
`JsonRPCProtocol._request_futures` (message id → future) and offers no public hook for it. A
command that runs its work in a task of its own (or awaits long calls) would not notice: this
module adds a done-callback to that future, so the cancel reaches the command's task, and tells
a cancelled request (already answered by pygls) from a task cancelled for another reason.

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
