"""What the history keeps of each iteration (workflow/steps.py): short, bounded, and honest
where the failures cannot be counted; a run recorded before steps existed still lists."""

from __future__ import annotations

from pathlib import Path

from aider_lsp.guards.files import FileAccessManager
from aider_lsp.history.checkpoints import CheckpointStore, run_record
from aider_lsp.models import (
    CombinedAnalysisResult,
    DecidingRun,
    EditSummary,
    ErrorReason,
    SuiteScope,
    TaskError,
    TaskStatus,
    Verdict,
    WorkflowIteration,
)
from aider_lsp.results import step_line
from aider_lsp.workflow.steps import MAX_CHARS, MAX_FAILING_IDS, run_steps

PYTEST_FAILURES = "\n".join(
    [*(f"FAILED tests/test_parse.py::test_case_{n} - AssertionError" for n in range(8)), "8 failed in 0.31s"]
)


def iteration(number: int = 1, **fields: object) -> WorkflowIteration:
    edit = EditSummary(status=TaskStatus.COMPLETE, changed_files=["parse.py"], created_files=["lexer.py"])
    return WorkflowIteration(
        iteration=number, prompt="fix the parser", files=["parse.py"], aider=edit, **fields
    )


def test_a_long_failing_run_keeps_its_count_the_first_ids_and_the_start_of_the_analysis() -> None:
    test = DecidingRun(
        command="pytest -q",
        scope=SuiteScope.WHOLE,
        exit_code=1,
        stdout=PYTEST_FAILURES,
        summary="8 failed in 0.31s",
    )
    message = "The parser drops the last token.\n\nSee lexer.next.\nThen rerun.\n" + "x" * 1000
    analysis = CombinedAnalysisResult(
        verdict=Verdict.RETRY, message=message, next_prompt="keep the last token"
    )
    (step,) = run_steps([iteration(test=test, analysis=analysis)])
    assert step.test is not None and step.test.failed == 8
    assert step.test.failing == tuple(f"tests/test_parse.py::test_case_{n}" for n in range(MAX_FAILING_IDS))
    assert step.analysis is not None
    assert step.analysis.message == "The parser drops the last token.\nSee lexer.next.\nThen rerun.…"
    assert step_line(step) == (
        "    iteration 1: changed parse.py, created lexer.py · the tests fail (8 failed)"
        " · RETRY: The parser drops the last token."
    )


def test_a_runner_it_cannot_read_says_its_exit_code_not_a_made_up_count() -> None:
    test = DecidingRun(command="make check", scope=SuiteScope.WHOLE, exit_code=2, stdout="x" * 5000)
    (step,) = run_steps([iteration(test=test)])
    assert step.test is not None and (step.test.failed, step.test.failing) == (None, ())
    assert (
        step_line(step)
        == "    iteration 1: changed parse.py, created lexer.py · the tests fail (exit code 2)"
    )
    timed_out = DecidingRun(command="pytest", scope=SuiteScope.WHOLE, timed_out=True, summary="y" * 1000)
    (step,) = run_steps([iteration(test=timed_out)])
    assert step.test is not None and step.test.failed is None and len(step.test.summary) == MAX_CHARS
    assert step_line(step).endswith("· the tests timed out")


def test_an_edit_that_changed_nothing_says_so_and_why() -> None:
    nothing = EditSummary(
        status=TaskStatus.FAILED,
        error=TaskError(
            reason=ErrorReason.TOOL_EXECUTION_ERROR, message="Aider changed no file\n(traceback…)"
        ),
    )
    it = WorkflowIteration(iteration=3, prompt="again", files=["parse.py"], aider=nothing)
    (step,) = run_steps([it])
    assert step.edit is not None and step.edit.error == "Aider changed no file\n(traceback…)"
    assert step_line(step) == "    iteration 3: changed nothing · no test run"


def test_a_run_recorded_without_steps_or_with_broken_ones_still_lists(tmp_path: Path) -> None:
    store = CheckpointStore(FileAccessManager(tmp_path))
    old = store.create(["a.py"], label="workflow: from last week")
    store.annotate(old.id, kind="workflow", status="SUCCESS", iterations=2)
    broken = store.create(["a.py"], label="workflow: edited by hand")
    store.annotate(broken.id, kind="workflow", status="FAILURE", steps=[{"iteration": "one"}])
    records = [run_record(checkpoint) for checkpoint in store.saved()]
    assert [(r.status, r.iterations, r.steps) for r in records] == [("SUCCESS", 2, ()), ("FAILURE", None, ())]
