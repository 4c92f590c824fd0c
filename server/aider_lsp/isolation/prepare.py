"""A run's tree and the workspace opened on it, made when the run starts or taken from a spare.

Why a spare: an isolated run's first edit otherwise waits for everything an in-place run's
warm-up did long before: a new Aider server (its imports, seconds), its repository map's tags
for every file of a new tree (seconds more on a large repository). After an isolated run starts
(or at the warm-up, when the `isolation` setting says `worktree`), one more tree is made in the
background with its Aider server started; the next run brings it up to the user's files as they
are then (trees.sync_tree: only what changed is rewritten, so Aider's tags stay valid) and goes.
One spare at most, in git repositories only; it costs one idle Aider server's memory, and is
dropped when the settings change or the workspace closes. A spare has no record on disk: after
a crash its folder is a stray the next start removes.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import sqlite3
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from ..config.settings import Settings
from ..history.checkpoints import CheckpointStore
from ..models import RequestContext, TaskError, WorkflowRequest, WorkflowRun, WorkflowUsage
from .store import RunStore, new_run_id
from .trees import (
    BRANCH_PREFIX,
    IgnoredCheck,
    RunTree,
    TreeError,
    make_tree,
    remove_tree,
    repository_of,
    sync_tree,
    take_branch,
)

log = logging.getLogger(__name__)

CLOSE_WAIT_S = 10.0
SPARE_DELAY_S = 5.0  # after a run starts, before its spare's making competes with it


class RunWorkspace(Protocol):
    """What an isolated run needs of the workspace opened on its tree (an Application)."""

    @property
    def workspace(self) -> Path: ...

    @property
    def checkpoints(self) -> CheckpointStore: ...

    @property
    def settings(self) -> Settings: ...

    def update_settings(self, settings: Settings) -> None: ...

    def kill_children(self) -> None: ...

    async def start_aider(self) -> bool: ...

    async def index_workspace(self) -> object: ...

    async def run_workflow(self, request: WorkflowRequest, ctx: RequestContext) -> WorkflowRun: ...

    def spent(self) -> WorkflowUsage: ...

    def steer(self, run_id: str | None, note: str) -> TaskError | None: ...

    async def aclose(self) -> None: ...


OpenTree = Callable[[Path, Path | None], RunWorkspace]  # (the tree's workspace, a seeded index)
Closer = Callable[[RunWorkspace, float], Awaitable[None]]


@dataclass(frozen=True)
class Prepared:
    """A run's tree and the workspace on it, under the run's id."""

    run_id: str
    tree: RunTree
    workspace: RunWorkspace
    settings: Settings


class TreePreparer:
    """Makes runs' trees (and keeps one spare ready) for one workspace."""

    def __init__(
        self,
        workspace: Path,
        store: RunStore,
        settings: Callable[[], Settings],
        *,
        open_tree: OpenTree,
        close: Closer,
        index_path: Callable[[], Path],
        ignored: IgnoredCheck,
    ) -> None:
        self.workspace = workspace
        self.store = store
        self.settings = settings
        self.open_tree = open_tree
        self.close = close
        self.index_path = index_path
        self.ignored = ignored
        self._spare: asyncio.Task[Prepared | None] | None = None
        self._spare_begun = False  # its making began (before: a run makes its own tree instead)
        self._refreshing: set[asyncio.Future[object]] = set()

    async def take(self) -> Prepared:
        """A tree with the user's files as they are now: the spare brought up to date, else a
        new one (TreeError or OSError when git or the disk fails)."""
        spare = await self._take_spare()
        if spare is not None:
            try:
                await asyncio.to_thread(sync_tree, self.workspace, spare.tree)
                await asyncio.to_thread(take_branch, spare.tree)
                self._refresh(spare)
                return spare
            except (TreeError, OSError) as exc:
                log.info("the spare tree could not be brought up to date (%s): making a new one", exc)
                await self.drop(spare)
            except asyncio.CancelledError:
                await asyncio.shield(self.drop(spare))
                raise
        return await self._make(new_run_id())

    async def _make(self, run_id: str, *, spare: bool = False) -> Prepared:
        """A new tree and its workspace; what was made is removed when it fails or is cancelled
        (a spare's worktree on no branch until a run takes it)."""
        tree_path, index = self.store.tree_path(run_id), self.store.index_path(run_id)
        branch = BRANCH_PREFIX + run_id
        try:
            self.store.claim(run_id)
            tree = await asyncio.to_thread(
                make_tree, self.workspace, tree_path, branch, self.ignored, detached=spare
            )
            seeded = await asyncio.to_thread(copy_index, self.index_path(), index)
        except BaseException:
            await asyncio.shield(asyncio.to_thread(self._remove, run_id))
            raise
        settings = self.settings()
        return Prepared(run_id, tree, self.open_tree(tree.workspace, index if seeded else None), settings)

    def _remove(self, run_id: str) -> None:
        path = self.store.tree_path(run_id)
        remove_tree(self.workspace, RunTree(path, path, BRANCH_PREFIX + run_id))
        self.store.remove(run_id)

    async def _take_spare(self) -> Prepared | None:
        """The spare (waited for if still in the making: it started earlier), if its settings
        are still the ones in force."""
        task, self._spare = self._spare, None
        if task is None:
            return None
        if not task.done() and not self._spare_begun:  # still waiting its turn: not worth waiting for
            task.cancel()
            return None
        spare = await task
        if spare is not None and spare.settings is not self.settings():
            await self.drop(spare)
            return None
        return spare

    def _refresh(self, spare: Prepared) -> None:
        """Re-index what the sync changed, in the background (the run's first query does not
        wait: the spare's index already answers for every file that did not change)."""
        task = asyncio.ensure_future(_index_quietly(spare.workspace))
        self._refreshing.add(task)
        task.add_done_callback(self._refreshing.discard)

    def keep_spare(self, delay: float = SPARE_DELAY_S) -> None:
        """Make a spare in the background after `delay` seconds (one at most; git repositories
        only). Why the delay after a run starts: a spare's making (a worktree, a new Python and
        Aider's imports) would compete with that run's first edit for the machine."""
        if self._spare is None:
            self._spare_begun = False
            self._spare = asyncio.ensure_future(self._make_spare(delay))

    async def _make_spare(self, delay: float) -> Prepared | None:
        await asyncio.sleep(delay)
        self._spare_begun = True
        if await asyncio.to_thread(repository_of, self.workspace) is None:
            return None
        try:
            spare = await self._make(new_run_id(), spare=True)
        except (TreeError, OSError) as exc:
            log.info("no spare tree: %s", exc)
            return None
        try:
            await spare.workspace.start_aider()
            await spare.workspace.index_workspace()  # its tree's own times: a later pass reads what changed
        except BaseException:  # the workspace closed meanwhile (or the pass failed): nothing left
            await asyncio.shield(self.drop(spare))
            raise
        return spare

    async def drop(self, prepared: Prepared) -> None:
        """Close a tree's workspace and remove the tree (and its folder)."""
        await self.close(prepared.workspace, CLOSE_WAIT_S)
        await asyncio.to_thread(remove_tree, self.workspace, prepared.tree)
        self.store.remove(prepared.run_id)

    async def aclose(self) -> None:
        """The workspace closes: the spare (or its making) goes."""
        task, self._spare = self._spare, None
        if task is None:
            return
        if not task.done():
            task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            spare = await task
            if spare is not None:
                await self.drop(spare)


async def _index_quietly(workspace: RunWorkspace) -> object:
    """A background pass of a run's index; one that fails or is stopped (the run ended) is logged."""
    try:
        return await workspace.index_workspace()
    except Exception as exc:
        log.debug("a run's index pass ended early: %s", exc)
        return None


def copy_index(source: Path, dest: Path) -> bool:
    """The workspace's index copied for the run (its pass then re-reads only what differs):
    the first edit's files are found at once instead of after a whole first pass."""
    if not source.is_file():
        return False
    try:
        dest.parent.mkdir(parents=True, exist_ok=True)
        with (
            contextlib.closing(sqlite3.connect(f"file:{source}?mode=ro", uri=True)) as src,
            contextlib.closing(sqlite3.connect(dest)) as copy,
        ):
            src.backup(copy)
    except sqlite3.Error as exc:
        log.info("the run starts without a copy of the index: %s", exc)
        dest.unlink(missing_ok=True)
        return False
    return True
