"""Starting a child process whole, even when the caller is cancelled meanwhile.

Why: on CPython 3.11, a task cancelled while asyncio connects a new subprocess's pipes (the
`await` inside `subprocess_exec`) closes the transport, kills the direct child only, and then
waits for its exit, a wait that sometimes never ends (seen under load: the exit is reaped but
never reported). The cancelled run then hangs, and the child's own children (a test command
under its supervisor) keep running. So the start is shielded: it finishes (milliseconds), and
on a cancel meanwhile `undo` ends what it started the way a cancel of the running process
would; then the cancel goes on.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any, TypeVar

Started = TypeVar("Started")


async def start_whole(
    start: Coroutine[Any, Any, Started], undo: Callable[[Started], Awaitable[None]]
) -> Started:
    """`start`'s result; on a cancel while it runs, what it started is undone, then the cancel
    is raised (a start that failed has nothing to undo)."""
    starting = asyncio.ensure_future(start)
    try:
        return await asyncio.shield(starting)
    except asyncio.CancelledError:
        with contextlib.suppress(Exception):
            await undo(await starting)
        raise
