"""The coding workflow: (plan →) Aider edit → test command → (analysis) until the tests pass,
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
no plan when the editor named the files and the test command is known; one Aider chat per
run, a retry sending the failing output into it as Aider's own `--auto-test` loop does; and
the analysis of a red iteration runs beside the next edit (its FAILURE still stops the run,
its instructions reach the edit after).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from typing import Any

from pydantic import TypeAdapter, ValidationError

from aider_mcp.snapshots import unified_diff  # the edits' own diff format, for the run's diff

from ..checkpoints import Checkpoint, run_checkpoint, snapshot_files
from ..files import AccessDenied
from ..models import (
    AiderEditOutcome,
    CombinedAnalysisResult,
    CommandRun,
    ContextGenerationInput,
    DecidingRun,
    DevelopmentPlan,
    EditSummary,
    ErrorReason,
    Finding,
    OptionalPathList,
    RequestContext,
    RunChanges,
    Severity,
    SuiteRun,
    SuiteScope,
    TaskError,
    TaskResult,
    TaskStatus,
    Verdict,
    WorkflowIteration,
    WorkflowResult,
    WorkflowStatus,
    WorkflowUsage,
)
from ..test_selection import Narrowed, narrow
from .host import WorkflowHost

log = logging.getLogger(__name__)

PLAN_TEMPLATE = "user:generate-plan-from-goal"
ANALYSIS_TEMPLATE = "user:evaluate-and-retry-analysis"
MEMORY_FILES = 5
OUTPUT_FOR_ANALYSIS = 12_000  # characters of each test stream the analysis sees (head and tail)
OUTPUT_FOR_AIDER = 8_000  # characters of the failing output a retry sends Aider (head and tail)
# what Aider's own --auto-test loop sends its chat after a failing test (aider/prompts.py run_output)
RUN_OUTPUT = "I ran this command:\n\n{command}\n\nAnd got this output:\n\n{output}\n"
PROGRESS_SEPARATOR = " · spent "


def progress_message(phase: str, usage: WorkflowUsage) -> str:
    """A phase for the progress report, with what the run spent so far once it spent anything
    (planning/analysis and Aider apart and together)."""
    if usage.requests == 0 and usage.aider.edits == 0 and usage.aider.unreported == 0:
        return phase
    return f"{phase}{PROGRESS_SEPARATOR}{usage.describe()}"


def progress_phase(message: str) -> str:
    """The phase of a progress message (what `progress_message` was given)."""
    return message.split(PROGRESS_SEPARATOR, 1)[0]


class _RunEnded(Exception):
    """Internal: a step ended the run; carries the result's reason and message."""

    def __init__(self, reason: ErrorReason, message: str, details: str | None = None) -> None:
        super().__init__(message)
        self.reason = reason
        self.message = message
        self.details = details


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
    ) -> None:
        self.app = app
        self.goal = initial_goal
        self.context = initial_context
        self.test_command = test_command
        self.max_iterations = max(1, max_retries)
        self.file_context = file_context
        self.plan: DevelopmentPlan | None = None
        self.iterations: list[WorkflowIteration] = []
        self.final_aider: AiderEditOutcome | None = None
        self.analysis: CombinedAnalysisResult | None = None
        self.checkpoint: Checkpoint | None = None
        self._originals: dict[str, bytes | None] = {}
        self._usage_start: WorkflowUsage | None = None
        self._warm_up: asyncio.Task[bool] | None = None
        self._chat: str | None = None  # the run's Aider chat (None: not started, or no chats)
        self._instructions = ""  # the first edit's (repeated to a server that keeps no chat)
        self._failed_output: str | None = None  # the last test run's output, when it failed
        self._tested_once = False
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
                    result = await self._loop()
                except _RunEnded as ended:
                    result = self._result(WorkflowStatus.FAILURE, ended.message, ended.reason, ended.details)
                finally:
                    self._settle(checkpoint)
        finally:
            self.app.clear_budget()
        if self._chat is not None:  # not on cancellation: that stopped the server
            await self.app.end_chat(self._chat)
        return result

    def _progress(self, phase: str, percentage: int) -> None:
        self._ctx.report_progress(progress_message(phase, self._usage()), percentage)

    async def _loop(self) -> WorkflowResult:
        prompt, files, test_command = await self._start()
        self._instructions = prompt
        pending: asyncio.Task[CombinedAnalysisResult] | None = None
        try:
            for number in range(1, self.max_iterations + 1):
                self._check_budget()
                self.iterations.append(WorkflowIteration(iteration=number, prompt=prompt, files=files))
                label = f"Iteration {number}/{self.max_iterations}"
                step = 100 * (number - 1) // self.max_iterations
                beside = f"; analysing iteration {number - 1} beside it" if pending else ""
                self._progress(f"{label}: Aider is editing{beside}", step)
                outcome, files = await self._edit(prompt, files)
                test: CommandRun | None = None
                if _changed(outcome):
                    beside = beside if pending is not None and not pending.done() else ""
                    test = await self._test(test_command, files, f"{label}: running {{}}{beside}", step)
                    if test.passed:
                        if pending is not None:  # the tests are the judge: its verdict is moot now
                            await _stop(pending)
                            pending = None
                        done = await self._green(number, label, step, prompt, files, test_command, test)
                        if done is not None:
                            return done
                        prompt, files = self._follow(self.analysis, prompt, files)
                        continue
                    self._ctx.report_findings(list(test.findings))
                advice: CombinedAnalysisResult | None = None
                if pending is not None:  # red again: the analysis may stop the run, and advises
                    if not pending.done():
                        self._progress(f"{label}: waiting for the analysis of iteration {number - 1}", step)
                    advice = await pending
                    pending = None
                if advice is not None and advice.verdict is Verdict.FAILURE:
                    raise _RunEnded(ErrorReason.GOAL_NOT_REACHED, f"the analysis gave up: {advice.message}")
                self._check_budget()
                if number == self.max_iterations:
                    self._progress(f"{label}: analysing the result", step)
                    last = await self._analyse(number, prompt, files, test_command, outcome, test)
                    raise self._not_reached(last, number, test)
                # the next edit starts at once with the failing output; this analysis runs beside it
                pending = asyncio.create_task(
                    self._analyse(number, prompt, files, test_command, outcome, test)
                )
                prompt = self._retry_prompt(test_command, outcome, test, advice)
                files = _with_files(files, advice)
        finally:
            if pending is not None:  # an analysis still running beside (a stop or a cancel)
                await _stop(pending)
        raise AssertionError("unreachable: the last iteration always ends the run")

    async def _start(self) -> tuple[str, list[str], str]:
        """The first instructions, files and the test command: the plan's, or, when the editor
        named the files and the test command is known, the goal itself (no planning call)."""
        editor_files = self._editor_files()
        # Aider's start-up (seconds) overlaps the planning call instead of delaying the first edit
        self._warm_up = asyncio.create_task(self.app.start_aider())
        known = self.test_command or self.app.settings.test_command
        if editor_files and known:
            context = self.context.strip()
            return (f"{self.goal}\n\n{context}" if context else self.goal), editor_files, known
        self._progress("Planning", 0)
        plan = await self._make_plan(editor_files)
        test_command = self.test_command or plan.test_command or self.app.settings.test_command
        if not test_command:
            raise _RunEnded(
                ErrorReason.CONFIGURATION_ERROR,
                "no test command: pass one, or set aiderLsp.testCommand / AIDER_LSP_TEST_COMMAND",
            )
        return plan.instructions, list(plan.files or editor_files), test_command

    async def _green(
        self,
        number: int,
        label: str,
        step: int,
        prompt: str,
        files: list[str],
        test_command: str,
        test: CommandRun,
    ) -> WorkflowResult | None:
        """The tests pass: SUCCESS, unless `analyseGreenTests` asks the analysis, which may
        still say RETRY (the goal needs more: None, go on) or FAILURE."""
        if not self.app.settings.analyse_green_tests:
            return self._success(f"the tests pass (`{test_command}` exited 0 in iteration {number})")
        self._check_budget()
        self._progress(f"{label}: analysing the result", step)
        analysis = await self._analyse(number, prompt, files, test_command, self.final_aider, test)
        if analysis.verdict is Verdict.SUCCESS:
            return self._success(analysis.message)
        if analysis.verdict is Verdict.FAILURE:
            raise _RunEnded(ErrorReason.GOAL_NOT_REACHED, f"the analysis gave up: {analysis.message}")
        if number == self.max_iterations:
            raise self._not_reached(analysis, number, test)
        return None

    def _success(self, message: str) -> WorkflowResult:
        self._ctx.report_findings([])
        self._progress("Done: the goal is reached", 100)
        return self._result(WorkflowStatus.SUCCESS, message)

    def _not_reached(
        self, analysis: CombinedAnalysisResult, number: int, test: CommandRun | None
    ) -> _RunEnded:
        """The end after the last iteration (or an analysis that gave up)."""
        if analysis.verdict is Verdict.FAILURE:
            return _RunEnded(ErrorReason.GOAL_NOT_REACHED, f"the analysis gave up: {analysis.message}")
        overruled = self.iterations[number - 1].overruled
        why = overruled or analysis.message
        return _RunEnded(
            ErrorReason.MAX_RETRIES_REACHED,
            f"the goal was not reached in {self.max_iterations} iteration(s): {_state(test)}; {why}",
        )

    def _follow(
        self, analysis: CombinedAnalysisResult | None, prompt: str, files: list[str]
    ) -> tuple[str, list[str]]:
        """The next edit after a RETRY over green tests: the analysis's instructions and files."""
        if analysis is None:
            return prompt, files
        return analysis.next_prompt or prompt, list(analysis.next_files or files)

    def _retry_prompt(
        self,
        test_command: str,
        outcome: AiderEditOutcome,
        test: CommandRun | None,
        advice: CombinedAnalysisResult | None,
    ) -> str:
        """What the next edit sends Aider: the failing output as Aider's own loop sends it (or
        that the last reply changed nothing), the latest analysis's instructions, and the
        instructions again when Aider keeps no chat (the server has no sessions)."""
        if test is None:
            why = f" ({outcome.error.message})" if outcome.error else ""
            message = (
                f"Your last reply changed no file{why}. Make the change now, as the edit format requires."
            )
        else:
            output = "\n".join(part for part in (test.stdout, test.stderr) if part.strip())
            if test.timed_out:
                output += f"\n[killed at the timeout after {test.duration_s:.0f} s]"
            # the command that ran: the failing tests alone, or the whole suite
            message = RUN_OUTPUT.format(
                command=test.command or test_command, output=_clip(output, OUTPUT_FOR_AIDER)
            )
        if advice is not None and advice.verdict is Verdict.RETRY and advice.next_prompt:
            message += f"\n\n{advice.next_prompt}"
        if self._chat is None:
            message = f"{self._instructions}\n\n{message}"
        return message

    # -- steps -------------------------------------------------------------------------------
    def _editor_files(self) -> list[str]:
        if self.file_context in (None, "", []):
            return []
        try:
            return TypeAdapter(OptionalPathList).validate_python(self.file_context) or []
        except ValidationError as exc:
            message = exc.errors()[0]["msg"]
            raise _RunEnded(ErrorReason.INPUT_VALIDATION_FAILURE, f"file_context: {message}") from None

    async def _make_plan(self, editor_files: list[str]) -> DevelopmentPlan:
        """The planner gets the goal, the user's context, the open files and the index's best."""
        open_files = list(self._ctx.open_files)
        found = await self.app.find_context(
            ContextGenerationInput(
                query=self.goal,
                open_files=open_files,
                target_files=editor_files,
                max_results=MEMORY_FILES,
            )
        )
        relevant = [m.source_path for m in found.matches if m.source_path]
        parts = [self.context.strip() or "(none)"]
        if open_files:
            parts.append("Files open in the editor: " + ", ".join(open_files))
        if relevant:
            parts.append("Workspace files most relevant to the goal: " + ", ".join(relevant))
        result = await self.app.handle_task_command(
            PLAN_TEMPLATE,
            {"goal": self.goal, "context_string": "\n".join(parts), "file_context": editor_files or None},
        )
        self._stop_on_failure(result, "planning failed")
        plan = result.parsed_content
        if not isinstance(plan, DevelopmentPlan):
            plan = DevelopmentPlan.model_validate_json(result.content)
        self.plan = plan
        return plan

    async def _edit(self, prompt: str, files: list[str]) -> tuple[AiderEditOutcome, list[str]]:
        """One Aider edit, a turn of the run's chat, through the host (the executor's checks and
        checkpoint apply); returns the outcome and the files for the next steps. An edit that
        changed nothing is a failed attempt (retried); any other failure ends the run."""
        self._remember_originals(files)
        outcome = await self.app.edit(prompt, files, chat=True, session_id=self._chat)
        if self._chat and outcome.error and "unknown session_id" in outcome.error.message:
            # Aider's server restarted (it died) and forgot the chat: a new one, told again
            self._chat = None
            outcome = await self.app.edit(f"{self._instructions}\n\n{prompt}", files, chat=True)
        self.final_aider = outcome
        if self._chat is None:
            self._chat = outcome.session_id
        edited = list(outcome.files or files)
        self._remember_originals(edited)
        for created in outcome.created_files:
            self._originals.setdefault(created, None)
        self._record(aider=_aider_summary(outcome), files=edited)
        error = outcome.error
        if error is not None and not _no_change(outcome):
            raise _RunEnded(error.reason, f"the Aider edit failed: {error.message}", details=error.message)
        return outcome, edited

    async def _test(self, command: str, files: list[str], phase: str, step: int) -> CommandRun:
        """The tests after an edit: only those that failed in the last run first (when the
        runner can be narrowed: test_selection.py), then, once they pass, the whole suite, the
        only run that can call the iteration green. `phase` is the progress line, "{}" where
        the tests it runs are named."""
        runs: list[SuiteRun] = []
        narrowed = self._narrowed(command)
        why = self._whole_suite_reason()
        if narrowed is not None:
            self._progress(phase.format(narrowed.description), step)
            run = await self._run_suite(narrowed.command, files)
            why_narrowed = "they failed in the last run"
            runs.append(_suite_run(SuiteScope.FAILING, narrowed.command, why_narrowed, run, narrowed.tests))
            if run.passed:
                why = "the tests that failed pass now"
            elif run.timed_out or narrow(command, _output(run)) is not None:
                return self._tested(run, runs)
            else:  # it failed without naming a failing test (renamed, gone): the suite decides
                why = f"the {narrowed.description} did not run as named (exit code {run.exit_code})"
        self._progress(phase.format("the whole suite"), step)
        run = await self._run_suite(command, files)
        runs.append(_suite_run(SuiteScope.WHOLE, command, why, run))
        return self._tested(run, runs)

    def _narrowed(self, command: str) -> Narrowed | None:
        if self._failed_output is None or not self.app.settings.failing_tests_first:
            return None
        return narrow(command, self._failed_output, shell=self.app.settings.test_shell)

    def _whole_suite_reason(self) -> str:
        """Why the whole suite runs (the iteration record says it)."""
        if self._failed_output is None:
            return "no earlier failing run" if not self._tested_once else "the last run passed"
        if not self.app.settings.failing_tests_first:
            return "aiderLsp.failingTestsFirst is off"
        return "the runner cannot be narrowed, or its output named no failing test"

    async def _run_suite(self, command: str, files: list[str]) -> CommandRun:
        run = await self.app.run_tests(command, fallback_files=files)
        if not run.ran and run.error is not None:  # the command could not run at all
            raise _RunEnded(
                run.error.reason, f"the test command could not run: {run.error.message}", run.error.message
            )
        return run

    def _tested(self, run: CommandRun, runs: list[SuiteRun]) -> CommandRun:
        """Record the iteration's runs; `run`, the last, decides it."""
        self._tested_once = True
        self._failed_output = None if run.passed else _output(run)
        test = DecidingRun(
            command=runs[-1].command,
            scope=runs[-1].scope,
            exit_code=run.exit_code,
            timed_out=run.timed_out,
            duration_s=run.duration_s,
            stdout=run.stdout,
            stderr=run.stderr,
        )
        self._record(test=test, test_runs=runs, findings=list(run.findings))
        return run

    async def _analyse(
        self,
        number: int,
        prompt: str,
        files: list[str],
        test_command: str,
        aider: AiderEditOutcome | None,
        test: CommandRun | None,
    ) -> CombinedAnalysisResult:
        """The analysis of iteration `number` (its edit and test run), judged by the tests: a
        SUCCESS over red tests is recorded as overruled and never ends the run."""
        if test is None:
            exit_code = "none (not run: the edit changed no file)"
        elif test.exit_code is None:
            exit_code = "none (killed at the timeout)"
        else:
            exit_code = str(test.exit_code)
        params = {
            "original_goal": self.goal,
            "initial_task_context": self.context or "(none)",
            "aider_instructions": prompt,
            "aider_status": _aider_status(aider),
            "aider_diff": (aider.diff if aider is not None else "") or "(no change)",
            "test_command": test_command,
            "test_stdout": _clip(test.stdout) if test else "",
            "test_stderr": _clip(test.stderr) if test else "",
            "test_exit_code": exit_code,
            "previous_files": files,
            "iteration": number,
            "max_retries": self.max_iterations,
        }
        result = await self.app.handle_task_command(ANALYSIS_TEMPLATE, params)
        self._stop_on_failure(result, "the analysis failed")
        analysis = result.parsed_content
        if not isinstance(analysis, CombinedAnalysisResult):
            analysis = CombinedAnalysisResult.model_validate_json(result.content)
        passed = test is not None and test.passed
        overruled = None
        if analysis.verdict is Verdict.SUCCESS and not passed:
            overruled = f"the analysis said SUCCESS over {_state(test)}; the tests are the judge"
        self._record(number, analysis=analysis, overruled=overruled)
        self.analysis = analysis
        latest = self.iterations[-1]
        current = latest.iteration == number or latest.test is None  # no later test run shown
        if current and (not passed or analysis.verdict is not Verdict.SUCCESS):
            found = list(test.findings) if test else []
            self._ctx.report_findings([*found, *self._analysis_findings(analysis, files)])
        return analysis

    # -- helpers -----------------------------------------------------------------------------
    def _record(self, number: int | None = None, **step: Any) -> None:
        """Add a step's outcome to an iteration's history (a new record, not a change): the
        current one, or `number` (an analysis answers while the next edit runs)."""
        index = -1 if number is None else number - 1
        self.iterations[index] = self.iterations[index].model_copy(update=step)

    def _stop_on_failure(self, result: TaskResult, what: str) -> None:
        """A FAILED step ends the run with its reason (over budget → budget_exceeded)."""
        if result.ok:
            return
        error = result.error
        reason = error.reason if error else ErrorReason.UNEXPECTED_ERROR
        if result.budget_exhausted:  # the LLM layer's refusal (handler/llm.py)
            reason = ErrorReason.BUDGET_EXCEEDED
        message = error.message if error else result.content
        raise _RunEnded(reason, f"{what}: {message}", details=result.content)

    def _check_budget(self) -> None:
        """Between steps: stop cleanly once the run has spent its budget."""
        budget = self.app.settings.budget
        spent = self._usage().all  # planning/analysis and Aider together
        if budget.max_tokens is not None and spent.total_tokens >= budget.max_tokens:
            raise _RunEnded(
                ErrorReason.BUDGET_EXCEEDED,
                f"the token budget of {budget.max_tokens} is used up ({spent.total_tokens} used): "
                "raise aiderLsp.budget.maxTokens",
            )
        if budget.max_cost is not None and (spent.cost or 0.0) >= budget.max_cost:
            raise _RunEnded(
                ErrorReason.BUDGET_EXCEEDED,
                f"the cost budget of {budget.max_cost:g} is used up ({spent.cost or 0.0:.4f} used): "
                "raise aiderLsp.budget.maxCost",
            )

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

    def _remember_originals(self, paths: Sequence[str]) -> None:
        """Each file's bytes before the run first touched it (None: it did not exist)."""
        self._originals.update(
            snapshot_files(self.app.resolve_path, [p for p in paths if p not in self._originals])
        )

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

    def changes(self) -> RunChanges:
        """What the run changed against the files before it, its diff in the edits' format."""
        changed: list[str] = []
        created: list[str] = []
        diffs: list[str] = []
        for rel, before in sorted(self._originals.items()):
            try:
                real = self.app.resolve_path(rel)
                after = real.read_bytes() if real.is_file() else None
            except (OSError, AccessDenied):
                continue
            if after == before:
                continue
            (created if before is None else changed).append(rel)
            diffs.append(unified_diff(rel, before, after))
        return RunChanges(
            changed_files=tuple(changed),
            created_files=tuple(created),
            diff="".join(diffs),
            checkpoint_id=self.checkpoint.id if self.checkpoint else None,
        )

    def _result(
        self,
        status: WorkflowStatus,
        content: str,
        reason: ErrorReason | None = None,
        details: str | None = None,
    ) -> WorkflowResult:
        return WorkflowResult(
            status=status,
            content=content,
            reason=reason,
            details=details,
            plan=self.plan,
            final_aider_result=_aider_summary(self.final_aider) if self.final_aider else None,
            analysis_result=self.analysis,
            iterations=self.iterations,
            usage=self._usage(),
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
        changed_files=list(outcome.changed_files),
        created_files=list(outcome.created_files),
        usage=outcome.usage,
        error=error,
        session_id=outcome.session_id,
    )


def _changed(outcome: AiderEditOutcome) -> bool:
    """The edit changed or created a file (else it is a failed attempt)."""
    return bool(outcome.changed_files or outcome.created_files)


def _no_change(outcome: AiderEditOutcome) -> bool:
    """Aider answered (a well-formed reply) but changed no file: a failed attempt to retry,
    not the end of the run."""
    return outcome.server_success is not None and not _changed(outcome)


def _aider_status(outcome: AiderEditOutcome | None) -> str:
    """The analysis's one line about the edit."""
    if outcome is None:
        return "failed"
    if _changed(outcome):
        return "edited the files"
    detail = outcome.error.message if outcome.error else "Aider made no change to the files"
    reply = outcome.reply.strip()
    return f"changed nothing: {detail}" + (f"; Aider replied: {_clip(reply, 2000)}" if reply else "")


def _state(test: CommandRun | None) -> str:
    """The tests' state in words, for a result message."""
    if test is None:
        return "an edit that changed nothing"
    if test.timed_out or test.exit_code is None:
        return "a test run killed at its timeout"
    return f"failing tests (exit code {test.exit_code})"


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
