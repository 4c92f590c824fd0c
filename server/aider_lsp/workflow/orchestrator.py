"""The coding workflow: Aider edit (a plan beside) → test command → (analysis) until the tests pass,
the analysis gives up, the last iteration or the budget.

Why here and like this: the loop knows no protocol. It calls the Application the way any
caller does, through the few calls named in host.py (`handle_task_command` for the plan and
the analysis, `edit`, `run_tests`, `find_context`, …), so the executors' edit lock,
checkpoints, redaction and unsaved-buffer check apply at each edit, whose typed outcome it
reads (never a result's notes); it reports through the caller's
RequestContext (progress per phase, findings after each test run), so the editor shows
diagnostics and the CLI prints lines. Every problem ends the run with a result, never an
exception, except cancellation, which propagates once the run's checkpoint is settled.
The whole run is one checkpoint: one undo restores what it changed and deletes what it created.

How it decides (docs/workflow.md): the tests are the judge. Green tests end the run with
SUCCESS (no analysis call, unless `analyseGreenTests`); an analysis never makes a run SUCCESS
over red tests. Model calls on the critical path are the loop's cost at real latency, so:
the first edit starts at once on the user's files or the index's best (a plan, where it still
helps, runs beside it and shapes the second); one Aider chat per
run, a retry sending the failing output into it as Aider's own `--auto-test` loop does; and
the analysis of a red iteration runs beside the next edit (its FAILURE still stops the run,
its instructions reach the edit after).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from pydantic import TypeAdapter, ValidationError

from aider_mcp.snapshots import unified_diff  # the edits' own diff format, for the run's diff

from ..checkpoints import Checkpoint, run_checkpoint
from ..files import AccessDenied
from ..models import (
    AiderEditOutcome,
    AnalysisMade,
    Budget,
    CombinedAnalysisResult,
    CommandRun,
    ContextGenerationInput,
    DecidingRun,
    DevelopmentPlan,
    EditFinished,
    EditStarted,
    EditSummary,
    ErrorReason,
    Finding,
    JudgeProblem,
    MatchItem,
    OptionalPathList,
    PlanFailed,
    PlanMade,
    RequestContext,
    RunChanges,
    Severity,
    SuiteRun,
    SuiteScope,
    TaskError,
    TaskResult,
    TaskStatus,
    TestRunFinished,
    TestRunStarted,
    Verdict,
    WorkflowEvent,
    WorkflowIteration,
    WorkflowResult,
    WorkflowStatus,
    WorkflowUsage,
)
from ..suite import judge
from ..suite.findings import summary_line
from ..suite.narrow import Narrowed, deselected_exactly, narrow, rest_of_suite
from .host import WorkflowHost

log = logging.getLogger(__name__)

PLAN_TEMPLATE = "user:generate-plan-from-goal"
ANALYSIS_TEMPLATE = "user:evaluate-and-retry-analysis"
MEMORY_FILES = 5
INDEX_FILES = 3  # at most this many of the index's files start the first edit
PICK_SHARE = 0.5  # ... those scoring at least this share of the best
CONFIDENT_SCORE = 0.5  # the best must score this much (and match specifically) to skip the plan
OUTPUT_FOR_ANALYSIS = 12_000  # characters of each test stream the analysis sees (head and tail)
OUTPUT_FOR_AIDER = 8_000  # characters of the failing output a retry sends Aider (head and tail)
# what Aider's own --auto-test loop sends its chat after a failing test (aider/prompts.py run_output)
RUN_OUTPUT = "I ran this command:\n\n{command}\n\nAnd got this output:\n\n{output}\n"
PROGRESS_SEPARATOR = " · spent "
PYTEST_NO_TESTS = 5  # pytest's exit code when it ran no test (all were deselected)
# once Aider is ready, the longest the first edit waits for the tests run before it
BEFORE_GRACE_S = 1.0
# a whole suite faster than this runs whole after an edit. Why: the failing tests alone save at
# most the suite's time minus a runner's start-up (pytest's 0.5-1.5 s) when they still fail, and
# cost that start-up and their own time when they pass (the whole suite runs then too); a first
# edit that saw the failures passes often enough that a suite of a few seconds is better run whole
QUICK_SUITE_S = 3.0


def progress_message(phase: str, usage: WorkflowUsage) -> str:
    """A phase for the progress report, with what the run spent so far once it spent anything
    (planning/analysis and Aider apart and together)."""
    if usage.planning.requests == 0 and usage.aider.calls == 0 and usage.aider.unreported == 0:
        return phase
    return f"{phase}{PROGRESS_SEPARATOR}{usage.describe()}"


def progress_phase(message: str) -> str:
    """The phase of a progress message (what `progress_message` was given)."""
    return message.split(PROGRESS_SEPARATOR, 1)[0]


@dataclass(frozen=True)
class Ending:
    """How a run ended, the one value its loop returns: SUCCESS, or FAILURE with the reason
    (`notes.error.reason`) and the step's own message in `details`."""

    status: WorkflowStatus
    message: str
    reason: ErrorReason | None = None
    details: str | None = None


def _failure(reason: ErrorReason, message: str, details: str | None = None) -> Ending:
    return Ending(WorkflowStatus.FAILURE, message, reason, details)


