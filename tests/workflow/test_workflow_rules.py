"""Every rule of docs/workflow.md pinned by a decision test (issue 40): the rules, and where each
is pinned. "decisions" is tests/workflow/test_workflow_decisions.py, "first" is
test_workflow_tests_first.py, "here" is this module (the rules no other fast test pinned).
Each was checked by hand once: the rule removed or inverted in server/aider_lsp/workflow/, a
test below (or the one named) failed, the file restored.

1. The first edit at once, no model call before it (decisions: goal_alone_starts…, first_edit_
   does_not_wait_for_a_plan…). Aider's server starts meanwhile (here).
   a. its files: the user's (decisions: users_files_and_a_known_command…; with the index asked
      too: here);
   b. else the index's best, at most 3, each at least half the best (decisions: goal_alone…;
      the 3: here), not those unsaved in the editor (decisions: index_file_unsaved…);
   c. the open files are candidates for the index, never the answer (decisions: goal_alone…;
      an open file alone: here);
   d. files Aider edits outside its chat join the later iterations (decisions: file_aider_edited…);
   e. the test command is the request's, else `testCommand` (here).
2. A plan beside the first edit when it helps: asked for (decisions: plan_the_user_asked…),
   the test command unknown (decisions: unknown_test_command…), the index not confident
   (decisions: index_without_a_confident_answer…): confident is a best of at least 0.5 (here)
   found by a definition (decisions) or by its name (here). The planner sees the goal, the
   open files and the index's best (here).
   a. its instructions join the second edit's message, its files the chat (decisions);
   b. green tests stop a plan still running; said only when the user asked for it (decisions:
      requested_plan_still_running…; not asked: here); one that failed is said (decisions);
   c. a red run ends on a failed plan with its reason (decisions: failing_planner_beside…);
   d. no file at all: the plan comes first (decisions: index_with_no_file…), and its failure,
      or no test command from anywhere, ends the run (here);
   e. the run records the planner's plan, else the implied one (decisions).
3. The tests before the first edit (`testsBeforeFirstEdit`, on by default): a failing suite
   joins the first edit's message, a passing one or one that cannot start leaves the goal
   alone, a slow one is stopped or not started, off gives the goal alone (first: all).
4. Per iteration:
   a. at most `max_retries` iterations, at least one (here);
   b. the edits are turns of one Aider chat (here); a server without chats is told the
      instructions again each turn (here);
   c. an edit that changed no file is a failed attempt: no test run, asked again (decisions),
      the analysis told what Aider replied (here); any other edit failure ends the run
      (decisions: edit_that_failed…, model_endpoint_refused…);
   d. a test command that cannot start ends the run (here);
   e. green tests end the run with SUCCESS, no analysis (decisions: green_tests_end…);
   f. `analyseGreenTests`: the analysis first (decisions: FAILURE); its RETRY's next_prompt and
      next_files are the next edit's, its SUCCESS the message (here);
   g. red tests (or a timed-out run: here): the next edit at once, in the chat, with the failing
      output (decisions: next_edit_does_not_wait…, analysis_advice_reaches…); the analysis
      beside it sees the goal, the instructions, the diff and the tests' output (here);
   h. an edit that turns them green ends the run, the analysis beside stopped (decisions);
   i. red again: the analysis beside is awaited; FAILURE stops the run (decisions), RETRY's
      next_prompt (decisions) and next_files (here) reach the edit after, and SUCCESS does NOT
      end the red run (here: the rule no test pinned);
   j. the last iteration awaits its analysis: `max_retries_reached` with its message (here) or
      `goal_not_reached` when it gave up (here).
5. The tests are the judge: SUCCESS over red tests is overruled (decisions: analysis_saying_
   success_over_red…; beside an edit and over a timed-out run: here).
6. The judge cannot be changed: no test run, fewer tests, changed tests, a test added, a test
   file named in the goal vs chosen by the user (decisions: the judge section).
7. Findings after each failing run, the analysis joining them on the iteration's files (here),
   SUCCESS clearing them (decisions: findings_are_reported…).
8. Progress phases, the analysis beside named while it runs, the spend once there is one (here).
9. Failing tests first, then the rest or the whole suite (decisions; first: quick_suite); a
   red rest run decides even when it left out more tests (here); a narrowed run that names no
   failing test lets the whole suite decide (here), one that times out decides (here);
   `failingTestsFirst: false` runs the whole suite (here).
10. The budget before each model call (decisions: budget…); the LLM layer's refusal is
    `budget_exceeded` too (here); the run's cap reaches the host for its duration (here).
11. Errors are results: a failing analysis ends the run with its reason (here).
12. Cancel in each phase propagates and leaves no task (decisions: cancel_in_each_phase…).
13. Undo: a run that changed nothing leaves no checkpoint (here).
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from pathlib import Path

import pytest

from aider_lsp.config.settings import Settings, load_settings
from aider_lsp.models import (
    AiderEditOutcome,
    AnalysisRequest,
    CombinedAnalysisResult,
    CommandRun,
    ErrorReason,
    Finding,
    MatchItem,
    ModelAnswer,
    Ranking,
    ReplyCallback,
    RequestContext,
    Severity,
    Signals,
    TaskError,
    TaskResult,
    Verdict,
    WorkflowStatus,
    complete_result,
)
from aider_lsp.workflow.orchestrator import CodingWorkflowOrchestrator
from aider_lsp_testing.fake_host import (
    ANALYSIS,
    EDIT,
    PLAN,
    TEST,
    WITHOUT_TESTS_FIRST,
    FakeHost,
    analysis,
    green_run,
    indexed,
    model_fails,
    no_change,
    plan,
    red_run,
    rest_run,
    writes,
)

GOAL = "multiply multiplies"
FIXED = "def multiply(a, b):\n    return a * b\n"
WRONG = "def multiply(a, b):\n    return a + b + 1\n"
WORSE = "def multiply(a, b):\n    return a - b\n"
FAILING = "tests/test_calc.py::test_multiply"
pytestmark = pytest.mark.timeout(10)


class RecordingHost(FakeHost):
    """The fake host, also keeping what a user's tools would see of the calls it gets: each
    analysis's parameters, the budget each edit ran under, Aider's start; `chats` False plays
    a server that keeps no chat (the public aider-mcp-server)."""

    def __init__(self, workspace: Path, settings: Settings | None = None, *, chats: bool = True) -> None:
        super().__init__(workspace, settings)
        self.chats = chats
        self.edit_budgets: list[tuple[int | None, float | None] | None] = []
        self.analysis_delay = 0.0

    async def start_aider(self) -> bool:
        self.calls.append("start aider")
        return True

    async def analyse(self, request: AnalysisRequest) -> ModelAnswer[CombinedAnalysisResult]:
        await asyncio.sleep(self.analysis_delay)
        return await super().analyse(request)

    async def edit(
        self,
        prompt: str,
        files: Sequence[str] = (),
        *,
        chat: bool = False,
        session_id: str | None = None,
        on_reply: ReplyCallback | None = None,
        retell: str = "",
        dropped: Sequence[str] = (),
        images: Sequence[str] = (),
    ) -> AiderEditOutcome:
        self.edit_budgets.append(self.budget)
        outcome = await super().edit(
            prompt,
            files,
            chat=chat,
            session_id=session_id,
            on_reply=on_reply,
            retell=retell,
            dropped=dropped,
            images=images,
        )
        return outcome if self.chats else outcome.model_copy(update={"server_report": {}})


@pytest.fixture
def host(tmp_path: Path) -> RecordingHost:
    (tmp_path / "calc.py").write_text("def multiply(a, b):\n    return a + b\n")
    return RecordingHost(tmp_path, WITHOUT_TESTS_FIRST)


def with_settings(host: FakeHost, **options: object) -> RecordingHost:
    """A host on the same workspace with these settings (camelCase, as an editor sends them)."""
    return RecordingHost(
        host.workspace, load_settings({"testsBeforeFirstEdit": False, **options}, environ={})
    )


def loop(
    host: FakeHost, max_retries: int = 3, files: list[str] | None = None, test_command: str | None = "pytest"
) -> CodingWorkflowOrchestrator:
    """A run on calc.py (unless `files`), the test command known unless None."""
    chosen = ["calc.py"] if files is None else files
    return CodingWorkflowOrchestrator(host, GOAL, "", test_command, max_retries, chosen)


def goal_alone(host: FakeHost) -> CodingWorkflowOrchestrator:
    """A run of the goal alone (no file chosen), the test command known."""
    return CodingWorkflowOrchestrator(host, GOAL, "", "pytest", 3, None)


def advice(
    verdict: Verdict,
    message: str = "why",
    next_prompt: str | None = None,
    next_files: list[str] | None = None,
) -> TaskResult:
    """The analysis template's answer, naming files for the next edit."""
    parsed = CombinedAnalysisResult(
        verdict=verdict, message=message, next_prompt=next_prompt, next_files=next_files
    )
    return complete_result(parsed.model_dump_json(), parsed=parsed)


