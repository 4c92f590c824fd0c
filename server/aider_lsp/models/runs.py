"""A workflow run (plan → edit → test → analysis → retry) as typed values: the plan, the
analysis, each iteration's record, and the run's result with what it spent.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Self

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from .commands import Finding
from .envelope import ErrorReason, TaskError, TaskStatus
from .outcome import test_outcome
from .usage import AiderCallUsage, WorkflowUsage


class DevelopmentPlan(BaseModel):
    """What the planner hands to Aider: instructions, the files to edit, and how to test."""

    instructions: str = Field(min_length=1)
    files: list[str] = Field(default_factory=list)
    test_command: str | None = None
    # not the planner's: what the first edit implied (the goal on the index's files), recorded
    # when no plan was made (none was needed, or the planner failed: WorkflowResult.plan_problem)
    implied: bool = Field(default=False, exclude_if=lambda implied: not implied)

    @field_validator("files")
    @classmethod
    def _relative_paths(cls, files: list[str]) -> list[str]:
        for path in files:
            if path.startswith("/"):
                raise ValueError(f"{path} is an absolute path: files must be relative to the workspace")
            if not path or "\x00" in path:
                raise ValueError(f"files must be relative paths inside the workspace: {path!r}")
        return files


class Verdict(StrEnum):
    SUCCESS = "SUCCESS"
    RETRY = "RETRY"
    FAILURE = "FAILURE"


class CombinedAnalysisResult(BaseModel):
    """The analysis after a test run. RETRY must say what to try next."""

    verdict: Verdict
    message: str
    next_prompt: str | None = None
    next_files: list[str] | None = None

    @model_validator(mode="after")
    def _retry_needs_prompt(self) -> CombinedAnalysisResult:
        if self.verdict is Verdict.RETRY and not (self.next_prompt or "").strip():
            raise ValueError("a RETRY verdict requires next_prompt")
        return self


class WorkflowStatus(StrEnum):
    SUCCESS = "SUCCESS"
    FAILURE = "FAILURE"


class SuiteScope(StrEnum):
    """Which tests a run of the test command ran."""

    FAILING = "failing"  # only those that failed in the run before (failing tests first)
    REST = "rest"  # the suite without those, once they pass: with them, a whole suite's worth
    WHOLE = "whole"  # the whole suite: the run that decides


class SuiteRun(BaseModel):
    """One run of the test command in an iteration: which tests, why, and how it ended."""

    model_config = ConfigDict(frozen=True)

    scope: SuiteScope
    command: str
    why: str
    tests: list[str] = Field(default_factory=list)  # the narrowed run's test ids
    exit_code: int | None = None
    duration_s: float = 0.0


def _absent_when_none(value: object) -> bool:
    """Keys the wire has always left out when they have no value (not sent as null)."""
    return value is None


class EditSummary(BaseModel):
    """What a run's history keeps of one Aider edit (an iteration's `aider` on the wire): an
    edit that changed nothing is FAILED (a failed attempt, its `error` says why), with Aider's
    usage when its server reported it (None: not reported)."""

    model_config = ConfigDict(frozen=True)

    status: TaskStatus
    diff: str = ""
    changed_files: list[str] = Field(default_factory=list)
    created_files: list[str] = Field(default_factory=list)
    usage: AiderCallUsage | None = None
    error: TaskError | None = Field(default=None, exclude_if=_absent_when_none)
    session_id: str | None = Field(default=None, exclude_if=_absent_when_none)  # the run's Aider chat


class DecidingRun(BaseModel):
    """The test run that decided an iteration (an iteration's `test` on the wire): the last of
    its runs, with its output for the reader and the analysis."""

    model_config = ConfigDict(frozen=True)

    command: str
    scope: SuiteScope
    exit_code: int | None = None
    timed_out: bool = False
    duration_s: float = 0.0
    stdout: str = ""
    stderr: str = ""
    # the runner's own last word ("3 passed in 0.02s", "OK"): what a client shows, computed once
    summary: str = ""

    # how it ended in the one wording every screen shows (outcome.py), filled in when not given
    outcome: str = ""

    @model_validator(mode="after")
    def _worded(self) -> Self:
        if not self.outcome:
            object.__setattr__(
                self, "outcome", test_outcome(self.exit_code, timed_out=self.timed_out, summary=self.summary)
            )
        return self


class JudgeProblem(BaseModel):
    """Why passing tests did not make a run a success: the judge itself changed (suite/judge.py).
    `test_files` are the existing test files the run changed or deleted (what undo can take
    back on its own); `removed_tests` are "path::name" no longer defined; the counts are what
    the runner said it ran before the run and now (None: not known)."""

    model_config = ConfigDict(frozen=True)

    message: str
    test_files: list[str] = Field(default_factory=list)
    removed_tests: list[str] = Field(default_factory=list)
    tests_before: int | None = None
    tests_now: int | None = None


class WorkflowIteration(BaseModel):
    """One edit → test → analysis round, as the run's history records it (each step's outcome
    makes a new record: none is changed once made)."""

    model_config = ConfigDict(frozen=True)

    iteration: int
    prompt: str
    files: list[str]
    aider: EditSummary | None = None  # None only before its edit answered
    test: DecidingRun | None = None  # None: nothing to test (the edit changed no file)
    test_runs: list[SuiteRun] = Field(default_factory=list)  # every run, in order
    findings: list[Finding] = Field(default_factory=list)
    analysis: CombinedAnalysisResult | None = None
    # why the run did not follow the analysis's verdict (SUCCESS over a failing test)
    overruled: str | None = None
    # why its passing tests did not end the run: the edits changed the tests themselves
    judge: JudgeProblem | None = Field(default=None, exclude_if=_absent_when_none)
    # the notes the user added while the run was under way, which its edit's message carried
    notes: list[str] = Field(default_factory=list, exclude_if=lambda notes: not notes)


class WorkflowResult(BaseModel):
    """A run's outcome: the seed's shape plus the history and what it spent."""

    status: WorkflowStatus
    content: str
    reason: ErrorReason | None = None
    details: str | None = None
    plan: DevelopmentPlan | None = None
    final_aider_result: EditSummary | None = None
    analysis_result: CombinedAnalysisResult | None = None
    iterations: list[WorkflowIteration] = Field(default_factory=list)
    usage: WorkflowUsage = Field(default_factory=WorkflowUsage)
    # the run ended with the tests changed by its edits: what went, and what undo can take back
    judge: JudgeProblem | None = Field(default=None, exclude_if=_absent_when_none)
    # why the plan asked for (or needed) beside the first edit was not made (the tests passed)
    plan_problem: str | None = Field(default=None, exclude_if=_absent_when_none)
