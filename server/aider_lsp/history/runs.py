"""The run history as the user meets it: the runs listed, a run's diff, undo of any run.

Why apart from the checkpoint store (checkpoints.py, which records and reverts): here the
user's request is checked against the history (a run id that is not there, a file the run did
not change, an undo while an edit is under way) and each refusal worded with what to do. The
front ends call these through the Application.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from ..models import ErrorReason, RunDiff, RunRecord, TaskResult, UnsavedFiles, failed_result
from ..results import already_undone_result, run_diff_result, undo_result
from .checkpoints import CheckpointStore, FileSides, file_diff, newest_first, run_record

BUSY = "an Aider edit or workflow run is running: undo when it has finished (or cancel it first)"


class IsolatedHistory(Protocol):
    """The isolated runs the history lists beside the checkpoints (isolation/runs.py)."""

    def records(self) -> list[RunRecord]: ...

    def diff_sides(self, run_id: str) -> tuple[RunRecord, FileSides] | None: ...


class RunHistory:
    """List, diff and undo over one workspace's checkpoint store (and its isolated runs)."""

    def __init__(
        self,
        checkpoints: CheckpointStore,
        unsaved_files: UnsavedFiles,
        busy: Callable[[], bool],
        isolated: IsolatedHistory | None = None,
    ) -> None:
        """`unsaved_files`: the editor's modified buffers (undo never overwrites them);
        `busy`: whether an edit or a run is under way (undo would take back files being written);
        `isolated`: the runs in worktrees, running or ready, listed and diffed here too."""
        self.checkpoints = checkpoints
        self.unsaved_files = unsaved_files
        self.busy = busy
        self.isolated = isolated

    def runs(self) -> list[RunRecord]:
        """The runs and edits undo can take back, and the isolated runs not applied yet, newest
        first (the history's bound applies)."""
        isolated = self.isolated.records() if self.isolated is not None else []
        return newest_first([*map(run_record, self.checkpoints.saved()), *isolated])

    def undo(
        self, run_id: str | None = None, *, force: bool = False, files: list[str] | None = None
    ) -> TaskResult:
        """Undo a run or edit (`run_id`; default the last one not undone) as a revert: its own
        changes taken back from the files as they are now, every other change kept. Unsaved
        files, and files where a later change overlaps the run's, are left alone and named
        unless `force`. `files`: the run's change to those files only."""
        if self.busy():
            return failed_result(ErrorReason.INPUT_VALIDATION_FAILURE, BUSY)
        self.checkpoints.drop_interrupted()
        checkpoint = self.checkpoints.latest() if run_id is None else self.checkpoints.find(run_id)
        if checkpoint is None and run_id is None:
            return undo_result(self.checkpoints.revert())
        if checkpoint is None:
            return _no_such_run(run_id)
        if checkpoint.undone is not None:
            return already_undone_result(checkpoint.id, checkpoint.label, checkpoint.undone)
        if files is not None and (strangers := [path for path in files if path not in checkpoint.edited]):
            return failed_result(
                ErrorReason.INPUT_VALIDATION_FAILURE,
                f"run {checkpoint.id!r} did not change {', '.join(strangers)}; it changed "
                f"{', '.join(checkpoint.edited) or 'nothing undo can take back'}",
            )
        report = self.checkpoints.revert(checkpoint, skip=self.unsaved_files(), force=force, only=files)
        return undo_result(report)

    def diff(self, run_id: str, path: str | None = None) -> TaskResult:
        """What a run changed (one file, or all): each file's text before the run and after its
        last edit, from the run's own edit records (whatever happened to the files since)."""
        checkpoint = self.checkpoints.find(run_id)
        ready = self.isolated.diff_sides(run_id) if checkpoint is None and self.isolated is not None else None
        if ready is not None:
            return _diff(ready[0], ready[1], run_id, path)
        if checkpoint is None:
            return _no_such_run(run_id)
        return _diff(run_record(checkpoint), self.checkpoints.net_change(checkpoint), run_id, path)


def _diff(run: RunRecord, sides: FileSides, run_id: str, path: str | None) -> TaskResult:
    """The run's files (one, or all) before and after it, for the diff editor."""
    if not sides:
        return failed_result(
            ErrorReason.INPUT_VALIDATION_FAILURE,
            f"run {run_id!r} kept no per-file changes (an older aider-lsp recorded it): no diff to show",
        )
    if path is not None and path not in sides:
        return failed_result(
            ErrorReason.INPUT_VALIDATION_FAILURE,
            f"run {run_id!r} did not change {path!r}; it changed {', '.join(sides)}",
        )
    chosen = {path: sides[path]} if path is not None else sides
    files = tuple(file_diff(rel, before, after) for rel, (before, after) in chosen.items())
    return run_diff_result(RunDiff(run=run, files=files))


def _no_such_run(run_id: str | None) -> TaskResult:
    return failed_result(
        ErrorReason.INPUT_VALIDATION_FAILURE,
        f"no run {run_id!r} in this workspace's history (`aider-lsp history` lists them)",
    )
