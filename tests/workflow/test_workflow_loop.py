"""How the loop decides and what it calls (issue 18), with REAL Aider edits through the bundled
server, the scripted model and a real unittest run: the tests are the judge, green tests end
the run without an analysis call, a no-change edit is a failed attempt, the editor's files
skip the plan."""

from __future__ import annotations

import asyncio
import shlex
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

from aider_lsp.app import Application
from aider_lsp.config.settings import load_settings
from aider_lsp.models import AnalysisMade, RequestContext, TaskStatus, WorkflowRequest
from aider_lsp_testing import FAKE_AIDER_MCP
from aider_lsp_testing.apps import run_workflow_on_wire, scripted_app
from aider_lsp_testing.calc_project import (
    BUGGY,
    FIXED,
    HALF_FIXED,
    PLAN,
    RETRY,
    SUCCESS,
    TEST_COMMAND,
    analysis_by_exit_code,
)
from aider_lsp_testing.llm_server import (
    IS_AIDER,
    IS_ANALYSIS,
    IS_PLAN,
    aider_whole,
    all_of,
    held,
    json_output,
    last_user_contains,
    text,
)
from aider_lsp_testing.waiting import eventually

pytestmark = [pytest.mark.aider, pytest.mark.slow]
RETRY_MARK = "I ran this command:"


def calls(llm_server: Any) -> list[str]:
    """The model calls the run made, by kind, in order."""
    return [
        "plan" if IS_PLAN(r) else "analysis" if IS_ANALYSIS(r) else "aider"
        for r in llm_server.chat_requests()
    ]


async def run(app: Application, ctx: RequestContext | None = None, /, **fields: Any) -> Any:
    request = WorkflowRequest(goal="make the tests pass", test_command=TEST_COMMAND, **fields)
    return await run_workflow_on_wire(app, request, ctx or RequestContext())


def on_analysis() -> tuple[threading.Event, RequestContext]:
    """An event set once the run has made an analysis (its AnalysisMade), and the run's context
    that sets it: a reply `held` on it comes after the analysis, whatever the machine's speed."""
    made = threading.Event()
    context = RequestContext(
        report_event=lambda event: made.set() if isinstance(event, AnalysisMade) else None
    )
    return made, context


async def test_success_is_refused_over_a_red_test_at_the_last_iteration(
    app: Application, llm_server: Any
) -> None:
    llm_server.add_rule(IS_PLAN, json_output(PLAN))
    llm_server.add_rule(IS_ANALYSIS, json_output(SUCCESS))  # says SUCCESS whatever the tests say
    llm_server.add_rule(IS_AIDER, aider_whole({"calc.py": HALF_FIXED}))
    result = await run(app, max_retries=1)
    assert result.status is TaskStatus.FAILED
    assert result.notes["error"]["reason"] == "max_retries_reached"
    assert "the analysis said SUCCESS, but the tests fail (exit code 1)" in result.content
    (only,) = result.notes["workflow"]["iterations"]
    assert only["analysis"]["verdict"] == "SUCCESS" and "tests are the judge" in only["overruled"]
    assert result.notes["workflow"]["status"] == "FAILURE"


async def test_success_over_a_red_test_is_taken_as_retry(
    app: Application, calc_project: Path, llm_server: Any
) -> None:
    llm_server.add_rule(IS_PLAN, json_output(PLAN))
    llm_server.add_rule(IS_ANALYSIS, json_output(SUCCESS))
    llm_server.add_rule(IS_AIDER, aider_whole({"calc.py": HALF_FIXED}), times=1)  # the first edit
    analysed, context = on_analysis()  # the second edit turns the tests green after the analysis
    llm_server.add_rule(
        all_of(IS_AIDER, last_user_contains(RETRY_MARK)), held(analysed, aider_whole({"calc.py": FIXED}))
    )
    try:
        result = await asyncio.wait_for(run(app, context, max_retries=3), 120)
    finally:
        analysed.set()
    assert result.status is TaskStatus.COMPLETE, result.content
    first, second = result.notes["workflow"]["iterations"]
    assert first["test"]["exit_code"] != 0 and first["overruled"]  # not SUCCESS: the run went on
    assert second["test"]["exit_code"] == 0 and (calc_project / "calc.py").read_text() == FIXED


async def test_green_tests_end_the_run_without_an_analysis_call(
    app: Application, calc_project: Path, llm_server: Any
) -> None:
    llm_server.add_rule(IS_PLAN, json_output(PLAN))
    llm_server.add_rule(IS_ANALYSIS, json_output(RETRY))  # would say "go on": never asked
    llm_server.add_rule(IS_AIDER, aider_whole({"calc.py": FIXED}))
    result = await run(app)
    assert result.status is TaskStatus.COMPLETE, result.content
    assert "analysis" not in calls(llm_server) and calls(llm_server).count("aider") == 1
    assert "the tests pass" in result.content
    (only,) = result.notes["workflow"]["iterations"]
    assert only["analysis"] is None


