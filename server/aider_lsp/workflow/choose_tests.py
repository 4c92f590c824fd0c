"""Which tests a run runs, and when: the whole suite before the first edit (beside Aider's
start), then after each edit the tests that failed first and, once they pass, the rest of the
suite or the whole of it; only a whole suite's worth of green calls an iteration green.

Why a class of its own: the choice rests on what earlier runs said (the last failing output,
how long the suite takes, whether a run before the first edit counted the tests), which is
this object's state; the loop only asks "test this iteration" and reads the deciding run.
"""

from __future__ import annotations

import asyncio

from ..config.settings import Settings
from ..models import (
    CommandRun,
    DevelopmentPlan,
    ErrorReason,
    JudgeProblem,
    SuiteRun,
    SuiteScope,
    TestRunStarted,
)
from ..suite import judge
from ..suite.narrow import Narrowed, deselected_exactly, narrow, rest_of_suite
from .host import WorkflowHost
from .iteration import Ending, Iteration, failure, stop
from .records import suite_run, test_finished
from .report import RunReport

PYTEST_NO_TESTS = 5  # pytest's exit code when it ran no test (all were deselected)
# once Aider is ready, the longest the first edit waits for the tests run before it
BEFORE_GRACE_S = 1.0
# a whole suite faster than this runs whole after an edit. Why: the failing tests alone save at
# most the suite's time minus a runner's start-up (pytest's 0.5-1.5 s) when they still fail, and
# cost that start-up and their own time when they pass (the whole suite runs then too); a first
# edit that saw the failures passes often enough that a suite of a few seconds is better run whole
QUICK_SUITE_S = 3.0


