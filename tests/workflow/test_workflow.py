"""The coding workflow with REAL Aider edits, the scripted LLM planning, editing and analysing,
and a real unittest run on a temp project whose test fails."""

from __future__ import annotations

import asyncio
import threading
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from aider_lsp.app import Application
from aider_lsp.config.settings import load_settings
from aider_lsp.models import (
    Answer,
    ErrorReason,
    Finding,
    PlanMade,
    Question,
    RequestContext,
    TaskStatus,
    WorkflowEvent,
    WorkflowProgress,
    WorkflowRequest,
)
from aider_lsp.results import history_result
from aider_lsp_testing.apps import run_workflow_on_wire, scripted_app
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
    aider_diff,
    aider_whole,
    all_of,
    fault,
    held,
    json_output,
    last_user_contains,
)
from aider_lsp_testing.waiting import eventually

pytestmark = pytest.mark.aider
RETRY_MARK = "I ran this command:"  # how Aider's own loop (and ours) sends a failing test's output


class Recorder:
    """A RequestContext that remembers what the run reported."""

    def __init__(self) -> None:
        self.progress: list[str] = []  # the sentences (the LSP's $/progress)
        self.phases: list[str] = []  # the typed progress events' phases
        self.findings: list[list[Finding]] = []
        self.planned = threading.Event()  # set once the run has its plan (PlanMade)
        self.context = RequestContext(
            report_progress=lambda message, pct: self.progress.append(message),
            report_findings=self.findings.append,
            report_event=self.on_event,
            open_files=["calc.py"],
        )

    def on_event(self, event: WorkflowEvent) -> None:
        if isinstance(event, WorkflowProgress):
            self.phases.append(event.phase)
        if isinstance(event, PlanMade):
            self.planned.set()


def script_two_iterations(llm_server: Any) -> None:
    """The goal's first edit fixes subtract (the index is not confident about "make the tests
    pass": the plan runs beside it); the failing output sent back to Aider's chat, with the
    plan's instructions, fixes multiply."""
    analysed = threading.Event()

    def analysis(request: dict[str, Any]) -> Any:
        answer = analysis_by_exit_code(request)
        analysed.set()
        return answer

    llm_server.add_rule(IS_PLAN, json_output(PLAN))
    llm_server.add_rule(IS_ANALYSIS, analysis)
    # the first edit: the goal, with the failing output of the tests run before it
    llm_server.add_rule(
        all_of(IS_AIDER, last_user_contains("make the tests pass")),
        aider_whole({"calc.py": HALF_FIXED}),
        times=1,
    )
    # the retry answers once the analysis beside it has answered (a green run would not wait
    # for it): an order of events, whatever the machine's speed
    llm_server.add_rule(
        all_of(IS_AIDER, last_user_contains(RETRY_MARK)), held(analysed, aider_whole({"calc.py": FIXED}))
    )


def phases(seen: Recorder) -> list[str]:
    """The run's phases as its progress events said them."""
    return seen.phases