def timed_out(seconds: float = 30.0) -> CommandRun:
    error = TaskError(reason=ErrorReason.EXECUTION_TIMEOUT, message=f"killed after {seconds:g} s")
    return CommandRun(
        command="pytest", timed_out=True, duration_s=seconds, stdout="collected 3 items", error=error
    )


def suite_commands(host: FakeHost) -> list[str]:
    return [call.split(":", 1)[1] for call in host.calls if call.startswith(TEST)]


# -- 4i, 5: the tests are the judge, the analysis beside the next edit included ----------------
async def test_an_analysis_beside_that_says_success_does_not_end_a_red_run(host: RecordingHost) -> None:
    """Iteration 1 is red; its analysis, running beside edit 2, says SUCCESS; edit 2 leaves the
    tests red: the run is not a success (the tests are the judge), and says why."""
    host.edits.extend([writes("calc.py", WRONG), writes("calc.py", WORSE)])
    host.test_runs.extend([red_run(FAILING), red_run(FAILING)])
    host.analyses.extend([analysis(Verdict.SUCCESS, "looks right"), analysis(Verdict.RETRY, "still red")])
    result = await loop(host, max_retries=2).run(RequestContext())
    assert result.status is WorkflowStatus.FAILURE
    assert result.reason is ErrorReason.MAX_RETRIES_REACHED
    assert "the tests fail (exit code 1)" in result.content
    first, second = result.iterations
    assert first.analysis is not None and first.analysis.verdict is Verdict.SUCCESS
    assert first.overruled is not None and "the tests are the judge" in first.overruled
    assert second.analysis is not None and second.analysis.message == "still red"  # the last is awaited


