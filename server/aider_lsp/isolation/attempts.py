"""Several attempts at one goal, the tests choosing: isolated runs of one group, started from the
same files at once, each in a worktree of its own (isolated runs, runs.py).

Why the tests choose: each attempt's whole suite decides, under the judge's rules (no test
deleted, none fewer: a run is SUCCESS only then). "first-green": the first attempt that ends
green with a change wins and the others are stopped (their processes and trees go; what they
spent up to then is counted); "compare": all finish, then they are ranked green first, then the
smaller change, then the cheaper. Nothing is applied by itself: the user applies the winner (or
any attempt), and applying one discards its siblings in the same step.

What differs between attempts (`attempt_plans`): the Aider model, in turn from the list the user
gave; else the first edit's context: an attempt the same model already makes plainly gets the
planner beside its first edit (the planner's files join the second edit), the next goes plain
again. The test command is chosen once, for the group; the budget caps the group (each attempt
gets its share of it).
"""

from __future__ import annotations

import asyncio
import dataclasses
import time
from collections.abc import Callable
from dataclasses import dataclass

from ..config.settings import BudgetSettings, Settings
from ..models import (
    Attempt,
    AttemptGroup,
    Choose,
    DeclinedTestCommand,
    ErrorReason,
    Isolation,
    RequestContext,
    RunAction,
    RunState,
    TaskError,
    WorkflowEvent,
    WorkflowProgress,
    WorkflowRequest,
    WorkflowRun,
    WorkflowUsage,
)
from .runs import AttemptOf, IsolatedRuns
from .store import new_run_id

GROUP_PREFIX = "group-"


@dataclass(frozen=True)
class AttemptPlan:
    """What makes one attempt differ from its siblings."""

    number: int
    aider_model: str | None  # None: the settings' Aider model
    planned: bool  # a plan beside its first edit


def attempt_plans(request: WorkflowRequest, settings: Settings) -> list[AttemptPlan]:
    """The attempts a request asks for (the settings' count and models where it names none)."""
    count = request.attempts or settings.attempts
    models = request.aider_models or settings.attempt_models
    plans: list[AttemptPlan] = []
    for number in range(1, count + 1):
        model = models[(number - 1) % len(models)] if models else None
        before = sum(1 for plan in plans if plan.aider_model == model)
        plans.append(AttemptPlan(number, model, planned=request.plan or before % 2 == 1))
    return plans


def lines_changed(diff: str) -> int:
    """Lines a unified diff adds and removes (its file headers not counted)."""
    return sum(
        1
        for line in diff.splitlines()
        if line[:1] in "+-" and not line.startswith(("+++ ", "--- ", "+++\t", "---\t"))
    )


def ranked(attempts: list[Attempt]) -> list[Attempt]:
    """Green first, then the smaller change, then the cheaper (tokens, then cost), then sooner."""
    return sorted(attempts, key=lambda a: (not a.green, a.lines_changed, a.tokens, a.cost, a.number))


