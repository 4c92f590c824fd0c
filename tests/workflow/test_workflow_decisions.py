"""The loop's decisions over a fake host (aider_lsp_testing.fake_host): milliseconds, no Aider.

Each test shows one rule of docs/workflow.md; the real-Aider tests (test_workflow*.py) show the
same loop end to end.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from aider_lsp.config.settings import load_settings
from aider_lsp.models import (
    AnalysisMade,
    CommandRun,
    EditFinished,
    EditStarted,
    ErrorReason,
    Finding,
    PlanFailed,
    PlanMade,
    RequestContext,
    SuiteScope,
    TaskError,
    TestRunFinished,
    TestRunStarted,
    Verdict,
    WorkflowEvent,
    WorkflowProgress,
    WorkflowStatus,
)
from aider_lsp.workflow import records
from aider_lsp.workflow.first_files import Named, named_file
from aider_lsp.workflow.orchestrator import CodingWorkflowOrchestrator
from aider_lsp_testing.fake_host import (
    ANALYSIS,
    EDIT,
    PLAN,
    TEST,
    WITHOUT_TESTS_FIRST,
    FakeHost,
    ScriptedEdit,
    analysis,
    edit_fails,
    green_run,
    indexed,
    model_fails,
    no_change,
    plan,
    red_run,
    rest_run,
    writes,
)

FIXED = "def multiply(a, b):\n    return a * b\n"
WRONG = "def multiply(a, b):\n    return a + b + 1\n"
FAILING = "tests/test_calc.py::test_multiply"
pytestmark = [pytest.mark.timeout(10), pytest.mark.usefixtures("narrow_every_suite")]


@pytest.fixture
def host(tmp_path: Path) -> FakeHost:
    (tmp_path / "calc.py").write_text("def multiply(a, b):\n    return a + b\n")
    return FakeHost(tmp_path, WITHOUT_TESTS_FIRST)


def loop(host: FakeHost, max_retries: int = 3, files: list[str] | None = None) -> CodingWorkflowOrchestrator:
    """A run on calc.py (unless `files`) with the test command known: no planning call."""
    chosen = ["calc.py"] if files is None else files
    return CodingWorkflowOrchestrator(host, "multiply multiplies", "", "pytest", max_retries, chosen)


def with_settings(host: FakeHost, **options: object) -> FakeHost:
    """A host on the same workspace with these settings (camelCase, as an editor sends them)."""
    return FakeHost(host.workspace, load_settings({"testsBeforeFirstEdit": False, **options}, environ={}))


def suite_commands(host: FakeHost) -> list[str]:
    return [call.split(":", 1)[1] for call in host.calls if call.startswith(TEST)]


# -- the tests are the judge -----------------------------------------------------------------
async def test_green_tests_end_the_run_with_success_and_no_analysis(host: FakeHost) -> None:
    host.edits.append(writes("calc.py", FIXED))
    host.test_runs.append(green_run())
    result = await loop(host).run(RequestContext())
    assert result.status is WorkflowStatus.SUCCESS
    assert host.calls == [EDIT, f"{TEST}:pytest"]  # no plan (files and command known), no analysis
    assert (host.workspace / "calc.py").read_text() == FIXED


async def test_an_analysis_saying_success_over_red_tests_does_not_end_with_success(host: FakeHost) -> None:
    host.edits.append(writes("calc.py", WRONG))
    host.test_runs.append(red_run(FAILING))
    host.analyses.append(analysis(Verdict.SUCCESS, "looks right"))
    result = await loop(host, max_retries=1).run(RequestContext())
    assert result.status is WorkflowStatus.FAILURE
    assert result.reason is ErrorReason.MAX_RETRIES_REACHED
    assert "the tests are the judge" in result.content
    assert result.iterations[0].overruled


async def test_green_tests_with_analyse_green_tests_ask_the_analysis_first(host: FakeHost) -> None:
    host = with_settings(host, analyseGreenTests=True)
    host.edits.append(writes("calc.py", FIXED))
    host.test_runs.append(green_run())
    host.analyses.append(analysis(Verdict.FAILURE, "the goal needs more"))
    result = await loop(host).run(RequestContext())
    assert host.calls == [EDIT, f"{TEST}:pytest", ANALYSIS]
    assert result.reason is ErrorReason.GOAL_NOT_REACHED


# -- the judge cannot be deleted (suite/judge.py) ---------------------------------------------
TESTS = (
    "import unittest\nfrom calc import multiply\n\n\nclass CalcTest(unittest.TestCase):\n"
    "    def test_multiply(self):\n        self.assertEqual(multiply(3, 4), 12)\n\n"
    "    def test_one(self):\n        self.assertEqual(multiply(1, 1), 1)\n"
)
NO_TESTS = "from calc import multiply\n\nprint(multiply(3, 4))\n"


def unittest_run(ran: int, exit_code: int = 0) -> CommandRun:
    outcome = "OK" if exit_code == 0 else "FAILED (failures=1)"
    return CommandRun(
        command="python -m unittest", exit_code=exit_code, stderr=f"Ran {ran} tests in 0.001s\n\n{outcome}\n"
    )


def unittest_loop(
    host: FakeHost, max_retries: int, goal: str = "multiply multiplies"
) -> CodingWorkflowOrchestrator:
    return CodingWorkflowOrchestrator(host, goal, "", "python -m unittest", max_retries, ["calc.py"])


async def test_an_edit_that_emptied_the_tests_is_not_a_success(host: FakeHost) -> None:
    """A reply that rewrote the test file without tests: "Ran 0 tests … OK" and exit 0 are not green."""
    (host.workspace / "test_calc.py").write_text(TESTS)
    host.edits.append(ScriptedEdit(writes={"calc.py": WRONG, "test_calc.py": NO_TESTS}))
    host.test_runs.append(unittest_run(0))
    host.analyses.append(analysis(Verdict.SUCCESS, "the tests pass"))
    result = await unittest_loop(host, max_retries=1).run(RequestContext())
    assert result.status is WorkflowStatus.FAILURE
    assert "the suite ran no test" in result.content and "test_calc.py" in result.content
    assert result.judge is not None and result.judge.test_files == ["test_calc.py"]
    assert result.judge.removed_tests == [
        "test_calc.py::CalcTest.test_multiply",
        "test_calc.py::CalcTest.test_one",
    ]
    assert result.iterations[0].judge == result.judge and result.iterations[0].overruled  # SUCCESS overruled


async def test_tests_changed_by_the_run_send_the_next_edit_back_to_them(host: FakeHost) -> None:
    (host.workspace / "test_calc.py").write_text(TESTS)
    weakened = TESTS.replace("multiply(3, 4), 12", "multiply(3, 4), 7")
    host.edits.extend(
        [writes("test_calc.py", weakened), ScriptedEdit(writes={"test_calc.py": TESTS, "calc.py": FIXED})]
    )
    host.test_runs.extend([unittest_run(2), unittest_run(2)])
    host.analyses.append(analysis(Verdict.RETRY))
    result = await unittest_loop(host, max_retries=2).run(RequestContext())
    assert result.status is WorkflowStatus.SUCCESS, result.content  # the tests as they were, green
    first = result.iterations[0].judge
    assert first is not None and first.test_files == ["test_calc.py"] and first.removed_tests == []
    assert "put back the tests you changed or removed (test_calc.py)" in host.prompts[1]


async def test_fewer_tests_than_before_the_run_is_not_a_success(host: FakeHost) -> None:
    host = with_settings(host, testsBeforeFirstEdit=True)
    (host.workspace / "tests").mkdir()
    host.test_runs.extend([unittest_run(5, exit_code=1), unittest_run(3)])
    host.edits.append(writes("calc.py", FIXED))  # a conftest-like skip elsewhere: 2 tests went
    host.analyses.append(analysis(Verdict.RETRY))
    result = await unittest_loop(host, max_retries=1).run(RequestContext())
    assert result.status is WorkflowStatus.FAILURE
    assert "the suite ran 3 test(s), 5 before the run" in result.content


async def test_a_test_added_to_a_test_file_still_judges(host: FakeHost) -> None:
    (host.workspace / "test_calc.py").write_text(TESTS)
    more = TESTS + "\n    def test_zero(self):\n        self.assertEqual(multiply(0, 4), 0)\n"
    host.edits.append(writes("test_calc.py", more))
    host.test_runs.append(unittest_run(3))
    result = await unittest_loop(host, max_retries=1, goal="add a zero test").run(RequestContext())
    assert result.status is WorkflowStatus.SUCCESS, result.content


async def test_naming_a_test_file_in_the_goal_does_not_hand_it_over(host: FakeHost) -> None:
    """ "Make the tests in test_calc.py pass" asks for the code to change: a weakened assertion
    is no pass. A test file the user chose as one of the run's files is theirs to change."""
    (host.workspace / "test_calc.py").write_text(TESTS)
    weakened = TESTS.replace("multiply(3, 4), 12", "multiply(3, 4), 7")
    host.edits.append(writes("test_calc.py", weakened))
    host.test_runs.append(unittest_run(2))
    host.analyses.append(analysis(Verdict.RETRY))
    goal = "make the tests in test_calc.py pass"
    named = await unittest_loop(host, max_retries=1, goal=goal).run(RequestContext())
    assert named.status is WorkflowStatus.FAILURE and "changed the tests in test_calc.py" in named.content
    (host.workspace / "test_calc.py").write_text(TESTS)
    host.edits.append(writes("test_calc.py", weakened))
    host.test_runs.append(unittest_run(2))
    chosen = CodingWorkflowOrchestrator(
        host, "fix the expected value", "", "python -m unittest", 1, ["test_calc.py"]
    )
    assert (await chosen.run(RequestContext())).status is WorkflowStatus.SUCCESS