@dataclass
class _Iteration:
    """One iteration's state as its steps fill it in (edit → test → analysis); `record()` is
    its entry in the run's history."""

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

    @property
    def label(self) -> str:
        return f"Iteration {self.number}/{self.of}"

    @property
    def percentage(self) -> int:
        return 100 * (self.number - 1) // self.of

    @property
    def last(self) -> bool:
        return self.number == self.of

    def next(self, prompt: str, files: list[str]) -> _Iteration:
        return _Iteration(self.number + 1, self.of, prompt, files)

    def record(self) -> WorkflowIteration:
        test = self.test
        return WorkflowIteration(
            iteration=self.number,
            prompt=self.prompt,
            files=self.files,
            aider=_aider_summary(self.outcome) if self.outcome is not None else None,
            test=_deciding_run(test, self.runs[-1]) if test is not None else None,
            test_runs=list(self.runs),
            findings=list(test.findings) if test is not None else [],
            analysis=self.analysis,
            overruled=self.overruled,
            judge=self.judge,
        )


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
    ) -> None:
        self.app = app
        self.goal = initial_goal
        self.context = initial_context
        self.test_command = test_command
        self.max_iterations = max(1, max_retries)
        self.file_context = file_context
        self.plan_requested = plan
        self.plan: DevelopmentPlan | None = None
        self.plan_problem: str | None = None  # why the plan beside the first edit was not made
        self.iterations: list[WorkflowIteration] = []
        self.final_aider: AiderEditOutcome | None = None
        self.analysis: CombinedAnalysisResult | None = None
        self.checkpoint: Checkpoint | None = None
        self._usage_start: WorkflowUsage | None = None
        self._warm_up: asyncio.Task[bool] | None = None
        self._command = ""  # the test command, once known
        self._chat: str | None = None  # the run's Aider chat (None: not started, or no chats)
        self._instructions = ""  # the first edit's (repeated to a server that keeps no chat)
        # the analysis of the iteration before, running beside this one's edit
        self._beside: asyncio.Task[CombinedAnalysisResult | Ending] | None = None
        # the plan, running beside the first edit when it still helps (it shapes the second)
        self._planning: asyncio.Task[DevelopmentPlan | Ending] | None = None
        # the suite run before the first edit, beside Aider's start (its failures join that edit)
        self._before: asyncio.Task[CommandRun] | None = None
        self._failed_output: str | None = None  # the last test run's output, when it failed
        self._suite_seconds: float | None = None  # how long the last whole suite took
        self._tested_once = False
        self._tests_before: int | None = None  # how many tests the suite ran before any edit
        self._chosen: list[str] = []  # the files the user handed to the run
        self._ran_before = False  # the suite ran before the first edit (and was not stopped)
        self._before_waited = False  # that run was stopped for taking longer than the grace
        self._ctx = RequestContext()

    # -- the run -----------------------------------------------------------------------------
    async def run(self, ctx: RequestContext) -> WorkflowResult:
        """Run to the end; cancellation propagates after the checkpoint is settled."""
        settings = self.app.settings
        self._ctx = ctx
        self._usage_start = self.app.spent()
        self.app.set_budget(settings.budget.max_tokens, settings.budget.max_cost)
        try:
            with run_checkpoint(self.app.checkpoints, f"workflow: {self.goal[:150]}") as checkpoint:
                self.checkpoint = checkpoint
                try:
                    ending = await self._loop()
                finally:
                    self._settle(checkpoint)
        finally:
            self.app.clear_budget()
        if self._chat is not None:  # not on cancellation: that stopped the server
            await self.app.end_chat(self._chat)
        return self._result(ending)

    async def _loop(self) -> Ending:
        """(Plan →) iterations until one ends the run; an analysis left running beside is
        stopped on the way out (an end or a cancel, the start's included: the suite run
        before the first edit and Aider's start begin there)."""
        try:
            current = await self._start()
            while not isinstance(current, Ending):
                current = await self._iterate(current)
            return current
        finally:
            for task in (self._beside, self._planning, self._before, self._warm_up):
                if task is not None:
                    await _stop(task)
            self._beside = self._planning = self._before = self._warm_up = None

    async def _iterate(self, it: _Iteration) -> _Iteration | Ending:
        """One iteration: the edit, the tests when it changed a file, then green or red."""
        over = self._over_budget()
        if over is not None:
            return over
        if it.number == 1:
            await self._failures_before(it)
        self.iterations.append(it.record())
        outcome = await self._edit(it)
        if isinstance(outcome, Ending):
            return outcome
        if _changed(outcome):
            test = await self._test(it)
            if isinstance(test, Ending):
                return test
            if test.passed:
                it.judge = self._judge(it)
                if it.judge is None:
                    return await self._green(it)
                self._record(it)
            self._ctx.report_findings([*test.findings, *_judge_findings(it.judge)])
        return await self._red(it)

    def _judge(self, it: _Iteration) -> JudgeProblem | None:
        """Why the passing tests cannot end the run (suite/judge.py): they ran no test, fewer
        than before the run, or the run's edits changed the existing tests. The counts are
        compared only for a run of the whole suite (the rest of a suite runs fewer by design)."""
        test = it.test
        whole = bool(it.runs) and it.runs[-1].scope is SuiteScope.WHOLE
        counted = judge.tests_counted(test.stdout, test.stderr) if test is not None and whole else None
        changes = self._net_files()
        return judge.check(
            changes, counted=counted, tests_before=self._tests_before, users_files=self._chosen
        )

    async def _green(self, it: _Iteration) -> _Iteration | Ending:
        """The tests pass: SUCCESS (the analysis beside is moot), unless `analyseGreenTests`
        asks the analysis, which may still say RETRY (the goal needs more) or FAILURE."""
        await self._drop_beside()
        if self._planning is not None:  # the tests pass: a plan still to come is moot (stopped)
            planning = self._planning
            if planning.done() and not planning.cancelled() and planning.exception() is None:
                self._plan_failed(planning.result())  # one that failed is said
            elif self.plan_requested:  # the user asked for it: why there is none is said too
                self._plan_failed(_failure(ErrorReason.CANCELLED, "the tests passed before it was made"))
            await _stop(self._planning)
            self._planning = None
        if not self.app.settings.analyse_green_tests:
            return self._success(f"the tests pass (`{self._command}` exited 0 in iteration {it.number})")
        over = self._over_budget()
        if over is not None:
            return over
        self._progress(f"{it.label}: analysing the result", it.percentage)
        analysis = await self._analyse(it)
        if isinstance(analysis, Ending):
            return analysis
        if analysis.verdict is Verdict.SUCCESS:
            return self._success(analysis.message)
        if analysis.verdict is Verdict.FAILURE or it.last:
            return self._not_reached(analysis, it)
        return it.next(analysis.next_prompt or it.prompt, list(analysis.next_files or it.files))

    async def _red(self, it: _Iteration) -> _Iteration | Ending:
        """Red tests (or no change): the analysis beside may stop the run and advises; the
        last iteration waits for its own analysis; otherwise the next edit starts at once with
        the failing output while this iteration's analysis runs beside it."""
        advice = await self._await_beside(it)
        if isinstance(advice, Ending):
            return advice
        if advice is not None and advice.verdict is Verdict.FAILURE:
            return _gave_up(advice)
        over = self._over_budget()
        if over is not None:
            return over
        if it.last:
            self._progress(f"{it.label}: analysing the result", it.percentage)
            last = await self._analyse(it)
            return last if isinstance(last, Ending) else self._not_reached(last, it)
        self._beside = asyncio.create_task(self._analyse(it))
        return await self._shape(it, it.next(self._retry_prompt(it, advice), _with_files(it.files, advice)))

    def _success(self, message: str) -> Ending:
        self._ctx.report_findings([])
        self._progress("Done: the goal is reached", 100)
        return Ending(WorkflowStatus.SUCCESS, message)

    def _not_reached(self, analysis: CombinedAnalysisResult, it: _Iteration) -> Ending:
        """The end after the last iteration (or an analysis that gave up)."""
        if analysis.verdict is Verdict.FAILURE:
            return _gave_up(analysis)
        why = self.iterations[it.number - 1].overruled or analysis.message
        state = _state(it.test, it.judge)
        return _failure(
            ErrorReason.MAX_RETRIES_REACHED,
            f"the goal was not reached in {self.max_iterations} iteration(s): {state}; {why}",
        )

    # -- the analysis beside -----------------------------------------------------------------
    def _beside_note(self, it: _Iteration) -> str:
        """The progress line's mention of the plan or the analysis running beside, while it runs."""
        note = ""
        if self._planning is not None and not self._planning.done():
            note += "; planning beside it"
        if self._beside is not None and not self._beside.done():
            note += f"; analysing iteration {it.number - 1} beside it"
        return note

    async def _await_beside(self, it: _Iteration) -> CombinedAnalysisResult | Ending | None:
        """The analysis of the iteration before (None: none ran beside)."""
        if self._beside is None:
            return None
        if not self._beside.done():
            self._progress(
                f"{it.label}: waiting for the analysis of iteration {it.number - 1}", it.percentage
            )
        advice = await self._beside
        self._beside = None
        return advice

    async def _drop_beside(self) -> None:
        """The tests are the judge: a verdict still to come is moot (stopped, unrecorded)."""
        if self._beside is not None:
            await _stop(self._beside)
            self._beside = None

    # -- the steps ---------------------------------------------------------------------------
    async def _start(self) -> _Iteration | Ending:
        """The first iteration, at once: the goal on the files the user chose, else on the
        files the index ranks best for it (Aider's repo map shows it the rest). A plan runs
        beside that edit when it still helps (`_needs_plan`); only when the index offers no
        file at all does the plan come first (there would be nothing to edit)."""
        chosen = self._editor_files()
        if isinstance(chosen, Ending):
            return chosen
        self._chosen = list(chosen)
        # Aider's start-up (seconds) overlaps the index and the plan instead of delaying the edit
        self._warm_up = asyncio.create_task(self.app.start_aider())
        self._command = self.test_command or self.app.settings.test_command or ""
        if self._command:
            self._suite_seconds = self.app.suite_seconds(self._command)
            if self._tests_first():
                self._before = asyncio.create_task(self._run_before(self._command))
        matches = [] if chosen and not self._needs_plan(chosen, True) else await self._index(chosen)
        matches = self._editable(matches)
        files, confident = (chosen, True) if chosen else _pick(matches)
        relevant = [m.source_path for m in matches if m.source_path]
        if not files:
            return await self._plan_first(chosen, relevant)
        if self._needs_plan(chosen, confident):
            self._planning = asyncio.create_task(self._make_plan(chosen, relevant))
        context = self.context.strip()
        return self._first((f"{self.goal}\n\n{context}" if context else self.goal), files)

    def _tests_first(self) -> bool:
        """Whether the suite runs before the first edit: not when it is known (from an earlier
        run here) to take longer than the first edit would wait for it once Aider is ready.
        Where Aider is ready already (a warm server, the one place such a time is known) it
        would only be stopped; where it is starting, every run of a new process, it is free."""
        if not self.app.settings.tests_before_first_edit:
            return False
        return self._suite_seconds is None or self._suite_seconds <= BEFORE_GRACE_S

    async def _run_before(self, command: str) -> CommandRun:
        """The whole suite before any edit: what fails now (a run stopped says so)."""
        self._event(TestRunStarted(iteration=1, command=command, scope=SuiteScope.WHOLE, before_edit=True))
        try:
            run = await self.app.run_tests(command)
        except asyncio.CancelledError:
            why = "the run was cancelled"
            if self._before_waited:  # stopped on purpose: no failure
                why = f"Aider was ready {BEFORE_GRACE_S:g} s before it: the first edit went on without it"
            unfinished = CommandRun(command=command)
            self._event(_test_finished(1, SuiteScope.WHOLE, command, unfinished, why, before_edit=True))
            raise
        self._event(_test_finished(1, SuiteScope.WHOLE, command, run, before_edit=True))
        return run

    async def _failures_before(self, it: _Iteration) -> None:
        """The first edit sees what fails before it is made: the suite run at the start (beside
        Aider's start and the index, which the edit waits for anyway), its failing output added
        to the goal as a retry's is. Aider's own loop learns it only after its first attempt,
        one model call later. The edit goes as soon as the run ends; once Aider is ready it
        waits for it at most BEFORE_GRACE_S (a slower suite is stopped and the edit goes on with
        the goal alone). The tests after the edit are chosen as before: this run's time, taken
        beside Aider's start, says little of the suite's own."""
        task = self._before  # stopped by the run's end while it is still `_before` (a cancel)
        if task is None:
            return
        if not task.done() and self._warm_up is not None and not self._warm_up.done():
            self._progress(f"{it.label}: starting Aider, running the tests first", 0)
            await asyncio.wait([task, self._warm_up], return_when=asyncio.FIRST_COMPLETED)
        if not task.done():
            self._progress(f"{it.label}: running the tests before the first edit", 0)
            await asyncio.wait([task], timeout=BEFORE_GRACE_S)
        if not task.done():
            self._before_waited = True
            await _stop(task)
        self._before = None
        if task.cancelled():
            return
        run = task.result()
        if not run.ran:  # the command cannot run: the run after the edit says why
            return
        it.runs = [_suite_run(SuiteScope.WHOLE, run.command, "before the first edit: what fails now", run)]
        self._ran_before = True
        self._tests_before = judge.tests_counted(run.stdout, run.stderr)
        self._ctx.report_findings(list(run.findings))
        if run.passed:
            return
        output = _clip("\n".join(part for part in (run.stdout, run.stderr) if part.strip()), OUTPUT_FOR_AIDER)
        it.prompt = f"{it.prompt}\n\n{RUN_OUTPUT.format(command=run.command, output=output)}"
        self._instructions = it.prompt

    def _needs_plan(self, chosen: list[str], confident: bool) -> bool:
        """A plan helps when the user asked for one, when the test command is still unknown
        (the plan may name it), or when no file was chosen and the index is not confident."""
        return self.plan_requested or not self._command or (not chosen and not confident)

    async def _plan_first(self, chosen: list[str], relevant: list[str]) -> _Iteration | Ending:
        """No file to start on (none chosen, none found): the plan names them, then the edit."""
        self._progress("Planning", 0)
        plan = await self._make_plan(chosen, relevant)
        if isinstance(plan, Ending):
            return plan
        command = self._with_command(plan)
        if isinstance(command, Ending):
            return command
        return self._first(plan.instructions, list(plan.files))

    def _with_command(self, plan: DevelopmentPlan | None) -> str | Ending:
        """The test command once the plan is known: the request's or the setting's, else the
        plan's, else the end of the run naming the setting."""
        command = self._command or (plan.test_command if plan else None) or ""
        if not command:
            return _failure(
                ErrorReason.CONFIGURATION_ERROR,
                f"no test command: pass one, or set {self.app.settings.name('testCommand')}",
            )
        self._command = command
        return command

    def _first(self, prompt: str, files: list[str]) -> _Iteration:
        self._instructions = prompt
        return _Iteration(1, self.max_iterations, prompt, files)

    def _editor_files(self) -> list[str] | Ending:
        if self.file_context in (None, "", []):
            return []
        try:
            return TypeAdapter(OptionalPathList).validate_python(self.file_context) or []
        except ValidationError as exc:
            message = exc.errors()[0]["msg"]
            return _failure(ErrorReason.INPUT_VALIDATION_FAILURE, f"file_context: {message}")

    async def _index(self, chosen: list[str]) -> list[MatchItem]:
        """The index's best files for the goal; the files open in the editor are candidates
        (a small boost), never the answer: the file that merely happens to be open is a hint."""
        found = await self.app.find_context(
            ContextGenerationInput(
                query=self.goal,
                open_files=list(self._ctx.open_files),
                target_files=chosen,
                max_results=MEMORY_FILES,
            )
        )
        return list(found.matches)

    def _editable(self, matches: list[MatchItem]) -> list[MatchItem]:
        """The index's files an edit may take: not those the editor holds with unsaved changes
        (the edit would refuse the whole set; the user's buffer is theirs)."""
        held: set[str] = set()
        for path in self.app.unsaved():
            with contextlib.suppress(AccessDenied):
                held.add(self.app.relative_path(path))
        return [m for m in matches if m.source_path not in held]

    async def _make_plan(self, chosen: list[str], relevant: list[str]) -> DevelopmentPlan | Ending:
        """The planner gets the goal, the user's context, the open files and the index's best."""
        open_files = list(self._ctx.open_files)
        parts = [self.context.strip() or "(none)"]
        if open_files:
            parts.append("Files open in the editor: " + ", ".join(open_files))
        if relevant:
            parts.append("Workspace files most relevant to the goal: " + ", ".join(relevant))
        result = await self.app.handle_task_command(
            PLAN_TEMPLATE,
            {"goal": self.goal, "context_string": "\n".join(parts), "file_context": chosen or None},
        )
        if not result.ok:
            return _step_failed(result, "planning failed")
        plan = result.parsed_content
        if not isinstance(plan, DevelopmentPlan):
            plan = DevelopmentPlan.model_validate_json(result.content)
        self.plan = plan
        self._event(PlanMade(plan=plan))
        return plan

    async def _await_plan(self, it: _Iteration) -> DevelopmentPlan | Ending | None:
        """The plan running beside the first edit (None: none runs, or it was used already)."""
        if self._planning is None:
            return None
        if not self._planning.done():
            self._progress(f"{it.label}: waiting for the plan", it.percentage)
        return await self._planning

    async def _shape(self, it: _Iteration, following: _Iteration) -> _Iteration | Ending:
        """The plan that ran beside the first edit shapes the iteration after it: its
        instructions join the message, its files the chat."""
        plan = await self._await_plan(it)
        self._planning = None
        if plan is None or isinstance(plan, Ending):  # a failed plan ends a red run (its reason)
            return following if plan is None else plan
        following.prompt = f"{following.prompt}\n\n{plan.instructions}"
        following.files = [*following.files, *(p for p in plan.files if p not in following.files)]
        return following

    def _plan_failed(self, plan: DevelopmentPlan | Ending | None) -> None:
        """A plan beside the first edit that failed while the tests went green: the run ends
        on the tests, and says so (the result, the CLI, ACP's thoughts) instead of keeping
        quiet about a planning model that answers no plan (a red run ends on that failure)."""
        if not isinstance(plan, Ending):
            return
        self.plan_problem = plan.message
        self._event(PlanFailed(reason=plan.message))

    async def _edit(self, it: _Iteration) -> AiderEditOutcome | Ending:
        """One Aider edit, a turn of the run's chat, through the host (the executor's checks and
        checkpoint apply); the files it edited are the iteration's from now on. An edit that
        changed nothing is a failed attempt (retried); any other failure ends the run."""
        self._progress(f"{it.label}: Aider is editing{self._beside_note(it)}", it.percentage)
        self._event(EditStarted(iteration=it.number, files=list(it.files)))
        # a chat Aider's server lost (it restarted) starts again, told the instructions first
        outcome = await self.app.edit(
            it.prompt,
            it.files,
            chat=True,
            session_id=self._chat,
            on_reply=self._ctx.report_reply,
            retell=self._instructions,
        )
        self.final_aider = outcome
        self._event(_edit_finished(it, outcome))
        self._chat = outcome.session_id or self._chat
        it.outcome = outcome
        it.files = _edited_files(list(outcome.files or it.files), outcome)
        if self.plan is None and it.number == 1:  # the plan the index and Aider's reply imply
            command = self._command or None
            self.plan = DevelopmentPlan(
                instructions=it.prompt, files=it.files, test_command=command, implied=True
            )
        self._record(it)
        error = outcome.error
        if error is not None and not _no_change(outcome):
            return _failure(error.reason, f"the Aider edit failed: {error.message}", details=error.message)
        return outcome

    async def _test(self, it: _Iteration) -> CommandRun | Ending:
        """The tests after an edit: only those that failed in the last run first (when the
        runner can be narrowed: suite/narrow.py), then, once they pass, the rest of the suite
        (pytest) or the whole suite: only a whole suite's worth of green calls it green."""
        if not self._command:  # the plan running beside names it
            plan = await self._await_plan(it)
            command = plan if isinstance(plan, Ending) else self._with_command(plan)
            if isinstance(command, Ending):
                return command
        phase = f"{it.label}: running {{}}{self._beside_note(it)}"
        runs = list(it.runs)  # the run before the first edit, in the first iteration
        narrowed = self._narrowed()
        why = self._whole_suite_reason()
        if narrowed is not None:
            first = await self._failing_first(it, narrowed, phase, runs)
            if not isinstance(first, str):
                return first
            why = first
        self._progress(phase.format("the whole suite"), it.percentage)
        whole = await self._run_suite(it, SuiteScope.WHOLE, self._command)
        if isinstance(whole, Ending):
            return whole
        runs.append(_suite_run(SuiteScope.WHOLE, self._command, why, whole))
        return self._tested(it, whole, runs)

    async def _failing_first(
        self, it: _Iteration, narrowed: Narrowed, phase: str, runs: list[SuiteRun]
    ) -> CommandRun | Ending | str:
        """The failing tests alone, then, once they pass, the rest of the suite. The run that
        decided the iteration, or why the whole suite must still run."""
        self._progress(phase.format(narrowed.description), it.percentage)
        run = await self._run_suite(it, SuiteScope.FAILING, narrowed.command)
        if isinstance(run, Ending):
            return run
        why_narrowed = "they failed in the last run"
        runs.append(_suite_run(SuiteScope.FAILING, narrowed.command, why_narrowed, run, narrowed.tests))
        if run.passed:
            rest = rest_of_suite(self._command, narrowed.tests, shell=self.app.settings.test_shell)
            if rest is None:
                return "the tests that failed pass now"
            return await self._rest(it, run, rest, phase, runs)
        if run.timed_out or narrow(self._command, _output(run)) is not None:
            return self._tested(it, run, runs)
        # it failed without naming a failing test (renamed, gone): the suite decides
        return f"the {narrowed.description} did not run as named (exit code {run.exit_code})"

    async def _rest(
        self, it: _Iteration, failing: CommandRun, rest: Narrowed, phase: str, runs: list[SuiteRun]
    ) -> CommandRun | Ending | str:
        """The suite without the tests that just passed: with them, a whole suite's worth. It
        decides when it left out exactly those (pytest deselects by prefix); else the whole
        suite runs."""
        self._progress(phase.format("the rest of the suite"), it.percentage)
        run = await self._run_suite(it, SuiteScope.REST, rest.command)
        if isinstance(run, Ending):
            return run
        why = "the tests that failed pass now"
        runs.append(_suite_run(SuiteScope.REST, rest.command, why, run, rest.tests))
        exact = deselected_exactly(_output(run), len(rest.tests))
        if exact and run.exit_code == PYTEST_NO_TESTS:  # nothing else in the suite
            return self._tested(it, failing, runs)
        if exact or not (run.passed or run.exit_code == PYTEST_NO_TESTS):
            return self._tested(it, run, runs)  # green, or red: a test failed
        return "the rest of the suite left out more tests than those that passed"

    def _narrowed(self) -> Narrowed | None:
        if self._failed_output is None or not self.app.settings.failing_tests_first or self._quick_suite():
            return None
        return narrow(self._command, self._failed_output, shell=self.app.settings.test_shell)

    def _quick_suite(self) -> bool:
        return self._suite_seconds is not None and self._suite_seconds < QUICK_SUITE_S

    def _whole_suite_reason(self) -> str:
        """Why the whole suite runs (the iteration record says it)."""
        if self._failed_output is None:
            if self._tested_once:
                return "the last run passed"
            return "the first edit's tests" if self._ran_before else "no earlier failing run"
        if not self.app.settings.failing_tests_first:
            return f"{self.app.settings.name('failingTestsFirst')} is off"
        if self._quick_suite():
            return f"the whole suite takes under {QUICK_SUITE_S:g} s: it decides in one run"
        return "the runner cannot be narrowed, or its output named no failing test"

    async def _run_suite(self, it: _Iteration, scope: SuiteScope, command: str) -> CommandRun | Ending:
        self._event(TestRunStarted(iteration=it.number, command=command, scope=scope))
        run = await self.app.run_tests(command, fallback_files=it.files)
        self._event(_test_finished(it.number, scope, command, run))
        if scope is SuiteScope.WHOLE and run.ran:
            self._suite_seconds = run.duration_s
        if not run.ran and run.error is not None:  # the command could not run at all
            message = run.error.message
            return _failure(run.error.reason, f"the test command could not run: {message}", message)
        return run

    def _tested(self, it: _Iteration, run: CommandRun, runs: list[SuiteRun]) -> CommandRun:
        """Record the iteration's runs; `run`, the last, decides it."""
        self._tested_once = True
        self._failed_output = None if run.passed else _output(run)
        it.test, it.runs = run, runs
        self._record(it)
        return run

    async def _analyse(self, it: _Iteration) -> CombinedAnalysisResult | Ending:
        """The analysis of an iteration (its edit and test run), judged by the tests: a SUCCESS
        over red tests is recorded as overruled and never ends the run."""
        test = it.test
        result = await self.app.handle_task_command(ANALYSIS_TEMPLATE, self._analysis_params(it))
        if not result.ok:
            return _step_failed(result, "the analysis failed")
        analysis = result.parsed_content
        if not isinstance(analysis, CombinedAnalysisResult):
            analysis = CombinedAnalysisResult.model_validate_json(result.content)
        passed = test is not None and test.passed and it.judge is None
        if analysis.verdict is Verdict.SUCCESS and it.judge is not None:
            it.overruled = "the analysis said SUCCESS, which tests the run changed cannot confirm"
        elif analysis.verdict is Verdict.SUCCESS and not passed:
            it.overruled = f"the analysis said SUCCESS over {_state(test)}; the tests are the judge"
        it.analysis = analysis
        self._record(it)
        self.analysis = analysis
        self._event(AnalysisMade(iteration=it.number, analysis=analysis, overruled=it.overruled))
        latest = self.iterations[-1]
        current = latest.iteration == it.number or latest.test is None  # no later test run shown
        if current and (not passed or analysis.verdict is not Verdict.SUCCESS):
            found = [*test.findings, *_judge_findings(it.judge)] if test else []
            self._ctx.report_findings([*found, *self._analysis_findings(analysis, it.files)])
        return analysis

    def _analysis_params(self, it: _Iteration) -> dict[str, Any]:
        """What the analysis template is told of an iteration."""
        test, aider = it.test, it.outcome
        if test is None:
            exit_code = "none (not run: the edit changed no file)"
        elif test.exit_code is None:
            exit_code = "none (killed at the timeout)"
        elif it.judge is not None:
            exit_code = f"{test.exit_code}, but {it.judge.message}"
        else:
            exit_code = str(test.exit_code)
        return {
            "original_goal": self.goal,
            "initial_task_context": self.context or "(none)",
            "aider_instructions": it.prompt,
            "aider_status": _aider_status(aider),
            "aider_diff": (aider.diff if aider is not None else "") or "(no change)",
            "test_command": self._command,
            "test_stdout": _clip(test.stdout) if test else "",
            "test_stderr": _clip(test.stderr) if test else "",
            "test_exit_code": exit_code,
            "previous_files": it.files,
            "iteration": it.number,
            "max_retries": self.max_iterations,
        }

    def _retry_prompt(self, it: _Iteration, advice: CombinedAnalysisResult | None) -> str:
        """What the next edit sends Aider: the failing output as Aider's own loop sends it (or
        that the last reply changed nothing), the latest analysis's instructions, and the
        instructions again when Aider keeps no chat (the server has no sessions)."""
        test, outcome = it.test, it.outcome
        if test is None:
            why = f" ({outcome.error.message})" if outcome is not None and outcome.error else ""
            message = (
                f"Your last reply changed no file{why}. Make the change now, as the edit format requires."
            )
        else:
            output = "\n".join(part for part in (test.stdout, test.stderr) if part.strip())
            if test.timed_out:
                output += f"\n[killed at the timeout after {test.duration_s:.0f} s]"
            # the command that ran: the failing tests alone, or the whole suite
            message = RUN_OUTPUT.format(
                command=test.command or self._command, output=_clip(output, OUTPUT_FOR_AIDER)
            )
            if it.judge is not None:
                message += f"\n{_judge_prompt(it.judge)}"
        if advice is not None and advice.verdict is Verdict.RETRY and advice.next_prompt:
            message += f"\n\n{advice.next_prompt}"
        if self._chat is None:
            message = f"{self._instructions}\n\n{message}"
        return message

    # -- helpers -----------------------------------------------------------------------------
    def _progress(self, phase: str, percentage: int) -> None:
        self._ctx.report_progress(progress_message(phase, self._usage()), percentage)

    def _event(self, event: WorkflowEvent) -> None:
        self._ctx.report_event(event)

    def _record(self, it: _Iteration) -> None:
        """The iteration's entry in the history, as its steps have filled it in so far (a new
        record, not a change; an analysis may answer while the next iteration runs)."""
        self.iterations[it.number - 1] = it.record()

    def _over_budget(self) -> Ending | None:
        """Before each model call: the end of the run once it has spent its budget (the rule
        and the message are the Budget's, as in the LLM layer)."""
        settings = self.app.settings
        cap = Budget(max_tokens=settings.budget.max_tokens, max_cost=settings.budget.max_cost)
        # planning/analysis and Aider together
        why = cap.exceeded(
            self._usage().all, settings.name("budget.maxTokens"), settings.name("budget.maxCost")
        )
        return None if why is None else _failure(ErrorReason.BUDGET_EXCEEDED, why)

    def _usage(self) -> WorkflowUsage:
        """What this run spent so far (the session's totals minus those at the start)."""
        if self._usage_start is None:
            return WorkflowUsage()
        return self.app.spent().since(self._usage_start)

    def usage(self) -> WorkflowUsage:
        """Tokens and cost spent so far (for a live display)."""
        return self._usage()

    def _analysis_findings(self, analysis: CombinedAnalysisResult, files: list[str]) -> list[Finding]:
        findings = []
        for path in files:
            try:
                rel = self.app.relative_path(path)
            except AccessDenied:
                continue
            if (self.app.workspace / rel).is_file():
                findings.append(
                    Finding(
                        path=rel,
                        message=f"{analysis.verdict.value}: {analysis.message}",
                        severity=Severity.INFORMATION,
                        source="analysis",
                    )
                )
        return findings

    def _settle(self, checkpoint: Checkpoint) -> None:
        """Drop the run's checkpoint when nothing it covers changed (undo would do nothing)."""
        try:
            if checkpoint.files and self.app.checkpoints.unchanged(checkpoint):
                self.app.checkpoints.discard(checkpoint)
                self.checkpoint = None
            elif not checkpoint.files:
                self.checkpoint = None
        except (OSError, AccessDenied):
            log.debug("could not settle the workflow checkpoint", exc_info=True)

    def _net_files(self) -> dict[str, tuple[bytes | None, bytes | None]]:
        """Each file the run changed: its bytes before the run first touched it and now (None:
        absent). The run's checkpoint holds the first (every edit adds its files to it)."""
        checkpoint = self.checkpoint
        sides: dict[str, tuple[bytes | None, bytes | None]] = {}
        if checkpoint is None:
            return sides
        for rel in checkpoint.paths:
            try:
                before = self.app.checkpoints.content_before(checkpoint, rel)
                real = self.app.resolve_path(rel)
                after = real.read_bytes() if real.is_file() else None
            except (OSError, AccessDenied):
                continue
            if after != before:
                sides[rel] = (before, after)
        return sides

    def changes(self) -> RunChanges:
        """What the run changed against the files before it, its diff in the edits' format
        (no checkpoint left means nothing changed)."""
        if self.checkpoint is None:
            return RunChanges()
        sides = self._net_files()
        return RunChanges(
            changed_files=tuple(rel for rel, (before, _) in sides.items() if before is not None),
            created_files=tuple(rel for rel, (before, _) in sides.items() if before is None),
            diff="".join(unified_diff(rel, before, after) for rel, (before, after) in sides.items()),
            checkpoint_id=self.checkpoint.id,
        )

    def _result(self, ending: Ending) -> WorkflowResult:
        content = ending.message
        if self.plan_problem is not None:
            content += f" (no plan was made beside the first edit: {self.plan_problem})"
        return WorkflowResult(
            status=ending.status,
            content=content,
            plan_problem=self.plan_problem,
            reason=ending.reason,
            details=ending.details,
            plan=self.plan,
            final_aider_result=_aider_summary(self.final_aider) if self.final_aider else None,
            analysis_result=self.analysis,
            iterations=self.iterations,
            usage=self._usage(),
            judge=self.iterations[-1].judge
            if ending.status is WorkflowStatus.FAILURE and self.iterations
            else None,
        )


