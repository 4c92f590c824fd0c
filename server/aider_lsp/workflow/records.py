"""A run's steps copied into the types its readers keep: an iteration's entry in the history,
the events of an edit and a test run, the summary of an edit, the run's result, and the
findings an iteration shows.

Why here: what the history, the events and every front end show of an edit or a test run is
decided once (an edit that changed nothing is a failed attempt, the files it changed outside
its chat count as changed), so the loop only says when to record, never how.
"""

from __future__ import annotations

import contextlib
from collections.abc import Collection, Sequence

from ..guards.files import AccessDenied
from ..models import (
    AiderEditOutcome,
    CombinedAnalysisResult,
    CommandRun,
    DecidingRun,
    EditFinished,
    EditSummary,
    ErrorReason,
    Finding,
    JudgeProblem,
    Severity,
    SuiteRun,
    SuiteScope,
    TaskError,
    TaskStatus,
    TestRunFinished,
    WorkflowIteration,
    WorkflowResult,
    WorkflowStatus,
    WorkflowUsage,
)
from ..models.outcome import test_outcome
from ..suite.findings import summary_line
from .host import WorkflowHost
from .iteration import Ending, Iteration, changed
from .planning import Planning
from .prompts import aider_status


class RunIterations:
    """The run's iterations as its history keeps them (`entries`): an entry is replaced, never
    changed, as its steps fill it in (an analysis may answer while the next iteration runs)."""

    def __init__(self) -> None:
        self.entries: list[WorkflowIteration] = []

    def add(self, it: Iteration) -> None:
        self.entries.append(iteration_record(it))

    def record(self, it: Iteration) -> None:
        self.entries[it.number - 1] = iteration_record(it)

    def tested_after(self, number: int) -> bool:
        """A later iteration than `number` has shown its test run (its findings are shown)."""
        latest = self.entries[-1]
        return latest.iteration != number and latest.test is not None


def iteration_record(it: Iteration) -> WorkflowIteration:
    """The iteration's entry in the history, as its steps have filled it in so far."""
    test = it.test
    return WorkflowIteration(
        iteration=it.number,
        prompt=it.prompt,
        files=it.files,
        aider=aider_summary(it.outcome) if it.outcome is not None else None,
        test=deciding_run(test, it.runs[-1]) if test is not None else None,
        test_runs=list(it.runs),
        findings=list(test.findings) if test is not None else [],
        analysis=it.analysis,
        overruled=it.overruled,
        judge=it.judge,
        notes=list(it.notes),
    )


def run_result(
    ending: Ending,
    iterations: list[WorkflowIteration],
    usage: WorkflowUsage,
    planning: Planning,
    final_aider: AiderEditOutcome | None,
    analysis: CombinedAnalysisResult | None,
) -> WorkflowResult:
    """The run's typed result (a plan beside the first edit that was not made is said)."""
    content, plan_problem = ending.message, planning.problem
    if plan_problem is not None:
        content += f" (no plan was made beside the first edit: {plan_problem})"
    failed = ending.status is WorkflowStatus.FAILURE
    return WorkflowResult(
        status=ending.status,
        content=content,
        plan_problem=plan_problem,
        reason=ending.reason,
        details=ending.details,
        plan=planning.plan,
        final_aider_result=aider_summary(final_aider) if final_aider else None,
        analysis_result=analysis,
        iterations=iterations,
        usage=usage,
        judge=iterations[-1].judge if failed and iterations else None,
    )


def deciding_run(run: CommandRun, suite: SuiteRun) -> DecidingRun:
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


def suite_run(
    scope: SuiteScope, command: str, why: str, run: CommandRun, tests: Sequence[str] = ()
) -> SuiteRun:
    """One test run of an iteration: which tests, why those, how it ended."""
    return SuiteRun(
        scope=scope,
        command=command,
        why=why,
        tests=list(tests),
        exit_code=run.exit_code,
        duration_s=run.duration_s,
    )


