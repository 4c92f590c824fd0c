"""Waiting for a condition in a test: one helper instead of a polling loop per test.

Why: a fixed sleep is either too short on a loaded machine (a flaky test) or too long on a
quiet one (a slow suite); polling a condition with a deadline is neither. Await an event where
there is one; poll with these only where the thing watched has no event (a file, a process).

The deadline is a safety net, never the thing a test asserts: a passing test waits only as long as
the condition takes, so it is generous (CAP_SECONDS), for a machine under a load of 8-13 on 2
cores. Assert what happened (the process is gone, the answer came), not how fast.
"""

from __future__ import annotations

import asyncio
import inspect
import time
from collections.abc import Awaitable, Callable

POLL_SECONDS = 0.05
CAP_SECONDS = 60.0  # how long a condition may take before the test fails: a cap, not a timing


async def eventually(
    condition: Callable[[], object | Awaitable[object]], timeout: float = CAP_SECONDS
) -> bool:
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


def wait_until(condition: Callable[[], object], timeout: float = CAP_SECONDS) -> bool:
    """`eventually` for code outside an event loop (a thread, a synchronous test)."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(POLL_SECONDS)
    return True
