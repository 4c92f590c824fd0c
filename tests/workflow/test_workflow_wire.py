"""A run's typed history on the wire and in the terminal (over the fake host: milliseconds).

The editor client reads `notes.workflow.iterations[...]` by these JSON keys
(editor-client/src/common/workflowSummary.ts): typing the iteration must not change them.
"""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from aider_lsp.cli.run import print_report
from aider_lsp.models import RequestContext, Verdict, WorkflowResult, WorkflowRun
from aider_lsp.results import workflow_run_result
from aider_lsp.workflow.orchestrator import CodingWorkflowOrchestrator
from aider_lsp_testing.fake_host import (
    WITHOUT_TESTS_FIRST,
    FakeHost,
    analysis,
    green_run,
    no_change,
    red_run,
    rest_run,
    writes,
)

FIXED = "def multiply(a, b):\n    return a * b\n"
FAILING = "tests/test_calc.py::test_multiply"
pytestmark = [pytest.mark.timeout(10), pytest.mark.usefixtures("narrow_every_suite")]


async def _three_iterations(tmp_path: Path) -> tuple[CodingWorkflowOrchestrator, WorkflowResult]:
    """A no-change edit, a wrong edit (red), the fix (failing test, then the rest: green)."""
    (tmp_path / "calc.py").write_text("def multiply(a, b):\n    return a + b\n")
    host = FakeHost(tmp_path, WITHOUT_TESTS_FIRST)
    host.edits.extend(
        [no_change(), writes("calc.py", "def multiply(a, b):\n    return 0\n"), writes("calc.py", FIXED)]
    )
    host.test_runs.extend([red_run(FAILING), green_run(), rest_run(deselected=1)])
    host.analyses.extend([analysis(Verdict.RETRY, "no edit"), analysis(Verdict.RETRY, "wrong")])
    run = CodingWorkflowOrchestrator(host, "multiply multiplies", "", "pytest", 3, ["calc.py"])
    return run, await run.run(RequestContext())


async def test_the_iterations_keep_their_wire_keys(tmp_path: Path) -> None:
    run, outcome = await _three_iterations(tmp_path)
    wire = workflow_run_result(WorkflowRun(outcome=outcome, changes=run.changes())).to_wire()
    iterations = wire["notes"]["workflow"]["iterations"]
    assert list(iterations[0]) == [
        "iteration",
        "prompt",
        "files",
        "aider",
        "test",
        "test_runs",
        "findings",
        "analysis",
        "overruled",
    ]
    no_edit, wrong, fixed = (item["aider"] for item in iterations)
    assert list(no_edit) == [
        "status",
        "diff",
        "changed_files",
        "created_files",
        "usage",
        "error",
        "session_id",
    ]
    assert no_edit["status"] == "FAILED" and no_edit["usage"] is None
    assert no_edit["error"]["type"] == "TASK_FAILURE" and no_edit["error"]["reason"] == "tool_execution_error"
    assert "error" not in fixed and fixed["status"] == "COMPLETE" and fixed["changed_files"] == ["calc.py"]
    assert iterations[0]["test"] is None
    assert list(iterations[1]["test"]) == [
        "command",
        "scope",
        "exit_code",
        "timed_out",
        "duration_s",
        "stdout",
        "stderr",
        "summary",
        "outcome",
    ]
    assert iterations[2]["test"]["scope"] == "rest" and iterations[2]["test"]["exit_code"] == 0
    assert iterations[0]["analysis"] == {
        "verdict": "RETRY",
        "message": "no edit",
        "next_prompt": "try again",
        "next_files": None,
    }
    assert wire["notes"]["workflow"]["final_aider_result"] == fixed
    assert wrong["session_id"] == fixed["session_id"]  # one Aider chat for the run


async def test_the_terminal_report_reads_the_typed_run(tmp_path: Path) -> None:
    run, outcome = await _three_iterations(tmp_path)
    out = io.StringIO()
    print_report(WorkflowRun(outcome=outcome, changes=run.changes()), tmp_path, out)
    text = out.getvalue()
    assert text.startswith("\nSUCCESS: the tests pass")
    assert "  Aider: changed nothing: Aider made no change to the files" in text
    assert "  Aider changed: calc.py" in text
    assert f"  tests (1 failing; they failed in the last run): exit code 0 (pytest {FAILING})" in text
    assert "  analysis: RETRY: no edit" in text
    assert "Undo them with: aider-lsp undo" in text
