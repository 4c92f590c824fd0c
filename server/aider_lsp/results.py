"""Typed results → the seeds' TaskResult: the one place each becomes (content, notes).

Services answer their own models (a CommandRun, a RestoreReport: models.py); a tool, a
command or the CLI turns them into a TaskResult here, so the notes' keys and values on the
wire are written once and read back by no one inside.
"""

from __future__ import annotations

from typing import Any

from .models import (
    CommandRun,
    ErrorReason,
    FixAndRetest,
    RestoreReport,
    RunChanges,
    SkippedFile,
    SkipReason,
    TaskError,
    TaskResult,
    TaskStatus,
    WorkflowResult,
    WorkflowStatus,
    complete_result,
    failed_result,
)
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
        content = _joined([f"tests failed (exit code {run.exit_code})", run.stdout, run.stderr])
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
    retest = {"command": run.command, "exit_code": run.exit_code, "duration_s": run.duration_s}
    return result.model_copy(
        update={"content": f"{result.content}\n\n{said}", "notes": {**result.notes, "retest": retest}}
    )


def restore_notes(report: RestoreReport) -> dict[str, Any]:
    """An undo's notes: {checkpoint, label?, restored, deleted, skipped: [{path, reason, kind}]}."""
    notes: dict[str, Any] = {"checkpoint": report.checkpoint}
    if report.checkpoint is not None:
        notes["label"] = report.label
    notes["restored"] = list(report.restored)
    notes["deleted"] = list(report.deleted)
    notes["skipped"] = [item.model_dump(mode="json") for item in report.skipped]
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


def _skipped_advice(skipped: tuple[SkippedFile, ...]) -> list[str]:
    """One sentence per kind of file left alone: what is kept, and what to do to undo it."""

    def paths(kind: SkipReason) -> str:
        return ", ".join(item.path for item in skipped if item.kind is kind)

    advice: list[str] = []
    if changed := paths(SkipReason.CHANGED_SINCE):
        advice.append(
            f"Kept {changed} as it is now: changed since the edit; undo with force to put it back"
            " as before the edit, which discards those later changes."
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


def workflow_cancelled_result(changes: RunChanges) -> TaskResult:
    """A run cancelled by the user: FAILED (cancelled), naming the files it had already changed
    (undo restores them); notes as `workflow_result`'s but without the history."""
    notes: dict[str, Any] = {
        "changed_files": list(changes.changed_files),
        "created_files": list(changes.created_files),
        "diff": changes.diff,
        "checkpoint_id": changes.checkpoint_id,
    }
    touched = [*changes.changed_files, *changes.created_files]
    message = "the workflow was cancelled by the user"
    if touched:
        message += f"; it had changed {', '.join(touched)} (undo restores them)"
    return failed_result(ErrorReason.CANCELLED, message, notes=notes)


def workflow_result(outcome: WorkflowResult, changes: RunChanges) -> TaskResult:
    """`aider-lsp.workflow.run`: the outcome's message; notes {workflow, changed_files,
    created_files, diff, checkpoint_id}; parsedContent the run's history (`notes.workflow`)."""
    history = outcome.model_dump(mode="json")
    notes: dict[str, Any] = {
        "workflow": history,
        "changed_files": list(changes.changed_files),
        "created_files": list(changes.created_files),
        "diff": changes.diff,
        "checkpoint_id": changes.checkpoint_id,
    }
    if outcome.status is WorkflowStatus.SUCCESS:
        return complete_result(outcome.content, notes=notes, parsed=history)
    error = TaskError(reason=outcome.reason or ErrorReason.UNEXPECTED_ERROR, message=outcome.content)
    return TaskResult(
        status=TaskStatus.FAILED, content=outcome.content, notes=notes, parsedContent=history, error=error
    )