# -- a no-change edit, a failed edit -------------------------------------------------------
async def test_an_edit_that_changed_no_file_is_retried_without_a_test_run(host: FakeHost) -> None:
    host.edits.extend([no_change("I would use *."), writes("calc.py", FIXED)])
    host.test_runs.append(green_run())
    host.analyses.append(analysis(Verdict.RETRY))
    result = await loop(host).run(RequestContext())
    assert result.status is WorkflowStatus.SUCCESS
    second_edit = host.calls.index(EDIT, 1)
    assert not [call for call in host.calls[:second_edit] if call.startswith(TEST)]  # nothing to test
    assert suite_commands(host) == ["pytest"]
    assert host.prompts[1].startswith("Your last reply changed no file")


async def test_an_edit_that_failed_ends_the_run_with_its_reason(host: FakeHost) -> None:
    host.edits.append(edit_fails("Aider's server is down"))
    result = await loop(host).run(RequestContext())
    assert result.status is WorkflowStatus.FAILURE
    assert result.reason is ErrorReason.CONNECTION_ERROR
    assert host.calls == [EDIT]


async def test_an_edit_whose_model_endpoint_refused_ends_the_run_by_name(host: FakeHost) -> None:
    """Aider answered, changed nothing, because its endpoint said 404: a retry would pay again
    for the same refusal, so the run ends with the mistake named (endpoints.py)."""
    refused = TaskError(
        reason=ErrorReason.CONFIGURATION_ERROR, message="the endpoint answered 404 (not found)"
    )
    host.edits.append(ScriptedEdit(error=refused))
    result = await loop(host).run(RequestContext())
    assert result.status is WorkflowStatus.FAILURE and result.reason is ErrorReason.CONFIGURATION_ERROR
    assert "answered 404" in result.content and host.calls == [EDIT]