async def test_failing_iteration_then_retry_reaches_success(
    app: Application, calc_project: Path, llm_server: Any, narrow_every_suite: None
) -> None:
    script_two_iterations(llm_server)
    seen = Recorder()
    result = await run_workflow_on_wire(
        app, WorkflowRequest(goal="make the tests pass", test_command=TEST_COMMAND), seen.context
    )
    assert result.status is TaskStatus.COMPLETE, result.content
    assert (calc_project / "calc.py").read_text() == FIXED
    run = result.notes["workflow"]
    assert run["status"] == "SUCCESS" and result.parsed_content == run
    (record,) = app.history()  # what the Runs view and `aider-lsp history` show of it
    assert (record.kind, record.goal, record.status, record.iterations) == (
        "workflow",
        "make the tests pass",
        "SUCCESS",
        2,
    )
    assert record.files == ("calc.py",) and record.id == result.notes["checkpoint_id"]
    first, second = run["iterations"]
    assert first["test"]["exit_code"] != 0 and second["test"]["exit_code"] == 0
    assert "multiply(3, 4)" in first["test"]["stderr"]  # the analysis got the failing output
    # the retry sent the failing output into the same Aider chat, as Aider's --auto-test does;
    # iteration 1's analysis ran beside it and is recorded on iteration 1
    assert second["prompt"].startswith(RETRY_MARK) and "multiply(3, 4)" in second["prompt"]
    assert second["prompt"].endswith(PLAN["instructions"])  # the plan beside edit 1 shapes edit 2
    # the first edit did not wait for a plan: the goal, with what the tests run before it showed
    assert first["prompt"].startswith(f"make the tests pass\n\n{RETRY_MARK}")
    assert "multiply(3, 4)" in first["prompt"]
    assert first["aider"]["session_id"] and first["aider"]["session_id"] == second["aider"]["session_id"]
    retry_request = [r for r in llm_server.chat_requests() if IS_AIDER(r)][1]
    assert "make the tests pass" in str(retry_request["messages"][:-1])  # the chat kept the first attempt
    assert first["analysis"]["verdict"] == "RETRY" and second["analysis"] is None
    # the tests before the first edit show both failures (subtract's and multiply's)
    before = seen.findings[0]
    assert [f.path for f in before] == ["test_calc.py"] * 2
    assert MULTIPLY_ASSERT_LINE in {f.line for f in before}
    # iteration 1's finding sits on the failing assertion; SUCCESS cleared them
    failing = [f for f in seen.findings[1] if f.source != "analysis"]
    assert [(f.path, f.line) for f in failing] == [("test_calc.py", MULTIPLY_ASSERT_LINE)]
    assert "AssertionError" in failing[0].message and "test_multiply" in failing[0].message
    # the test's findings come at once; the analysis's advice joins them when it answers
    assert seen.findings[2][: len(seen.findings[1])] == seen.findings[1]
    advice = [f for f in seen.findings[2] if f.source == "analysis"]
    # on the iteration's files: those the index offered for the goal
    assert sorted((f.path, f.severity.value) for f in advice) == [
        ("calc.py", "information"),
        ("test_calc.py", "information"),
    ]
    assert seen.findings[-1] == []
    # (a wait for the tests run before the edit, if it comes, is shown first)
    shown = [phase for phase in phases(seen) if "running the tests" not in phase]
    assert shown[0] == "Iteration 1/3: Aider is editing; planning beside it"
    # edit 2 starts with iteration 1's analysis beside it (named while it runs: under load it
    # may answer while edit 2 waits for the plan, and the phrase is left out)
    assert any(phase.startswith("Iteration 2/3: Aider is editing") for phase in phases(seen))
    # failing tests first: the one test that failed, then (it passes) the whole suite decides
    running = [phase for phase in phases(seen) if phase.startswith("Iteration 2/3: running")]
    assert [phase.split(";")[0] for phase in running] == [
        "Iteration 2/3: running 1 failing test",
        "Iteration 2/3: running the whole suite",
    ]
    retried = result.notes["workflow"]["iterations"][1]
    assert [(r["scope"], r["tests"]) for r in retried["test_runs"]] == [
        ("failing", ["test_calc.CalcTest.test_multiply"]),
        ("whole", []),
    ]
    assert not any("2/3: analysing the result" in phase for phase in phases(seen))  # green: no analysis
    assert "(plan: 1 call(s)" in seen.progress[-1] and "; Aider: 2 edit(s)" in seen.progress[-1]  # by kind
    assert result.notes["changed_files"] == ["calc.py"]
    assert "+    return a * b" in result.notes["diff"]
    # the run's diff has the format of an edit's: one `diff --git a/X b/X` section per file
    assert result.notes["diff"].startswith("diff --git a/calc.py b/calc.py\n--- a/calc.py\n")
    usage = run["usage"]
    assert usage["requests"] == 2 and usage["total_tokens"] > 0  # the plan and one analysis
    assert usage["aider"]["edits"] == 2 and usage["aider"]["total_tokens"] > 0  # Aider's own calls
    assert usage["all"]["total_tokens"] == usage["total_tokens"] + usage["aider"]["total_tokens"]
    calls = [
        ("plan" if IS_PLAN(r) else "analysis" if IS_ANALYSIS(r) else "aider")
        for r in llm_server.chat_requests()
    ]
    assert sorted(calls) == ["aider", "aider", "analysis", "plan"]
    # the planner saw the open file and the goal
    plan_request = next(r for r in llm_server.chat_requests() if IS_PLAN(r))
    assert "make the tests pass" in str(plan_request["messages"]) and "calc.py" in str(
        plan_request["messages"]
    )


