"""Workflow runs of one workspace: one at a time, and the answer a run ends with.

Why here: a second run would edit the same files under the first one's checkpoint, so a
workspace runs one at a time (the flag is the room's, not the Application's). The test command
is picked (a detected one confirmed with the user) before the run starts; with no suite found
the run may still use the plan's own command, else it stops naming the setting. A cancel
propagates once the run's checkpoint is settled, after the caller is told which files the run
left changed (undo restores them).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable

from ..models import (
    DeclinedTestCommand,
    ErrorReason,
    RequestContext,
    RunChanges,
    TaskError,
    WorkflowIteration,
    WorkflowRequest,
    WorkflowRun,
    WorkflowUsage,
)
from ..models.suite_command import ChosenTestCommand
from .host import WorkflowHost
from .orchestrator import CodingWorkflowOrchestrator
from .steps import run_steps

PickTestCommand = Callable[
    [str | None, RequestContext], Awaitable[ChosenTestCommand | DeclinedTestCommand | None]
]


class WorkflowRuns:
    """Runs the coding workflow on a host, one run at a time."""

    def __init__(self, host: WorkflowHost, pick_test_command: PickTestCommand) -> None:
        self.host = host
        self.pick_test_command = pick_test_command
        self._running = False
        self._current: CodingWorkflowOrchestrator | None = None

    def steer(self, note: str) -> bool:
        """A note for the run under way (its next edit carries it); False: none runs."""
        if self._current is None:
            return False
        self._current.steer(note)
        return True

    @property
    def running(self) -> bool:
        return self._running

    async def run(self, request: WorkflowRequest, ctx: RequestContext) -> WorkflowRun:
        """The run's outcome (SUCCESS when the goal is reached) and what it changed, or why it
        never started; a cancel tells `ctx.answer_cancelled` what it had changed, then propagates."""
        if self._running:
            return WorkflowRun(refused=_refusal("a workflow is already running in this workspace"))
        self._running = True
        try:
            choice = await self.pick_test_command(request.test_command, ctx)
            if isinstance(choice, DeclinedTestCommand):
                refused = TaskError(reason=ErrorReason.CONFIGURATION_ERROR, message=choice.message)
                return WorkflowRun(refused=refused, declined_test_command=choice)
            retries = request.max_retries
            orchestrator = CodingWorkflowOrchestrator(
                self.host,
                request.goal,
                request.context,
                None if choice is None else choice.command,
                self.host.settings.max_retries if retries is None else retries,
                request.file_context,
                plan=request.plan,
                images=request.images,
            )
            started = time.monotonic()
            self._current = orchestrator
            try:
                outcome = await orchestrator.run(ctx)
            except asyncio.CancelledError:
                changes = orchestrator.changes()
                self._remember(
                    request, changes, "CANCELLED", orchestrator.iterations, orchestrator.usage(), started
                )
                ctx.answer_cancelled(WorkflowRun(changes=changes, cancelled=True))
                raise
        finally:
            self._running = False
            self._current = None
        changes = orchestrator.changes()
        self._remember(
            request,
            changes,
            outcome.status.value,
            outcome.iterations,
            outcome.usage,
            started,
            outcome.plan_problem,
        )
        return WorkflowRun(outcome=outcome, changes=changes)

    def _remember(
        self,
        request: WorkflowRequest,
        changes: RunChanges,
        status: str,
        iterations: list[WorkflowIteration],
        usage: WorkflowUsage,
        started: float,
        plan_problem: str | None = None,
    ) -> None:
        """What the history shows of the run (`aider-lsp history`), on its checkpoint; the whole
        goal too (the label keeps its start only), so the run can be run again, and a short step
        per iteration (steps.py: what it edited, how its tests ended, what the analysis said)."""
        self.host.checkpoints.annotate(
            changes.checkpoint_id,
            kind="workflow",
            goal=request.goal,
            status=status,
            iterations=len(iterations),
            steps=[step.model_dump(mode="json") for step in run_steps(iterations)],
            spend=usage.describe(),
            duration_s=round(time.monotonic() - started, 1),
            note=f"No plan was made: {plan_problem}" if plan_problem else None,
        )


def _refusal(message: str) -> TaskError:
    return TaskError(reason=ErrorReason.INPUT_VALIDATION_FAILURE, message=message)