async def test_success_beside_a_red_run_lets_the_run_go_on_to_the_fix(host: RecordingHost) -> None:
    host.edits.extend([writes("calc.py", WRONG), writes("calc.py", WORSE), writes("calc.py", FIXED)])
    host.test_runs.extend([red_run(FAILING), red_run(FAILING), green_run()])
    host.analyses.extend([analysis(Verdict.SUCCESS, "looks right"), analysis(Verdict.RETRY)])
    result = await loop(host).run(RequestContext())
    assert result.status is WorkflowStatus.SUCCESS
    assert host.calls.count(EDIT) == 3 and (host.workspace / "calc.py").read_text() == FIXED
    assert "looks right" not in result.content  # the tests ended it, not the overruled analysis


async def test_an_analysis_saying_success_over_a_timed_out_run_is_overruled(host: RecordingHost) -> None:
    host.edits.extend([writes("calc.py", WRONG), writes("calc.py", WORSE)])
    host.test_runs.extend([timed_out(), timed_out()])
    host.analyses.extend([analysis(Verdict.RETRY), analysis(Verdict.SUCCESS, "looks right")])
    result = await loop(host, max_retries=2).run(RequestContext())
    assert result.status is WorkflowStatus.FAILURE
    assert "the tests timed out" in result.content
    # a timed-out run is red: the next edit gets its output and why it stopped
    assert "I ran this command:\n\npytest" in host.prompts[1]
    assert "[killed at the timeout after 30 s]" in host.prompts[1]


# -- 4a, 4j: how many iterations, and how the last one ends -------------------------------------
async def test_max_retries_zero_still_makes_one_attempt(host: RecordingHost) -> None:
    host.edits.append(writes("calc.py", WRONG))
    host.test_runs.append(red_run(FAILING))
    host.analyses.append(analysis(Verdict.RETRY, "multiply adds"))
    result = await loop(host, max_retries=0).run(RequestContext())
    assert host.calls.count(EDIT) == 1
    assert result.reason is ErrorReason.MAX_RETRIES_REACHED
    assert result.content == (
        "the goal was not reached in 1 iteration(s): the tests fail (exit code 1); multiply adds"
    )