async def test_the_history_keeps_each_iterations_edit_tests_and_analysis(
    app: Application, calc_project: Path, llm_server: Any
) -> None:
    """What the Runs view shows under the run, after a reload: the history.list answer."""
    script_two_iterations(llm_server)
    result = await run_workflow_on_wire(
        app, WorkflowRequest(goal="make the tests pass", test_command=TEST_COMMAND), RequestContext()
    )
    assert result.status is TaskStatus.COMPLETE, result.content
    listed = history_result(app.history()).to_wire()
    (run,) = listed["notes"]["runs"]
    assert run["iterations"] == 2 and run["files"] == ["calc.py"]  # the keys clients read stay
    red, green = run["steps"]
    assert red["iteration"] == 1 and red["edit"]["changed_files"] == ["calc.py"]
    assert red["test"]["command"] == TEST_COMMAND and red["test"]["exit_code"] == 1
    assert (red["test"]["failed"], red["test"]["failing"]) == (1, ["test_calc.CalcTest.test_multiply"])
    assert red["test"]["summary"] == "FAILED (failures=1)"
    assert red["test"]["outcome"] == "the tests fail (1 failed)"  # the one wording, on the wire
    assert red["analysis"] == {"verdict": "RETRY", "message": RETRY["message"], "overruled": None}
    assert green["iteration"] == 2 and green["edit"]["changed_files"] == ["calc.py"]
    assert (green["test"]["exit_code"], green["test"]["failed"], green["test"]["scope"]) == (0, 0, "whole")
    assert green["test"]["summary"] == "OK" and green["analysis"] is None  # green: no analysis ran
    assert green["test"]["outcome"] == "the tests pass (OK)"
    # `aider-lsp history`: one line per iteration under the run
    assert listed["content"].splitlines()[1:] == [
        "    iteration 1: changed calc.py · the tests fail (1 failed) · RETRY: multiply still fails",
        "    iteration 2: changed calc.py · the tests pass (OK)",
    ]


async def test_undo_after_success_restores_and_removes_created_files(
    app: Application, calc_project: Path, llm_server: Any
) -> None:
    llm_server.add_rule(IS_PLAN, json_output({**PLAN, "instructions": "Fix both"}))
    llm_server.add_rule(IS_ANALYSIS, analysis_by_exit_code)
    llm_server.add_rule(IS_AIDER, aider_whole({"calc.py": FIXED, "helpers.py": "TWO = 2\n"}))
    result = await run_workflow_on_wire(
        app, WorkflowRequest(goal="fix calc", test_command=TEST_COMMAND), RequestContext()
    )
    assert result.status is TaskStatus.COMPLETE, result.content
    assert (calc_project / "helpers.py").exists()
    assert result.notes["created_files"] == ["helpers.py"] and result.notes["checkpoint_id"]
    assert (
        "diff --git a/helpers.py b/helpers.py\nnew file mode 100644\n--- /dev/null\n" in result.notes["diff"]
    )
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
        all_of(IS_AIDER, last_user_contains("fix calc")), aider_whole({"calc.py": HALF_FIXED})
    )
    llm_server.add_rule(IS_AIDER, aider_whole({"calc.py": HALF_FIXED.replace("a + b", "a + b + 0")}))
    seen = Recorder()
    result = await run_workflow_on_wire(
        app, WorkflowRequest(goal="fix calc", test_command=TEST_COMMAND, max_retries=2), seen.context
    )
    assert result.status is TaskStatus.FAILED
    assert result.notes["error"]["reason"] == "max_retries_reached"
    run = result.notes["workflow"]
    assert run["status"] == "FAILURE" and len(run["iterations"]) == 2
    assert run["analysis_result"]["verdict"] == "RETRY"
    # each red iteration's findings, then with its analysis's advice; they stay on a failed run
    # (iteration 1's advice is shown on its own unless iteration 2's tests come first; the tests
    # run before the first edit show theirs first unless Aider was ready a second before them)
    assert 3 <= len(seen.findings) <= 5 and all(seen.findings)
    assert {f.source for f in seen.findings[0]} == {"unittest"}
    assert {f.source == "analysis" for f in seen.findings[-1]} == {True, False}


async def test_llm_error_fails_the_run_and_undo_restores_the_first_edit(
    app: Application, calc_project: Path, llm_server: Any
) -> None:
    """The planner beside the first edit fails (500): the red run ends with its reason, and
    the edit made meanwhile is undone by one undo."""
    llm_server.add_rule(IS_PLAN, fault(500, {"error": {"message": "the model is on fire"}}))
    llm_server.add_rule(IS_AIDER, aider_whole({"calc.py": HALF_FIXED}))
    result = await run_workflow_on_wire(
        app, WorkflowRequest(goal="make the tests pass", test_command=TEST_COMMAND), RequestContext()
    )
    assert result.status is TaskStatus.FAILED
    assert result.notes["error"]["reason"] == "llm_error"
    assert "500" in result.content and "planning failed" in result.content
    assert len(result.notes["workflow"]["iterations"]) == 1  # no second edit
    assert app.undo().ok
    assert (calc_project / "calc.py").read_text() == BUGGY
    assert (calc_project / "test_calc.py").read_text() == TESTS


