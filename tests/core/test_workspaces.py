"""The pool of Applications both front ends share (workspaces.py): bounded, the least recently
used idle one closed first, a root in use never closed, every one closed at the end, and a close
bounded even when the Application ignores its cancel."""

from __future__ import annotations

import asyncio
from pathlib import Path

from aider_lsp.workspaces import ApplicationPool, close_within


class _App:
    """An Application as the pool sees it: it records whether it was closed."""

    def __init__(self, name: str) -> None:
        self.workspace = Path(name)
        self.closed = False
        self.killed = False

    async def aclose(self) -> None:
        self.closed = True

    def kill_children(self) -> None:
        self.killed = True


class _StubbornApp(_App):
    """A close that ignores a cancel and ends only when told: a stop that waits on a busy
    server inside a shield, as the Aider session's does."""

    def __init__(self) -> None:
        super().__init__("stubborn")
        self.release = asyncio.Event()

    async def aclose(self) -> None:
        while not self.release.is_set():
            try:
                await self.release.wait()
            except asyncio.CancelledError:
                continue  # swallowed, as a shielded wait does


def _keep(pool: ApplicationPool[_App], *names: str) -> dict[str, _App]:
    apps = {name: _App(name) for name in names}
    for name, app in apps.items():
        pool.keep(Path(name), app)
    return apps


async def test_beyond_the_limit_the_least_recently_used_is_closed() -> None:
    pool: ApplicationPool[_App] = ApplicationPool(limit=2)
    apps = _keep(pool, "a", "b")
    assert pool.use(Path("a")) is apps["a"]  # b is now the least recently used
    apps.update(_keep(pool, "c"))
    await asyncio.sleep(0.05)  # the close runs in the background
    assert pool.roots() == [Path("a"), Path("c")]
    assert apps["b"].closed and not apps["a"].closed and not apps["c"].closed
    assert pool.most_recent() == Path("c")


async def test_a_root_in_use_is_never_the_one_closed() -> None:
    pool: ApplicationPool[_App] = ApplicationPool(limit=2)
    apps = _keep(pool, "a", "b")
    with pool.in_use(Path("a")):
        apps.update(_keep(pool, "c"))
    await asyncio.sleep(0.05)  # the close runs in the background
    assert pool.roots() == [Path("a"), Path("c")]
    assert apps["b"].closed and not apps["a"].closed


async def test_a_dropped_root_closes_and_the_end_closes_every_one() -> None:
    pool: ApplicationPool[_App] = ApplicationPool(limit=4)
    apps = _keep(pool, "a", "b", "c")
    pool.drop(Path("b"))
    assert pool.alive(Path("b")) is None
    await pool.aclose()
    assert all(app.closed for app in apps.values())
    assert pool.values() == []


async def test_closing_is_bounded_even_when_the_close_ignores_the_cancel() -> None:
    app = _StubbornApp()
    closing = asyncio.ensure_future(close_within(app, 0.2))
    # a cap (not wait_for: it would wait on, as close did): the close ends only when released
    done, _ = await asyncio.wait({closing}, timeout=60)
    app.release.set()
    assert done, "closing did not end within its bound"
    assert app.killed, "the children of a close past its bound were not killed"