async def test_analyse_green_tests_asks_the_analysis_which_may_go_on(
    calc_project: Path, llm_server: Any
) -> None:
    app = scripted_app(calc_project, llm_server.base_url, analyseGreenTests=True)
    llm_server.add_rule(IS_PLAN, json_output(PLAN))
    goes_on = {
        "verdict": "RETRY",
        "message": "add a docstring too",
        "next_prompt": "Add a docstring to multiply",
    }
    llm_server.add_rule(IS_ANALYSIS, json_output(goes_on), times=1)
    llm_server.add_rule(IS_ANALYSIS, json_output(SUCCESS))
    llm_server.add_rule(
        all_of(IS_AIDER, last_user_contains("docstring")),
        aider_whole(
            {"calc.py": FIXED.replace("def multiply(a, b):\n", 'def multiply(a, b):\n    """a times b"""\n')}
        ),
    )
    llm_server.add_rule(IS_AIDER, aider_whole({"calc.py": FIXED}))
    try:
        result = await run(app)
    finally:
        await app.aclose()
    assert result.status is TaskStatus.COMPLETE, result.content
    # the plan beside the first edit is asked whenever its model is loaded (on a busy machine
    # after the first analysis, or never: the tests passed first, which makes it moot); the
    # analysis of each green run follows its edit
    made = calls(llm_server)
    assert made.count("plan") <= 1
    assert [call for call in made if call != "plan"] == ["aider", "analysis", "aider", "analysis"]
    assert '"""a times b"""' in (calc_project / "calc.py").read_text()
    assert result.content == SUCCESS["message"]


async def test_a_no_change_edit_is_a_failed_attempt_and_retried(
    app: Application, calc_project: Path, llm_server: Any
) -> None:
    llm_server.add_rule(IS_PLAN, json_output(PLAN))
    llm_server.add_rule(IS_ANALYSIS, analysis_by_exit_code)
    llm_server.add_rule(IS_AIDER, text("I would rather not change anything."), times=1)
    analysed, context = on_analysis()
    llm_server.add_rule(IS_AIDER, held(analysed, aider_whole({"calc.py": FIXED})))  # after the analysis
    try:
        result = await asyncio.wait_for(run(app, context), 120)
    finally:
        analysed.set()
    assert result.status is TaskStatus.COMPLETE, result.content
    first, second = result.notes["workflow"]["iterations"]
    assert first["aider"]["status"] == "FAILED" and first["aider"]["changed_files"] == []
    assert first["test"] is None  # nothing changed: nothing to test
    assert first["analysis"]["verdict"] == "RETRY"  # analysed, beside the retry
    assert second["prompt"].startswith("Your last reply changed no file")
    assert second["test"]["exit_code"] == 0 and (calc_project / "calc.py").read_text() == FIXED
    analysis = next(r for r in llm_server.chat_requests() if IS_ANALYSIS(r))
    assert "changed nothing" in str(analysis["messages"]) and "I would rather not" in str(
        analysis["messages"]
    )


async def test_the_editors_files_skip_the_plan(app: Application, calc_project: Path, llm_server: Any) -> None:
    llm_server.add_rule(IS_PLAN, json_output(PLAN))
    llm_server.add_rule(IS_AIDER, aider_whole({"calc.py": FIXED}))
    result = await run(app, file_context=["calc.py"], context="multiply is wrong")
    assert result.status is TaskStatus.COMPLETE, result.content
    assert calls(llm_server) == ["aider"]
    (only,) = result.notes["workflow"]["iterations"]
    # the goal, the context, then what the tests run before the edit showed
    assert only["prompt"].startswith(f"make the tests pass\n\nmultiply is wrong\n\n{RETRY_MARK}")
    assert only["files"] == ["calc.py"]
    # the plan recorded is the one the editor's files and Aider's reply imply (none was asked)
    assert result.notes["workflow"]["plan"]["files"] == ["calc.py"]


async def test_the_analysis_beside_the_edit_still_stops_a_hopeless_run(
    app: Application, calc_project: Path, llm_server: Any
) -> None:
    llm_server.add_rule(IS_PLAN, json_output(PLAN))
    llm_server.add_rule(IS_ANALYSIS, json_output({"verdict": "FAILURE", "message": "multiply is beyond me"}))
    llm_server.add_rule(
        all_of(IS_AIDER, last_user_contains(RETRY_MARK)), aider_whole({"calc.py": HALF_FIXED + "\n"})
    )
    llm_server.add_rule(IS_AIDER, aider_whole({"calc.py": HALF_FIXED}))
    result = await run(app, max_retries=3)
    assert result.status is TaskStatus.FAILED
    assert result.notes["error"]["reason"] == "goal_not_reached"
    assert "multiply is beyond me" in result.content
    assert len(result.notes["workflow"]["iterations"]) == 2  # the edit beside it, then no third
    assert calls(llm_server).count("aider") == 2


