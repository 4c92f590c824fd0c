"""What one Aider edit did (AiderEditOutcome, the one place it becomes a TaskResult), and
"Fix with Aider" on a failing test (the edit, then the failing tests again).
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from .commands import CommandRun
from .envelope import TaskError, TaskResult, TaskStatus, complete_result
from .usage import AiderCallUsage


class AiderEditOutcome(BaseModel):
    """What one Aider edit (`aider_ai_code` / `aider_chat`) did, as the bridge judged it from the
    files themselves, never from the server's `success` alone.

    The bridge fills the edit's fields; the executor makes the outcome of an edit it stopped
    before Aider ran, and adds what undo covers (checkpoint, files, fallback) to a new copy.
    `to_task_result()` is the one place it becomes the seeds' TaskResult; `server_success`
    None means no well-formed answer came (a failure with `error`).
    """

    model_config = ConfigDict(frozen=True)

    tool: str
    success: bool = False  # an editable file really changed and the server said so
    server_success: bool | None = None
    diff: str = ""
    changed_files: list[str] = Field(default_factory=list)
    created_files: list[str] = Field(default_factory=list)
    files_outside_editable: list[str] = Field(default_factory=list)  # as the server reported them
    conflicts: list[str] = Field(default_factory=list)  # saved by someone else during the edit
    reply: str = ""
    usage: AiderCallUsage | None = None  # None: not reported
    # the server's other keys, passed on as it sent them (session_id, turn, errors,
    # declined_files, refused_files, reverted_files)
    server_report: dict[str, Any] = Field(default_factory=dict)
    payload: dict[str, Any] | None = None  # the server's JSON answer (`parsedContent`)
    diagnostics: dict[str, Any] = Field(default_factory=dict)  # server_stderr, raw, server_result
    error: TaskError | None = None
    # why the executor stopped the edit before Aider ran (with `error`)
    refused: list[str] = Field(default_factory=list)  # secret or outside files: the reasons
    unsaved_files: list[str] = Field(default_factory=list)  # open with unsaved changes
    # added by the executor
    files: list[str] | None = None
    checkpoint_id: str | None = None
    not_covered_by_undo: list[str] = Field(default_factory=list)
    fallback: str | None = None

    @property
    def session_id(self) -> str | None:
        """The Aider chat this edit continued or started (`aider_chat` only)."""
        kept = self.server_report.get("session_id")
        return kept if isinstance(kept, str) and kept and self.fallback is None else None

    def to_task_result(self) -> TaskResult:
        """The seeds' TaskResult: FAILED with `notes.error` when `error` is set; a chat turn
        answers with its reply (and diff), an edit with its diff."""
        notes = self._notes()
        if self.error is not None:
            notes["error"] = self.error.model_dump(mode="json")
            return TaskResult(status=TaskStatus.FAILED, content=self.error.message, notes=notes)
        content = self.diff
        if self.tool == "aider_chat":
            content = self.reply + (f"\n\n{self.diff}" if self.diff else "")
        return complete_result(content, notes=notes, parsed=self.payload)

    def _notes(self) -> dict[str, Any]:
        """The wire's notes keys, in the order clients have always seen them."""
        notes: dict[str, Any] = dict(self.diagnostics)
        if self.refused:
            notes["refused"] = list(self.refused)
        if self.unsaved_files:
            notes["unsaved_files"] = list(self.unsaved_files)
        if self.server_success is not None:
            notes.update(
                tool=self.tool,
                success=self.success,
                server_success=self.server_success,
                diff=self.diff,
                changed_files=list(self.changed_files),
                files_outside_editable=list(self.files_outside_editable),
                created_files=list(self.created_files),
                reply=self.reply,
            )
            notes.update(self.server_report)
            if self.conflicts:
                notes["conflicts"] = list(self.conflicts)
            if self.usage is not None:
                notes["usage"] = self.usage.aider_wire()
        if self.fallback is not None:  # the server keeps no chats: no session to continue
            notes["session_id"] = None
            notes["fallback"] = self.fallback
        if self.not_covered_by_undo:
            notes["not_covered_by_undo"] = list(self.not_covered_by_undo)
        if self.checkpoint_id is not None:
            notes["checkpoint_id"] = self.checkpoint_id
        if self.files is not None:
            notes["files"] = list(self.files)
        return notes


class FixAndRetest(BaseModel):
    """ "Fix with Aider" on a failing test: the edit, then the tests that failed run again
    (None: the edit failed, or there was nothing to re-run)."""

    model_config = ConfigDict(frozen=True)

    edit: AiderEditOutcome
    retest: CommandRun | None = None