async def test_the_last_iterations_analysis_giving_up_is_goal_not_reached(host: RecordingHost) -> None:
    host.edits.extend([writes("calc.py", WRONG), writes("calc.py", WORSE)])
    host.test_runs.extend([red_run(FAILING), red_run(FAILING)])
    host.analyses.extend([analysis(Verdict.RETRY), analysis(Verdict.FAILURE, "multiply is frozen")])
    result = await loop(host, max_retries=2).run(RequestContext())
    assert result.status is WorkflowStatus.FAILURE
    assert result.reason is ErrorReason.GOAL_NOT_REACHED
    assert result.content == "the analysis gave up: multiply is frozen"


# -- 4b: one Aider chat per run ----------------------------------------------------------------
async def test_the_edits_of_a_run_are_turns_of_one_aider_chat(host: RecordingHost) -> None:
    host.edits.extend([writes("calc.py", WRONG), writes("calc.py", FIXED)])
    host.test_runs.extend([red_run(FAILING), green_run()])
    host.analyses.append(analysis(Verdict.RETRY))
    result = await loop(host).run(RequestContext())
    assert result.status is WorkflowStatus.SUCCESS
    sessions = [it.aider.session_id if it.aider else None for it in result.iterations]
    assert sessions == ["chat-1", "chat-1"]
    assert host.ended_chats == ["chat-1"]  # closed once, at the end of the run
    assert not host.prompts[1].startswith(GOAL)  # the chat holds the instructions already


async def test_a_server_without_chats_is_told_the_instructions_again(tmp_path: Path) -> None:
    (tmp_path / "calc.py").write_text("def multiply(a, b):\n    return a + b\n")
    host = RecordingHost(tmp_path, WITHOUT_TESTS_FIRST, chats=False)
    host.edits.extend([writes("calc.py", WRONG), writes("calc.py", FIXED)])
    host.test_runs.extend([red_run(FAILING), green_run()])
    host.analyses.append(analysis(Verdict.RETRY))
    result = await loop(host).run(RequestContext())
    assert result.status is WorkflowStatus.SUCCESS
    assert host.prompts[1].startswith(f"{GOAL}\n\nI ran this command:\n\npytest")
    assert host.ended_chats == []


# -- 4c, 4d, 11: failed attempts and errors ------------------------------------------------------
async def test_the_analysis_of_a_no_change_edit_is_told_what_aider_replied(host: RecordingHost) -> None:
    host.edits.append(no_change("I would use the * operator."))
    host.analyses.append(analysis(Verdict.RETRY, "Aider did not edit"))
    result = await loop(host, max_retries=1).run(RequestContext())
    assert suite_commands(host) == []  # nothing changed: nothing to test
    (params,) = host.analysis_requests
    assert "Aider replied: I would use the * operator." in params.aider_status
    assert params.test_exit_code.startswith("none (not run")
    assert result.reason is ErrorReason.MAX_RETRIES_REACHED
    assert "an edit that changed nothing" in result.content


async def test_a_test_command_that_cannot_start_ends_the_run_with_its_reason(host: RecordingHost) -> None:
    host.edits.append(writes("calc.py", FIXED))
    error = TaskError(reason=ErrorReason.TOOL_EXECUTION_ERROR, message="pytest: command not found")
    host.test_runs.append(CommandRun(command="pytest", error=error))
    result = await loop(host).run(RequestContext())
    assert result.status is WorkflowStatus.FAILURE
    assert result.reason is ErrorReason.TOOL_EXECUTION_ERROR
    assert result.content == "the test command could not run: pytest: command not found"
    assert host.calls.count(EDIT) == 1 and host.calls[-1] == f"{TEST}:pytest"  # no retry


async def test_a_failing_analysis_ends_the_run_with_its_reason(host: RecordingHost) -> None:
    host.edits.append(writes("calc.py", WRONG))
    host.test_runs.append(red_run(FAILING))
    host.analyses.append(model_fails("the model answered 500"))
    result = await loop(host, max_retries=1).run(RequestContext())
    assert result.status is WorkflowStatus.FAILURE
    assert result.reason is ErrorReason.LLM_ERROR
    assert result.content == "the analysis failed: the model answered 500"