async def test_a_second_run_is_refused_while_one_runs(
    app: Application, calc_project: Path, llm_server: Any
) -> None:
    let_go = threading.Event()  # the first run's edit answers only after the second is refused
    llm_server.add_rule(IS_AIDER, held(let_go, aider_whole({"calc.py": FIXED})))
    first = asyncio.create_task(
        run_workflow_on_wire(
            app, WorkflowRequest(goal="fix calc", test_command=TEST_COMMAND), RequestContext()
        )
    )
    try:
        assert await asyncio.to_thread(llm_server.wait_for_requests, 1, 60)
        second = await asyncio.wait_for(
            run_workflow_on_wire(
                app, WorkflowRequest(goal="again", test_command=TEST_COMMAND), RequestContext()
            ),
            60,  # a cap: a second run that waited for the first would wait for the held edit
        )
        assert not first.done()  # refused while the first still runs
        assert second.status is TaskStatus.FAILED
        assert "already running" in second.content
        assert second.notes["error"]["reason"] == "input_validation_failure"
        assert len(llm_server.chat_requests()) == 1  # the second asked no model
        first.cancel()
        with pytest.raises(asyncio.CancelledError):
            await asyncio.wait_for(first, 60)
    finally:
        let_go.set()
    assert (calc_project / "calc.py").read_text() == BUGGY


async def test_aiders_usage_reaches_the_budget_and_stops_the_run(calc_project: Path, llm_server: Any) -> None:
    """The budget counts Aider's own calls with the planner's: plan 110 (asked for, beside the
    edit) + Aider's edit 400 tokens pass 500, so the run stops before its next call (no
    analysis, no second edit)."""
    app = scripted_app(calc_project, llm_server.base_url, budget={"maxTokens": 500})
    plan = json_output(PLAN, usage={"prompt_tokens": 100, "completion_tokens": 10, "total_tokens": 110})
    edit = replace(
        aider_whole({"calc.py": HALF_FIXED}), usage={"prompt_tokens": 300, "completion_tokens": 100}
    )
    seen = Recorder()
    llm_server.add_rule(IS_PLAN, plan)
    llm_server.add_rule(IS_ANALYSIS, json_output(RETRY))
    # the budget counts what was spent when a call starts: the plan (beside the edit) must have
    # answered before the analysis starts, so Aider's edit answers once the run has its plan
    llm_server.add_rule(IS_AIDER, held(seen.planned, edit))
    try:
        result = await run_workflow_on_wire(
            app, WorkflowRequest(goal="fix calc", test_command=TEST_COMMAND, plan=True), seen.context
        )
    finally:
        seen.planned.set()
        await app.aclose()
    assert result.status is TaskStatus.FAILED
    assert result.notes["error"]["reason"] == "budget_exceeded"
    assert "budget of 500 is used up (510 used)" in result.content
    run = result.notes["workflow"]
    assert len(run["iterations"]) == 1  # stopped before the second edit
    assert not any(IS_ANALYSIS(request) for request in llm_server.chat_requests())  # and the analysis
    usage = run["usage"]
    assert usage["total_tokens"] == 110 and usage["requests"] == 1  # planning/analysis
    assert usage["aider"] == {
        "prompt_tokens": 300,
        "completion_tokens": 100,
        "total_tokens": 400,
        "cost": None,
        "edits": 1,
        "unreported": 0,
        "requests": 1,  # Aider's own requests, as the bundled server counted them
        "cached_tokens": 0,
    }
    assert usage["all"] == {"total_tokens": 510, "cached_tokens": 0, "cost": None}
    # by kind of call: the plan and the one edit (the run stopped before any analysis)
    calls = usage["calls"]
    assert calls["plan"]["input_tokens"] == 100 and calls["plan"]["calls"] == 1
    assert calls["edit"]["input_tokens"] == 300 and calls["edit"]["requests"] == 1
    assert calls["analysis"]["calls"] == 0
    assert run["iterations"][0]["aider"]["usage"] == {
        "prompt_tokens": 300,
        "completion_tokens": 100,
        "cost": None,
        "requests": 1,
    }
    assert "Aider: 1 edit(s), 400 tokens" in seen.progress[-1]  # the progress shows the spend
    # what was done stays undoable
    assert (calc_project / "calc.py").read_text() == HALF_FIXED
    assert app.undo().ok and (calc_project / "calc.py").read_text() == BUGGY


