"""What the caller of a request (the editor, the CLI, an ACP client) gives it: where progress
and findings go, how to ask the user, what is open; the services call these, never a front end.
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from dataclasses import dataclass, field

from .commands import Finding
from .events import EventCallback, WorkflowEvent
from .history import WorkflowRun
from .question import AskCallback

# Progress sink shared by long services: (message, percentage or None).
ProgressCallback = Callable[[str, int | None], None]
# Aider's reply as it is written: each call hands on the next piece of text (in order; joined,
# the pieces are the reply). Called on the event loop; it must not block.
ReplyCallback = Callable[[str], None]
# The editor's files with unsaved changes (workspace-relative), asked for at each edit.
UnsavedFiles = Callable[[], Collection[str]]

# Sink for a run's current findings: each call REPLACES the previous set (an empty list clears).
FindingsCallback = Callable[[list[Finding]], None]


def _no_progress(message: str, percentage: int | None) -> None:
    """Default progress sink: nothing to report to."""


def _no_findings(findings: list[Finding]) -> None:
    """Default findings sink: nobody shows them."""


def _nothing_to_clear() -> int:
    """Default findings clearer: nothing is shown, so no document is cleared."""
    return 0


def _no_events(event: WorkflowEvent) -> None:
    """Default event sink: nobody shows a run's steps one by one."""


def _no_cancelled_answer(run: WorkflowRun) -> None:
    """Default: a cancelled request is answered by its caller's generic "cancelled"."""


@dataclass
class RequestContext:
    """What the caller (the editor, the CLI) gives a request: where to report progress and
    findings (test failures, analysis; the LSP layer publishes them as diagnostics), how to
    clear every finding shown (returns how many documents it cleared), and the
    workspace-relative paths open in the editor (a ranking hint), and how to ask the user a
    question (None: this caller cannot ask, e.g. the CLI or a client without
    window/showMessageRequest). Unsaved buffers are not here: the Application asks its
    `unsaved_files` provider at each edit.
    `report_event` receives a workflow run's steps as they happen (models/events.py).
    `answer_cancelled` takes what a workflow run did before it was cancelled (its changed files,
    for the user to undo): the answer the caller sends when it still answers a cancelled request.
    `report_reply` shows Aider's reply as it is written (None: this caller shows it at the end)."""

    report_progress: ProgressCallback = _no_progress
    report_findings: FindingsCallback = _no_findings
    clear_findings: Callable[[], int] = _nothing_to_clear
    open_files: list[str] = field(default_factory=list)
    answer_cancelled: Callable[[WorkflowRun], None] = _no_cancelled_answer
    ask: AskCallback | None = None
    report_reply: ReplyCallback | None = None
    report_event: EventCallback = _no_events
