"""Typed results → the seeds' TaskResult: the one place each becomes (content, notes).

Services answer their own models (a CommandRun, a RestoreReport: models/); a tool, a
command or the CLI turns them into a TaskResult here, so the notes' keys and values on the
wire are written once and read back by no one inside.
"""

from __future__ import annotations

import time
from typing import Any

from .models import (
    AttemptGroup,
    CommandRun,
    DeclinedTestCommand,
    ErrorReason,
    FixAndRetest,
    IsolatedRun,
    Isolation,
    RestoreReport,
    RunAction,
    RunDiff,
    RunRecord,
    RunState,
    RunStep,
    SkippedFile,
    SkipReason,
    TaskError,
    TaskResult,
    TaskStatus,
    WorkflowRun,
    WorkflowStatus,
    complete_result,
    failed_result,
)
from .models.outcome import test_outcome
from .suite.findings import summary_line


def command_notes(run: CommandRun) -> dict[str, Any]:
    """A run's notes on the wire: {command, exit_code, stdout, stderr, duration_s, success},
    and `ended_processes` ["PID COMMAND", ...] when processes were ended with the run."""
    notes: dict[str, Any] = {
        "command": run.command,
        "exit_code": run.exit_code,
        "stdout": run.stdout,
        "stderr": run.stderr,
        "duration_s": run.duration_s,
        "success": run.exit_code == 0,
    }
    if run.ended_processes:
        notes["ended_processes"] = list(run.ended_processes)
    return notes


def ended_line(run: CommandRun) -> str:
    """What was ended with the run, in one line ("" when nothing was)."""
    ended = run.ended_processes
    if not ended:
        return ""
    what = "1 process" if len(ended) == 1 else f"{len(ended)} processes"
    return f"ended with the run: {what}: " + "; ".join(ended)


def command_result(run: CommandRun) -> TaskResult:
    """`system:execute_shell_command`: the stdout as content, the run in notes. A command that
    could not start is FAILED with its reason only; one killed at the timeout keeps its output."""
    if run.error is None:
        return complete_result(run.stdout, notes=command_notes(run))
    if not run.ran:
        return failed_result(run.error.reason, run.error.message)
    return failed_result(run.error.reason, run.error.message, content=run.stdout, notes=command_notes(run))


def run_tests_result(run: CommandRun) -> TaskResult:
    """`aider-lsp.system.runTests`: as `command_result`, and a failing run shows its exit code,
    stdout and stderr in `content`, where an editor displays it (unittest, compilers and
    linters report on stderr), not only in the notes; the processes ended with the run are
    named on a last line."""
    result = command_result(run)
    content = result.content
    if run.exit_code is not None and run.exit_code != 0:
        content = _joined([test_outcome(run.exit_code), run.stdout, run.stderr])
    if run.ended_processes:
        content = _joined([content, ended_line(run)])
    return result.model_copy(update={"content": content})


def _joined(parts: list[str]) -> str:
    return "\n".join(part.rstrip("\n") for part in parts if part.strip())


def fix_result(fix: FixAndRetest) -> TaskResult:
    """ "Fix with Aider" on a failing test: the edit's result, and what the re-run said."""
    result = fix.edit.to_task_result()
    run = fix.retest
    if run is None or not result.ok:
        return result
    said = (
        "The tests that failed pass now."
        if run.passed
        else f"Still failing (exit code {run.exit_code}): {summary_line(run.stdout, run.stderr)}"
    )
    retest = {
        "command": run.command,
        "exit_code": run.exit_code,
        "duration_s": run.duration_s,
        "summary": summary_line(run.stdout, run.stderr),
    }
    return result.model_copy(
        update={"content": f"{result.content}\n\n{said}", "notes": {**result.notes, "retest": retest}}
    )


def restore_notes(report: RestoreReport) -> dict[str, Any]:
    """An undo's notes: {checkpoint, label?, restored, deleted, skipped: [{path, reason, kind, lines?}]}."""
    notes: dict[str, Any] = {"checkpoint": report.checkpoint}
    if report.checkpoint is not None:
        notes["label"] = report.label
    notes["restored"] = list(report.restored)
    notes["deleted"] = list(report.deleted)
    notes["skipped"] = [_skipped_notes(item) for item in report.skipped]
    return notes


