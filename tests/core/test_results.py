"""Typed results become the seeds' TaskResult in one place (results.py), with the wire's notes."""

from __future__ import annotations

from aider_lsp.models import (
    CommandRun,
    ErrorReason,
    RestoreReport,
    SkippedFile,
    SkipReason,
    TaskError,
    TaskResult,
    TaskStatus,
    failed_result,
)
from aider_lsp.results import run_tests_result, undo_result


def test_the_error_is_one_typed_field_and_notes_error_on_the_wire() -> None:
    result = failed_result(ErrorReason.CONFIGURATION_ERROR, "no model")
    assert result.error == TaskError(reason=ErrorReason.CONFIGURATION_ERROR, message="no model")
    wire = result.to_wire()
    assert wire["notes"]["error"] == {
        "type": "TASK_FAILURE",
        "reason": "configuration_error",
        "message": "no model",
    }
    assert "error" not in wire  # only inside notes, as the seeds say
    assert TaskResult.model_validate(wire).error == result.error  # read back from the wire once


def test_a_failing_test_run_shows_its_output_in_content() -> None:
    run = CommandRun(command="pytest", exit_code=1, stdout="F\n", stderr="boom\n", duration_s=0.5)
    result = run_tests_result(run)
    assert result.status is TaskStatus.COMPLETE  # failing tests are not a tool failure
    assert result.content == "the tests fail (exit code 1)\nF\nboom"
    assert result.notes == {
        "command": "pytest",
        "exit_code": 1,
        "stdout": "F\n",
        "stderr": "boom\n",
        "duration_s": 0.5,
        "success": False,
    }
    assert run_tests_result(run.model_copy(update={"exit_code": 0})).content == "F\n"


def test_undo_notes_keep_their_wire_shape() -> None:
    assert undo_result(RestoreReport()).notes == {
        "checkpoint": None,
        "restored": [],
        "deleted": [],
        "skipped": [],
    }
    report = RestoreReport(
        checkpoint="c1",
        label="edit",
        restored=("a.py",),
        deleted=("new.py",),
        skipped=(SkippedFile(path="b.py", reason="open in the editor", kind=SkipReason.UNSAVED),),
    )
    result = undo_result(report)
    assert result.status is TaskStatus.FAILED and result.error is not None
    assert result.error.reason is ErrorReason.INPUT_VALIDATION_FAILURE
    notes = {key: value for key, value in result.notes.items() if key != "error"}
    assert notes == {
        "checkpoint": "c1",
        "label": "edit",
        "restored": ["a.py"],
        "deleted": ["new.py"],
        "skipped": [{"path": "b.py", "reason": "open in the editor", "kind": "unsaved"}],
    }
    assert result.content.startswith("Restored a.py, new.py from before “edit”. Kept b.py: unsaved changes")


def test_undo_says_what_it_kept_and_what_it_could_not_restore_never_restored_0_files() -> None:
    report = RestoreReport(
        checkpoint="c1",
        label="workflow: area",
        skipped=(
            SkippedFile(path="shapes/area.py", reason="changed since", kind=SkipReason.CHANGED_SINCE),
            SkippedFile(path="ro.py", reason="Permission denied", kind=SkipReason.UNWRITABLE),
        ),
    )
    content = undo_result(report).content
    assert "0 file" not in content and content.startswith(
        "Nothing was restored from before “workflow: area”."
    )
    assert "Kept shapes/area.py as it is now: changed since the edit; undo with force" in content
    assert "Could not restore ro.py: Permission denied" in content
    assert undo_result(RestoreReport(checkpoint="c2", label="edit", restored=("a.py",))).content == (
        "Restored a.py from before “edit”."
    )