# -- the analysis beside the next edit ---------------------------------------------------------
async def test_the_next_edit_does_not_wait_for_the_analysis(host: FakeHost) -> None:
    host.hold = {ANALYSIS}  # the analysis never answers
    host.edits.extend([writes("calc.py", WRONG), writes("calc.py", FIXED)])
    host.test_runs.extend([red_run(FAILING), green_run(), rest_run(deselected=1)])
    result = await asyncio.wait_for(loop(host).run(RequestContext()), 60)  # a cap: the analysis never answers
    assert result.status is WorkflowStatus.SUCCESS
    assert host.calls.count(ANALYSIS) == 1 and host.calls.count(EDIT) == 2
    assert result.iterations[0].analysis is None  # stopped, unrecorded: the tests judged
    assert _no_other_task()


async def test_a_failure_from_the_analysis_beside_still_stops_the_run(host: FakeHost) -> None:
    host.edits.extend([writes("calc.py", WRONG), writes("calc.py", WRONG + "\n")])
    host.test_runs.extend([red_run(), red_run()])
    host.analyses.append(analysis(Verdict.FAILURE, "cannot be done"))
    result = await loop(host, max_retries=3).run(RequestContext())
    assert result.status is WorkflowStatus.FAILURE
    assert result.reason is ErrorReason.GOAL_NOT_REACHED
    assert host.calls.count(EDIT) == 2  # no third edit


async def test_a_success_from_the_analysis_beside_does_not_end_a_red_run(host: FakeHost) -> None:
    """The analysis of iteration 1 answers SUCCESS beside edit 2, whose tests are red again: the
    tests are the judge, so a third edit follows, and iteration 1 records why it did not count."""
    host.edits.extend([writes("calc.py", WRONG), writes("calc.py", WRONG + "\n"), writes("calc.py", FIXED)])
    host.test_runs.extend([red_run(), red_run(), green_run()])
    host.analyses.extend([analysis(Verdict.SUCCESS, "looks right"), analysis(Verdict.RETRY)])
    result = await loop(host).run(RequestContext())
    assert result.status is WorkflowStatus.SUCCESS
    assert host.calls.count(EDIT) == 3
    assert (
        result.iterations[0].overruled is not None
        and "the tests are the judge" in result.iterations[0].overruled
    )


async def test_the_analysis_advice_reaches_the_edit_after(host: FakeHost) -> None:
    host.edits.extend([writes("calc.py", WRONG), writes("calc.py", WRONG + "\n"), writes("calc.py", FIXED)])
    host.test_runs.extend([red_run(), red_run(), green_run()])
    host.analyses.extend([analysis(Verdict.RETRY, next_prompt="use the * operator"), analysis(Verdict.RETRY)])
    result = await loop(host).run(RequestContext())
    assert result.status is WorkflowStatus.SUCCESS
    assert "use the * operator" not in host.prompts[1]  # the analysis ran beside edit 2
    assert "use the * operator" in host.prompts[2]
    assert "I ran this command:\n\npytest" in host.prompts[1]


# -- the budget before each model call ---------------------------------------------------------
async def test_the_budget_spent_by_the_plan_stops_the_run_before_the_first_edit(host: FakeHost) -> None:
    host = with_settings(host, budget={"maxTokens": 100})
    host.tokens_per_call = 100
    host.plans.append(plan("fix multiply", ["calc.py"]))
    result = await loop(host, files=[]).run(RequestContext())
    assert result.reason is ErrorReason.BUDGET_EXCEEDED
    assert host.calls == [PLAN]
    assert host.budget is None  # cleared at the end


async def test_the_budget_spent_by_aider_stops_the_run_before_the_analysis(host: FakeHost) -> None:
    host = with_settings(host, budget={"maxTokens": 100})
    host.edits.append(writes("calc.py", WRONG, tokens=100))
    host.test_runs.append(red_run())
    result = await loop(host, max_retries=1).run(RequestContext())  # the analysis is next
    assert result.reason is ErrorReason.BUDGET_EXCEEDED
    assert host.calls == [EDIT, f"{TEST}:pytest"]


