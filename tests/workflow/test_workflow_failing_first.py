"""Failing tests first in a workflow run (REAL Aider edits, the scripted model, a real pytest
suite): after an edit only the tests that failed before run, then the whole suite once they
pass; only a green whole suite ends the run, and each iteration says which tests ran and why."""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from aider_lsp.app import Application
from aider_lsp.models import RequestContext, TaskStatus, WorkflowRequest
from aider_lsp_testing.apps import run_workflow_on_wire, scripted_app
from aider_lsp_testing.calc_project import analysis_by_exit_code
from aider_lsp_testing.llm_server import IS_AIDER, IS_ANALYSIS, aider_whole

pytestmark = [pytest.mark.aider, pytest.mark.slow, pytest.mark.usefixtures("narrow_every_suite")]

BUGGY = "def subtract(a, b):\n    return b - a\n\n\ndef multiply(a, b):\n    return a * b\n"
NO_FIX = "def subtract(a, b):\n    return b - a  # looked at\n\n\ndef multiply(a, b):\n    return a * b\n"
BREAKS_MULTIPLY = "def subtract(a, b):\n    return a - b\n\n\ndef multiply(a, b):\n    return a + b\n"
FIXED = "def subtract(a, b):\n    return a - b\n\n\ndef multiply(a, b):\n    return a * b\n"
TESTS = (
    "from calc import multiply, subtract\n\n\n"
    "def test_subtract():\n    assert subtract(5, 3) == 2\n\n\n"
    "def test_multiply():\n    assert multiply(3, 4) == 12\n\n\n"
    "def test_more_multiply():\n    assert multiply(2, 5) == 10\n"
)
COMMAND = f"{sys.executable} -m pytest -q -p no:cacheprovider"


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "calcproj"
    root.mkdir()
    (root / "calc.py").write_text(BUGGY)
    (root / "test_calc.py").write_text(TESTS)
    return root


def script_edits(llm_server: Any, *versions: str) -> None:
    """Aider's edits in order, one reply each; the analyst reads the real test result."""
    llm_server.add_rule(IS_ANALYSIS, analysis_by_exit_code)
    for version in versions:
        llm_server.add_rule(IS_AIDER, aider_whole({"calc.py": version}), times=1)


async def run_workflow(app: Application) -> Any:
    request = WorkflowRequest(
        goal="make the tests pass", test_command=COMMAND, file_context=["calc.py"], max_retries=3
    )
    return await run_workflow_on_wire(app, request, RequestContext())


def suite_runs(result: Any) -> list[list[tuple[str, list[str], int | None]]]:
    return [
        [(run["scope"], run["tests"], run["exit_code"]) for run in item["test_runs"]]
        for item in result.notes["workflow"]["iterations"]
    ]


@pytest.fixture
async def app(project: Path, llm_server: Any) -> AsyncIterator[Application]:
    application = scripted_app(project, llm_server.base_url)
    try:
        yield application
    finally:
        await application.aclose()


async def test_the_failing_tests_run_first_and_only_the_whole_suite_ends_the_run(
    app: Application, project: Path, llm_server: Any
) -> None:
    script_edits(llm_server, NO_FIX, BREAKS_MULTIPLY, FIXED)
    result = await run_workflow(app)
    assert result.status is TaskStatus.COMPLETE, result.content
    assert (project / "calc.py").read_text() == FIXED
    subtract, multiply = "test_calc.py::test_subtract", "test_calc.py::test_multiply"
    more = "test_calc.py::test_more_multiply"
    assert suite_runs(result) == [
        # the tests before the first edit, then after it: the whole suite (as without that run)
        [("whole", [], 1), ("whole", [], 1)],
        # the failing test passes now, but the rest of the suite finds what the edit broke: red
        [("failing", [subtract], 0), ("rest", [subtract], 1)],
        # those two pass, then the rest of the suite (without them): a whole suite's worth of green
        [("failing", [multiply, more], 0), ("rest", [multiply, more], 0)],
    ]
    second = result.notes["workflow"]["iterations"][1]
    assert second["test"]["scope"] == "rest" and second["test"]["exit_code"] == 1
    assert f"--deselect {subtract}" in second["test"]["command"]
    assert [run["why"] for run in second["test_runs"]] == [
        "they failed in the last run",
        "the tests that failed pass now",
    ]


async def test_failing_tests_first_off_runs_the_whole_suite_every_time(
    project: Path, llm_server: Any
) -> None:
    app = scripted_app(project, llm_server.base_url, failingTestsFirst=False)
    script_edits(llm_server, NO_FIX, FIXED)
    try:
        result = await run_workflow(app)
    finally:
        await app.aclose()
    assert result.status is TaskStatus.COMPLETE, result.content
    assert suite_runs(result) == [
        [("whole", [], 1), ("whole", [], 1)],
        [("whole", [], 0)],
    ]  # 1: before, after
    assert (
        result.notes["workflow"]["iterations"][1]["test_runs"][0]["why"]
        == "aiderLsp.failingTestsFirst is off"
    )


async def test_a_narrowed_run_that_names_no_failing_test_lets_the_whole_suite_decide(
    app: Application, project: Path, llm_server: Any
) -> None:
    """The edit renamed the failing test away: its id runs nothing, the whole suite decides."""
    renamed = TESTS.replace("def test_subtract", "def test_subtraction")
    llm_server.add_rule(IS_ANALYSIS, analysis_by_exit_code)
    llm_server.add_rule(IS_AIDER, aider_whole({"calc.py": NO_FIX}), times=1)
    llm_server.add_rule(IS_AIDER, aider_whole({"calc.py": FIXED, "test_calc.py": renamed}), times=1)
    request = WorkflowRequest(
        goal="make the tests pass",
        test_command=COMMAND,
        file_context=["calc.py", "test_calc.py"],
        max_retries=2,
    )
    result = await run_workflow_on_wire(app, request, RequestContext())
    assert result.status is TaskStatus.COMPLETE, result.content
    runs = suite_runs(result)[1]
    assert [(scope, code) for scope, _, code in runs] == [("failing", 4), ("whole", 0)]
