"""Waiting for a condition in a test: one helper instead of a polling loop per test.

Why: a fixed sleep is either too short on a loaded machine (a flaky test) or too long on a
quiet one (a slow suite); polling a condition with a deadline is neither. Await an event where
there is one; poll with these only where the thing watched has no event (a file, a process).
"""

from __future__ import annotations

import asyncio
import inspect
import time
from collections.abc import Awaitable, Callable

POLL_SECONDS = 0.05


async def eventually(condition: Callable[[], object | Awaitable[object]], timeout: float = 5.0) -> bool:
    """Whether `condition` holds (is truthy) within `timeout` seconds, polled on the loop; a
    condition may be a coroutine function (asking the server, say)."""
    deadline = asyncio.get_running_loop().time() + timeout
    while not await _holds(condition):
        if asyncio.get_running_loop().time() > deadline:
            return False
        await asyncio.sleep(POLL_SECONDS)
    return True


async def _holds(condition: Callable[[], object | Awaitable[object]]) -> bool:
    value = condition()
    if inspect.isawaitable(value):
        value = await value
    return bool(value)


def wait_until(condition: Callable[[], object], timeout: float = 5.0) -> bool:
    """`eventually` for code outside an event loop (a thread, a synchronous test)."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(POLL_SECONDS)
    return True