# -- failing tests first, then the whole suite ---------------------------------------------------
async def test_failing_tests_run_first_then_the_rest_of_the_suite_decides(host: FakeHost) -> None:
    host.edits.extend([writes("calc.py", WRONG), writes("calc.py", FIXED)])
    host.test_runs.extend([red_run(FAILING), green_run(), rest_run(deselected=1)])
    host.analyses.append(analysis(Verdict.RETRY))
    result = await loop(host).run(RequestContext())
    assert result.status is WorkflowStatus.SUCCESS
    # the tests that just passed are left out: with them, a whole suite's worth of green
    assert suite_commands(host) == ["pytest", f"pytest {FAILING}", f"pytest --deselect {FAILING}"]
    scopes = [run.scope for run in result.iterations[1].test_runs]
    assert scopes == [SuiteScope.FAILING, SuiteScope.REST]


async def test_a_rest_run_that_left_out_more_tests_lets_the_whole_suite_decide(host: FakeHost) -> None:
    host.edits.extend([writes("calc.py", WRONG), writes("calc.py", FIXED)])
    # pytest deselects by prefix: test_multiply also left out test_multiply_more
    host.test_runs.extend([red_run(FAILING), green_run(), rest_run(deselected=2), green_run()])
    host.analyses.append(analysis(Verdict.RETRY))
    result = await loop(host).run(RequestContext())
    assert result.status is WorkflowStatus.SUCCESS
    assert suite_commands(host)[-1] == "pytest"
    scopes = [run.scope for run in result.iterations[1].test_runs]
    assert scopes == [SuiteScope.FAILING, SuiteScope.REST, SuiteScope.WHOLE]


async def test_a_red_rest_run_decides_the_iteration(host: FakeHost) -> None:
    host.edits.extend([writes("calc.py", WRONG), writes("calc.py", WRONG + "\n")])
    host.test_runs.extend(
        [red_run(FAILING), green_run(), rest_run(deselected=1, failing="tests/t.py::test_other")]
    )
    host.analyses.extend([analysis(Verdict.RETRY), analysis(Verdict.RETRY)])
    result = await loop(host, max_retries=2).run(RequestContext())
    assert result.status is WorkflowStatus.FAILURE
    assert len(suite_commands(host)) == 3  # no whole suite after a red rest
    assert result.iterations[1].test is not None and result.iterations[1].test.exit_code == 1


async def test_a_runner_that_cannot_leave_tests_out_runs_the_whole_suite_after(host: FakeHost) -> None:
    unittest = "python -m unittest"
    host.edits.extend([writes("calc.py", WRONG), writes("calc.py", FIXED)])
    failed = CommandRun(
        command=unittest, exit_code=1, stderr="FAIL: test_multiply (test_calc.CalcTest.test_multiply)"
    )
    host.test_runs.extend([failed, green_run(unittest), green_run(unittest)])
    host.analyses.append(analysis(Verdict.RETRY))
    run = CodingWorkflowOrchestrator(host, "multiply multiplies", "", unittest, 3, ["calc.py"])
    result = await run.run(RequestContext())
    assert result.status is WorkflowStatus.SUCCESS
    assert suite_commands(host) == [unittest, f"{unittest} test_calc.CalcTest.test_multiply", unittest]


async def test_failing_tests_that_still_fail_decide_without_the_whole_suite(host: FakeHost) -> None:
    host.edits.extend([writes("calc.py", WRONG), writes("calc.py", WRONG + "\n")])
    host.test_runs.extend([red_run(FAILING), red_run(FAILING)])
    host.analyses.extend([analysis(Verdict.RETRY), analysis(Verdict.RETRY)])
    await loop(host, max_retries=2).run(RequestContext())
    assert suite_commands(host) == ["pytest", f"pytest {FAILING}"]


# -- the run's steps as they happen ----------------------------------------------------------
def _step(event: WorkflowEvent) -> str:
    """An event as a line: its kind, iteration and what a reader checks."""
    if isinstance(event, EditStarted):
        return f"edit {event.iteration} {event.files}"
    if isinstance(event, EditFinished):
        return f"edited {event.iteration} {event.changed_files}"
    if isinstance(event, TestRunStarted):
        return f"test {event.iteration} {event.scope.value}: {event.command}"
    if isinstance(event, TestRunFinished):
        return f"tested {event.iteration} {event.scope.value}: exit {event.exit_code}"
    if isinstance(event, AnalysisMade):
        return f"analysis {event.iteration} {event.analysis.verdict.value}"
    return f"plan {event.plan.files}"