async def test_the_planners_usage_alone_stops_the_run_too(calc_project: Path, llm_server: Any) -> None:
    app = scripted_app(calc_project, llm_server.base_url, budget={"maxTokens": 100})
    plan = json_output(PLAN, usage={"prompt_tokens": 100, "completion_tokens": 10, "total_tokens": 110})
    llm_server.add_rule(IS_PLAN, plan)
    llm_server.add_rule(IS_ANALYSIS, json_output(RETRY))
    free = {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0}  # Aider spends nothing
    # the first edit answers once the plan beside it is counted (its model may load for seconds
    # on a busy machine): the budget is spent before the step after the edit, by the plan alone
    counted = threading.Event()
    llm_server.add_rule(IS_AIDER, held(counted, replace(aider_whole({"calc.py": HALF_FIXED}), usage=free)))

    async def count_the_plan() -> None:
        await eventually(lambda: app.spent().all.total_tokens >= 110, 120)
        counted.set()

    counting = asyncio.create_task(count_the_plan())
    try:
        result = await run_workflow_on_wire(
            app, WorkflowRequest(goal="fix calc", test_command=TEST_COMMAND, plan=True), RequestContext()
        )
    finally:
        counted.set()
        counting.cancel()
        await app.aclose()
    assert result.notes["error"]["reason"] == "budget_exceeded"
    assert len(result.notes["workflow"]["iterations"]) == 1  # stopped before the second edit
    assert not any(IS_ANALYSIS(request) for request in llm_server.chat_requests())  # and the analysis
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

    async def use_it(question: Question) -> Answer:
        questions.append(question.message)
        return Answer.ACCEPT

    seen = Recorder()
    seen.context.ask = use_it
    result = await run_workflow_on_wire(app, WorkflowRequest(goal="make the tests pass"), seen.context)
    assert result.status is TaskStatus.COMPLETE, result.content
    assert len(questions) == 1 and f"`{TEST_COMMAND}`" in questions[0]
    commands = {item["test"]["command"] for item in result.notes["workflow"]["iterations"]}
    assert commands == {TEST_COMMAND}
    (calc_project / "calc.py").write_text(BUGGY)
    script_two_iterations(llm_server)
    again = await run_workflow_on_wire(app, WorkflowRequest(goal="make the tests pass"), seen.context)
    assert again.status is TaskStatus.COMPLETE, again.content
    assert len(questions) == 1  # remembered for the workspace: not asked again


async def test_undo_of_a_run_keeps_a_change_another_program_made_during_its_edit(
    calc_project: Path, llm_server: Any
) -> None:
    # Another program appends to calc.py while Aider is editing it in the first iteration; the
    # run ends green with the line kept. Undo must not take the file back to before the run:
    # that would discard the other program's line without a word (it did, COMPLETE "Restored");
    # it takes back the run's own change and keeps the line.
    calc = calc_project / "calc.py"
    theirs = "\n\n# appended by another program during the edit\n"
    fix = aider_diff(
        [
            ("calc.py", "    return b - a\n", "    return a - b\n"),
            ("calc.py", "    return a + b\n", "    return a * b\n"),
        ]
    )
    llm_server.add_rule(IS_PLAN, json_output(PLAN))
    llm_server.add_rule(IS_ANALYSIS, analysis_by_exit_code)
    appended = threading.Event()  # Aider's first edit answers once the other program wrote
    llm_server.add_rule(IS_AIDER, held(appended, fix), times=1)
    llm_server.add_rule(IS_AIDER, fix)
    app = scripted_app(calc_project, llm_server.base_url, edit_format="diff")
    try:
        running = asyncio.ensure_future(
            run_workflow_on_wire(
                app, WorkflowRequest(goal="make the tests pass", test_command=TEST_COMMAND), RequestContext()
            )
        )
        assert await asyncio.to_thread(lambda: llm_server.wait_for_requests(2, 60))  # Aider, the plan beside
        with calc.open("a") as handle:
            handle.write(theirs)
        appended.set()
        result = await asyncio.wait_for(running, 120)
        assert result.status is TaskStatus.COMPLETE, result.content
        assert calc.read_text() == FIXED + theirs
        undo = app.undo()
        # a revert: the run's own change is taken back, the other program's line stays
        assert undo.status is TaskStatus.COMPLETE, undo.content
        assert calc.read_text() == BUGGY + theirs, "undo discarded the other program's change"
    finally:
        await app.aclose()