# -- 4f: analyseGreenTests --------------------------------------------------------------------
async def test_analyse_green_tests_retry_gives_the_next_edit_its_prompt_and_files(
    host: RecordingHost,
) -> None:
    host = with_settings(host, analyseGreenTests=True)
    (host.workspace / "zero.py").write_text("ZERO = 0\n")
    host.edits.extend([writes("calc.py", WRONG), writes("calc.py", FIXED)])
    host.test_runs.extend([green_run(), green_run()])
    host.analyses.extend(
        [
            advice(Verdict.RETRY, "the goal needs more", "multiply with *", ["calc.py", "zero.py"]),
            advice(Verdict.SUCCESS, "multiply multiplies now"),
        ]
    )
    result = await loop(host).run(RequestContext())
    assert result.status is WorkflowStatus.SUCCESS
    assert result.content == "multiply multiplies now"  # the analysis's message
    assert host.prompts[1] == "multiply with *"
    assert result.iterations[1].files == ["calc.py", "zero.py"]
    assert host.calls.count(ANALYSIS) == 2


# -- 4i: RETRY's files reach the edit after ---------------------------------------------------
async def test_the_files_a_retry_names_join_the_edit_after(host: RecordingHost) -> None:
    (host.workspace / "ops.py").write_text("TIMES = '*'\n")
    host.edits.extend([writes("calc.py", WRONG), writes("calc.py", WORSE), writes("calc.py", FIXED)])
    host.test_runs.extend([red_run(FAILING), red_run(FAILING), green_run()])
    host.analyses.extend(
        [advice(Verdict.RETRY, "see ops.py", "use ops.TIMES", ["ops.py"]), analysis(Verdict.RETRY)]
    )
    result = await loop(host).run(RequestContext())
    assert result.status is WorkflowStatus.SUCCESS
    assert result.iterations[1].files == ["calc.py"]  # the analysis ran beside edit 2
    assert result.iterations[2].files == ["calc.py", "ops.py"]
    assert host.prompts[2].endswith("use ops.TIMES")


# -- 1, 2: the first edit's files, the plan beside it ------------------------------------------
async def test_aiders_server_starts_with_the_run(host: RecordingHost) -> None:
    host.edits.append(writes("calc.py", FIXED))
    host.test_runs.append(green_run())
    await loop(host).run(RequestContext())
    assert sorted(host.calls) == sorted(["start aider", EDIT, f"{TEST}:pytest"])


async def test_the_test_command_setting_serves_a_request_without_one(host: RecordingHost) -> None:
    host = with_settings(host, testCommand="python -m pytest -x")
    host.edits.append(writes("calc.py", FIXED))
    host.test_runs.append(green_run())
    result = await loop(host, test_command=None).run(RequestContext())
    assert result.status is WorkflowStatus.SUCCESS
    assert PLAN not in host.calls  # the command is known: no plan needed for it
    assert suite_commands(host) == ["python -m pytest -x"]


async def test_the_users_files_are_the_first_edits_even_when_the_index_is_asked(host: RecordingHost) -> None:
    """The test command is unknown: a plan runs beside, so the index is asked too; the files the
    user chose are still the ones the first edit takes."""
    host.matches = [indexed("test_calc.py", 0.9, definition=1.0)]
    host.plans.append(plan("fix multiply", ["calc.py"]))
    host.edits.append(writes("calc.py", FIXED))
    host.test_runs.append(green_run())
    result = await loop(host, test_command=None).run(RequestContext())
    assert result.status is WorkflowStatus.SUCCESS
    assert result.iterations[0].files == ["calc.py"]


@pytest.mark.parametrize(
    ("tokens_each", "taken"),
    [(10_000, 6), (3_000, 10), (6_000, 6)],  # 6 large; 10 small (30k); 7 x 6k would pass 40k
)
async def test_a_flat_ranking_gives_the_first_edit_six_files_or_up_to_ten_that_fit_40k_tokens(
    host: RecordingHost, tokens_each: int, taken: int
) -> None:
    size = tokens_each * 4  # bytes: Aider sends a file whole, about 4 characters a token
    host.matches = [indexed(f"m{n}.py", 0.9 - n / 100, definition=1.0, size=size) for n in range(12)]
    host.edits.append(writes("m0.py", FIXED))
    host.test_runs.append(green_run())
    result = await goal_alone(host).run(RequestContext())
    assert result.iterations[0].files == [f"m{n}.py" for n in range(taken)]
    asked = host.context_requests[0]
    assert asked.max_results >= 10 and asked.edit_goal  # as many, asked as a change goal