class AttemptGroups:
    """Runs a group of attempts and applies the one the user takes (its siblings discarded)."""

    def __init__(self, runs: IsolatedRuns, settings: Callable[[], Settings]) -> None:
        self.runs = runs
        self.settings = settings

    async def run(self, request: WorkflowRequest, ctx: RequestContext) -> WorkflowRun:
        """The group's attempts run at once; the answer names each and the winner."""
        settings = self.settings()
        plans = attempt_plans(request, settings)
        room = settings.max_isolated_runs - self.runs.under_way
        if len(plans) > room:
            name = settings.name("maxIsolatedRuns")
            message = f"{len(plans)} attempts need as many isolated runs at once; {room} can start ({name})"
            return WorkflowRun(refused=TaskError(reason=ErrorReason.CONFIGURATION_ERROR, message=message))
        choice = await self.runs.pick_test_command(request.test_command, ctx)  # asked once, for all
        if isinstance(choice, DeclinedTestCommand):
            refused = TaskError(reason=ErrorReason.CONFIGURATION_ERROR, message=choice.message)
            return WorkflowRun(refused=refused, declined_test_command=choice)
        command = None if choice is None else choice.command
        base = request.model_copy(update={"test_command": command, "isolation": Isolation.WORKTREE})
        group = _Group(
            f"{GROUP_PREFIX}{new_run_id()}", request.choose or Choose(settings.choose_attempt), plans
        )
        share = budget_share(settings.budget, len(plans))
        tasks = [asyncio.create_task(self._attempt(group, plan, base, ctx, share)) for plan in plans]
        try:
            await self._until_chosen(group, tasks)
        except asyncio.CancelledError:  # the caller's cancel answers with every attempt's end
            await _stop_all(tasks)
            ctx.answer_cancelled(
                WorkflowRun(cancelled=True, group=group.answer(self.runs.spent_by_run, True))
            )
            raise
        finally:  # the winner found (or a cancel): the others stop, their trees go
            await _stop_all(tasks)
        answer = group.answer(self.runs.spent_by_run)
        won = group.run_of(answer.winner)
        if won is None:
            return WorkflowRun(group=answer)
        self.runs.mark_won(answer.winner or "")
        # the winner's own run beside the group: its change, its outcome (a client asks to apply it)
        return won.model_copy(update={"group": answer})

    async def _until_chosen(self, group: _Group, tasks: list[asyncio.Task[None]]) -> None:
        pending = set(tasks)
        while pending:
            _, pending = await asyncio.wait(pending, return_when=asyncio.FIRST_COMPLETED)
            if group.choose is Choose.FIRST_GREEN and group.first_green is not None:
                group.stopping = f"attempt {group.first_green} passed the tests first"
                return

    async def _attempt(
        self,
        group: _Group,
        plan: AttemptPlan,
        base: WorkflowRequest,
        ctx: RequestContext,
        share: BudgetSettings,
    ) -> None:
        """One attempt, its progress said as its own, its end (or stop) recorded on the group."""
        label = f"Attempt {plan.number}/{len(group.plans)}"

        def progress(message: str, percentage: int | None) -> None:
            ctx.report_progress(f"{label}: {message}", percentage)

        attempt_ctx = dataclasses.replace(
            ctx,
            report_progress=progress,
            report_event=lambda event: _labelled(event, label, ctx),
            answer_cancelled=lambda run: group.stopped(plan, run),
        )
        request = base.model_copy(update={"plan": plan.planned, "attempts": 1, "aider_models": []})
        attempt = AttemptOf(group.group_id, plan.number, plan.aider_model, _tuner(plan.aider_model, share))
        started = time.monotonic()
        try:
            run = await self.runs.run(request, attempt_ctx, attempt=attempt)
        except asyncio.CancelledError:
            group.stopped(plan, None)  # stopped before its tree was made, if not after
            raise
        group.ended(plan, run, time.monotonic() - started)


class _Group:
    """A group's attempts as they end (or are stopped)."""

    def __init__(self, group_id: str, choose: Choose, plans: list[AttemptPlan]) -> None:
        self.group_id = group_id
        self.choose = choose
        self.plans = plans
        self.first_green: int | None = None
        self.stopping = "the group was cancelled"
        self._ended: dict[int, tuple[AttemptPlan, WorkflowRun, float]] = {}
        self._stopped: dict[int, tuple[AttemptPlan, WorkflowRun]] = {}

    def ended(self, plan: AttemptPlan, run: WorkflowRun, seconds: float) -> None:
        self._ended[plan.number] = (plan, run, seconds)
        if self.first_green is None and _green(run):
            self.first_green = plan.number

    def run_of(self, run_id: str | None) -> WorkflowRun | None:
        """An ended attempt's run by its id."""
        found = (run for _, run, _ in self._ended.values() if run.isolated and run.isolated.run_id == run_id)
        return next(found, None) if run_id else None

    def stopped(self, plan: AttemptPlan, run: WorkflowRun | None) -> None:
        """An attempt stopped before its end (`run`: what its cancel answered, None: nothing yet)."""
        if run is not None or plan.number not in self._stopped:
            self._stopped[plan.number] = (plan, run or WorkflowRun(cancelled=True))

    def answer(self, spent: dict[str, WorkflowUsage], cancelled: bool = False) -> AttemptGroup:
        """The group as its caller is told: each attempt's end or stop, the winner (none once
        the group was `cancelled`: an attempt that ended ready stays ready for the user)."""
        attempts = [
            *(_ended(plan, run, seconds, spent) for plan, run, seconds in self._ended.values()),
            *(_stopped(plan, run, self.stopping, spent) for plan, run in self._stopped.values()),
        ]
        attempts.sort(key=lambda attempt: attempt.number)
        winner, reason = (None, "the group was cancelled") if cancelled else self._winner(attempts)
        return AttemptGroup(
            group_id=self.group_id, choose=self.choose, attempts=tuple(attempts), winner=winner, reason=reason
        )

    def _winner(self, attempts: list[Attempt]) -> tuple[str | None, str]:
        if self.choose is Choose.FIRST_GREEN:
            first = next((a for a in attempts if a.number == self.first_green), None)
            if first is not None:
                return first.run_id, f"attempt {first.number} passed the tests first ({first.tests})"
        else:
            best = ranked(attempts)[0] if attempts else None
            if best is not None and best.green:
                return best.run_id, f"attempt {best.number}: {_why_best(best, attempts)}"
        return None, "no attempt passed the tests with a change"


