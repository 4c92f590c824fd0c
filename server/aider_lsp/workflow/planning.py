"""The run's plan: made first when no file is known, or beside the first edit where it still
helps, where it shapes the iteration after the first; else the plan the first edit implies.

Why a class of its own: the plan beside the first edit is a task with a life of its own (it
may fail, be moot when the tests pass first, or be waited for by the tests when it names
the command); this object holds it and says what became of it, the loop asks when.
"""

from __future__ import annotations

import asyncio

from ..models import DevelopmentPlan, ErrorReason, PlanFailed, PlanMade
from .host import WorkflowHost
from .iteration import Ending, Iteration, failure, step_failed, stop
from .prompts import plan_request
from .report import RunReport


class Planning:
    """The plan of one run (`asked`: the user asked for one). `plan` is the run's plan once
    known; `problem` why the plan beside the first edit was not made, when the run ends on
    the tests anyway."""

    def __init__(self, host: WorkflowHost, goal: str, context: str, asked: bool, report: RunReport) -> None:
        self.host = host
        self.goal = goal
        self.context = context
        self.asked = asked
        self.report = report
        self.plan: DevelopmentPlan | None = None
        self.problem: str | None = None
        self._beside: asyncio.Task[DevelopmentPlan | Ending] | None = None

    @property
    def running(self) -> bool:
        """A plan is being made beside the first edit (the progress says so)."""
        return self._beside is not None and not self._beside.done()

    async def make(
        self, chosen: list[str], open_files: list[str], relevant: list[str]
    ) -> DevelopmentPlan | Ending:
        """The planner's plan, or the end of the run with its reason."""
        answer = await self.host.make_plan(
            plan_request(self.goal, self.context, chosen, open_files, relevant)
        )
        self.report.spent("plan", answer.usage)
        plan = answer.value
        if plan is None:
            return step_failed(answer, "planning failed")
        self.plan = plan
        self.report.event(PlanMade(plan=plan))
        return plan

    def start_beside(self, chosen: list[str], open_files: list[str], relevant: list[str]) -> None:
        self._beside = asyncio.create_task(self.make(chosen, open_files, relevant))

    def imply(self, it: Iteration, command: str | None) -> None:
        """After the first edit with no plan: the plan the index and Aider's reply imply."""
        if self.plan is None and it.number == 1:
            self.plan = DevelopmentPlan(
                instructions=it.prompt, files=it.files, test_command=command, implied=True
            )

    async def wait(self, it: Iteration) -> DevelopmentPlan | Ending | None:
        """The plan running beside the first edit (None: none runs, or it was used already)."""
        if self._beside is None:
            return None
        if not self._beside.done():
            self.report.progress(f"{it.label}: waiting for the plan", it.percentage)
        return await self._beside

    async def shape(self, it: Iteration, following: Iteration) -> Iteration | Ending:
        """The plan that ran beside the first edit shapes the iteration after it: its
        instructions join the message, its files the chat (a failed plan ends a red run)."""
        plan = await self.wait(it)
        self._beside = None
        if plan is None or isinstance(plan, Ending):
            return following if plan is None else plan
        following.prompt = f"{following.prompt}\n\n{plan.instructions}"
        following.files = [*following.files, *(p for p in plan.files if p not in following.files)]
        return following

    async def moot(self) -> None:
        """The tests passed: a plan still to come is stopped. One that failed is said (the
        result, the CLI, ACP's thoughts) instead of keeping quiet about a planning model that
        answers no plan; so is one the user asked for and the tests did not wait for."""
        task = self._beside
        if task is None:
            return
        if task.done() and not task.cancelled() and task.exception() is None:
            self._failed(task.result())
        elif self.asked:
            self._failed(failure(ErrorReason.CANCELLED, "the tests passed before it was made"))
        await self.stop()

    async def stop(self) -> None:
        if self._beside is not None:
            await stop(self._beside)
        self._beside = None

    def _failed(self, plan: DevelopmentPlan | Ending) -> None:
        if isinstance(plan, Ending):
            self.problem = plan.message
            self.report.event(PlanFailed(reason=plan.message))
