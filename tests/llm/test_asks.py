"""The loop's typed questions (llm/asks.py): the plan and the analysis over real HTTP to the
scripted LLM server, read back as their models, with a failure's reason and the call's spend."""

from __future__ import annotations

from pathlib import Path

from aider_lsp.app import Application
from aider_lsp.config.settings import Settings
from aider_lsp.llm.asks import answer_of
from aider_lsp.llm.templates import ANALYSIS, PLAN
from aider_lsp.models import (
    AnalysisRequest,
    CombinedAnalysisResult,
    DevelopmentPlan,
    ErrorReason,
    PlanRequest,
    Verdict,
    complete_result,
    failed_result,
)
from aider_lsp_testing.llm_server import IS_ANALYSIS, IS_PLAN, ScriptedLLMServer, json_output, text

REQUEST = AnalysisRequest(
    original_goal="make add() handle strings",
    initial_task_context="(none)",
    aider_instructions="change add",
    aider_status="edited the files",
    aider_diff="--- a/pkg/calc.py\n+++ b/pkg/calc.py\n",
    test_command="pytest -q",
    test_stdout="FAILED test_calc.py::test_add_strings - TypeError",
    test_stderr="",
    test_exit_code="1",
    previous_files=["pkg/calc.py"],
    iteration=1,
    max_retries=3,
)


def test_each_request_names_exactly_its_templates_inputs() -> None:
    """A template's input renamed or added fails here, not as a missing parameter in a run."""
    for request, template in ((PlanRequest, PLAN), (AnalysisRequest, ANALYSIS)):
        assert set(request.model_fields) == {*template.inputs, *template.optional_inputs}


async def test_the_plan_and_the_analysis_come_back_as_their_models(
    workspace: Path, llm_server: ScriptedLLMServer
) -> None:
    app = Application(workspace, Settings(model="openai:planner", base_url=llm_server.base_url))
    llm_server.add_rule(
        IS_PLAN,
        json_output({"instructions": "Concatenate strings in add().", "files": ["pkg/calc.py"]}),
    )
    llm_server.add_rule(
        IS_ANALYSIS,
        json_output({"verdict": "RETRY", "message": "add() still adds", "next_prompt": "use str()"}),
    )
    plan = await app.make_plan(PlanRequest(goal="support strings in add", context_string="calc"))
    assert plan.value == DevelopmentPlan(instructions="Concatenate strings in add().", files=["pkg/calc.py"])
    assert plan.error is None and plan.usage is not None and plan.usage.requests == 1
    analysis = await app.analyse(REQUEST)
    assert isinstance(analysis.value, CombinedAnalysisResult)
    assert analysis.value.verdict is Verdict.RETRY and analysis.value.next_prompt == "use str()"
    await app.aclose()


async def test_an_answer_in_another_form_is_an_output_format_failure(
    workspace: Path, llm_server: ScriptedLLMServer
) -> None:
    app = Application(workspace, Settings(model="openai:planner", base_url=llm_server.base_url))
    app.handler.llm.request_retries = 0
    llm_server.add_rule(IS_PLAN, text("I would change add()."))
    plan = await app.make_plan(PlanRequest(goal="support strings in add", context_string="calc"))
    assert plan.value is None and plan.error is not None
    assert plan.error.reason in {ErrorReason.OUTPUT_FORMAT_FAILURE, ErrorReason.LLM_ERROR}
    await app.aclose()


def test_a_failed_call_keeps_its_reason_and_a_text_answer_is_read_as_json() -> None:
    refused = failed_result(ErrorReason.BUDGET_EXCEEDED, "the run's budget is used up")
    answer = answer_of(refused, DevelopmentPlan)
    assert answer.value is None and answer.error is not None
    assert answer.error.reason is ErrorReason.BUDGET_EXCEEDED
    as_text = answer_of(complete_result('{"verdict": "SUCCESS", "message": "done"}'), CombinedAnalysisResult)
    assert as_text.value == CombinedAnalysisResult(verdict=Verdict.SUCCESS, message="done")
    wrong = answer_of(complete_result('{"verdict": "MAYBE"}'), CombinedAnalysisResult)
    assert wrong.value is None and wrong.error is not None
    assert wrong.error.reason is ErrorReason.OUTPUT_FORMAT_FAILURE and wrong.text == '{"verdict": "MAYBE"}'