async def test_each_step_is_reported_as_it_happens_in_order(host: FakeHost) -> None:
    events: list[WorkflowEvent] = []
    host.edits.extend([writes("calc.py", WRONG), writes("calc.py", WRONG + "\n")])
    host.test_runs.extend([red_run(FAILING), red_run(FAILING)])
    host.analyses.extend([analysis(Verdict.RETRY), analysis(Verdict.RETRY)])
    await loop(host, max_retries=2).run(RequestContext(report_event=events.append))
    steps = [_step(event) for event in events if not isinstance(event, WorkflowProgress)]
    analyses = [step for step in steps if step.startswith("analysis")]
    assert [step for step in steps if not step.startswith("analysis")] == [
        "edit 1 ['calc.py']",
        "edited 1 ['calc.py']",
        "test 1 whole: pytest",
        "tested 1 whole: exit 1",
        "edit 2 ['calc.py']",
        "edited 2 ['calc.py']",
        f"test 2 failing: pytest {FAILING}",
        "tested 2 failing: exit 1",
    ]
    assert analyses == ["analysis 1 RETRY", "analysis 2 RETRY"]
    assert steps.index("analysis 1 RETRY") > steps.index("tested 1 whole: exit 1")  # beside edit 2
    assert steps[-1] == "analysis 2 RETRY"  # the last iteration waits for its own
    first_edit = next(event for event in events if isinstance(event, EditFinished))
    assert first_edit.error is None and not first_edit.no_change
    failed = next(event for event in events if isinstance(event, TestRunFinished))
    assert FAILING in failed.stdout and not failed.passed


async def test_a_plan_made_beside_the_first_edit_is_reported(host: FakeHost) -> None:
    events: list[WorkflowEvent] = []
    host.edits.append(writes("calc.py", FIXED))
    host.plans.append(plan("Fix multiply", ["calc.py"]))
    host.test_runs.append(green_run())
    run = CodingWorkflowOrchestrator(host, "multiply multiplies", "", None, 3, ["calc.py"])
    result = await run.run(RequestContext(report_event=events.append))
    assert result.status is WorkflowStatus.SUCCESS
    made = [event for event in events if isinstance(event, PlanMade)]
    assert [event.plan.instructions for event in made] == ["Fix multiply"]


# -- the first edit at once, on the index's files; the plan beside it where it helps -----------
def goal_alone(host: FakeHost, *, plan_asked: bool = False) -> CodingWorkflowOrchestrator:
    """A run of the goal alone (no file chosen), the test command known."""
    return CodingWorkflowOrchestrator(host, "multiply multiplies", "", "pytest", 3, None, plan=plan_asked)


async def test_a_goal_alone_starts_on_the_indexs_confident_files_without_a_plan(host: FakeHost) -> None:
    host.matches = [
        indexed("calc.py", 0.9, definition=1.0),
        indexed("test_calc.py", 0.6),
        indexed("x.py", 0.3),
    ]
    host.edits.append(writes("calc.py", FIXED))
    host.test_runs.append(green_run())
    result = await goal_alone(host).run(RequestContext(open_files=["notes.py"]))
    assert result.status is WorkflowStatus.SUCCESS
    assert host.calls == [EDIT, f"{TEST}:pytest"]  # no planning call at all
    assert result.iterations[0].files == ["calc.py", "test_calc.py"]  # x.py: under half the best
    assert result.iterations[0].prompt == "multiply multiplies"
    # the open file is a candidate for the index, not the answer
    (asked,) = host.context_requests
    assert asked.open_files == ["notes.py"] and asked.target_files == []
    # the plan recorded is the one the index and Aider's reply imply
    assert result.plan is not None and result.plan.files == ["calc.py", "test_calc.py"]
    assert result.plan.instructions == "multiply multiplies" and result.plan.test_command == "pytest"


async def test_an_index_file_unsaved_in_the_editor_is_left_out_of_the_first_edit(host: FakeHost) -> None:
    host.matches = [indexed("test_calc.py", 0.9, definition=1.0), indexed("calc.py", 0.8, definition=1.0)]
    host.unsaved_paths = [str(host.workspace / "test_calc.py")]
    host.edits.append(writes("calc.py", FIXED))
    host.test_runs.append(green_run())
    result = await goal_alone(host).run(RequestContext())
    assert result.status is WorkflowStatus.SUCCESS
    assert result.iterations[0].files == ["calc.py"]  # the user's buffer is not Aider's to edit


def in_a_git_root(host: FakeHost) -> FakeHost:
    """The workspace as the root of a git repository: Aider's repository map is on (the
    default `aiderMapTokens`), so the first edit sends fewer files whole."""
    (host.workspace / ".git").mkdir()
    return host


async def test_beside_the_repo_map_the_first_edit_sends_a_clear_winner_alone_and_names_the_rest(
    host: FakeHost,
) -> None:
    in_a_git_root(host)
    host.matches = [
        indexed("calc.py", 0.9, definition=1.0, size=8_000),
        indexed("ops.py", 0.8, uncapped=0.8, size=40_000, defines=["multiply_all", "Ops"]),  # 10k tokens
        indexed("test_calc.py", 0.8, prior=0.7),  # a test the goal is not about: neither
        indexed("x.py", 0.3, summary="Number formatting helpers."),
    ]
    host.edits.append(writes("calc.py", FIXED))
    host.test_runs.append(green_run())
    result = await goal_alone(host).run(RequestContext())
    assert result.status is WorkflowStatus.SUCCESS
    assert result.iterations[0].files == ["calc.py"]
    assert host.prompts[0].startswith("multiply multiplies\n\n")
    # the others named, each with what matched in it (else its summary): the model asks for one
    assert host.prompts[0].endswith(
        "ask me to add it to the chat):\n"
        "- ops.py: defines multiply_all, Ops\n"
        "- x.py: Number formatting helpers."
    )
    assert "test_calc.py" not in host.prompts[0]


