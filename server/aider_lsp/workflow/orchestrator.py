"""The coding workflow: plan → (Aider edit → test command → analysis) until SUCCESS, FAILURE,
the last iteration or the budget.

Why here and like this: the loop knows no protocol. It calls the Application the way any
caller does, through the few calls named in host.py (`handle_task_command` for the plan and
the analysis, `edit`, `run_tests`, `find_context`, …), so the executors' edit lock,
checkpoints, redaction and unsaved-buffer check apply at each edit, whose typed outcome it
reads (never a result's notes); it reports through the caller's
RequestContext (progress per phase, findings after each test run), so the editor shows
diagnostics and the CLI prints lines. Every problem ends the run with a result, never an
exception, except cancellation, which propagates once the run's checkpoint is settled.
The whole run is one checkpoint: one undo restores what it changed and deletes what it created.
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
    DevelopmentPlan,
    ErrorReason,
    Finding,
    OptionalPathList,
    RequestContext,
    RunChanges,
    Severity,
    TaskResult,
    TaskStatus,
    Verdict,
    WorkflowIteration,
    WorkflowResult,
    WorkflowStatus,
    WorkflowUsage,
)
from .host import WorkflowHost

log = logging.getLogger(__name__)

PLAN_TEMPLATE = "user:generate-plan-from-goal"
ANALYSIS_TEMPLATE = "user:evaluate-and-retry-analysis"
MEMORY_FILES = 5
OUTPUT_FOR_ANALYSIS = 12_000  # characters of each test stream the analysis sees (head and tail)


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

    # -- the run -----------------------------------------------------------------------------
    async def run(self, ctx: RequestContext) -> WorkflowResult:
        """Run to the end; cancellation propagates after the checkpoint is settled."""
        settings = self.app.settings
        self._usage_start = self.app.spent()
        self.app.set_budget(settings.budget.max_tokens, settings.budget.max_cost)
        try:
            with run_checkpoint(self.app.checkpoints, f"workflow: {self.goal[:150]}") as checkpoint:
                self.checkpoint = checkpoint
                try:
                    return await self._loop(ctx)
                except _RunEnded as ended:
                    return self._result(WorkflowStatus.FAILURE, ended.message, ended.reason, ended.details)
                finally:
                    self._settle(checkpoint)
        finally:
            self.app.clear_budget()

    async def _loop(self, ctx: RequestContext) -> WorkflowResult:
        editor_files = self._editor_files()
        ctx.report_progress("Planning", 0)
        # Aider's start-up (seconds) overlaps the planning call instead of delaying the first edit
        self._warm_up = asyncio.create_task(self.app.start_aider())
        plan = await self._make_plan(ctx, editor_files)
        test_command = self.test_command or plan.test_command or self.app.settings.test_command
        if not test_command:
            raise _RunEnded(
                ErrorReason.CONFIGURATION_ERROR,
                "no test command: pass one, or set aiderLsp.testCommand / AIDER_LSP_TEST_COMMAND",
            )
        prompt, files = plan.instructions, list(plan.files or editor_files)
        for number in range(1, self.max_iterations + 1):
            self._check_budget()
            self.iterations.append(WorkflowIteration(iteration=number, prompt=prompt, files=files))
            label = f"Iteration {number}/{self.max_iterations}"
            step = 100 * (number - 1) // self.max_iterations
            ctx.report_progress(f"{label}: Aider is editing", step)
            files = await self._edit(prompt, files)

            ctx.report_progress(f"{label}: running tests", step)
            test = await self._test(test_command, files)

            self._check_budget()
            ctx.report_progress(f"{label}: analysing the result", step)
            analysis = await self._analyse(number, prompt, files, test_command, test)
            self.analysis = analysis
            if analysis.verdict is Verdict.SUCCESS:
                ctx.report_findings([])
                ctx.report_progress("Done: the goal is reached", 100)
                return self._result(WorkflowStatus.SUCCESS, analysis.message)
            ctx.report_findings([*test.findings, *self._analysis_findings(analysis, files)])
            if analysis.verdict is Verdict.FAILURE:
                raise _RunEnded(ErrorReason.GOAL_NOT_REACHED, f"the analysis gave up: {analysis.message}")
            prompt = analysis.next_prompt or prompt
            files = list(analysis.next_files or files)
        raise _RunEnded(
            ErrorReason.MAX_RETRIES_REACHED,
            f"the goal was not reached in {self.max_iterations} iteration(s): "
            f"{self.analysis.message if self.analysis else ''}".rstrip(": "),
        )

    # -- steps -------------------------------------------------------------------------------
    def _editor_files(self) -> list[str]:
        if self.file_context in (None, "", []):
            return []
        try:
            return TypeAdapter(OptionalPathList).validate_python(self.file_context) or []
        except ValidationError as exc:
            message = exc.errors()[0]["msg"]
            raise _RunEnded(ErrorReason.INPUT_VALIDATION_FAILURE, f"file_context: {message}") from None

    async def _make_plan(self, ctx: RequestContext, editor_files: list[str]) -> DevelopmentPlan:
        """The planner gets the goal, the user's context, the open files and the index's best."""
        found = await self.app.find_context(
            ContextGenerationInput(
                query=self.goal,
                open_files=list(ctx.open_files),
                target_files=editor_files,
                max_results=MEMORY_FILES,
            )
        )
        relevant = [m.source_path for m in found.matches if m.source_path]
        parts = [self.context.strip() or "(none)"]
        if ctx.open_files:
            parts.append("Files open in the editor: " + ", ".join(ctx.open_files))
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

    async def _edit(self, prompt: str, files: list[str]) -> list[str]:
        """One Aider edit through the host (the executor's checks and checkpoint apply);
        returns the files for the next steps."""
        self._remember_originals(files)
        outcome = await self.app.edit(prompt, files)
        self.final_aider = outcome
        edited = list(outcome.files or files)
        self._remember_originals(edited)
        for created in outcome.created_files:
            self._originals.setdefault(created, None)
        self._record(aider=_aider_summary(outcome), files=edited)
        error = outcome.error
        if error is not None:
            reason = _reason(error.reason, error.message)
            raise _RunEnded(reason, f"the Aider edit failed: {error.message}", details=error.message)
        return edited

    async def _test(self, command: str, files: list[str]) -> CommandRun:
        run = await self.app.run_tests(command, fallback_files=files)
        if not run.ran and run.error is not None:  # the command could not run at all
            raise _RunEnded(
                run.error.reason, f"the test command could not run: {run.error.message}", run.error.message
            )
        test = {
            "command": command,
            "exit_code": run.exit_code,
            "timed_out": run.timed_out,
            "duration_s": run.duration_s,
            "stdout": run.stdout,
            "stderr": run.stderr,
        }
        self._record(test=test, findings=list(run.findings))
        return run

    async def _analyse(
        self,
        number: int,
        prompt: str,
        files: list[str],
        test_command: str,
        test: CommandRun,
    ) -> CombinedAnalysisResult:
        aider = self.final_aider
        exit_code = test.exit_code
        params = {
            "original_goal": self.goal,
            "initial_task_context": self.context or "(none)",
            "aider_instructions": prompt,
            "aider_status": "edited the files" if aider is not None and aider.error is None else "failed",
            "aider_diff": (aider.diff if aider is not None else "") or "(no change)",
            "test_command": test_command,
            "test_stdout": _clip(test.stdout),
            "test_stderr": _clip(test.stderr),
            "test_exit_code": "none (killed at the timeout)" if exit_code is None else str(exit_code),
            "previous_files": files,
            "iteration": number,
            "max_retries": self.max_iterations,
        }
        result = await self.app.handle_task_command(ANALYSIS_TEMPLATE, params)
        self._stop_on_failure(result, "the analysis failed")
        analysis = result.parsed_content
        if not isinstance(analysis, CombinedAnalysisResult):
            analysis = CombinedAnalysisResult.model_validate_json(result.content)
        self._record(analysis=analysis.model_dump(mode="json"))
        return analysis

    # -- helpers -----------------------------------------------------------------------------
    def _record(self, **step: Any) -> None:
        """Add a step's outcome to the current iteration's history (a new record, not a change)."""
        self.iterations[-1] = self.iterations[-1].model_copy(update=step)

    def _stop_on_failure(self, result: TaskResult, what: str) -> None:
        """A FAILED step ends the run with its reason (over budget → budget_exceeded)."""
        if result.ok:
            return
        error = result.error
        reason = error.reason if error else ErrorReason.UNEXPECTED_ERROR
        message = error.message if error else result.content
        if result.notes.get("budget_exhausted"):  # the LLM layer's mark (handler/llm.py)
            reason = ErrorReason.BUDGET_EXCEEDED
        raise _RunEnded(_reason(reason, message), f"{what}: {message}", details=result.content)

    def _check_budget(self) -> None:
        """Between steps: stop cleanly once the run has spent its budget."""
        budget = self.app.settings.budget
        usage = self._usage()
        if budget.max_tokens is not None and usage.total_tokens >= budget.max_tokens:
            raise _RunEnded(
                ErrorReason.BUDGET_EXCEEDED,
                f"the token budget of {budget.max_tokens} is used up ({usage.total_tokens} used): "
                "raise aiderLsp.budget.maxTokens",
            )
        if budget.max_cost is not None and (usage.cost or 0.0) >= budget.max_cost:
            raise _RunEnded(
                ErrorReason.BUDGET_EXCEEDED,
                f"the cost budget of {budget.max_cost:g} is used up ({usage.cost:.4f} used): "
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


def _aider_summary(outcome: AiderEditOutcome) -> dict[str, Any]:
    """What the history keeps of an Aider edit (the wire's `aider` of an iteration)."""
    summary: dict[str, Any] = {
        "status": (TaskStatus.FAILED if outcome.error else TaskStatus.COMPLETE).value,
        "diff": outcome.diff,
        "changed_files": list(outcome.changed_files),
        "created_files": list(outcome.created_files),
    }
    if outcome.error:
        summary["error"] = outcome.error.model_dump(mode="json")
    return summary


def _reason(reason: ErrorReason, message: str) -> ErrorReason:
    """A step's reason, or budget_exceeded when the message says a usage limit was reached."""
    return ErrorReason.BUDGET_EXCEEDED if "usage limit reached" in message else reason


def _clip(text: str, limit: int = OUTPUT_FOR_ANALYSIS) -> str:
    """Head and tail of a long output: the failure is usually at the end."""
    if len(text) <= limit:
        return text
    half = limit // 2
    return f"{text[:half]}\n[... {len(text) - limit} characters omitted ...]\n{text[-half:]}"