def _skipped_notes(item: SkippedFile) -> dict[str, Any]:
    """{path, reason, kind} and, where a later change overlaps the run's, `lines` ([first, last])."""
    notes = item.model_dump(mode="json", exclude={"lines"})
    if item.lines:
        notes["lines"] = [list(pair) for pair in item.lines]
    return notes


def undo_result(report: RestoreReport) -> TaskResult:
    """`aider-lsp.workflow.undo`: what was restored; FAILED when a file was left alone, saying
    for each why and what actually lets the undo through (saving a file the user changed after
    the edit never does: its content is then the user's later work, which only force discards)."""
    notes = restore_notes(report)
    if report.checkpoint is None:
        return complete_result("Nothing to undo.", notes=notes)
    before = f"from before “{report.label}”" if report.label else "from before the last Aider change"
    done = f"Restored {', '.join(report.touched)} {before}." if report.touched else ""
    if not report.skipped:
        return complete_result(
            done or f"Nothing to restore {before}: the files are already as they were.", notes=notes
        )
    sentences = [done or f"Nothing was restored {before}."]
    sentences.extend(_skipped_advice(report.skipped))
    return failed_result(ErrorReason.INPUT_VALIDATION_FAILURE, " ".join(sentences), notes=notes)


def already_undone_result(run_id: str, label: str, when: float) -> TaskResult:
    """A second undo of the same run: nothing to do, and when the first one was."""
    at = time.strftime("%Y-%m-%d %H:%M", time.localtime(when))
    what = f"“{label}”" if label else run_id
    return complete_result(f"{what} was already undone ({at}); nothing to do.", notes={"checkpoint": run_id})


def history_result(runs: list[RunRecord], *, apply_command: str = "") -> TaskResult:
    """`aider-lsp.history.list`: one line per run, newest first, and under a workflow run one
    per iteration; `notes.runs` the records (a run's `steps` its iterations). `apply_command`
    (the CLI's `aider-lsp apply`): a ready run's line names the command that applies it."""
    records = [run.model_dump(mode="json") for run in runs]
    if not runs:
        return complete_result("No runs yet.", notes={"runs": records}, parsed=records)
    lines = [
        line
        for run in runs
        for line in (history_line(run, apply_command=apply_command), *map(step_line, run.steps))
    ]
    return complete_result("\n".join(lines), notes={"runs": records}, parsed=records)


def run_diff_result(diff: RunDiff) -> TaskResult:
    """`aider-lsp.history.diff`: the run's files with their text before and after the run;
    notes {run: the history record, files: [{path, before, after, existed_before, exists_after,
    binary}]}, parsedContent the files."""
    files = [item.model_dump(mode="json") for item in diff.files]
    names = ", ".join(item.path + (" (binary)" if item.binary else "") for item in diff.files)
    content = f"“{diff.run.label}”: {names or 'no file'}"
    notes = {"run": diff.run.model_dump(mode="json"), "files": files}
    return complete_result(content, notes=notes, parsed=files)


def history_line(run: RunRecord, *, apply_command: str = "") -> str:
    """`<id>  2026-11-25 21:30  workflow  SUCCESS in 2 iterations  calc.py  "make the tests pass"`;
    an isolated run's state after its status (`ready: aider-lsp apply <id>`)."""
    when = time.strftime("%Y-%m-%d %H:%M", time.localtime(run.created))
    status = run.status or "?"
    if run.iterations is not None:
        status += f" in {run.iterations} iteration{'s' if run.iterations != 1 else ''}"
    if run.undone is not None:
        status += " (undone)"
    parts = [run.id, when, run.kind, status]
    if run.isolation is Isolation.WORKTREE and run.state is not RunState.UNDONE:  # "(undone)" said it
        parts.append(isolated_state_words(run, apply_command))
    parts += [", ".join(run.files) or "-", f"“{run.label}”"]
    if run.spend:
        parts.append(f"spent {run.spend}")
    if run.duration_s is not None:
        parts.append(f"{run.duration_s:.0f} s")
    return "  ".join(parts)