class TestChoice:
    """The test runs of one workflow run; `command` is its test command ("" until known)."""

    __test__ = False  # not a pytest class

    def __init__(self, host: WorkflowHost, report: RunReport) -> None:
        self.host = host
        self.report = report
        self.command = ""
        self.tests_before: int | None = None  # how many tests the suite ran before any edit
        self._before: asyncio.Task[CommandRun] | None = None  # that run, beside Aider's start
        self._suite_seconds: float | None = None  # how long the last whole suite took
        self._failed_output: str | None = None  # the last test run's output, when it failed
        self._tested_once = False
        self._ran_before = False  # the suite ran before the first edit (and was not stopped)
        self._before_waited = False  # that run was stopped for taking longer than the grace

    @property
    def _settings(self) -> Settings:
        return self.host.settings

    def start(self) -> None:
        """At the run's start: the suite's time from an earlier run here, and the suite run
        before the first edit when it goes first (`tests_first`)."""
        if not self.command:
            return
        self._suite_seconds = self.host.suite_seconds(self.command)
        if self.tests_first():
            self._before = asyncio.create_task(self._run_before(self.command))

    def tests_first(self) -> bool:
        """Whether the suite runs before the first edit: not when it is known (from an earlier
        run here) to take longer than the first edit would wait for it once Aider is ready.
        Where Aider is ready already (a warm server, the one place such a time is known) it
        would only be stopped; where it is starting, every run of a new process, it is free."""
        if not self._settings.tests_before_first_edit:
            return False
        return self._suite_seconds is None or self._suite_seconds <= BEFORE_GRACE_S

    def with_plan(self, plan: DevelopmentPlan | None) -> str | Ending:
        """The test command once the plan is known: the request's or the setting's, else the
        plan's, else the end of the run naming the setting."""
        command = self.command or (plan.test_command if plan else None) or ""
        if not command:
            setting = self._settings.name("testCommand")
            return failure(ErrorReason.CONFIGURATION_ERROR, f"no test command: pass one, or set {setting}")
        self.command = command
        return command

    def judge(
        self, it: Iteration, changes: dict[str, tuple[bytes | None, bytes | None]], users_files: list[str]
    ) -> JudgeProblem | None:
        """Why the passing tests of `it` cannot end the run (suite/judge.py): they ran no test,
        fewer than before the run, or the run's `changes` changed the existing tests. The counts
        are compared only for a run of the whole suite (the rest of a suite runs fewer by design)."""
        test = it.test
        whole = bool(it.runs) and it.runs[-1].scope is SuiteScope.WHOLE
        counted = judge.tests_counted(test.stdout, test.stderr) if test is not None and whole else None
        return judge.check(changes, counted=counted, tests_before=self.tests_before, users_files=users_files)

    async def stop(self) -> None:
        """Stop the run before the first edit if it still runs (the run ends or is cancelled)."""
        if self._before is not None:
            await stop(self._before)
        self._before = None

    async def _run_before(self, command: str) -> CommandRun:
        """The whole suite before any edit: what fails now (a run stopped says so)."""
        self.report.event(
            TestRunStarted(iteration=1, command=command, scope=SuiteScope.WHOLE, before_edit=True)
        )
        try:
            run = await self.host.run_tests(command)
        except asyncio.CancelledError:
            why = "the run was cancelled"
            if self._before_waited:  # stopped on purpose: no failure
                why = f"Aider was ready {BEFORE_GRACE_S:g} s before it: the first edit went on without it"
            unfinished = CommandRun(command=command)
            self.report.event(test_finished(1, SuiteScope.WHOLE, command, unfinished, why, before_edit=True))
            raise
        self.report.event(test_finished(1, SuiteScope.WHOLE, command, run, before_edit=True))
        return run

    async def failures_before(self, it: Iteration, warm_up: asyncio.Task[bool] | None) -> CommandRun | None:
        """The suite run at the start (beside Aider's start and the index, which the edit waits
        for anyway), once it ended: its run is the first iteration's first, its failures shown.
        The edit goes as
        soon as the run ends; once Aider is ready it waits for it at most BEFORE_GRACE_S (a
        slower suite is stopped: None, as when no run went first or it could not run). The
        tests after the edit are chosen as before: this run's time, taken beside Aider's
        start, says little of the suite's own."""
        task = self._before  # stopped by the run's end while it is still `_before` (a cancel)
        if task is None:
            return None
        if not task.done() and warm_up is not None and not warm_up.done():
            self.report.progress(f"{it.label}: starting Aider, running the tests first", 0)
            await asyncio.wait([task, warm_up], return_when=asyncio.FIRST_COMPLETED)
        if not task.done():
            self.report.progress(f"{it.label}: running the tests before the first edit", 0)
            await asyncio.wait([task], timeout=BEFORE_GRACE_S)
        if not task.done():
            self._before_waited = True
            await stop(task)
        self._before = None
        if task.cancelled():
            return None
        run = task.result()
        if not run.ran:  # the command cannot run: the run after the edit says why
            return None
        it.runs = [suite_run(SuiteScope.WHOLE, run.command, "before the first edit: what fails now", run)]
        self._ran_before = True
        self.tests_before = judge.tests_counted(run.stdout, run.stderr)
        self.report.findings(list(run.findings))
        return run

    async def after_edit(self, it: Iteration, phase: str) -> CommandRun | Ending:
        """The tests after an edit: only those that failed in the last run first (when the
        runner can be narrowed: suite/narrow.py), then, once they pass, the rest of the suite
        (pytest) or the whole suite. The deciding run and the iteration's runs are set on `it`;
        `phase` words the progress, `{}` standing for the tests."""
        runs = list(it.runs)  # the run before the first edit, in the first iteration
        narrowed = self._narrowed()
        why = self._whole_suite_reason()
        if narrowed is not None:
            first = await self._failing_first(it, narrowed, phase, runs)
            if not isinstance(first, str):
                return first
            why = first
        self.report.progress(phase.format("the whole suite"), it.percentage)
        whole = await self._run_suite(it, SuiteScope.WHOLE, self.command)
        if isinstance(whole, Ending):
            return whole
        runs.append(suite_run(SuiteScope.WHOLE, self.command, why, whole))
        return self._tested(it, whole, runs)

    async def _failing_first(
        self, it: Iteration, narrowed: Narrowed, phase: str, runs: list[SuiteRun]
    ) -> CommandRun | Ending | str:
        """The failing tests alone, then, once they pass, the rest of the suite. The run that
        decided the iteration, or why the whole suite must still run."""
        self.report.progress(phase.format(narrowed.description), it.percentage)
        run = await self._run_suite(it, SuiteScope.FAILING, narrowed.command)
        if isinstance(run, Ending):
            return run
        why_narrowed = "they failed in the last run"
        runs.append(suite_run(SuiteScope.FAILING, narrowed.command, why_narrowed, run, narrowed.tests))
        if run.passed:
            rest = rest_of_suite(self.command, narrowed.tests, shell=self._settings.test_shell)
            if rest is None:
                return "the tests that failed pass now"
            return await self._rest(it, run, rest, phase, runs)
        if run.timed_out or narrow(self.command, _output(run)) is not None:
            return self._tested(it, run, runs)
        # it failed without naming a failing test (renamed, gone): the suite decides
        return f"the {narrowed.description} did not run as named (exit code {run.exit_code})"

    async def _rest(
        self, it: Iteration, failing: CommandRun, rest: Narrowed, phase: str, runs: list[SuiteRun]
    ) -> CommandRun | Ending | str:
        """The suite without the tests that just passed: with them, a whole suite's worth. It
        decides when it left out exactly those (pytest deselects by prefix); else the whole
        suite runs."""
        self.report.progress(phase.format("the rest of the suite"), it.percentage)
        run = await self._run_suite(it, SuiteScope.REST, rest.command)
        if isinstance(run, Ending):
            return run
        why = "the tests that failed pass now"
        runs.append(suite_run(SuiteScope.REST, rest.command, why, run, rest.tests))
        exact = deselected_exactly(_output(run), len(rest.tests))
        if exact and run.exit_code == PYTEST_NO_TESTS:  # nothing else in the suite
            return self._tested(it, failing, runs)
        if exact or not (run.passed or run.exit_code == PYTEST_NO_TESTS):
            return self._tested(it, run, runs)  # green, or red: a test failed
        return "the rest of the suite left out more tests than those that passed"

    def _narrowed(self) -> Narrowed | None:
        if self._failed_output is None or not self._settings.failing_tests_first or self._quick_suite():
            return None
        return narrow(self.command, self._failed_output, shell=self._settings.test_shell)

    def _quick_suite(self) -> bool:
        return self._suite_seconds is not None and self._suite_seconds < QUICK_SUITE_S

    def _whole_suite_reason(self) -> str:
        """Why the whole suite runs (the iteration record says it)."""
        if self._failed_output is None:
            if self._tested_once:
                return "the last run passed"
            return "the first edit's tests" if self._ran_before else "no earlier failing run"
        if not self._settings.failing_tests_first:
            return f"{self._settings.name('failingTestsFirst')} is off"
        if self._quick_suite():
            return f"the whole suite takes under {QUICK_SUITE_S:g} s: it decides in one run"
        return "the runner cannot be narrowed, or its output named no failing test"

    async def _run_suite(self, it: Iteration, scope: SuiteScope, command: str) -> CommandRun | Ending:
        self.report.event(TestRunStarted(iteration=it.number, command=command, scope=scope))
        run = await self.host.run_tests(command, fallback_files=it.files)
        self.report.event(test_finished(it.number, scope, command, run))
        if scope is SuiteScope.WHOLE and run.ran:
            self._suite_seconds = run.duration_s
        if not run.ran and run.error is not None:  # the command could not run at all
            message = run.error.message
            return failure(run.error.reason, f"the test command could not run: {message}", message)
        return run

    def _tested(self, it: Iteration, run: CommandRun, runs: list[SuiteRun]) -> CommandRun:
        """The iteration's runs; `run`, the last, decides it."""
        self._tested_once = True
        self._failed_output = None if run.passed else _output(run)
        it.test, it.runs = run, runs
        return run


def _output(run: CommandRun) -> str:
    return f"{run.stdout}\n{run.stderr}"