async def test_beside_the_repo_map_a_close_small_second_file_is_sent_whole_too(host: FakeHost) -> None:
    in_a_git_root(host)
    host.matches = [
        indexed("calc.py", 0.9, definition=1.0, size=8_000),
        indexed("helpers.py", 0.8, uncapped=0.8, size=1_200),  # 300 tokens: within a quarter
        indexed("test_calc.py", 0.8, prior=1.0),  # a test the index takes the goal to be about
    ]
    host.edits.append(writes("calc.py", FIXED))
    host.test_runs.append(green_run())
    result = await goal_alone(host).run(RequestContext())
    assert result.iterations[0].files == ["calc.py", "helpers.py", "test_calc.py"]
    assert "not in the chat" not in host.prompts[0]


def two_files_sent(host: FakeHost) -> None:
    """The index's pick: calc.py and a close small helpers.py, both sent whole."""
    in_a_git_root(host)
    (host.workspace / "helpers.py").write_text("def twice(a):\n    return a + a\n")
    host.matches = [
        indexed("calc.py", 0.9, definition=1.0, size=8_000),
        indexed("helpers.py", 0.8, uncapped=0.8, size=1_200),
    ]


async def test_a_retry_keeps_the_files_the_run_changed_and_drops_those_no_edit_touched(
    host: FakeHost,
) -> None:
    two_files_sent(host)
    host.edits.extend([writes("calc.py", WRONG), writes("calc.py", FIXED)])
    host.test_runs.extend([red_run(), green_run()])
    host.analyses.append(analysis(Verdict.RETRY))
    result = await goal_alone(host).run(RequestContext())
    assert result.status is WorkflowStatus.SUCCESS
    # (files sent, files that left the chat) per edit: helpers.py is not sent again
    assert host.edit_files == [(["calc.py", "helpers.py"], []), (["calc.py"], ["helpers.py"])]


async def test_a_retry_keeps_every_file_while_the_run_changed_none(host: FakeHost) -> None:
    two_files_sent(host)
    host.edits.extend([no_change(), writes("calc.py", FIXED)])
    host.test_runs.append(green_run())
    host.analyses.append(analysis(Verdict.RETRY))
    await goal_alone(host).run(RequestContext())
    assert host.edit_files == [(["calc.py", "helpers.py"], []), (["calc.py", "helpers.py"], [])]


async def test_a_retry_keeps_the_files_the_user_chose(host: FakeHost) -> None:
    two_files_sent(host)
    host.edits.extend([writes("calc.py", WRONG), writes("calc.py", FIXED)])
    host.test_runs.extend([red_run(), green_run()])
    host.analyses.append(analysis(Verdict.RETRY))
    result = await loop(host, files=["calc.py", "helpers.py"]).run(RequestContext())
    assert result.status is WorkflowStatus.SUCCESS
    assert host.edit_files[1] == (["calc.py", "helpers.py"], [])


async def test_the_users_images_go_with_every_edit_of_the_run(host: FakeHost) -> None:
    # Aider's chat keeps no image: a retry that fixes what the picture shows needs it again
    host.edits.extend([writes("calc.py", WRONG), writes("calc.py", FIXED)])
    host.test_runs.extend([red_run(), green_run()])
    host.analyses.append(analysis(Verdict.RETRY))
    run = CodingWorkflowOrchestrator(
        host, "look like the mock-up", "", "pytest", 3, ["calc.py"], images=["/tmp/a.png"]
    )
    assert (await run.run(RequestContext())).status is WorkflowStatus.SUCCESS
    assert host.edit_images == [["/tmp/a.png"], ["/tmp/a.png"]]


def test_a_retry_keeps_the_files_the_model_asked_for() -> None:
    files = ["calc.py", "helpers.py", "ops.py"]
    assert records.retry_files(files, touched={"calc.py"}, kept={"ops.py"}) == ["calc.py", "ops.py"]
    assert records.retry_files(files, touched={}, kept={"ops.py"}) == files  # nothing changed yet


async def test_beside_the_repo_map_a_large_best_file_without_a_clear_lead_is_named_not_sent(
    host: FakeHost,
) -> None:
    in_a_git_root(host)
    host.matches = [
        indexed("core.py", 0.9, definition=1.0, size=100_000, defines=["Logger"]),  # 25k tokens, a hub
        indexed("calc.py", 0.8, uncapped=0.8, definition=1.0, size=4_000),
    ]
    host.edits.append(writes("calc.py", FIXED))
    host.test_runs.append(green_run())
    result = await goal_alone(host).run(RequestContext())
    assert result.iterations[0].files == ["calc.py"]
    assert host.prompts[0].endswith("\n- core.py: defines Logger")  # the model asks for it if needed