async def test_cancel_while_the_analysis_runs_beside_the_edit_stops_both(
    app: Application, calc_project: Path, llm_server: Any
) -> None:
    """The analysis and the second edit are held until the end of the test: a cancel that
    waited for either would never end the run (the cap fails); both are recorded cancelled."""
    let_go = threading.Event()
    llm_server.add_rule(IS_PLAN, json_output(PLAN))
    llm_server.add_rule(IS_ANALYSIS, held(let_go, json_output(RETRY)))
    llm_server.add_rule(IS_AIDER, aider_whole({"calc.py": HALF_FIXED}), times=1)  # the first edit
    llm_server.add_rule(
        all_of(IS_AIDER, last_user_contains(RETRY_MARK)), held(let_go, aider_whole({"calc.py": FIXED}))
    )
    running = asyncio.create_task(run(app))
    try:
        # edit 1 with the plan beside it, then the analysis of iteration 1 and edit 2 at once
        # the plan beside edit 1 arrives whenever its model is loaded (on a busy machine, last)
        expected = ["aider", "aider", "analysis", "plan"]
        assert await eventually(lambda: sorted(calls(llm_server)) == expected, 120), calls(llm_server)
        running.cancel()
        with pytest.raises(asyncio.CancelledError):
            await asyncio.wait_for(running, 60)  # a cap: what it must not wait for never answers
    finally:
        let_go.set()
    assert (calc_project / "calc.py").read_text() == HALF_FIXED  # the first edit, kept for undo
    (record,) = app.history()  # the cancelled run's iterations as far as they got
    assert record.status == "CANCELLED" and [step.iteration for step in record.steps] == [1, 2]
    first, second = record.steps
    assert first.edit is not None and first.edit.changed_files == ("calc.py",)
    assert first.test is not None and (first.test.exit_code, first.test.failed) == (1, 1)
    assert first.analysis is None and (second.edit, second.test) == (None, None)  # both cancelled
    assert app.undo().ok and (calc_project / "calc.py").read_text() == BUGGY


async def test_a_server_without_usage_or_chats_shows_aider_not_reported(
    calc_project: Path, tmp_path: Path
) -> None:
    """The public aider-mcp-server's shape (aider_lsp_testing/fake_aider_mcp.py): no `usage`, no chat tool.
    The run falls back to stateless edits, and its spend says "Aider: not reported". With the
    editor's file and a known test command, and green tests, no model is called at all."""
    fake = FAKE_AIDER_MCP
    check = "import sys; sys.exit(0 if 'edited by fake' in open('calc.py').read() else 1)"
    options = {"aiderServer": {"command": sys.executable, "args": [fake, "ok"]}, "timeouts": {"aider": 30}}
    app = Application(calc_project, load_settings(options, environ={}))
    progress: list[str] = []
    context = RequestContext(report_progress=lambda message, pct: progress.append(message))
    request = WorkflowRequest(
        goal="mark calc.py",
        test_command=f"{sys.executable} -c {shlex.quote(check)}",
        file_context=["calc.py"],
    )
    try:
        result = await run_workflow_on_wire(app, request, context)
    finally:
        await app.aclose()
    assert result.status is TaskStatus.COMPLETE, result.content
    usage = result.notes["workflow"]["usage"]
    assert usage["aider"]["unreported"] == 1 and usage["aider"]["edits"] == 0 and usage["requests"] == 0
    assert progress[-1].endswith("Aider: 1 edit(s), not reported)")
    (only,) = result.notes["workflow"]["iterations"]
    assert "session_id" not in only["aider"] and only["aider"]["usage"] is None


async def test_green_tests_do_not_wait_for_the_analysis_beside(
    app: Application, calc_project: Path, llm_server: Any
) -> None:
    """The analysis of iteration 1 runs beside edit 2; when edit 2 turns the tests green first,
    the run ends at once (the tests are the judge) and the analysis is stopped, not awaited: its
    answer is held until the run has ended, so a run that waited for it would never end."""
    let_go = threading.Event()
    llm_server.add_rule(IS_PLAN, json_output(PLAN))
    llm_server.add_rule(IS_ANALYSIS, held(let_go, json_output(RETRY)))
    llm_server.add_rule(IS_AIDER, aider_whole({"calc.py": HALF_FIXED}), times=1)  # the first edit
    llm_server.add_rule(all_of(IS_AIDER, last_user_contains(RETRY_MARK)), aider_whole({"calc.py": FIXED}))
    try:
        result = await asyncio.wait_for(run(app), 120)  # a cap: the analysis never answers
    finally:
        let_go.set()
    assert result.status is TaskStatus.COMPLETE, result.content
    first, second = result.notes["workflow"]["iterations"]
    assert first["analysis"] is None and second["test"]["exit_code"] == 0  # stopped unanswered
    assert calls(llm_server).count("analysis") == 1