def _step_failed(result: TaskResult, what: str) -> Ending:
    """A FAILED step (the plan, the analysis) ends the run with its reason (over budget →
    budget_exceeded)."""
    error = result.error
    reason = error.reason if error else ErrorReason.UNEXPECTED_ERROR
    if result.budget_exhausted:  # the LLM layer's refusal (llm/interaction.py)
        reason = ErrorReason.BUDGET_EXCEEDED
    message = error.message if error else result.content
    return _failure(reason, f"{what}: {message}", details=result.content)


def _gave_up(analysis: CombinedAnalysisResult) -> Ending:
    return _failure(ErrorReason.GOAL_NOT_REACHED, f"the analysis gave up: {analysis.message}")


def _deciding_run(run: CommandRun, suite: SuiteRun) -> DecidingRun:
    """The record of the run that decided an iteration (`suite`: how it was asked for)."""
    return DecidingRun(
        command=suite.command,
        scope=suite.scope,
        exit_code=run.exit_code,
        timed_out=run.timed_out,
        duration_s=run.duration_s,
        stdout=run.stdout,
        stderr=run.stderr,
        summary=summary_line(run.stdout, run.stderr),
    )


def _edit_finished(it: _Iteration, outcome: AiderEditOutcome) -> EditFinished:
    """The event of an edit's answer (before its files join the iteration's)."""
    error = outcome.error.message if outcome.error is not None else None
    return EditFinished(
        iteration=it.number,
        files=list(it.files),
        diff=outcome.diff,
        changed_files=_changed_files(outcome),
        created_files=list(outcome.created_files),
        reply=outcome.reply,
        error=error,
        no_change=not _changed(outcome),
    )