async def test_beside_the_repo_map_a_large_file_that_leads_clearly_is_sent_whole(host: FakeHost) -> None:
    in_a_git_root(host)
    host.matches = [
        indexed("core.py", 1.0, definition=1.0, uncapped=2.0, size=100_000),
        indexed("calc.py", 1.0, uncapped=1.2, size=4_000),  # a candidate, well behind: small, it comes along
    ]
    host.edits.append(writes("core.py", FIXED))
    host.test_runs.append(green_run())
    result = await goal_alone(host).run(RequestContext())
    assert result.iterations[0].files == ["core.py", "calc.py"]


def test_a_named_file_from_another_source_is_named_by_its_summary() -> None:
    # a match without the index's ranking (another source), whatever its metadata, never
    # breaks the run
    for metadata in (None, {"why": "re-ranked"}, {"why": {"definitions": "f"}}):
        match = indexed("x.py", 0.5, summary="Number formatting helpers.").model_copy(
            update={"metadata": metadata, "ranking": None}
        )
        assert named_file(match) == Named("x.py", "Number formatting helpers.")


async def test_without_a_repo_map_the_first_edit_sends_its_candidates_whole(host: FakeHost) -> None:
    host.matches = [
        indexed("calc.py", 0.9, definition=1.0, size=8_000),
        indexed("ops.py", 0.8, uncapped=0.8, size=40_000),
        indexed("test_calc.py", 0.8, prior=0.7),
    ]
    host.edits.append(writes("calc.py", FIXED))
    host.test_runs.append(green_run())
    result = await goal_alone(host).run(RequestContext())
    assert result.iterations[0].files == ["calc.py", "ops.py"]  # the model could not see ops.py else
    assert host.prompts[0] == "multiply multiplies"


async def test_an_index_without_a_confident_answer_plans_beside_the_first_edit(host: FakeHost) -> None:
    host.matches = [indexed("test_calc.py", 0.7), indexed("calc.py", 0.5)]  # words alone, no definition
    host.plans.append(plan("use * in multiply", ["calc.py", "helpers.py"]))
    host.edits.extend([writes("calc.py", WRONG), writes("calc.py", FIXED)])
    host.test_runs.extend([red_run(FAILING), green_run(), rest_run(deselected=1)])
    host.analyses.append(analysis(Verdict.RETRY))
    result = await goal_alone(host).run(RequestContext())
    assert result.status is WorkflowStatus.SUCCESS
    assert host.calls[:2] == [EDIT, PLAN]  # the edit did not wait for the plan
    assert host.prompts[0] == "multiply multiplies"
    # the plan shapes the second iteration: its instructions join the message, its files the chat
    assert "I ran this command" in host.prompts[1] and host.prompts[1].endswith("use * in multiply")
    # (test_calc.py, sent and not touched, left the chat: records.retry_files)
    assert result.iterations[1].files == ["calc.py", "helpers.py"]
    assert result.plan is not None and result.plan.instructions == "use * in multiply"


async def test_the_first_edit_does_not_wait_for_a_plan_that_never_answers(host: FakeHost) -> None:
    host.hold = {PLAN}
    host.matches = [indexed("calc.py", 0.4)]
    host.edits.append(writes("calc.py", FIXED))
    host.test_runs.append(green_run())
    result = await asyncio.wait_for(goal_alone(host).run(RequestContext()), 60)  # a cap: the plan is held
    assert result.status is WorkflowStatus.SUCCESS  # green: the plan is moot, stopped
    assert host.calls == [EDIT, PLAN, f"{TEST}:pytest"]
    assert result.plan is not None and result.plan.files == ["calc.py"]  # the implied one
    assert _no_other_task()


async def test_a_plan_the_user_asked_for_runs_beside_even_when_the_index_is_confident(host: FakeHost) -> None:
    host.matches = [indexed("calc.py", 0.9, definition=1.0)]
    host.plans.append(plan("use * in multiply", ["calc.py"]))
    host.edits.extend([writes("calc.py", WRONG), writes("calc.py", FIXED)])
    host.test_runs.extend([red_run(FAILING), green_run(), rest_run(deselected=1)])
    host.analyses.append(analysis(Verdict.RETRY))
    result = await goal_alone(host, plan_asked=True).run(RequestContext())
    assert result.status is WorkflowStatus.SUCCESS
    assert host.calls[:2] == [EDIT, PLAN] and host.prompts[1].endswith("use * in multiply")


async def test_a_failing_planner_beside_ends_a_red_run_with_its_reason(host: FakeHost) -> None:
    host.matches = [indexed("calc.py", 0.4)]
    host.plans.append(model_fails())
    host.edits.append(writes("calc.py", WRONG))
    host.test_runs.append(red_run(FAILING))
    host.analyses.append(analysis(Verdict.RETRY))
    result = await goal_alone(host).run(RequestContext())
    assert result.reason is ErrorReason.LLM_ERROR and "planning failed" in result.content
    assert host.calls.count(EDIT) == 1


async def test_a_requested_plan_that_fails_is_said_when_the_tests_pass_and_the_plan_is_marked_implied(
    host: FakeHost,
) -> None:
    host.matches = [indexed("calc.py", 0.9)]
    host.plans.append(model_fails())
    host.edits.append(writes("calc.py", FIXED))
    host.test_runs.append(green_run())
    events: list[WorkflowEvent] = []
    result = await goal_alone(host, plan_asked=True).run(RequestContext(report_event=events.append))
    assert result.status is WorkflowStatus.SUCCESS  # the tests are the judge
    assert result.plan_problem is not None and "planning failed" in result.plan_problem
    assert "no plan was made beside the first edit: planning failed" in result.content
    assert [e.reason for e in events if isinstance(e, PlanFailed)] == [result.plan_problem]
    assert result.plan is not None and result.plan.implied  # not the planner's


