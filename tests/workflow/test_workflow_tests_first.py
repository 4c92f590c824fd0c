"""The tests run before a workflow's first edit (`testsBeforeFirstEdit`, on by default): the
suite runs beside Aider's start and the index, and what fails joins the first edit's message,
so Aider sees the failures before its first attempt instead of one model call later.

Over the fake host (milliseconds): the order of the calls, the first prompt, the record, a suite
too slow to wait for. Then once end to end with REAL Aider and the scripted model: the two-bug
story the retry loop needs two edits for is fixed by one.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from aider_lsp.app import Application
from aider_lsp.config.settings import load_settings
from aider_lsp.models import (
    CommandRun,
    ErrorReason,
    Finding,
    RequestContext,
    SuiteScope,
    TaskError,
    TaskStatus,
    TestRunFinished,
    TestRunStarted,
    Verdict,
    WorkflowEvent,
    WorkflowProgress,
    WorkflowRequest,
    WorkflowStatus,
)
from aider_lsp.workflow import choose_tests
from aider_lsp.workflow.orchestrator import CodingWorkflowOrchestrator
from aider_lsp_testing.apps import run_workflow_on_wire, scripted_app
from aider_lsp_testing.calc_project import (
    FIXED,
    HALF_FIXED,
    TEST_COMMAND,
    analysis_by_exit_code,
    write_calc_project,
)
from aider_lsp_testing.fake_host import (
    EDIT,
    TEST,
    WITHOUT_TESTS_FIRST,
    FakeHost,
    analysis,
    green_run,
    red_run,
    rest_run,
    writes,
)
from aider_lsp_testing.llm_server import IS_AIDER, IS_ANALYSIS, aider_whole, all_of, last_user_contains

GOAL = "multiply multiplies"
FAILING = "tests/test_calc.py::test_multiply"
FIXED_MULTIPLY = "def multiply(a, b):\n    return a * b\n"


@pytest.fixture
def host(tmp_path: Path) -> FakeHost:
    (tmp_path / "calc.py").write_text("def multiply(a, b):\n    return a + b\n")
    return FakeHost(tmp_path, load_settings({}, environ={}))  # the default: on


def loop(host: FakeHost) -> CodingWorkflowOrchestrator:
    return CodingWorkflowOrchestrator(host, GOAL, "", "pytest", 3, ["calc.py"])


def reporting(
    host: FakeHost, findings: list[list[Finding]], events: list[WorkflowEvent] | None = None
) -> RequestContext:
    """A caller's context whose findings reports join the host's calls (their order shows)."""

    def report(found: list[Finding]) -> None:
        host.calls.append("findings")
        findings.append(found)

    return RequestContext(report_findings=report, report_event=(events if events is not None else []).append)


@pytest.mark.timeout(10)
async def test_a_failing_suite_before_the_first_edit_joins_its_message(host: FakeHost) -> None:
    host.test_runs.extend([red_run(FAILING), green_run()])
    host.edits.append(writes("calc.py", FIXED_MULTIPLY))
    events: list[WorkflowEvent] = []
    result = await loop(host).run(reporting(host, [], events))
    steps = [event for event in events if not isinstance(event, WorkflowProgress)]
    started, finished = steps[:2]  # what an ACP client shows as the run's first tool call
    assert isinstance(started, TestRunStarted) and started.before_edit
    assert isinstance(finished, TestRunFinished) and finished.before_edit and finished.exit_code == 1
    assert result.status is WorkflowStatus.SUCCESS
    # the suite first, its failures shown (as any run's), then the one edit
    assert host.calls[:3] == [f"{TEST}:pytest", "findings", EDIT]
    first = host.prompts[0]
    assert first.startswith(GOAL)
    assert "I ran this command:\n\npytest" in first
    assert FAILING in first  # the failing output itself
    first_iteration = result.iterations[0]
    assert first_iteration.prompt == first
    before, *after = first_iteration.test_runs
    assert before.scope is SuiteScope.WHOLE
    assert before.why.startswith("before the first edit")
    assert after  # the run that decided the iteration follows it


@pytest.mark.timeout(10)
async def test_after_it_the_whole_suite_decides_as_before(host: FakeHost, narrow_every_suite: None) -> None:
    """Its time, taken beside Aider's start, says little of the suite's own: the tests after
    the edit are chosen as without it; those after a red iteration run the failing ones first."""
    host.test_runs.extend([red_run(FAILING), red_run(FAILING), green_run(), rest_run(1)])
    host.edits.extend(
        [writes("calc.py", "def multiply(a, b):\n    return 0\n"), writes("calc.py", FIXED_MULTIPLY)]
    )
    host.analyses.append(analysis(Verdict.RETRY))
    result = await loop(host).run(RequestContext())
    assert result.status is WorkflowStatus.SUCCESS
    tests = [call.split(":", 1)[1] for call in host.calls if call.startswith(TEST)]
    assert tests[:2] == ["pytest", "pytest"]  # before the edit, then the whole suite after it
    assert FAILING in tests[2]  # iteration 2: what failed in iteration 1, first


@pytest.mark.timeout(10)
async def test_a_suite_of_a_few_seconds_runs_whole_after_a_red_iteration(tmp_path: Path) -> None:
    """The failing tests alone would cost a run, then the whole suite once they pass."""
    (tmp_path / "calc.py").write_text("def multiply(a, b):\n    return a + b\n")
    host = FakeHost(tmp_path, WITHOUT_TESTS_FIRST)  # iteration 1's run is the first
    quick = red_run(FAILING).model_copy(update={"duration_s": 2.5})
    host.test_runs.extend([quick, green_run()])
    host.edits.extend(
        [writes("calc.py", "def multiply(a, b):\n    return 0\n"), writes("calc.py", FIXED_MULTIPLY)]
    )
    host.analyses.append(analysis(Verdict.RETRY))
    result = await loop(host).run(RequestContext())
    assert result.status is WorkflowStatus.SUCCESS
    assert [call for call in host.calls if call.startswith(TEST)] == [f"{TEST}:pytest"] * 2
    decided = result.iterations[1].test_runs[-1]
    assert (decided.scope, decided.why) == (
        SuiteScope.WHOLE,
        "the whole suite takes under 3 s: it decides in one run",
    )


@pytest.mark.timeout(10)
async def test_a_passing_suite_leaves_the_goal_alone(host: FakeHost) -> None:
    host.test_runs.extend([green_run(), green_run()])
    host.edits.append(writes("calc.py", FIXED_MULTIPLY))
    findings: list[list[Finding]] = []
    result = await loop(host).run(reporting(host, findings))
    assert result.status is WorkflowStatus.SUCCESS
    assert host.prompts[0] == GOAL
    assert findings[0] == []  # nothing fails: earlier diagnostics go


@pytest.mark.timeout(10)
async def test_a_suite_that_cannot_run_leaves_the_goal_alone(host: FakeHost) -> None:
    error = TaskError(reason=ErrorReason.TOOL_EXECUTION_ERROR, message="cannot start the command")
    host.test_runs.extend([CommandRun(command="pytest", error=error), green_run()])
    host.edits.append(writes("calc.py", FIXED_MULTIPLY))
    result = await loop(host).run(RequestContext())
    assert host.prompts[0] == GOAL
    assert result.iterations[0].test_runs[0].why != "before the first edit: what fails now"


@pytest.mark.timeout(10)
async def test_a_suite_slower_than_the_grace_is_stopped_and_the_edit_goes_on(
    host: FakeHost, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(choose_tests, "BEFORE_GRACE_S", 0.05)
    host.hold.add(f"{TEST}#1")  # the run before the edit never ends by itself
    host.test_runs.append(green_run())
    host.edits.append(writes("calc.py", FIXED_MULTIPLY))
    events: list[WorkflowEvent] = []
    result = await loop(host).run(reporting(host, [], events))
    assert result.status is WorkflowStatus.SUCCESS
    assert host.prompts[0] == GOAL  # it went on without the failures
    stopped = next(e for e in events if isinstance(e, TestRunFinished))
    # its tool call closes, as stopped on purpose (no failure: nothing failed)
    assert stopped.before_edit and stopped.error is None
    assert stopped.stopped is not None and "Aider was ready" in stopped.stopped
    assert [call for call in host.calls if call.startswith(TEST)] == [f"{TEST}:pytest"] * 2
    assert len(result.iterations[0].test_runs) == 1  # the stopped run is not recorded


@pytest.mark.timeout(10)
async def test_a_suite_known_to_take_longer_than_the_grace_is_not_run_first(host: FakeHost) -> None:
    """A warm server ran it before (or stopped it at the grace): the edit would only wait."""
    host.durations["pytest"] = 2 * choose_tests.BEFORE_GRACE_S
    host.test_runs.append(green_run())
    host.edits.append(writes("calc.py", FIXED_MULTIPLY))
    await loop(host).run(RequestContext())
    assert host.calls == [EDIT, f"{TEST}:pytest"]
    assert host.prompts[0] == GOAL


@pytest.mark.timeout(10)
async def test_off_the_first_edit_gets_the_goal_alone(tmp_path: Path) -> None:
    (tmp_path / "calc.py").write_text("def multiply(a, b):\n    return a + b\n")
    host = FakeHost(tmp_path, load_settings({"testsBeforeFirstEdit": False}, environ={}))
    host.test_runs.append(green_run())
    host.edits.append(writes("calc.py", FIXED_MULTIPLY))
    await loop(host).run(RequestContext())
    assert host.calls == [EDIT, f"{TEST}:pytest"]
    assert host.prompts[0] == GOAL


# -- end to end ------------------------------------------------------------------------------
@pytest.fixture
async def app(tmp_path: Path, llm_server: Any) -> AsyncIterator[Application]:
    application = scripted_app(write_calc_project(tmp_path), llm_server.base_url, testsBeforeFirstEdit=True)
    try:
        yield application
    finally:
        await application.aclose()


async def test_a_test_run_stopped_before_its_end_counts_as_at_least_that_long(tmp_path: Path) -> None:
    """What keeps a slow suite from being started (and stopped) before every run's first edit."""
    app = Application(tmp_path, load_settings({}, environ={}))
    command = f"{sys.executable} -c 'import time; time.sleep(30)'"
    try:
        run = asyncio.create_task(app.run_tests(command))
        await asyncio.sleep(0.5)
        run.cancel()
        with pytest.raises(asyncio.CancelledError):
            await run
        assert (app.suite_seconds(command) or 0) >= 0.5
        quick = f"{sys.executable} -c pass"
        await app.run_tests(quick)
        assert app.suite_seconds(quick) is not None
    finally:
        await app.aclose()


@pytest.mark.aider
@pytest.mark.slow
async def test_the_two_bug_story_is_fixed_by_one_edit_that_saw_both_failures(
    app: Application, llm_server: Any
) -> None:
    """Aider's own loop needs two edits here (its first attempt sees the goal alone)."""
    llm_server.add_rule(IS_ANALYSIS, analysis_by_exit_code)
    sees_both = all_of(IS_AIDER, last_user_contains("test_subtract"), last_user_contains("test_multiply"))
    llm_server.add_rule(sees_both, aider_whole({"calc.py": FIXED}))
    llm_server.add_rule(IS_AIDER, aider_whole({"calc.py": HALF_FIXED}))
    request = WorkflowRequest(goal="Make the tests in test_calc.py pass.", test_command=TEST_COMMAND)
    result = await run_workflow_on_wire(app, request, RequestContext())
    assert result.status is TaskStatus.COMPLETE, result.content
    assert (app.workspace / "calc.py").read_text() == FIXED
    iterations = result.notes["workflow"]["iterations"]
    assert len(iterations) == 1
    assert iterations[0]["test_runs"][0]["exit_code"] not in (0, None)  # red before the edit
    assert iterations[0]["test_runs"][-1]["exit_code"] == 0