def _test_finished(
    iteration: int,
    scope: SuiteScope,
    command: str,
    run: CommandRun,
    stopped: str | None = None,
    *,
    before_edit: bool = False,
) -> TestRunFinished:
    """The event of a finished run (`stopped`: why we stopped it before its end)."""
    error = run.error.message if run.error is not None and not run.timed_out else None
    return TestRunFinished(
        iteration=iteration,
        command=command,
        scope=scope,
        before_edit=before_edit,
        exit_code=run.exit_code,
        timed_out=run.timed_out,
        stdout=run.stdout,
        stderr=run.stderr,
        error=error,
        stopped=stopped,
        findings=list(run.findings),
    )


def _aider_summary(outcome: AiderEditOutcome) -> EditSummary:
    """What the history keeps of an Aider edit: an edit that changed nothing is FAILED (a
    failed attempt), its error Aider's or "changed nothing"."""
    failed = outcome.error is not None or not _changed(outcome)
    error = outcome.error
    if error is None and failed:
        error = TaskError(reason=ErrorReason.TOOL_EXECUTION_ERROR, message=_aider_status(outcome))
    return EditSummary(
        status=TaskStatus.FAILED if failed else TaskStatus.COMPLETE,
        diff=outcome.diff,
        changed_files=_changed_files(outcome),
        created_files=list(outcome.created_files),
        usage=outcome.usage,
        error=error,
        session_id=outcome.session_id,
    )


