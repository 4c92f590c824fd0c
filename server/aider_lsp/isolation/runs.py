"""Isolated workflow runs of one workspace: each in a tree of its own, several at once, ready
when they end; the user applies, discards or keeps each one.

Why a workspace of its own per run (`open_tree`: an Application on the tree): Aider, the tests
and the index then work in the tree exactly as they work in place, with the run's own Aider
server (closed when the run ends) and checkpoint; nothing of the user's is written while it
runs. The test command is chosen (and confirmed) on the user's workspace first, so the user's
decision is asked once and kept where it belongs. The run's failing tests are kept on the run,
never reported as the user's files' problems. A cancelled run, or one that changed nothing,
leaves nothing behind. After a crash, the next start (`recover`) makes a run left running ready
when it had changed something, and removes it otherwise.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from ..config.settings import Settings
from ..guards.files import FileAccessManager
from ..history.checkpoints import CheckpointStore, FileSides, alive_elsewhere, run_record
from ..models import (
    DeclinedTestCommand,
    ErrorReason,
    Finding,
    IsolatedRun,
    IsolatedRunManifest,
    Isolation,
    RequestContext,
    RunAction,
    RunChanges,
    RunRecord,
    RunState,
    TaskError,
    UnsavedFiles,
    WorkflowRequest,
    WorkflowRun,
    WorkflowUsage,
)
from ..workflow.runs import PickTestCommand
from .apply import merge_onto_user_files, write_as_history_run
from .prepare import CLOSE_WAIT_S, Closer, OpenTree, Prepared, RunWorkspace, TreePreparer
from .store import RunStore, tree_name
from .trees import (
    BRANCH_PREFIX,
    IgnoredCheck,
    RunTree,
    TreeError,
    commit_all,
    orphan_worktrees,
    remove_tree,
)

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class AttemptOf:
    """A run as an attempt of a group (attempts.py): its group, and its settings tuned (its
    Aider model, its share of the group's budget) on the tree's Application before it runs."""

    group_id: str
    number: int
    aider_model: str | None
    tune: Callable[[Settings], Settings]


BUSY = "an Aider edit or a run in place is under way in this workspace; apply when it has ended"


class IsolatedRuns:
    """The isolated runs of one workspace: start, apply, discard, keep, list, recover."""

    def __init__(
        self,
        workspace: Path,
        settings: Callable[[], Settings],
        checkpoints: CheckpointStore,
        unsaved_files: UnsavedFiles,
        *,
        open_tree: OpenTree,
        close: Closer,
        index_path: Callable[[], Path],
        ignored: IgnoredCheck,
        busy: Callable[[], bool],
        pick_test_command: PickTestCommand,
        spares: bool = True,
    ) -> None:
        """`open_tree`, `close`, `index_path`, `ignored`: how the runs' trees are made, opened
        and closed (prepare.py TreePreparer, which keeps their records: `trees.store`); `spares`:
        keep a spare tree ready after a run starts (a server; not a one-shot run, whose
        spare's Aider start would compete with the run for the machine)."""
        store = RunStore(workspace, settings().history.max_runs)
        trees = TreePreparer(
            workspace,
            store,
            settings,
            open_tree=open_tree,
            close=close,
            index_path=index_path,
            ignored=ignored,
        )
        self.workspace = workspace
        self.spares = spares
        self.settings = settings
        self.checkpoints = checkpoints
        self.unsaved_files = unsaved_files
        self.busy = busy
        self.pick_test_command = pick_test_command
        self.trees = trees
        self.store = trees.store
        self.close = trees.close
        self._under_way: set[str] = set()
        self._trees_under_way: dict[str, RunWorkspace] = {}  # each run's tree, while it runs
        self.spent = WorkflowUsage()  # what the runs' trees spent, up to their end or cancel
        self.spent_by_run: dict[str, WorkflowUsage] = {}  # the same, run by run (a group's attempts)
        self._recovered = False

    @property
    def under_way(self) -> int:
        """Isolated runs of this process under way now."""
        return len(self._under_way)

    # -- a run -----------------------------------------------------------------------------------
    async def run(
        self, request: WorkflowRequest, ctx: RequestContext, *, attempt: AttemptOf | None = None
    ) -> WorkflowRun:
        """The run in a tree of its own: ready when it changed something (its change waits for
        the user), discarded otherwise; a cancel removes its tree, says so, then propagates.
        `attempt`: the run is an attempt of a group (its record names the group)."""
        self.recover()
        limit = self.settings().max_isolated_runs
        if len(self._under_way) >= limit:
            name = self.settings().name("maxIsolatedRuns")
            message = f"{limit} isolated run(s) are under way ({name}): wait for one to end, or cancel one"
            return WorkflowRun(refused=_error(message))
        choice = await self.pick_test_command(request.test_command, ctx)
        if isinstance(choice, DeclinedTestCommand):
            refused = TaskError(reason=ErrorReason.CONFIGURATION_ERROR, message=choice.message)
            return WorkflowRun(refused=refused, declined_test_command=choice)
        command = None if choice is None else choice.command
        inner = request.model_copy(
            update={"isolation": Isolation.NONE, "test_command": command, "attempts": 1}
        )
        try:
            prepared = await self.trees.take()
        except (TreeError, OSError) as exc:
            message = f"could not make the run's worktree: {exc}"
            return WorkflowRun(refused=TaskError(reason=ErrorReason.TOOL_EXECUTION_ERROR, message=message))
        manifest = self._started(request, prepared, attempt)
        self._under_way.add(manifest.record.id)
        if self.spares and len(self._under_way) < limit:
            self.trees.keep_spare()  # the next isolated run starts as quickly as this one
        if attempt is not None:
            prepared.workspace.update_settings(attempt.tune(prepared.workspace.settings))
        try:
            return await self._run_in_tree(manifest, prepared, inner, ctx)
        finally:
            self._under_way.discard(manifest.record.id)
            self._trees_under_way.pop(manifest.record.id, None)

    async def prepare(self) -> str:
        """Have a spare tree ready, so that the first isolated run starts quickly too (the
        warm-up's, when the `isolation` setting says `worktree`; an editor's, while the user
        types a goal for one). Says what it does."""
        self.recover()
        if not self.spares:
            return "No spare worktree is kept here: each isolated run makes its own."
        self.trees.keep_spare(delay=0.0)
        return "A worktree is being made ready for the next isolated run (git repositories only)."

    async def aclose(self) -> None:
        """The workspace closes: the spare tree goes (runs under way end with their requests)."""
        await self.trees.aclose()

    def _started(
        self, request: WorkflowRequest, prepared: Prepared, attempt: AttemptOf | None
    ) -> IsolatedRunManifest:
        record = RunRecord(
            id=prepared.run_id,
            created=time.time(),
            kind="workflow",
            label=request.goal[:200],
            goal=request.goal,
            state=RunState.RUNNING,
            isolation=Isolation.WORKTREE,
            branch=prepared.tree.branch,
            group_id=None if attempt is None else attempt.group_id,
            attempt=None if attempt is None else attempt.number,
            aider_model=None if attempt is None else attempt.aider_model,
        )
        tree = prepared.tree
        manifest = IsolatedRunManifest(
            record=record, top=str(tree.top), tree_workspace=str(tree.workspace), owner=os.getpid()
        )
        self.store.save(manifest)
        return manifest

    async def _run_in_tree(
        self, manifest: IsolatedRunManifest, prepared: Prepared, request: WorkflowRequest, ctx: RequestContext
    ) -> WorkflowRun:
        run_id, tree, workspace = prepared.run_id, prepared.tree, prepared.workspace
        self._trees_under_way[run_id] = workspace
        findings: list[Finding] = []
        inner_ctx = dataclasses.replace(
            ctx,
            report_findings=lambda found: _keep_findings(findings, found, tree.workspace),
            clear_findings=lambda: 0,
            answer_cancelled=lambda run: None,
        )
        try:
            run = await workspace.run_workflow(request, inner_ctx)
        except asyncio.CancelledError:
            self._spent(run_id, workspace.spent())  # what it spent up to the cancel
            try:
                await self.close(workspace, CLOSE_WAIT_S)
            finally:  # a second cancel during the close still removes the tree
                self._throw_away(manifest, tree, status="CANCELLED")
                discarded = IsolatedRun(run_id=run_id, state=RunState.DISCARDED)
                ctx.answer_cancelled(WorkflowRun(cancelled=True, isolated=discarded))
            raise
        self._spent(run_id, workspace.spent())
        await self.close(workspace, CLOSE_WAIT_S)  # its processes end before its tree may go
        return self._ended(manifest, tree, run, workspace.checkpoints, tuple(findings))

    def _spent(self, run_id: str, usage: WorkflowUsage) -> None:
        self.spent = self.spent.plus(usage)
        self.spent_by_run[run_id] = usage

    def _ended(
        self,
        manifest: IsolatedRunManifest,
        tree: RunTree,
        run: WorkflowRun,
        checkpoints: CheckpointStore,
        findings: tuple[Finding, ...],
    ) -> WorkflowRun:
        """Keep the run's change (ready) or remove its tree (it changed nothing, or never ran)."""
        run_id = manifest.record.id
        checkpoint = checkpoints.find(run.changes.checkpoint_id) if run.changes.checkpoint_id else None
        sides = checkpoints.changed_since(checkpoint) if checkpoint is not None else {}
        outcome = run.outcome
        if checkpoint is not None:
            manifest.record = run_record(checkpoint).model_copy(
                update={
                    "id": run_id,
                    "created": manifest.record.created,
                    "isolation": Isolation.WORKTREE,
                    "group_id": manifest.record.group_id,
                    "attempt": manifest.record.attempt,
                    "aider_model": manifest.record.aider_model,
                }
            )
        status = outcome.status.value if outcome is not None else "FAILED"
        iterations = len(outcome.iterations) if outcome is not None else None
        update = {"status": status, "iterations": iterations, "findings": findings, "branch": tree.branch}
        manifest.record = manifest.record.model_copy(update=update)
        if not sides:
            self._throw_away(manifest, tree, status=status)
            state = RunState.DISCARDED
        else:
            self.store.put_change(manifest, sides)
            self._end(manifest, RunState.READY, status=status)
            self.store.forget_tree_files(run_id)
            state = RunState.READY
        changes = RunChanges(
            changed_files=tuple(rel for rel, (before, _) in sides.items() if before is not None),
            created_files=tuple(rel for rel, (before, _) in sides.items() if before is None),
            diff=run.changes.diff if sides else "",
        )
        isolated = IsolatedRun(run_id=run_id, state=state, findings=findings)
        return run.model_copy(update={"changes": changes, "isolated": isolated})

    def _end(self, manifest: IsolatedRunManifest, state: RunState, *, status: str | None = None) -> None:
        update: dict[str, object] = {"state": state}
        if status is not None:
            update["status"] = status
        manifest.record = manifest.record.model_copy(update=update)
        manifest.owner = None
        self.store.save(manifest)

    def _throw_away(
        self, manifest: IsolatedRunManifest, tree: RunTree | None, *, status: str | None = None
    ) -> None:
        """Remove the run's tree and branch; the record stays, discarded."""
        remove_tree(self.workspace, tree or _tree_of(manifest))
        self.store.forget_tree_files(manifest.record.id)
        self._end(manifest, RunState.DISCARDED, status=status)
        self.store.prune()

    # -- the user's decision ---------------------------------------------------------------------
    def apply(self, run_id: str, *, force: bool = False) -> RunAction:
        """Lay a ready run's change on the user's files (apply.py): all or nothing unless forced."""
        manifest, refused = self._ready(run_id)
        if manifest is None:
            return refused
        if self.busy():
            return _refused(run_id, RunState.READY, BUSY)
        unsaved = self.checkpoints.relative_paths(self.unsaved_files())
        merged = merge_onto_user_files(self.checkpoints, self.store.change(manifest), unsaved, force=force)
        label = manifest.record.label
        if merged.skipped:
            return RunAction(run_id=run_id, state=RunState.READY, label=label, skipped=tuple(merged.skipped))
        written, deleted = write_as_history_run(self.checkpoints, manifest, merged)
        self._throw_away(manifest, None)
        self._end(manifest, RunState.APPLIED)
        return RunAction(
            run_id=run_id,
            state=RunState.APPLIED,
            label=label,
            written=tuple(written),
            deleted=tuple(deleted),
            checkpoint_id=run_id,
        )

    def discard(self, run_id: str) -> RunAction:
        """Throw a ready run away: its tree, branch and change are gone."""
        manifest, refused = self._ready(run_id)
        if manifest is None:
            return refused
        self._throw_away(manifest, None)
        return RunAction(run_id=run_id, state=RunState.DISCARDED, label=manifest.record.label)

    def keep(self, run_id: str) -> RunAction:
        """Commit a ready run to its branch (after a commit of the files it started from), and
        remove its worktree; the user's files are not touched."""
        manifest, refused = self._ready(run_id)
        if manifest is None:
            return refused
        tree = _tree_of(manifest)
        if not tree.git:
            message = "this workspace is not in a git repository: no branch to keep"
            return _refused(run_id, RunState.READY, message)
        try:
            commit = self._commit_run(manifest, tree)
        except (TreeError, OSError) as exc:
            return _refused(run_id, RunState.READY, f"could not commit the run to {tree.branch}: {exc}")
        remove_tree(self.workspace, tree, keep_branch=True)
        self._end(manifest, RunState.KEPT)
        self.store.prune()
        return RunAction(
            run_id=run_id, state=RunState.KEPT, label=manifest.record.label, branch=tree.branch, commit=commit
        )

    def _commit_run(self, manifest: IsolatedRunManifest, tree: RunTree) -> str | None:
        change = self.store.change(manifest)
        prefix = Path(manifest.tree_workspace)
        _write_side(prefix, {rel: base for rel, (base, _) in change.items()})
        commit_all(tree, f"aider-lsp: the files as they were when “{manifest.record.label}” started")
        _write_side(prefix, {rel: final for rel, (_, final) in change.items()})
        return commit_all(tree, f"aider-lsp: {manifest.record.label}")

    def _ready(self, run_id: str) -> tuple[IsolatedRunManifest, RunAction] | tuple[None, RunAction]:
        self.recover()
        manifest = self.store.load(run_id)
        if manifest is None:
            message = f"no isolated run {run_id!r} in this workspace (aider-lsp history lists them)"
            return None, _refused(run_id, RunState.DISCARDED, message)
        state = manifest.record.state
        if state is RunState.READY:
            return manifest, RunAction(run_id=run_id, state=state)
        if state is RunState.RUNNING:
            message = f"run {run_id!r} is still running: cancel it first, or wait for it to be ready"
        else:
            message = f"run {run_id!r} is {state.value}: only a ready run can be applied, discarded or kept"
        return None, _refused(run_id, state, message)

    def steer(self, run_id: str, note: str) -> bool:
        """A note for a run under way here (a group's id: each of its attempts under way): its
        next edit carries it. False: no such run is under way."""
        targets = [tree for rid, tree in self._trees_under_way.items() if rid == run_id]
        if not targets:
            members = {record.id for record in self.group_members(run_id)} if run_id else set()
            targets = [tree for rid, tree in self._trees_under_way.items() if rid in members]
        return sum(tree.steer(None, note) is None for tree in targets) > 0

    # -- a group's attempts ----------------------------------------------------------------------
    def mark_won(self, run_id: str) -> None:
        """The attempt the tests chose in its group (`apply GROUP_ID` applies it)."""
        manifest = self.store.load(run_id)
        if manifest is not None:
            manifest.record = manifest.record.model_copy(update={"won": True})
            self.store.save(manifest)

    def group_members(self, group_id: str) -> list[RunRecord]:
        return [record for record in self.records() if record.group_id == group_id]

    def group_of(self, run_id: str) -> str | None:
        manifest = self.store.load(run_id)
        return None if manifest is None else manifest.record.group_id

    # -- the history -----------------------------------------------------------------------------
    def records(self) -> list[RunRecord]:
        """The isolated runs the history lists beside the runs in place (`RunStore.listed`),
        those a dead process left recovered first."""
        self.recover()
        return self.store.listed()

    def diff_sides(self, run_id: str) -> tuple[RunRecord, FileSides] | None:
        """A ready run's files at its start and in its version (None: no ready run by that id)."""
        manifest = self.store.load(run_id)
        if manifest is None or manifest.record.state is not RunState.READY:
            return None
        return manifest.record, self.store.change(manifest)

    # -- after a crash -----------------------------------------------------------------------------
    def recover(self) -> None:
        """Once per process: runs a dead process left running become ready when they changed
        something (else are removed); folders and worktrees without a run are removed."""
        if self._recovered:
            return
        self._recovered = True
        known = set()
        for manifest in self.store.all():
            known.add(Path(manifest.top))
            left = manifest.record.state is RunState.RUNNING and not alive_elsewhere(manifest.owner)
            if left and manifest.record.id not in self._under_way:
                log.info("isolated run %s was left running by a stopped server", manifest.record.id)
                self._recover_one(manifest)
        for folder in self.store.strays():
            log.info("removing %s: a run's folder without its record", folder)
            tree = folder / tree_name(folder.name)
            remove_tree(self.workspace, RunTree(tree, tree, BRANCH_PREFIX + folder.name))
            self.store.remove(folder.name)
        strays = {folder / tree_name(folder.name) for folder in self.store.strays()}
        for path in orphan_worktrees(self.workspace, self.store.root):
            if path not in known and (path in strays or not path.parent.exists()):
                remove_tree(self.workspace, RunTree(path, path, BRANCH_PREFIX + path.parent.name))
        self.store.prune()

    def _recover_one(self, manifest: IsolatedRunManifest) -> None:
        tree = _tree_of(manifest)
        sides: FileSides = {}
        if tree.workspace.is_dir():
            store = CheckpointStore(FileAccessManager(tree.workspace, settings=self.settings))
            runs = [cp for cp in store.saved() if cp.label.startswith("workflow:")]
            if runs:
                sides = store.changed_since(runs[-1])
        note = "the server stopped during the run: its change so far"
        manifest.record = manifest.record.model_copy(update={"note": note, "files": tuple(sides)})
        if not sides:
            self._throw_away(manifest, tree, status="INTERRUPTED")
            return
        self.store.put_change(manifest, sides)
        self._end(manifest, RunState.READY, status="INTERRUPTED")


def _tree_of(manifest: IsolatedRunManifest) -> RunTree:
    return RunTree(Path(manifest.top), Path(manifest.tree_workspace), manifest.record.branch)


def _refused(run_id: str, state: RunState, message: str) -> RunAction:
    return RunAction(run_id=run_id, state=state, refused=_error(message))


def _error(message: str) -> TaskError:
    return TaskError(reason=ErrorReason.INPUT_VALIDATION_FAILURE, message=message)


def _keep_findings(kept: list[Finding], found: list[Finding], tree_workspace: Path) -> None:
    """The run's latest test failures, with paths relative to the workspace (not the tree)."""
    kept[:] = [_relative(finding, tree_workspace) for finding in found]


def _relative(finding: Finding, tree_workspace: Path) -> Finding:
    path = Path(finding.path)
    if path.is_absolute() and tree_workspace in path.parents:
        return finding.model_copy(update={"path": path.relative_to(tree_workspace).as_posix()})
    return finding


def _write_side(workspace: Path, contents: dict[str, bytes | None]) -> None:
    for rel, data in contents.items():
        real = workspace / rel
        if data is None:
            real.unlink(missing_ok=True)
        else:
            real.parent.mkdir(parents=True, exist_ok=True)
            real.write_bytes(data)