def isolated_state_words(run: RunRecord, apply_command: str = "") -> str:
    """Where an isolated run stands, in a history line: a ready one stands out."""
    if run.state is RunState.READY:
        return f"ready: {apply_command} {run.id}" if apply_command else "ready to apply"
    if run.state is RunState.RUNNING:
        return "running in its worktree"
    if run.state is RunState.KEPT:
        return f"kept on branch {run.branch}"
    return run.state.value


def step_line(step: RunStep) -> str:
    """`    iteration 1: changed calc.py · tests fail (1 failed) · RETRY: multiply still fails`."""
    parts = [_edit_words(step), _test_words(step)]
    if step.analysis is not None:
        message = step.analysis.message.splitlines()[0] if step.analysis.message else ""
        parts.append(f"{step.analysis.verdict.value}: {message}" if message else step.analysis.verdict.value)
    return f"    iteration {step.iteration}: " + " · ".join(parts)


def _edit_words(step: RunStep) -> str:
    edit = step.edit
    if edit is None:
        return "the edit did not finish"
    words = [f"changed {', '.join(edit.changed_files)}"] if edit.changed_files else []
    words += [f"created {', '.join(edit.created_files)}"] if edit.created_files else []
    return ", ".join(words) or "changed nothing"


def _test_words(step: RunStep) -> str:
    test = step.test
    if test is None:
        return "no test run"
    return test_outcome(test.exit_code, timed_out=test.timed_out, summary=test.summary, failed=test.failed)


def _skipped_advice(skipped: tuple[SkippedFile, ...]) -> list[str]:
    """One sentence per kind of file left alone: what is kept, and what to do to undo it."""

    def paths(kind: SkipReason) -> str:
        return ", ".join(item.path for item in skipped if item.kind is kind)

    advice: list[str] = []
    by_why: dict[str, list[str]] = {}
    for item in skipped:
        if item.kind is SkipReason.CHANGED_SINCE:
            by_why.setdefault(_why_kept(item), []).append(item.path)
    advice.extend(
        f"Kept {', '.join(kept)} as it is now: {why}; undo with force to put it back"
        " as before the edit, which discards those later changes."
        for why, kept in by_why.items()
    )
    if unsaved := paths(SkipReason.UNSAVED):
        advice.append(
            f"Kept {unsaved}: unsaved changes in the editor; revert them and undo again, or save"
            " them and undo with force, which discards them."
        )
    advice.extend(
        f"Could not restore {item.path}: {item.reason}; fix that and undo again."
        for item in skipped
        if item.kind is SkipReason.UNWRITABLE
    )
    return advice


def _why_kept(item: SkippedFile) -> str:
    """Why a file changed since the edit was kept: the overlapping lines, or what happened."""
    if item.lines:
        where = ", ".join(f"{a}" if a == b else f"{a}-{b}" for a, b in item.lines)
        noun = "line" if len(item.lines) == 1 and item.lines[0][0] == item.lines[0][1] else "lines"
        return f"changed since the edit on the lines it changed ({noun} {where})"
    return "changed since the edit" if item.reason.startswith("changed since") else item.reason


def group_result(group: AttemptGroup, *, cancelled: bool = False) -> TaskResult:
    """Several attempts (`aider-lsp.workflow.run {attempts}`, `aider-lsp run --attempts --json`):
    COMPLETE naming the winner, or FAILED goal_not_reached when no attempt passed the tests
    (`cancelled` when the user stopped the group: each attempt said as it ended or stopped);
    notes {group: {group_id, choose, attempts: [{run_id, number, aider_model, planned, state,
    status, green, tests, lines_changed, tokens, cost, seconds, stopped}], winner, reason},
    run_id: the winner's}; parsedContent the group."""
    wire = group.model_dump(mode="json")
    notes = {"group": wire, "run_id": group.winner}
    if cancelled:
        return failed_result(ErrorReason.CANCELLED, f"Cancelled: {group.summary}", notes=notes)
    if group.winner is not None:
        return complete_result(group.summary, notes=notes, parsed=wire)
    return failed_result(ErrorReason.GOAL_NOT_REACHED, group.summary, notes=notes)