async def test_the_first_edit_leaves_out_files_under_half_the_bests_uncapped_score(
    host: RecordingHost,
) -> None:
    uncapped = [3.0, 1.6, 1.4, 0.8]  # all four are 1.0 once capped to the MatchItem's 0..1
    host.matches = [
        indexed(f"m{n}.py", 1.0, definition=1.0, uncapped=score) for n, score in enumerate(uncapped)
    ]
    host.edits.append(writes("m0.py", FIXED))
    host.test_runs.append(green_run())
    result = await goal_alone(host).run(RequestContext())
    assert result.iterations[0].files == ["m0.py", "m1.py"]


async def test_an_index_whose_best_scores_under_half_plans_beside_the_first_edit(host: RecordingHost) -> None:
    host.matches = [indexed("calc.py", 0.45, definition=1.0)]  # a definition, but a weak best
    host.plans.append(plan("use * in multiply", ["calc.py"]))
    host.edits.append(writes("calc.py", FIXED))
    host.test_runs.append(green_run())
    result = await goal_alone(host).run(RequestContext())
    assert result.status is WorkflowStatus.SUCCESS
    assert PLAN in host.calls and host.calls.index(EDIT) < host.calls.index(PLAN)


async def test_a_file_the_goal_names_makes_the_index_confident(host: RecordingHost) -> None:
    named = MatchItem(
        id="calc.py",
        content="calc.py",
        relevance_score=0.8,
        content_type="file_summary",
        source_path="calc.py",
        ranking=Ranking(score=0.8, signals=Signals(text=0.0, mentioned=1.0)),
    )
    host.matches = [named]
    host.edits.append(writes("calc.py", FIXED))
    host.test_runs.append(green_run())
    result = await goal_alone(host).run(RequestContext())
    assert result.status is WorkflowStatus.SUCCESS
    assert PLAN not in host.calls


async def test_an_open_file_alone_is_not_the_first_edits_answer(host: RecordingHost) -> None:
    host.plans.append(plan("fix multiply", ["calc.py"]))  # the index offers no file
    host.edits.append(writes("calc.py", FIXED))
    host.test_runs.append(green_run())
    result = await goal_alone(host).run(RequestContext(open_files=["notes.py"]))
    assert result.status is WorkflowStatus.SUCCESS
    assert host.calls.index(PLAN) < host.calls.index(EDIT)  # the plan first: nothing to edit
    assert result.iterations[0].files == ["calc.py"]


async def test_a_plan_nobody_asked_for_that_the_tests_outran_is_not_mentioned(host: RecordingHost) -> None:
    host.hold = {PLAN}
    host.matches = [indexed("calc.py", 0.4)]  # not confident: a plan beside, which never answers
    host.edits.append(writes("calc.py", FIXED))
    host.test_runs.append(green_run())
    result = await goal_alone(host).run(RequestContext())
    assert result.status is WorkflowStatus.SUCCESS
    assert result.plan_problem is None and "no plan was made" not in result.content


async def test_a_plan_first_that_fails_ends_the_run_before_any_edit(host: RecordingHost) -> None:
    host.plans.append(model_fails("the planner answered 500"))
    result = await goal_alone(host).run(RequestContext())
    assert result.status is WorkflowStatus.FAILURE and result.reason is ErrorReason.LLM_ERROR
    assert result.content == "planning failed: the planner answered 500"
    assert EDIT not in host.calls


async def test_no_test_command_from_anywhere_ends_the_run_naming_the_setting(host: RecordingHost) -> None:
    host.plans.append(plan("fix multiply", ["calc.py"], test_command=None))
    host.edits.append(writes("calc.py", FIXED))
    result = await loop(host, test_command=None).run(RequestContext())
    assert result.status is WorkflowStatus.FAILURE
    assert result.reason is ErrorReason.CONFIGURATION_ERROR
    assert "no test command" in result.content and "testCommand" in result.content
    assert suite_commands(host) == []


