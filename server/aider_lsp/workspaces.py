"""The Applications alive in one server, one per workspace root, shared by both protocol front
ends (lsp/ for an editor's folders, acp/ for the sessions' working directories).

Why a pool: an Application holds an Aider server, an index and its child processes; a window
with ten folders or a client opening sessions in ten directories must not keep ten alive. At most
`limit` stay open; holding one more closes the least recently used that is not in use (a
request running in it), and the pool closes every one it drops and all of them at the end, each
within `close_seconds` (its children killed past it). Building an Application is the caller's
(each front end has its own settings and unsaved-files provider): the pool only holds, hands
out and closes.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections import OrderedDict
from collections.abc import Collection, Iterator
from pathlib import Path
from typing import Any, Generic, Protocol, TypeVar

log = logging.getLogger(__name__)

MAX_OPEN = 4  # Applications alive at once by default (as Settings.max_open_folders)
CLOSE_SECONDS = 10.0  # an Application may take this long to stop its Aider server and index


def not_a_project(root: Path) -> str | None:
    """Why `root` cannot be a workspace (the user's home folder, the file system root: indexed,
    its files offered to Aider, `.aider-lsp/` written there, never meant so), or None."""
    root = root.resolve()
    if root == Path(root.anchor):
        return f"the file system root ({root}) is not a project"
    if root == Path.home().resolve():
        return f"your home folder ({root}) is not a project"
    return None


class Closable(Protocol):
    """What the pool needs of an Application: its root, and how to stop it."""

    @property
    def workspace(self) -> Path: ...

    async def aclose(self) -> None: ...

    def kill_children(self) -> None: ...


AppT = TypeVar("AppT", bound=Closable)


class ApplicationPool(Generic[AppT]):
    """Alive Applications by workspace root, least recently used first."""

    def __init__(self, limit: int = MAX_OPEN, close_seconds: float = CLOSE_SECONDS) -> None:
        self.limit = max(1, limit)
        self.close_seconds = close_seconds
        self._apps: OrderedDict[Path, AppT] = OrderedDict()
        self._busy: dict[Path, int] = {}  # root → requests running in it
        self._closing: set[asyncio.Task[None]] = set()

    # -- what is alive -------------------------------------------------------------------------
    def alive(self, root: Path) -> AppT | None:
        """The root's Application without counting it as used (None: it has none now)."""
        return self._apps.get(root)

    def use(self, root: Path) -> AppT | None:
        """The root's Application, now the most recently used (None when it has none)."""
        app = self._apps.get(root)
        if app is not None:
            self._apps.move_to_end(root)
        return app

    def most_recent(self) -> Path | None:
        """The root used last (a request about no root in particular goes there)."""
        return next(reversed(self._apps), None)

    def roots(self) -> list[Path]:
        return list(self._apps)

    def values(self) -> list[AppT]:
        return list(self._apps.values())

    def items(self) -> list[tuple[Path, AppT]]:
        return list(self._apps.items())

    # -- holding and dropping ------------------------------------------------------------------
    def keep(self, root: Path, app: AppT) -> None:
        """Hold a new Application as the most recently used; beyond the limit, the least
        recently used idle ones are dropped (closed in the background)."""
        self._apps[root] = app
        self._apps.move_to_end(root)
        for candidate in list(self._apps):
            if len(self._apps) <= self.limit:
                break
            if candidate != root and not self._busy.get(candidate):
                log.info("closing %s: more than %d workspaces in use", candidate, self.limit)
                self._close_soon(self._apps.pop(candidate))

    def drop(self, root: Path) -> None:
        """Forget the root's Application and close it in the background (the folder left)."""
        app = self._apps.pop(root, None)
        if app is not None:
            self._close_soon(app)

    @contextlib.contextmanager
    def in_use(self, root: Path) -> Iterator[None]:
        """While a request runs in `root`, its Application is never the one dropped."""
        self._busy[root] = self._busy.get(root, 0) + 1
        try:
            yield
        finally:
            self._busy[root] = max(self._busy.get(root, 0) - 1, 0)

    async def aclose(self) -> None:
        """Close every Application (and those still closing), each within `close_seconds`."""
        apps = list(self._apps.values())
        self._apps.clear()
        await asyncio.gather(*self._closing, *(close_within(app, self.close_seconds) for app in apps))

    def _close_soon(self, app: AppT) -> None:
        task = asyncio.ensure_future(close_within(app, self.close_seconds))
        self._closing.add(task)
        task.add_done_callback(self._closing.discard)


async def close_within(app: Closable, seconds: float) -> None:
    """Close an Application within `seconds`, for real.

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
