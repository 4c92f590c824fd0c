"""The coding workflow: Aider edit (a plan beside) → test command → (analysis) until the tests
pass, the analysis gives up, the last iteration or the budget (docs/workflow.md tells the rules).

The loop knows no protocol: it calls the Application through host.py, so each edit gets the
executors' checks and checkpoint, and reports through the caller's RequestContext (typed events,
progress, findings). Every problem ends the run with a result, never an exception, except a
cancel, which propagates once the run's one checkpoint (one undo) is settled. The tests are the
judge: green tests end the run; an analysis never makes red tests a SUCCESS. This module is the
loop alone; each of its jobs has a module named for it: first_files.py, planning.py,
choose_tests.py, analysis.py, prompts.py, records.py, the checkpoint store (the run's diff) and
budget.py.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

from ..guards.budget import RunBudget
from ..history.checkpoints import Checkpoint, run_checkpoint
from ..models import (
    AiderEditOutcome,
    CombinedAnalysisResult,
    CommandRun,
    EditStarted,
    ErrorReason,
    RequestContext,
    RunChanges,
    Verdict,
    WorkflowIteration,
    WorkflowResult,
    WorkflowStatus,
    WorkflowUsage,
)
from ..models.outcome import test_outcome
from . import first_files, prompts, records
from .analysis import Analyses
from .choose_tests import TestChoice
from .host import WorkflowHost
from .iteration import Ending, Iteration, changed, failure, gave_up, no_change, stop
from .planning import Planning
from .report import RunReport


class CodingWorkflowOrchestrator:
    """One run of the loop for one goal. `max_retries` is the number of Aider attempts
    (at least one); `file_context` is what the editor pointed at (a list or a JSON array)."""

    def __init__(
        self,
        app: WorkflowHost,
        initial_goal: str,
        initial_context: str = "",
        test_command: str | None = None,
        max_retries: int = 3,
        file_context: Sequence[str] | str | None = None,
        *,
        plan: bool = False,
        images: Sequence[str] = (),
    ) -> None:
        self.app = app
        self.images = list(images)  # shown to Aider's model with each edit (its chat keeps no image)
        self.goal = initial_goal
        self.context = initial_context
        self.test_command = test_command
        self.max_iterations = max(1, max_retries)
        self.file_context = file_context
        self.final_aider: AiderEditOutcome | None = None
        self.checkpoint: Checkpoint | None = None
        self.history = records.RunIterations()
        self.report = RunReport(self.usage)
        self.planning = Planning(app, initial_goal, initial_context, plan, self.report)
        self.tests = TestChoice(app, self.report)
        self.analyses = Analyses(app, initial_goal, initial_context, self.report, self.history)
        self._budget: RunBudget | None = None
        self._warm_up: asyncio.Task[bool] | None = None
        self._chat: str | None = None  # the run's Aider chat (None: not started, or no chats)
        self._instructions = ""  # the first edit's (repeated to a server that keeps no chat)
        self._chosen: list[str] = []  # the files the user handed to the run
        self._in_chat: list[str] = []  # the chat's files after the last edit
        self._asked_for: set[str] = set()  # files the model asked for (Aider added them)
        self._notes: list[str] = []  # the user's notes not yet sent: the next edit carries them

    def steer(self, note: str) -> None:
        """A note from the user while the run is under way (no cancel): the next edit's
        message carries it, and its iteration's record keeps it."""
        self._notes.append(note)

    @property
    def iterations(self) -> list[WorkflowIteration]:
        """Each iteration's entry in the run's history so far."""
        return self.history.entries

    # -- the run -----------------------------------------------------------------------------
    async def run(self, ctx: RequestContext) -> WorkflowResult:
        """Run to the end; cancellation propagates after the checkpoint is settled."""
        cap = self.app.settings.budget
        self.report.ctx = ctx
        self._budget = self.app.set_budget(cap.max_tokens, cap.max_cost)
        try:
            with run_checkpoint(self.app.checkpoints, f"workflow: {self.goal[:150]}") as checkpoint:
                self.checkpoint = checkpoint
                try:
                    ending = await self._loop()
                finally:  # kept only when undo would change something
                    self.checkpoint = self.app.checkpoints.settled(checkpoint)
        finally:
            self.app.clear_budget()
        if self._chat is not None:  # not on cancellation: that stopped the server
            await self.app.end_chat(self._chat)
        usage, planning, analysis = self.usage(), self.planning, self.analyses.latest
        return records.run_result(ending, self.iterations, usage, planning, self.final_aider, analysis)

    async def _loop(self) -> Ending:
        """(Plan →) iterations until one ends the run; the steps left running beside are
        stopped on the way out (an end or a cancel, the start's included)."""
        try:
            current = await self._start()
            while not isinstance(current, Ending):
                current = await self._iterate(current)
            return current
        finally:
            await self.analyses.drop()
            await self.planning.stop()
            await self.tests.stop()
            if self._warm_up is not None:
                await stop(self._warm_up)
            self._warm_up = None

    async def _start(self) -> Iteration | Ending:
        """The first iteration, at once: on the files the user chose, else on those the index
        ranks best (first_files.py), with a plan beside it where it helps; only when no file is
        known does the plan come first. Aider starts, and the suite runs, meanwhile."""
        chosen = first_files.user_files(self.file_context)
        if isinstance(chosen, str):
            return failure(ErrorReason.INPUT_VALIDATION_FAILURE, chosen)
        self._chosen = list(chosen)
        self._warm_up = asyncio.create_task(self.app.start_aider())
        self.tests.command = self.test_command or self.app.settings.test_command or ""
        self.tests.start()
        open_files = list(self.report.ctx.open_files)
        ask_index = not chosen or self._needs_plan(chosen, True)
        first = await first_files.find(self.app, self.goal, chosen, open_files, ask_index=ask_index)
        if not first.files:
            return await self._plan_first(chosen, open_files, first.relevant)
        if self._needs_plan(chosen, first.confident):
            self.planning.start_beside(chosen, open_files, first.relevant)
        return self._first(prompts.first_prompt(self.goal, self.context, first.mentioned), first.files)

    def _needs_plan(self, chosen: list[str], confident: bool) -> bool:
        command_known = bool(self.tests.command)
        return first_files.needs_plan(
            asked=self.planning.asked, command_known=command_known, chosen=bool(chosen), confident=confident
        )

    async def _plan_first(
        self, chosen: list[str], open_files: list[str], relevant: list[str]
    ) -> Iteration | Ending:
        """No file to start on (none chosen, none found): the plan names them, then the edit."""
        self.report.progress("Planning", 0)
        plan = await self.planning.make(chosen, open_files, relevant)
        if isinstance(plan, Ending):
            return plan
        command = self.tests.with_plan(plan)
        if isinstance(command, Ending):
            return command
        return self._first(plan.instructions, list(plan.files))

    def _first(self, prompt: str, files: list[str]) -> Iteration:
        self._instructions = prompt
        return Iteration(1, self.max_iterations, prompt, files)

    async def _iterate(self, it: Iteration) -> Iteration | Ending:
        """One iteration: the edit, the tests when it changed a file, then green or red."""
        if (over := self._over_budget()) is not None:
            return over
        before = await self.tests.failures_before(it, self._warm_up) if it.number == 1 else None
        if before is not None and not before.passed:  # the first edit sees what fails (as a retry)
            it.prompt = self._instructions = prompts.with_failures(it.prompt, before)
        if self._notes:
            it.notes, self._notes = self._notes, []
            it.prompt = prompts.with_notes(it.prompt, it.notes)
        self.history.add(it)
        outcome = await self._edit(it)
        if isinstance(outcome, Ending):
            return outcome
        if changed(outcome):
            test = await self._test(it)
            if isinstance(test, Ending):
                return test
            if test.passed:
                changes = self.app.checkpoints.changed_since(self.checkpoint) if self.checkpoint else {}
                it.judge = self.tests.judge(it, changes, self._chosen)
                if it.judge is None:
                    return await self._green(it)
                self.history.record(it)
            self.report.findings([*test.findings, *records.judge_findings(it.judge)])
        return await self._red(it)

    async def _green(self, it: Iteration) -> Iteration | Ending:
        """The tests pass: SUCCESS (the analysis and the plan beside are moot), unless
        `analyseGreenTests` asks the analysis, which may still say RETRY or FAILURE."""
        await self.analyses.drop()
        await self.planning.moot()
        if not self.app.settings.analyse_green_tests:
            return self._success(f"{test_outcome(0, command=self.tests.command)} in iteration {it.number}")
        if (over := self._over_budget()) is not None:
            return over
        self.report.progress(f"{it.label}: analysing the result", it.percentage)
        analysis = await self.analyses.ask(it, self.tests.command)
        if isinstance(analysis, Ending):
            return analysis
        if analysis.verdict is Verdict.SUCCESS:
            return self._success(analysis.message)
        if analysis.verdict is Verdict.FAILURE or it.last:
            return self._not_reached(analysis, it)
        return it.next(analysis.next_prompt or it.prompt, list(analysis.next_files or it.files))

    async def _red(self, it: Iteration) -> Iteration | Ending:
        """Red tests (or no change): the analysis beside may stop the run and advises; the
        last iteration waits for its own analysis; otherwise the next edit starts at once with
        the failing output while this iteration's analysis runs beside it."""
        advice = await self.analyses.advice(it)
        if isinstance(advice, Ending):
            return advice
        if advice is not None and advice.verdict is Verdict.FAILURE:
            return gave_up(advice)
        if (over := self._over_budget()) is not None:
            return over
        if it.last:
            self.report.progress(f"{it.label}: analysing the result", it.percentage)
            last = await self.analyses.ask(it, self.tests.command)
            return last if isinstance(last, Ending) else self._not_reached(last, it)
        self.analyses.start_beside(it, self.tests.command)
        instructions = self._instructions if self._chat is None else None
        prompt = prompts.retry_prompt(it, advice, command=self.tests.command, instructions=instructions)
        files = prompts.with_files(self._retry_files(it), advice)
        return await self.planning.shape(it, it.next(prompt, files))

    def _retry_files(self, it: Iteration) -> list[str]:
        """The chat's files for the next turn (records.retry_files): the run's changes, the
        user's files and those the model asked for."""
        touched = self.app.checkpoints.changed_since(self.checkpoint) if self.checkpoint else {}
        return records.retry_files(it.files, touched=touched, kept={*self._chosen, *self._asked_for})

    def _success(self, message: str) -> Ending:
        self.report.findings([])
        self.report.progress("Done: the goal is reached", 100)
        return Ending(WorkflowStatus.SUCCESS, message)

    def _not_reached(self, analysis: CombinedAnalysisResult, it: Iteration) -> Ending:
        """The end after the last iteration (or an analysis that gave up)."""
        if analysis.verdict is Verdict.FAILURE:
            return gave_up(analysis)
        why = self.iterations[it.number - 1].overruled or analysis.message
        state = records.state(it.test, it.judge)
        message = f"the goal was not reached in {self.max_iterations} iteration(s): {state}; {why}"
        return failure(ErrorReason.MAX_RETRIES_REACHED, message)

    # -- the steps ---------------------------------------------------------------------------
    async def _edit(self, it: Iteration) -> AiderEditOutcome | Ending:
        """One Aider edit, a turn of the run's chat, through the host (the executor's checks and
        checkpoint apply); the files it edited are the iteration's from now on. An edit that
        changed nothing is a failed attempt (retried); any other failure ends the run."""
        self.report.progress(f"{it.label}: Aider is editing{self._beside_note(it)}", it.percentage)
        self.report.event(EditStarted(iteration=it.number, files=list(it.files)))
        # a chat Aider's server lost (it restarted) starts again, told the instructions first
        reply, chat, retell = self.report.ctx.report_reply, self._chat, self._instructions
        dropped = [path for path in self._in_chat if path not in it.files]
        outcome = await self.app.edit(
            it.prompt,
            it.files,
            chat=True,
            session_id=chat,
            on_reply=reply,
            retell=retell,
            dropped=dropped,
            images=self.images,
        )
        self.final_aider = outcome
        if outcome.server_success is not None or outcome.usage is not None:  # Aider was asked
            self.report.spent("edit", outcome.usage)
        self.report.event(records.edit_finished(it, outcome))
        self._chat = outcome.session_id or self._chat
        it.outcome = outcome
        it.files = records.edited_files(list(outcome.files or it.files), outcome)
        self._in_chat = list(it.files)
        self._asked_for.update(records.joined_files(outcome))
        self.planning.imply(it, self.tests.command or None)
        self.history.record(it)
        error = outcome.error
        if error is not None and not no_change(outcome):
            return failure(error.reason, f"the Aider edit failed: {error.message}", details=error.message)
        return outcome

    async def _test(self, it: Iteration) -> CommandRun | Ending:
        """The tests after an edit (choose_tests.py), once the command is known (the plan
        running beside may name it)."""
        if not self.tests.command:
            plan = await self.planning.wait(it)
            command = plan if isinstance(plan, Ending) else self.tests.with_plan(plan)
            if isinstance(command, Ending):
                return command
        run = await self.tests.after_edit(it, f"{it.label}: running {{}}{self._beside_note(it)}")
        if not isinstance(run, Ending):
            self.history.record(it)
        return run

    def _beside_note(self, it: Iteration) -> str:
        """The progress line's mention of the plan or the analysis running beside, while it runs."""
        note = "; planning beside it" if self.planning.running else ""
        if self.analyses.running:
            note += f"; analysing iteration {it.number - 1} beside it"
        return note

    # -- reporting, the budget, the run's changes --------------------------------------------
    def _over_budget(self) -> Ending | None:
        """Before each model call: the end of the run once it has spent its budget (budget.py)."""
        why = self._budget.exceeded() if self._budget is not None else None
        return None if why is None else failure(ErrorReason.BUDGET_EXCEEDED, why)

    def usage(self) -> WorkflowUsage:
        """Tokens and cost this run spent so far, each model apart and together (a live display)."""
        usage = WorkflowUsage() if self._budget is None else self._budget.usage()
        return usage.model_copy(update={"calls": self.report.calls})

    def changes(self) -> RunChanges:
        """What the run changed against the files before it, its diff in the edits' format."""
        return self.app.checkpoints.run_changes(self.checkpoint)