def _changed_files(outcome: AiderEditOutcome) -> list[str]:
    """The files an edit changed (not those it created), in the files it was given and outside
    them: the one record the history, the events and every front end show."""
    done = {*outcome.changed_files, *outcome.created_files}
    return [*outcome.changed_files, *(path for path in outcome.files_outside_editable if path not in done)]


def _changed(outcome: AiderEditOutcome) -> bool:
    """The edit changed or created a file, in its chat or outside it (else it is a failed
    attempt)."""
    return bool(outcome.changed_files or outcome.created_files or outcome.files_outside_editable)


def _no_change(outcome: AiderEditOutcome) -> bool:
    """Aider answered (a well-formed reply) but changed no file: a failed attempt to retry,
    not the end of the run; unless its model's endpoint refused (the bridge names it), which
    a retry would only meet again."""
    refused = outcome.error is not None and outcome.error.reason is not ErrorReason.TOOL_EXECUTION_ERROR
    return outcome.server_success is not None and not _changed(outcome) and not refused


def _aider_status(outcome: AiderEditOutcome | None) -> str:
    """The analysis's one line about the edit."""
    if outcome is None:
        return "failed"
    if _changed(outcome):
        return "edited the files"
    detail = outcome.error.message if outcome.error else "Aider made no change to the files"
    reply = outcome.reply.strip()
    return f"changed nothing: {detail}" + (f"; Aider replied: {_clip(reply, 2000)}" if reply else "")


