"""Closing Applications at a front end's end, within a bound (the LSP server's and the ACP
agent's shutdown): a close that does not end in time kills the children instead of waiting."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Collection
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .app import Application

log = logging.getLogger(__name__)


async def close_within(app: Application, seconds: float) -> None:
    """Close an Application within `seconds`, for real (both front ends, at their end).

    Why not `asyncio.wait_for(app.aclose(), seconds)`: after its timeout it cancels the close
    and then waits, without bound, for the close to end, which a close busy in a shielded stop
    does not do at once. Here the close is waited for up to the bound, then cancelled and the
    children killed without waiting. Logged, never raised: the caller is exiting."""
    closing = asyncio.ensure_future(app.aclose())
    try:
        await asyncio.wait({closing}, timeout=seconds)
    except asyncio.CancelledError:
        closing.cancel()
        app.kill_children()
        raise
    if not closing.done():
        log.warning("closing %s took over %.0f s: its children are killed", app.workspace, seconds)
        closing.cancel()
        app.kill_children()
    elif not closing.cancelled() and (error := closing.exception()) is not None:
        log.warning("closing %s: %s", app.workspace, error)
        app.kill_children()


async def settle(tasks: Collection[asyncio.Task[Any]], seconds: float) -> None:
    """Wait up to `seconds` for cancelled requests to end (a workflow records its run as it
    does); those that do not are named in the log and left to the exit."""
    if not tasks:
        return
    _, pending = await asyncio.wait(set(tasks), timeout=seconds)
    for task in pending:
        log.warning("closing: %s did not end in time", task.get_name())
