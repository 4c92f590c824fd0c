"""The coding workflow with REAL Aider edits, the scripted LLM planning, editing and analysing,
and a real unittest run on a temp project whose test fails."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from aider_lsp.app import Application, RequestContext
from aider_lsp.models import ErrorReason, Finding, TaskStatus, WorkflowRequest
from aider_lsp.settings import load_settings
from aider_lsp_testing.calc_project import (
    BUGGY,
    FIXED,
    HALF_FIXED,
    MULTIPLY_ASSERT_LINE,
    PLAN,
    RETRY,
    TEST_COMMAND,
    TESTS,
    analysis_by_exit_code,
)
from aider_lsp_testing.llm_server import (
    IS_AIDER,
    IS_ANALYSIS,
    IS_PLAN,
    aider_whole,
    all_of,
    fault,
    json_output,
    last_user_contains,
    slow,
)
from conftest import needs_aider

pytestmark = needs_aider


def make_app(root: Path, base_url: str, **extra: Any) -> Application:
    options = {
        "model": "openai:scripted-planner",
        "baseUrl": base_url,
        "apiKey": "test-key",
        "aiderModel": "openai/scripted-coder",
        "aiderServer": {"args": ["--edit-format", "whole"]},
        "timeouts": {"aider": 90, "test": 60},
        **extra,
    }
    return Application(root, load_settings(options, environ={}))


@pytest.fixture
async def app(calc_project: Path, llm_server: Any) -> AsyncIterator[Application]:
    application = make_app(calc_project, llm_server.base_url)
    try:
        yield application
    finally:
        await application.aclose()


class Recorder:
    """A RequestContext that remembers what the run reported."""

    def __init__(self) -> None:
        self.progress: list[str] = []
        self.findings: list[list[Finding]] = []
        self.context = RequestContext(
            report_progress=lambda message, pct: self.progress.append(message),
            report_findings=self.findings.append,
            open_files=["calc.py"],
        )


def script_two_iterations(llm_server: Any) -> None:
    llm_server.add_rule(IS_PLAN, json_output(PLAN))
    llm_server.add_rule(IS_ANALYSIS, analysis_by_exit_code)
    llm_server.add_rule(
        all_of(IS_AIDER, last_user_contains("Make multiply")), aider_whole({"calc.py": FIXED})
    )
    llm_server.add_rule(
        all_of(IS_AIDER, last_user_contains("Fix subtract")), aider_whole({"calc.py": HALF_FIXED})
    )


async def test_failing_iteration_then_retry_reaches_success(
    app: Application, calc_project: Path, llm_server: Any
) -> None:
    script_two_iterations(llm_server)
    seen = Recorder()
    result = await app.run_workflow(
        WorkflowRequest(goal="make the tests pass", test_command=TEST_COMMAND), seen.context
    )
    assert result.status is TaskStatus.COMPLETE, result.content
    assert (calc_project / "calc.py").read_text() == FIXED
    run = result.notes["workflow"]
    assert run["status"] == "SUCCESS" and result.parsed_content == run
    first, second = run["iterations"]
    assert first["test"]["exit_code"] != 0 and second["test"]["exit_code"] == 0
    assert "multiply(3, 4)" in first["test"]["stderr"]  # the analysis got the failing output
    assert first["analysis"]["verdict"] == "RETRY" and second["prompt"] == RETRY["next_prompt"]
    # iteration 1's finding sits on the failing assertion; SUCCESS cleared them
    failing = [f for f in seen.findings[0] if f.source != "analysis"]
    assert [(f.path, f.line) for f in failing] == [("test_calc.py", MULTIPLY_ASSERT_LINE)]
    assert "AssertionError" in failing[0].message and "test_multiply" in failing[0].message
    advice = [f for f in seen.findings[0] if f.source == "analysis"]
    assert [(f.path, f.severity.value) for f in advice] == [("calc.py", "information")]
    assert seen.findings[-1] == []
    assert seen.progress[0] == "Planning"
    assert "Iteration 1/3: Aider is editing" in seen.progress
    assert "Iteration 2/3: running tests" in seen.progress
    assert "Iteration 2/3: analysing the result" in seen.progress
    assert result.notes["changed_files"] == ["calc.py"]
    assert "+    return a * b" in result.notes["diff"]
    # the run's diff has the format of an edit's: one `diff --aider-mcp a/X b/X` section per file
    assert result.notes["diff"].startswith("diff --aider-mcp a/calc.py b/calc.py\n--- a/calc.py\n")
    usage = run["usage"]
    assert usage["requests"] == 3 and usage["total_tokens"] > 0  # plan + two analyses
    # the planner saw the open file and the goal
    plan_request = llm_server.chat_requests()[0]
    assert "make the tests pass" in str(plan_request["messages"]) and "calc.py" in str(
        plan_request["messages"]
    )


async def test_undo_after_success_restores_and_removes_created_files(
    app: Application, calc_project: Path, llm_server: Any
) -> None:
    llm_server.add_rule(IS_PLAN, json_output({**PLAN, "instructions": "Fix both"}))
    llm_server.add_rule(IS_ANALYSIS, analysis_by_exit_code)
    llm_server.add_rule(IS_AIDER, aider_whole({"calc.py": FIXED, "helpers.py": "TWO = 2\n"}))
    result = await app.run_workflow(
        WorkflowRequest(goal="fix calc", test_command=TEST_COMMAND), RequestContext()
    )
    assert result.status is TaskStatus.COMPLETE, result.content
    assert (calc_project / "helpers.py").exists()
    assert result.notes["created_files"] == ["helpers.py"] and result.notes["checkpoint_id"]
    assert "diff --aider-mcp a/helpers.py b/helpers.py\nnew file\n--- /dev/null\n" in result.notes["diff"]
    undo = app.undo()
    assert undo.status is TaskStatus.COMPLETE, undo.content
    assert (calc_project / "calc.py").read_text() == BUGGY
    assert not (calc_project / "helpers.py").exists()
    assert app.undo().content == "Nothing to undo."


async def test_max_retries_reached_is_a_failure(
    app: Application, calc_project: Path, llm_server: Any
) -> None:
    llm_server.add_rule(IS_PLAN, json_output(PLAN))
    llm_server.add_rule(IS_ANALYSIS, json_output(RETRY))
    llm_server.add_rule(
        all_of(IS_AIDER, last_user_contains("Fix subtract")), aider_whole({"calc.py": HALF_FIXED})
    )
    llm_server.add_rule(IS_AIDER, aider_whole({"calc.py": HALF_FIXED.replace("a + b", "a + b + 0")}))
    seen = Recorder()
    result = await app.run_workflow(
        WorkflowRequest(goal="fix calc", test_command=TEST_COMMAND, max_retries=2), seen.context
    )
    assert result.status is TaskStatus.FAILED
    assert result.notes["error"]["reason"] == "max_retries_reached"
    run = result.notes["workflow"]
    assert run["status"] == "FAILURE" and len(run["iterations"]) == 2
    assert run["analysis_result"]["verdict"] == "RETRY"
    assert len(seen.findings) == 2 and all(seen.findings)  # findings stay on a failed run


async def test_llm_error_fails_the_run_and_changes_nothing(
    app: Application, calc_project: Path, llm_server: Any
) -> None:
    llm_server.add_rule(IS_PLAN, fault(500, {"error": {"message": "the model is on fire"}}))
    llm_server.add_rule(IS_AIDER, aider_whole({"calc.py": FIXED}))
    result = await app.run_workflow(
        WorkflowRequest(goal="fix calc", test_command=TEST_COMMAND), RequestContext()
    )
    assert result.status is TaskStatus.FAILED
    assert result.notes["error"]["reason"] == "llm_error"
    assert "500" in result.content and "planning failed" in result.content
    assert (calc_project / "calc.py").read_text() == BUGGY
    assert (calc_project / "test_calc.py").read_text() == TESTS
    assert all(IS_PLAN(request) for request in llm_server.chat_requests())  # Aider never ran
    assert app.checkpoints.latest() is None


async def test_a_second_run_is_refused_while_one_runs(
    app: Application, calc_project: Path, llm_server: Any
) -> None:
    llm_server.add_rule(IS_PLAN, slow(30, json_output(PLAN)))
    first = asyncio.create_task(
        app.run_workflow(WorkflowRequest(goal="fix calc", test_command=TEST_COMMAND), RequestContext())
    )
    assert await asyncio.to_thread(llm_server.wait_for_requests, 1, 30)
    second = await asyncio.wait_for(
        app.run_workflow(WorkflowRequest(goal="again", test_command=TEST_COMMAND), RequestContext()), 1
    )
    assert second.status is TaskStatus.FAILED
    assert "already running" in second.content
    assert second.notes["error"]["reason"] == "input_validation_failure"
    first.cancel()
    with pytest.raises(asyncio.CancelledError):
        await first
    assert (calc_project / "calc.py").read_text() == BUGGY


async def test_budget_stops_the_run_between_steps(calc_project: Path, llm_server: Any) -> None:
    app = make_app(calc_project, llm_server.base_url, budget={"maxTokens": 500})
    plan = json_output(PLAN, usage={"prompt_tokens": 100, "completion_tokens": 10, "total_tokens": 110})
    retry = json_output(RETRY, usage={"prompt_tokens": 380, "completion_tokens": 10, "total_tokens": 390})
    llm_server.add_rule(IS_PLAN, plan)
    llm_server.add_rule(IS_ANALYSIS, retry)
    llm_server.add_rule(IS_AIDER, aider_whole({"calc.py": HALF_FIXED}))
    try:
        result = await app.run_workflow(
            WorkflowRequest(goal="fix calc", test_command=TEST_COMMAND), RequestContext()
        )
    finally:
        await app.aclose()
    assert result.status is TaskStatus.FAILED
    assert result.notes["error"]["reason"] == "budget_exceeded"
    run = result.notes["workflow"]
    assert len(run["iterations"]) == 1  # stopped before the second edit
    assert run["usage"]["total_tokens"] == 500
    assert "budget" in result.content
    # what was done stays undoable
    assert (calc_project / "calc.py").read_text() == HALF_FIXED
    assert app.undo().ok and (calc_project / "calc.py").read_text() == BUGGY


async def test_a_stopped_edit_is_the_same_failure_typed_and_on_the_wire(tmp_path: Path) -> None:
    """The run's typed edit (Application.edit) and `aider:automatic` share the executor's checks:
    a secret or an outside file stops both before Aider runs, with the same result."""
    (tmp_path / ".env").write_text("KEY=x\n")
    app = Application(tmp_path, load_settings({}, {}))
    try:
        typed = await app.edit("change it", [".env"])
        wire = await app.handle_task_command(
            "aider:automatic", {"prompt": "change it", "file_context": [".env"]}
        )
        outside = await app.edit("change it", ["/etc/passwd"])
    finally:
        await app.aclose()
    assert typed.error is not None and typed.error.reason is ErrorReason.ACCESS_DENIED
    assert typed.refused and typed.files is None and not typed.changed_files
    assert wire.status is TaskStatus.FAILED and wire.notes["refused"] == typed.refused
    assert typed.to_task_result().model_dump(by_alias=True) == wire.model_dump(by_alias=True)
    assert outside.error is not None and outside.error.reason is ErrorReason.ACCESS_DENIED


async def test_without_a_test_command_the_detected_one_is_asked_once_and_used(
    app: Application, calc_project: Path, llm_server: Any
) -> None:
    script_two_iterations(llm_server)
    questions: list[str] = []

    async def use_it(message: str, actions: Any) -> str:
        questions.append(message)
        return "Use it"

    seen = Recorder()
    seen.context.ask = use_it
    result = await app.run_workflow(WorkflowRequest(goal="make the tests pass"), seen.context)
    assert result.status is TaskStatus.COMPLETE, result.content
    assert len(questions) == 1 and f"`{TEST_COMMAND}`" in questions[0]
    commands = {item["test"]["command"] for item in result.notes["workflow"]["iterations"]}
    assert commands == {TEST_COMMAND}
    (calc_project / "calc.py").write_text(BUGGY)
    script_two_iterations(llm_server)
    again = await app.run_workflow(WorkflowRequest(goal="make the tests pass"), seen.context)
    assert again.status is TaskStatus.COMPLETE, again.content
    assert len(questions) == 1  # remembered for the workspace: not asked again
