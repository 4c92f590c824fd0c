"""A Workflow turn's steps shown as they happen: each Aider edit as an `edit` tool call
(pending on its files → completed with a diff a changed file, or failed), each test run as
an `execute` tool call (in progress → completed/failed with its output and the failures'
locations), the plan and each analysis as the agent's thoughts, Aider's reply of each edit as
message chunks while it is written.

Why a module of its own: the workflow reports typed events (models/events.py) from inside the
run; this turns each into its session/updates at once and remembers which tool calls are still
open, so a cancelled run closes them and the end of the turn repeats none of them. An isolated
run's edits are shown the same way, on the user's paths, their texts rebuilt (run_version.py).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..models import (
    AnalysisMade,
    EditFinished,
    EditStarted,
    PlanFailed,
    PlanMade,
    SuiteScope,
    TestRunFinished,
    TestRunStarted,
    WorkflowEvent,
)
from . import render
from .run_version import RunVersion
from .session import AcpSession

SCOPES = {
    SuiteScope.WHOLE: "the whole suite",
    SuiteScope.FAILING: "the tests that failed",
    SuiteScope.REST: "the rest of the suite",
}


@dataclass
class LiveRun:
    """The open tool calls of one Workflow turn."""

    session: AcpSession
    edit: str | None = None  # the open edit's call
    test: str | None = None  # the open test run's call
    wrote: bool = False  # some of Aider's reply was shown
    new_reply: bool = False  # an edit started since: its reply begins a new paragraph
    version: RunVersion | None = None  # an isolated run's files (None: the run edits the user's)

    def show(self, event: WorkflowEvent) -> None:
        """The event's updates, posted now (called by the run, in order)."""
        if isinstance(event, EditStarted):
            self._edit_started(event)
        elif isinstance(event, EditFinished):
            self._edit_finished(event)
        elif isinstance(event, TestRunStarted):
            self.test = self.session.next_call_id("test")
            self._post(render.test_run_started(self.test, event.command, _why(event), _which(event)))
        elif isinstance(event, TestRunFinished):
            self._test_finished(event)
        elif isinstance(event, AnalysisMade):
            self._post(render.thought(_analysis_text(event)))
        elif isinstance(event, PlanMade):
            self._post(render.thought(_plan_text(event)))
        elif isinstance(event, PlanFailed):
            self._post(render.thought(f"No plan was made: {event.reason}.\n\n"))

    def reply(self, text: str) -> None:
        """Aider's reply of the running edit, as it is written (a message chunk)."""
        if self.new_reply and self.wrote:
            text = "\n\n" + text.lstrip("\n")
        self.new_reply = False
        self.wrote = True
        self._post(render.message(text))

    def close_open(self, why: str) -> None:
        """Close every call still open as failed (the run was cancelled)."""
        if self.edit is not None:
            self._post(render.update_failed(self.edit, why))
            self.edit = None
        if self.test is not None:
            self._post(render.update_failed(self.test, why))
            self.test = None

    def _edit_started(self, event: EditStarted) -> None:
        self.edit = self.session.next_call_id("edit")
        self.new_reply = True
        self._post(
            render.run_edit_started(self.edit, event.iteration, event.files, self.session.app.workspace)
        )

    def _edit_finished(self, event: EditFinished) -> None:
        """The edit's call closed with this edit's own diff, a part a changed file (those
        Aider changed outside the files it was given too)."""
        failed = None
        if event.no_change:
            failed = f"Aider changed no file{f': {event.error}' if event.error else ''}"
        elif event.error is not None:
            failed = event.error
        call_id = self.edit or self.session.next_call_id("edit")
        parts = render.file_parts(event.diff)
        workspace = self.session.app.workspace
        sides = None
        if self.version is not None:  # every part laid on, even a failed edit's: the next ones follow
            sides = {rel: self.version.advance(part) for rel, part in parts.items()}
        self._post(
            render.run_edit_finished(call_id, event.iteration, parts, workspace, failed=failed, sides=sides)
        )
        self.edit = None

    def _test_finished(self, event: TestRunFinished) -> None:
        call_id = self.test or self.session.next_call_id("test")
        self._post(render.test_run_closed(call_id, event, self.session.app.workspace, _why(event)))
        self.test = None

    def _post(self, update: render.Update) -> None:
        self.session.outbox.post(update)


def _which(event: TestRunStarted) -> str:
    return "before the first edit" if event.before_edit else f"iteration {event.iteration}"


def _why(event: TestRunStarted | TestRunFinished) -> str:
    if event.before_edit:
        return "before the first edit: what fails now"
    return f"iteration {event.iteration}: {SCOPES[event.scope]}"


def _plan_text(event: PlanMade) -> str:
    plan = event.plan
    lines = [f"Plan: {plan.instructions.strip()}"]
    if plan.files:
        lines.append("Files: " + ", ".join(plan.files))
    if plan.test_command:
        lines.append(f"Tests: `{plan.test_command}`")
    return "\n".join(lines) + "\n\n"


def _analysis_text(event: AnalysisMade) -> str:
    analysis = event.analysis
    text = f"Analysis of iteration {event.iteration}: {analysis.verdict.value}. {analysis.message.strip()}"
    if event.overruled:
        text += f"\n(Not followed: {event.overruled}.)"
    return text + "\n\n"