async def test_a_requested_plan_still_running_when_the_tests_pass_is_stopped_and_said(host: FakeHost) -> None:
    host.matches = [indexed("calc.py", 0.9)]
    host.hold.add(PLAN)  # the planner is slow: the tests pass first
    host.edits.append(writes("calc.py", FIXED))
    host.test_runs.append(green_run())
    result = await goal_alone(host, plan_asked=True).run(RequestContext())
    assert result.status is WorkflowStatus.SUCCESS
    assert result.plan_problem == "the tests passed before it was made"
    assert result.plan is not None and result.plan.implied


async def test_an_index_with_no_file_makes_the_plan_first(host: FakeHost) -> None:
    host.plans.append(plan("fix multiply", ["calc.py"]))
    host.edits.append(writes("calc.py", FIXED))
    host.test_runs.append(green_run())
    result = await goal_alone(host).run(RequestContext())
    assert result.status is WorkflowStatus.SUCCESS
    assert host.calls[0] == PLAN and host.prompts[0] == "fix multiply"  # nothing to edit before it


async def test_the_users_files_and_a_known_command_need_no_plan(host: FakeHost) -> None:
    host.matches = [indexed("test_calc.py", 0.7)]
    host.edits.append(writes("calc.py", FIXED))
    host.test_runs.append(green_run())
    result = await loop(host).run(RequestContext(open_files=["test_calc.py"]))
    assert host.calls == [EDIT, f"{TEST}:pytest"] and result.iterations[0].files == ["calc.py"]


async def test_an_unknown_test_command_comes_from_the_plan_beside_the_first_edit(host: FakeHost) -> None:
    host.plans.append(plan("fix multiply", ["calc.py"], test_command="python -m pytest"))
    host.edits.append(writes("calc.py", FIXED))
    host.test_runs.append(green_run())
    run = CodingWorkflowOrchestrator(host, "multiply multiplies", "", None, 3, ["calc.py"])
    result = await run.run(RequestContext())
    assert result.status is WorkflowStatus.SUCCESS
    assert host.calls == [EDIT, PLAN, f"{TEST}:python -m pytest"]


async def test_a_file_aider_edited_outside_its_chat_joins_the_next_iteration(host: FakeHost) -> None:
    host.matches = [indexed("calc.py", 0.9, definition=1.0)]
    outside = ScriptedEdit(writes={"calc.py": WRONG, "area.py": "PI = 3\n"})  # area.py: not in the chat
    host.edits.extend([outside, writes("calc.py", FIXED)])
    host.test_runs.extend([red_run(FAILING), green_run(), rest_run(deselected=1)])
    host.analyses.append(analysis(Verdict.RETRY))
    result = await goal_alone(host).run(RequestContext())
    assert result.iterations[0].files == ["calc.py", "area.py"]
    assert result.iterations[1].files == ["calc.py", "area.py"]


# -- cancel in each phase ------------------------------------------------------------------------
@pytest.mark.parametrize("phase", [PLAN, EDIT, TEST, ANALYSIS, "edit#2 beside the analysis"])
async def test_cancel_in_each_phase_propagates_and_leaves_no_task(host: FakeHost, phase: str) -> None:
    host.plans.append(plan("fix multiply", ["calc.py"]))
    host.edits.extend([writes("calc.py", WRONG), writes("calc.py", FIXED)])
    host.test_runs.append(red_run(FAILING))
    held = phase.split(" ", 1)[0]
    host.hold = {held, ANALYSIS} if held == "edit#2" else {held}
    run = loop(host, max_retries=1 if phase == ANALYSIS else 3, files=[] if phase == PLAN else None)
    task = asyncio.create_task(run.run(RequestContext()))
    await asyncio.wait_for(host.entered_event(held).wait(), 60)
    if held == "edit#2":
        await asyncio.wait_for(host.entered_event(ANALYSIS).wait(), 60)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert _no_other_task()
    assert host.budget is None


async def test_findings_are_reported_and_success_clears_them(host: FakeHost) -> None:
    reports: list[list[Finding]] = []
    host.edits.extend([writes("calc.py", WRONG), writes("calc.py", FIXED)])
    failing = red_run(FAILING).model_copy(
        update={"findings": (Finding(path="calc.py", line=2, message="x"),)}
    )
    host.test_runs.extend([failing, green_run(), rest_run(deselected=1)])
    host.analyses.append(analysis(Verdict.RETRY))
    await loop(host).run(RequestContext(report_findings=reports.append))
    assert reports[0][0].path == "calc.py"
    assert reports[-1] == []


def _no_other_task() -> bool:
    """No task of the run is left running (the analysis beside, Aider's warm-up)."""
    current = asyncio.current_task()
    return not [task for task in asyncio.all_tasks() if task is not current and not task.done()]