def edit_finished(it: Iteration, outcome: AiderEditOutcome) -> EditFinished:
    """The event of an edit's answer (before its files join the iteration's)."""
    error = outcome.error.message if outcome.error is not None else None
    return EditFinished(
        iteration=it.number,
        files=list(it.files),
        diff=outcome.diff,
        changed_files=changed_files(outcome),
        created_files=list(outcome.created_files),
        reply=outcome.reply,
        error=error,
        no_change=not changed(outcome),
    )


def test_finished(
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


def aider_summary(outcome: AiderEditOutcome) -> EditSummary:
    """What the history keeps of an Aider edit: an edit that changed nothing is FAILED (a
    failed attempt), its error Aider's or "changed nothing"."""
    failed = outcome.error is not None or not changed(outcome)
    error = outcome.error
    if error is None and failed:
        error = TaskError(reason=ErrorReason.TOOL_EXECUTION_ERROR, message=aider_status(outcome))
    return EditSummary(
        status=TaskStatus.FAILED if failed else TaskStatus.COMPLETE,
        diff=outcome.diff,
        changed_files=changed_files(outcome),
        created_files=list(outcome.created_files),
        usage=outcome.usage,
        error=error,
        session_id=outcome.session_id,
    )


def changed_files(outcome: AiderEditOutcome) -> list[str]:
    """The files an edit changed (not those it created), in the files it was given and outside
    them: the one record the history, the events and every front end show."""
    done = {*outcome.changed_files, *outcome.created_files}
    return [*outcome.changed_files, *(path for path in outcome.files_outside_editable if path not in done)]


def edited_files(files: list[str], outcome: AiderEditOutcome) -> list[str]:
    """The iteration's files and those Aider edited or created outside them (its chat holds
    them now: the next turn's checks and undo must cover them too)."""
    extra = [*outcome.changed_files, *outcome.files_outside_editable, *outcome.created_files]
    return [*files, *dict.fromkeys(path for path in extra if path not in files)]


def joined_files(outcome: AiderEditOutcome) -> list[str]:
    """The files the model asked for in this turn (Aider added them to the chat)."""
    added = (outcome.payload or {}).get("added_files")
    return [path for path in added if isinstance(path, str)] if isinstance(added, list) else []


def retry_files(files: list[str], *, touched: Collection[str], kept: Collection[str]) -> list[str]:
    """The chat's files for the next turn: those the run changed and those `kept` (the user's,
    those the model asked for). A file the index sent that no edit touched leaves the chat: it
    would be sent whole with every request again (the repository map still shows it, and the
    model may ask for it). All of them while the run has changed none."""
    narrowed = [path for path in files if path in touched or path in kept]
    return narrowed if touched and narrowed else files


def state(test: CommandRun | None, problem: JudgeProblem | None = None) -> str:
    """The tests' state in words, for a result message."""
    if problem is not None:
        return problem.message
    if test is None:
        return "an edit that changed nothing"
    return test_outcome(test.exit_code, timed_out=test.timed_out or test.exit_code is None)


def judge_findings(problem: JudgeProblem | None) -> list[Finding]:
    """The test files the run changed, each with why its passing tests are no pass: shown on
    the file (the editor's Problems panel, the CLI's lines)."""
    if problem is None:
        return []
    return [
        Finding(path=path, message=problem.message, source="aider-lsp judge") for path in problem.test_files
    ]


def analysis_findings(
    host: WorkflowHost, analysis: CombinedAnalysisResult, files: list[str]
) -> list[Finding]:
    """The analysis's verdict shown on each of the iteration's files that exists."""
    findings = []
    for path in files:
        rel = None
        with contextlib.suppress(AccessDenied):
            rel = host.relative_path(path)
        if rel is not None and (host.workspace / rel).is_file():
            message = f"{analysis.verdict.value}: {analysis.message}"
            findings.append(
                Finding(path=rel, message=message, severity=Severity.INFORMATION, source="analysis")
            )
    return findings