def workflow_run_result(run: WorkflowRun) -> TaskResult:
    """`aider-lsp.workflow.run` (and `aider-lsp run --json`): the run's message; notes
    {workflow, changed_files, created_files, diff, checkpoint_id}; parsedContent the run's
    history (`notes.workflow`). A run that never started is FAILED with its reason only; a
    cancelled one names the files it had changed (undo restores them), without a history."""
    if run.declined_test_command is not None:
        return declined_test_command_result(run.declined_test_command)
    if run.group is not None:
        return group_result(run.group, cancelled=run.cancelled)
    if run.outcome is None and run.refused is not None:
        return failed_result(run.refused.reason, run.refused.message)
    notes: dict[str, Any] = {
        "changed_files": list(run.changes.changed_files),
        "created_files": list(run.changes.created_files),
        "diff": run.changes.diff,
        "checkpoint_id": run.changes.checkpoint_id,
    }
    if run.isolated is not None:
        notes.update(isolated_notes(run.isolated))
    outcome = run.outcome
    if outcome is None:
        return failed_result(ErrorReason.CANCELLED, run.message, notes=notes)
    history = outcome.model_dump(mode="json")
    notes = {"workflow": history, **notes}
    content = outcome.content + isolated_sentence(run)
    if outcome.status is WorkflowStatus.SUCCESS:
        return complete_result(content, notes=notes, parsed=history)
    error = TaskError(reason=outcome.reason or ErrorReason.UNEXPECTED_ERROR, message=content)
    return TaskResult(
        status=TaskStatus.FAILED, content=content, notes=notes, parsedContent=history, error=error
    )


def isolated_notes(isolated: IsolatedRun) -> dict[str, Any]:
    """An isolated run's notes: its id, state and test failures (kept on the run, never shown
    as the user's Problems); nothing of it is on the user's files yet (no checkpoint)."""
    findings = [finding.model_dump(mode="json") for finding in isolated.findings]
    return {
        "run_id": isolated.run_id,
        "state": isolated.state.value,
        "isolation": "worktree",
        "findings": findings,
    }


FORCE_ADVICE = "Apply anyway (force) to take the run's version of those files; undo can take it back."


def isolated_sentence(run: WorkflowRun) -> str:
    """What an isolated run's answer adds: its change waits in its worktree, or there is none."""
    if run.isolated is None:
        return ""
    if run.isolated.state is RunState.READY:
        return f" Run {run.isolated.run_id} is ready in its worktree: apply, discard or keep it as a branch."
    return " It changed nothing; its worktree is removed."


def run_action_result(action: RunAction) -> TaskResult:
    """`aider-lsp.runs.apply|discard|keepBranch`: what was done; FAILED when refused, or when
    apply wrote nothing because a file cannot take the change (each named with its lines, and
    what lets it through). notes {run_id, state, written, deleted, skipped, branch, commit,
    checkpoint_id}."""
    notes = action.model_dump(mode="json", exclude={"refused", "label"})
    if action.refused is not None:
        return failed_result(action.refused.reason, action.refused.message, notes=notes)
    what = f"“{action.label}”" if action.label else action.run_id
    if action.skipped:
        sentences = [f"Nothing of {what} was applied:"]
        sentences.extend(f"{item.path}: {item.reason}." for item in action.skipped)
        sentences.append(FORCE_ADVICE)
        return failed_result(ErrorReason.INPUT_VALIDATION_FAILURE, " ".join(sentences), notes=notes)
    if action.state is RunState.APPLIED:
        files = [*action.written, *(f"{rel} (deleted)" for rel in action.deleted)]
        siblings = (
            f" Its other attempts are discarded: {', '.join(action.discarded)}." if action.discarded else ""
        )
        return complete_result(f"Applied {what}: {', '.join(files) or 'no file'}.{siblings}", notes=notes)
    if action.state is RunState.KEPT:
        return complete_result(f"Kept {what} on branch {action.branch} ({action.commit}).", notes=notes)
    return complete_result(f"Discarded {what}: its worktree is removed.", notes=notes)


def declined_test_command_result(declined: DeclinedTestCommand) -> TaskResult:
    """The user chose to change the detected test command: FAILED naming the setting; notes
    {detected_test_command, detected_by}, with which a client pre-fills an input."""
    notes = {"detected_test_command": declined.command, "detected_by": declined.detected_by}
    return failed_result(ErrorReason.CONFIGURATION_ERROR, declined.message, notes=notes)