async def test_the_planner_sees_the_goal_the_open_files_and_the_indexs_best(host: RecordingHost) -> None:
    host.matches = [indexed("calc.py", 0.45), indexed("test_calc.py", 0.4)]
    host.plans.append(plan("use * in multiply", ["calc.py"]))
    host.edits.append(writes("calc.py", FIXED))
    host.test_runs.append(green_run())
    await goal_alone(host).run(RequestContext(open_files=["notes.py"]))
    (params,) = host.plan_requests
    assert params.goal == GOAL
    assert "Files open in the editor: notes.py" in params.context_string
    assert "Workspace files most relevant to the goal: calc.py, test_calc.py" in params.context_string


async def test_the_analysis_sees_the_goal_the_edit_and_the_tests_output(host: RecordingHost) -> None:
    host.edits.append(writes("calc.py", WRONG))
    host.test_runs.append(red_run(FAILING))
    host.analyses.append(analysis(Verdict.RETRY))
    await loop(host, max_retries=1).run(RequestContext())
    (params,) = host.analysis_requests
    assert (params.original_goal, params.aider_instructions) == (GOAL, GOAL)
    assert params.aider_diff == "--- calc.py\n"  # the edit's diff (the fake host's)
    assert FAILING in params.test_stdout and params.test_exit_code == "1"


# -- 7: findings ----------------------------------------------------------------------------------
async def test_the_analysis_joins_the_findings_on_the_iterations_files(host: RecordingHost) -> None:
    reports: list[list[Finding]] = []
    host.edits.append(writes("calc.py", WRONG))
    found = Finding(path="calc.py", line=2, message="assert 3 == 4")
    host.test_runs.append(red_run(FAILING).model_copy(update={"findings": (found,)}))
    host.analyses.append(analysis(Verdict.RETRY, "multiply adds"))
    await loop(host, max_retries=1).run(RequestContext(report_findings=reports.append))
    assert reports[0] == [found]  # at once, before the analysis answers
    last = reports[-1]
    assert last[0] == found  # the test's finding stays
    assert [(f.path, f.severity, f.source, f.message) for f in last[1:]] == [
        ("calc.py", Severity.INFORMATION, "analysis", "RETRY: multiply adds")
    ]


# -- 8: progress ----------------------------------------------------------------------------------
async def test_the_progress_names_each_phase_and_the_analysis_beside(host: RecordingHost) -> None:
    host.analysis_delay = 0.5  # the analysis of iteration 1 answers after edit 2's tests
    progress: list[str] = []
    host.edits.extend([writes("calc.py", WRONG), writes("calc.py", WORSE)])
    host.test_runs.extend([red_run(FAILING), red_run(FAILING)])
    host.analyses.extend([analysis(Verdict.RETRY), analysis(Verdict.RETRY)])
    context = RequestContext(
        report_progress=lambda message, pct: progress.append(message.split(" · spent ")[0])
    )
    await loop(host, max_retries=2).run(context)
    assert progress == [
        "Iteration 1/2: Aider is editing",
        "Iteration 1/2: running the whole suite",
        "Iteration 2/2: Aider is editing; analysing iteration 1 beside it",
        "Iteration 2/2: running the whole suite; analysing iteration 1 beside it",
        "Iteration 2/2: waiting for the analysis of iteration 1",
        "Iteration 2/2: analysing the result",
    ]


async def test_a_green_run_ends_with_done_and_what_it_spent(host: RecordingHost) -> None:
    progress: list[str] = []
    host.edits.append(writes("calc.py", FIXED, tokens=1200))
    host.test_runs.append(green_run())
    await loop(host).run(RequestContext(report_progress=lambda message, pct: progress.append(message)))
    assert progress[0] == "Iteration 1/3: Aider is editing"  # nothing spent yet: nothing said
    assert progress[-1].startswith("Done: the goal is reached · spent 1200 tokens")


# -- 9: failing tests first -------------------------------------------------------------------
async def test_failing_tests_first_off_runs_the_whole_suite_each_time(
    host: RecordingHost, narrow_every_suite: None
) -> None:
    host = with_settings(host, failingTestsFirst=False)
    host.edits.extend([writes("calc.py", WRONG), writes("calc.py", FIXED)])
    host.test_runs.extend([red_run(FAILING), green_run()])
    host.analyses.append(analysis(Verdict.RETRY))
    result = await loop(host).run(RequestContext())
    assert result.status is WorkflowStatus.SUCCESS
    assert suite_commands(host) == ["pytest", "pytest"]
    assert "failingTestsFirst is off" in result.iterations[1].test_runs[-1].why