def _state(test: CommandRun | None, problem: JudgeProblem | None = None) -> str:
    """The tests' state in words, for a result message."""
    if problem is not None:
        return problem.message
    if test is None:
        return "an edit that changed nothing"
    if test.timed_out or test.exit_code is None:
        return "a test run killed at its timeout"
    return f"failing tests (exit code {test.exit_code})"


def _judge_findings(problem: JudgeProblem | None) -> list[Finding]:
    """The test files the run changed, each with why its passing tests are no pass: shown on
    the file (the editor's Problems panel, the CLI's lines)."""
    if problem is None:
        return []
    return [
        Finding(path=path, message=problem.message, source="aider-lsp judge") for path in problem.test_files
    ]


def _judge_prompt(problem: JudgeProblem) -> str:
    """What the next edit is told when passing tests were not the judge they should be."""
    files = f" ({', '.join(problem.test_files)})" if problem.test_files else ""
    return (
        f"That is not a pass: {problem.message.removeprefix('the tests pass, but ')}. The tests are the "
        f"judge: put back the tests you changed or removed{files} exactly as they were, and make them "
        "pass by changing the code under test, not the tests."
    )


def _edited_files(files: list[str], outcome: AiderEditOutcome) -> list[str]:
    """The iteration's files and those Aider edited or created outside them (its chat holds
    them now: the next turn's checks and undo must cover them too)."""
    extra = [*outcome.changed_files, *outcome.files_outside_editable, *outcome.created_files]
    return [*files, *dict.fromkeys(path for path in extra if path not in files)]


