"""What a workflow run does, step by step, as it happens: a plan made, an edit started and
finished, a test run started and finished, an analysis made, and where the run is (its phase,
how far, what it spent so far).

Why typed events: a front end that shows each step as its own item (ACP's tool calls with
diffs and test output) or the run's phase (the CLI's status line, ACP's plan) needs the data
when it happens, not a phrase to parse or the finished run's notes. The loop sends them through
`RequestContext.report_event`; a caller that shows nothing ignores them. The LSP's `$/progress`
shows a sentence: `WorkflowProgress.message` words it, here only.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field

from .commands import Finding
from .runs import CombinedAnalysisResult, DevelopmentPlan, SuiteScope
from .usage import WorkflowUsage

PROGRESS_SEPARATOR = " · spent "  # between a progress sentence's phase and the run's spend


class _Event(BaseModel):
    model_config = ConfigDict(frozen=True)


class PlanMade(_Event):
    """The planner's plan (beside the first edit, or before it when no file was known)."""

    kind: Literal["plan_made"] = "plan_made"
    plan: DevelopmentPlan


class PlanFailed(_Event):
    """The plan beside the first edit was not made (the planner's error) and the tests passed."""

    kind: Literal["plan_failed"] = "plan_failed"
    reason: str


class EditStarted(_Event):
    """An Aider edit is sent: the files given to it as editable."""

    kind: Literal["edit_started"] = "edit_started"
    iteration: int
    files: list[str]


class EditFinished(_Event):
    """The edit answered: its own diff (this edit's, not the run's), the files it changed or
    created, Aider's reply, or the error that stopped it (`no_change`: it changed nothing)."""

    kind: Literal["edit_finished"] = "edit_finished"
    iteration: int
    files: list[str]  # those it was given (as in EditStarted)
    diff: str = ""
    changed_files: list[str] = Field(default_factory=list)
    created_files: list[str] = Field(default_factory=list)
    reply: str = ""
    error: str | None = None
    no_change: bool = False


class TestRunStarted(_Event):
    """The test command starts: which command, and which tests (failing, rest, whole)."""

    __test__ = False  # not a pytest class
    kind: Literal["test_started"] = "test_started"
    iteration: int
    command: str
    scope: SuiteScope
    before_edit: bool = False  # the run before the first edit (what fails before any change)


class TestRunFinished(_Event):
    """The test run ended: its exit code (None: killed at the timeout or could not run), its
    output as kept (head and tail), and the failures it printed on file:line."""

    __test__ = False
    kind: Literal["test_finished"] = "test_finished"
    iteration: int
    command: str
    scope: SuiteScope
    before_edit: bool = False
    exit_code: int | None = None
    timed_out: bool = False
    stdout: str = ""
    stderr: str = ""
    error: str | None = None  # the command could not run
    stopped: str | None = None  # we stopped it before its end on purpose, and why: no failure
    findings: list[Finding] = Field(default_factory=list)

    @property
    def passed(self) -> bool:
        return self.error is None and self.exit_code == 0


class AnalysisMade(_Event):
    """The analysis of an iteration (the tests judge: `overruled` says when its SUCCESS was
    not followed)."""

    kind: Literal["analysis_made"] = "analysis_made"
    iteration: int
    analysis: CombinedAnalysisResult
    overruled: str | None = None


class WorkflowProgress(_Event):
    """Where the run is: its phase (`Iteration 2/3: running the whole suite`), how far it is
    (0-100) and what it spent so far (planning/analysis and Aider, apart and together)."""

    kind: Literal["progress"] = "progress"
    phase: str
    percentage: int
    usage: WorkflowUsage = Field(default_factory=WorkflowUsage)

    @property
    def message(self) -> str:
        """The progress as one sentence (the LSP's `$/progress`): the phase, and the spend once
        the run spent anything."""
        usage = self.usage
        if usage.planning.requests == 0 and usage.aider.calls == 0 and usage.aider.unreported == 0:
            return self.phase
        return f"{self.phase}{PROGRESS_SEPARATOR}{usage.describe()}"


WorkflowEvent = Annotated[
    PlanMade
    | PlanFailed
    | EditStarted
    | EditFinished
    | TestRunStarted
    | TestRunFinished
    | AnalysisMade
    | WorkflowProgress,
    Field(discriminator="kind"),
]
# Sink for a run's events, called in the order they happen (synchronously, from the loop).
EventCallback = Callable[[WorkflowEvent], None]