async def _stop_all(tasks: list[asyncio.Task[None]]) -> None:
    """Every attempt still under way stopped (its processes end, its tree goes), and waited for."""
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)


def _labelled(event: WorkflowEvent, label: str, ctx: RequestContext) -> None:
    """An attempt's progress joins the group's, named as its own; its other steps stay on its
    run (the attempts' edits and test runs side by side would read as one run's)."""
    if isinstance(event, WorkflowProgress):
        ctx.report_event(event.model_copy(update={"phase": f"{label}: {event.phase}"}))


def _green(run: WorkflowRun) -> bool:
    """Its whole suite passed under the judge's rules, and it changed something to apply."""
    return run.ok and run.isolated is not None and run.isolated.state is RunState.READY


def _ended(plan: AttemptPlan, run: WorkflowRun, seconds: float, spent: dict[str, WorkflowUsage]) -> Attempt:
    run_id = run.isolated.run_id if run.isolated is not None else ""
    usage = spent.get(run_id, WorkflowUsage()).all
    last = run.last_test
    return Attempt(
        run_id=run_id,
        number=plan.number,
        aider_model=plan.aider_model,
        planned=plan.planned,
        state=run.isolated.state if run.isolated is not None else RunState.DISCARDED,
        status=run.outcome.status.value if run.outcome is not None else "FAILED",
        green=_green(run),
        tests=last.outcome if last is not None else (run.refused.message if run.refused else ""),
        lines_changed=lines_changed(run.changes.diff),
        tokens=usage.total_tokens,
        cost=usage.cost or 0.0,
        seconds=round(seconds, 1),
    )


def _stopped(plan: AttemptPlan, run: WorkflowRun, why: str, spent: dict[str, WorkflowUsage]) -> Attempt:
    run_id = run.isolated.run_id if run.isolated is not None else ""
    usage = spent.get(run_id, WorkflowUsage()).all
    return Attempt(
        run_id=run_id,
        number=plan.number,
        aider_model=plan.aider_model,
        planned=plan.planned,
        state=RunState.DISCARDED,
        tokens=usage.total_tokens,
        cost=usage.cost or 0.0,
        stopped=why,
    )


def _why_best(best: Attempt, attempts: list[Attempt]) -> str:
    others = [a for a in attempts if a is not best and a.green]
    said = f"{best.tests}, {best.lines_changed} line(s) changed"
    if not others:
        return f"the only one that passed the tests ({said})"
    return f"passed the tests with the smallest change, then the lowest cost ({said})"


def budget_share(cap: BudgetSettings, size: int) -> BudgetSettings:
    """Each attempt's share of the group's cap (no cap: none)."""
    return BudgetSettings(
        max_tokens=None if cap.max_tokens is None else max(1, cap.max_tokens // size),
        max_cost=None if cap.max_cost is None else cap.max_cost / size,
    )


def _tuner(aider_model: str | None, budget: BudgetSettings) -> Callable[[Settings], Settings]:
    def tune(settings: Settings) -> Settings:
        update: dict[str, object] = {"budget": budget}
        if aider_model is not None:
            update["aider_model"] = aider_model
        return settings.model_copy(update=update)

    return tune


def is_group(run_id: str) -> bool:
    return run_id.startswith(GROUP_PREFIX)


def apply_attempt(runs: IsolatedRuns, run_id: str, *, force: bool = False) -> RunAction:
    """Apply one attempt (a group's id: the winner) and discard its ready siblings."""
    if is_group(run_id):
        members = runs.group_members(run_id)
        winner = next((record.id for record in members if record.won), None)
        if winner is None:
            message = (
                f"no attempt of {run_id} passed the tests: apply one of its attempts by its id"
                if members
                else f"no group {run_id!r} in this workspace (aider-lsp history lists them)"
            )
            return RunAction(
                run_id=run_id,
                state=RunState.READY,
                refused=TaskError(reason=ErrorReason.INPUT_VALIDATION_FAILURE, message=message),
            )
        run_id = winner
    action = runs.apply(run_id, force=force)
    if not action.done:
        return action
    group_id = runs.group_of(run_id)
    if group_id is None:
        return action
    discarded = tuple(
        record.id
        for record in runs.group_members(group_id)
        if record.id != run_id and record.state is RunState.READY and runs.discard(record.id).done
    )
    return action.model_copy(update={"discarded": discarded})