def _pick(matches: Sequence[MatchItem]) -> tuple[list[str], bool]:
    """The index's files for the first edit and whether it is confident about them.

    The files: those scoring at least PICK_SHARE of the best, at most INDEX_FILES. Confident:
    the best scores at least CONFIDENT_SCORE and one of the files matched the goal by a
    definition (the goal names a function or class the file defines) or by its name (the goal
    mentions the file). Words of the text or the path alone are not enough: "make the tests
    pass" finds every test file by "tests", which says nothing about what to change."""
    ranked = [m for m in matches if m.source_path]
    if not ranked:
        return [], False
    floor = ranked[0].relevance_score * PICK_SHARE
    picked = [m for m in ranked[:INDEX_FILES] if m.relevance_score >= floor]
    confident = ranked[0].relevance_score >= CONFIDENT_SCORE and any(_specific(m) for m in picked)
    return [m.source_path for m in picked if m.source_path], confident


def _specific(match: MatchItem) -> bool:
    """The index found the file by a definition or by its name, not by common words alone."""
    signals = (match.metadata or {}).get("signals", {})
    return bool(signals.get("definition") or signals.get("mentioned") or signals.get("target"))


def _with_files(files: list[str], advice: CombinedAnalysisResult | None) -> list[str]:
    """The files for the next edit: these plus what the latest analysis named."""
    extra = [path for path in (advice.next_files or []) if path not in files] if advice else []
    return [*files, *extra]


async def _stop(task: asyncio.Task[Any]) -> None:
    """Cancel a step running beside and wait until it has stopped; its outcome is dropped
    (retrieved, so asyncio does not report it as never retrieved)."""
    task.cancel()
    await asyncio.wait([task])
    if not task.cancelled():
        task.exception()


def _output(run: CommandRun) -> str:
    return f"{run.stdout}\n{run.stderr}"


def _suite_run(
    scope: SuiteScope, command: str, why: str, run: CommandRun, tests: Sequence[str] = ()
) -> SuiteRun:
    return SuiteRun(
        scope=scope,
        command=command,
        why=why,
        tests=list(tests),
        exit_code=run.exit_code,
        duration_s=run.duration_s,
    )


def _clip(text: str, limit: int = OUTPUT_FOR_ANALYSIS) -> str:
    """Head and tail of a long output: the failure is usually at the end."""
    if len(text) <= limit:
        return text
    half = limit // 2
    return f"{text[:half]}\n[... {len(text) - limit} characters omitted ...]\n{text[-half:]}"