async def test_a_narrowed_run_that_times_out_decides_its_iteration(
    host: RecordingHost, narrow_every_suite: None
) -> None:
    host.edits.extend([writes("calc.py", WRONG), writes("calc.py", WORSE)])
    host.test_runs.extend([red_run(FAILING), timed_out()])
    host.analyses.extend([analysis(Verdict.RETRY), analysis(Verdict.RETRY)])
    result = await loop(host, max_retries=2).run(RequestContext())
    assert suite_commands(host) == ["pytest", f"pytest {FAILING}"]  # no whole suite after it
    decided = result.iterations[1].test
    assert decided is not None and decided.timed_out
    assert "the tests timed out" in result.content


async def test_a_red_rest_run_decides_even_when_it_left_out_more_tests(
    host: RecordingHost, narrow_every_suite: None
) -> None:
    """A test failed: the whole suite cannot make the iteration green, so it does not run."""
    host.edits.extend([writes("calc.py", WRONG), writes("calc.py", WORSE)])
    host.test_runs.extend(
        [red_run(FAILING), green_run(), rest_run(deselected=2, failing="tests/t.py::test_other")]
    )
    host.analyses.extend([analysis(Verdict.RETRY), analysis(Verdict.RETRY)])
    result = await loop(host, max_retries=2).run(RequestContext())
    assert suite_commands(host) == ["pytest", f"pytest {FAILING}", f"pytest --deselect {FAILING}"]
    decided = result.iterations[1].test
    assert decided is not None and decided.exit_code == 1
    assert result.reason is ErrorReason.MAX_RETRIES_REACHED


async def test_a_narrowed_run_that_names_no_failing_test_lets_the_whole_suite_decide(
    host: RecordingHost, narrow_every_suite: None
) -> None:
    """The edit renamed the failing test: the narrowed run fails without naming one."""
    host.edits.extend([writes("calc.py", WRONG), writes("calc.py", FIXED)])
    not_found = CommandRun(
        command="pytest", exit_code=4, stdout="ERROR: not found: tests/test_calc.py::test_multiply"
    )
    host.test_runs.extend([red_run(FAILING), not_found, green_run()])
    host.analyses.append(analysis(Verdict.RETRY))
    result = await loop(host, max_retries=2).run(RequestContext())
    assert result.status is WorkflowStatus.SUCCESS
    assert suite_commands(host) == ["pytest", f"pytest {FAILING}", "pytest"]


# -- 10: the budget ---------------------------------------------------------------------------------
async def test_an_analysis_the_llm_layer_refused_for_the_budget_is_budget_exceeded(
    host: RecordingHost,
) -> None:
    host.edits.append(writes("calc.py", WRONG))
    host.test_runs.append(red_run(FAILING))
    refused = model_fails("the run's budget is used up", ErrorReason.BUDGET_EXCEEDED)
    host.analyses.append(refused)
    result = await loop(host, max_retries=1).run(RequestContext())
    assert result.reason is ErrorReason.BUDGET_EXCEEDED


async def test_the_runs_budget_holds_for_its_edits_and_is_cleared_after(host: RecordingHost) -> None:
    host = with_settings(host, budget={"maxTokens": 5000, "maxCost": 2.5})
    host.edits.append(writes("calc.py", FIXED))
    host.test_runs.append(green_run())
    await loop(host).run(RequestContext())
    assert host.edit_budgets == [(5000, 2.5)]
    assert host.budget is None


# -- 13: undo -------------------------------------------------------------------------------------
async def test_a_run_that_changed_nothing_leaves_nothing_to_undo(host: RecordingHost) -> None:
    host.edits.append(no_change())
    host.analyses.append(analysis(Verdict.RETRY))
    await loop(host, max_retries=1).run(RequestContext())
    assert host.checkpoints.latest() is None


async def test_a_run_that_changed_a_file_is_one_checkpoint(host: RecordingHost) -> None:
    host.edits.extend([writes("calc.py", WRONG), writes("calc.py", FIXED)])
    host.test_runs.extend([red_run(FAILING), green_run()])
    host.analyses.append(analysis(Verdict.RETRY))
    await loop(host).run(RequestContext())
    checkpoint = host.checkpoints.latest()
    assert checkpoint is not None and checkpoint.paths == ["calc.py"]
    assert len(host.checkpoints.saved()) == 1
