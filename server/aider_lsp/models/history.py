"""What undo and the history know of past runs and edits: what a run changed, what an undo
restored or left alone (and why), and one line of the history.
"""

from __future__ import annotations

from enum import StrEnum

from pydantic import BaseModel, ConfigDict


class SkipReason(StrEnum):
    """Why an undo left a file alone."""

    UNSAVED = "unsaved"  # open in the editor with unsaved changes
    CHANGED_SINCE = "changed_since"  # changed since the edit: the user's later work
    UNWRITABLE = "unwritable"  # an OS error or a path no longer allowed


class SkippedFile(BaseModel):
    """A file an undo did not restore, and why (`reason` is the sentence a user reads)."""

    model_config = ConfigDict(frozen=True)

    path: str
    reason: str
    kind: SkipReason = SkipReason.UNWRITABLE  # what a client decides on; never parse `reason`
    # where the run's change and a later one overlap: 1-based (first, last) lines of the file now
    lines: tuple[tuple[int, int], ...] = ()


class RestoreReport(BaseModel):
    """What an undo did with a checkpoint (`checkpoint` None: there was nothing to undo)."""

    model_config = ConfigDict(frozen=True)

    checkpoint: str | None = None
    label: str = ""
    restored: tuple[str, ...] = ()
    deleted: tuple[str, ...] = ()
    skipped: tuple[SkippedFile, ...] = ()

    @property
    def touched(self) -> list[str]:
        """Files put back or removed."""
        return [*self.restored, *self.deleted]


class RunChanges(BaseModel):
    """What a workflow run changed, against the files before the run: the files it changed and
    created, their diff (the edits' git-style format, aider_mcp/snapshots.py) and the checkpoint that
    undoes them (None: nothing to undo)."""

    model_config = ConfigDict(frozen=True)

    changed_files: tuple[str, ...] = ()
    created_files: tuple[str, ...] = ()
    diff: str = ""
    checkpoint_id: str | None = None


class RunRecord(BaseModel):
    """One run or edit of the history (`aider-lsp history`, `aider-lsp.history.list`): its id
    for undo, when, what was asked, how it ended, what it changed and spent."""

    model_config = ConfigDict(frozen=True)

    id: str
    created: float
    kind: str  # "workflow" or "edit"
    label: str
    goal: str | None = None  # a workflow run's whole goal (the label may be cut); None for edits
    status: str | None = None  # SUCCESS / FAILURE / COMPLETE / FAILED, as the run ended
    iterations: int | None = None
    files: tuple[str, ...] = ()
    spend: str | None = None  # what it spent, as the run's report says it
    duration_s: float | None = None
    undone: float | None = None


class RunFileDiff(BaseModel):
    """One file of a run as the diff editor shows it (`aider-lsp.history.diff`): its text before
    the run's first edit of it and after the run's last. A side is None where the file did not
    exist; `binary` files (not UTF-8 text) have no sides, only the name."""

    model_config = ConfigDict(frozen=True)

    path: str
    before: str | None = None
    after: str | None = None
    existed_before: bool
    exists_after: bool
    binary: bool = False


class RunDiff(BaseModel):
    """What a run of the history changed, file by file (`aider-lsp.history.diff`)."""

    model_config = ConfigDict(frozen=True)

    run: RunRecord
    files: tuple[RunFileDiff, ...] = ()
