"""What the loop and its helpers share: an iteration as its steps fill it in, whether its edit
changed anything, how a run ends, and stopping a step that runs beside another.

Why a module of its own: the loop (orchestrator.py), the test choice, the plan beside the first
edit and the records all read the same iteration and end a run the same way; here none of
them imports another to get them.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any

from ..models import (
    AiderEditOutcome,
    CombinedAnalysisResult,
    CommandRun,
    ErrorReason,
    JudgeProblem,
    ModelAnswer,
    SuiteRun,
    WorkflowStatus,
)


@dataclass(frozen=True)
class Ending:
    """How a run ended, the one value its loop returns: SUCCESS, or FAILURE with the reason
    (`notes.error.reason`) and the step's own message in `details`."""

    status: WorkflowStatus
    message: str
    reason: ErrorReason | None = None
    details: str | None = None


def failure(reason: ErrorReason, message: str, details: str | None = None) -> Ending:
    return Ending(WorkflowStatus.FAILURE, message, reason, details)


def step_failed(answer: ModelAnswer[Any], what: str) -> Ending:
    """A step the model could not answer (the plan, the analysis) ends the run with its reason
    (the LLM layer's budget refusal is budget_exceeded)."""
    error = answer.error
    reason = error.reason if error else ErrorReason.UNEXPECTED_ERROR
    message = error.message if error else answer.text
    return failure(reason, f"{what}: {message}", details=answer.text)


def gave_up(analysis: CombinedAnalysisResult) -> Ending:
    return failure(ErrorReason.GOAL_NOT_REACHED, f"the analysis gave up: {analysis.message}")


@dataclass
class Iteration:
    """One iteration's state as its steps fill it in (edit → test → analysis); records.py
    copies it into its entry in the run's history."""

    number: int
    of: int
    prompt: str
    files: list[str]
    outcome: AiderEditOutcome | None = None
    test: CommandRun | None = None  # the run that decided it (None: nothing to test)
    runs: list[SuiteRun] = field(default_factory=list)
    analysis: CombinedAnalysisResult | None = None
    overruled: str | None = None
    judge: JudgeProblem | None = None  # its tests passed, but the edits changed them
    notes: list[str] = field(default_factory=list)  # the user's notes its edit carried (steer)

    @property
    def label(self) -> str:
        return f"Iteration {self.number}/{self.of}"

    @property
    def percentage(self) -> int:
        return 100 * (self.number - 1) // self.of

    @property
    def last(self) -> bool:
        return self.number == self.of

    def next(self, prompt: str, files: list[str]) -> Iteration:
        return Iteration(self.number + 1, self.of, prompt, files)


def changed(outcome: AiderEditOutcome) -> bool:
    """The edit changed or created a file, in its chat or outside it (else it is a failed
    attempt)."""
    return bool(outcome.changed_files or outcome.created_files or outcome.files_outside_editable)


def no_change(outcome: AiderEditOutcome) -> bool:
    """Aider answered (a well-formed reply) but changed no file: a failed attempt to retry,
    not the end of the run; unless its model's endpoint refused (the bridge names it), which
    a retry would only meet again."""
    refused = outcome.error is not None and outcome.error.reason is not ErrorReason.TOOL_EXECUTION_ERROR
    return outcome.server_success is not None and not changed(outcome) and not refused


async def stop(task: asyncio.Task[Any]) -> None:
    """Cancel a step running beside and wait until it has stopped; its outcome is dropped
    (retrieved, so asyncio does not report it as never retrieved)."""
    task.cancel()
    await asyncio.wait([task])
    if not task.cancelled():
        task.exception()
