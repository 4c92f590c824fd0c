"""TaskSystem templates over real HTTP to the scripted LLM server."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from aider_lsp.app import Application
from aider_lsp.config.settings import Settings
from aider_lsp.llm import TaskTemplate
from aider_lsp.models import (
    AssociativeMatchResult,
    CombinedAnalysisResult,
    DevelopmentPlan,
    TaskStatus,
    Verdict,
)
from aider_lsp_testing.llm_server import (
    ScriptedLLMServer,
    any_request,
    json_output,
    last_user_message,
    offers_tool,
    system_prompt,
    system_prompt_contains,
    tool_call,
    tool_names,
)

PLAN = "user:generate-plan-from-goal"
ANALYSIS = "user:evaluate-and-retry-analysis"


def make_app(root: Path, server: ScriptedLLMServer) -> Application:
    app = Application(root, Settings(model="openai:planner", base_url=server.base_url))
    app.handler.llm.request_retries = 1
    return app


def analysis_params(**overrides: Any) -> dict[str, Any]:
    params: dict[str, Any] = {
        "original_goal": "make add() handle strings",
        "initial_task_context": "pkg/calc.py holds add()",
        "aider_instructions": "change add",
        "aider_status": "COMPLETE",
        "aider_diff": "--- a/pkg/calc.py\n+++ b/pkg/calc.py\n",
        "test_command": "pytest -q",
        "test_stdout": "FAILED test_calc.py::test_add_strings - TypeError",
        "test_stderr": "Traceback: unsupported operand",
        "test_exit_code": 1,
        "previous_files": ["pkg/calc.py"],
        "iteration": 1,
        "max_retries": 3,
    }
    params.update(overrides)
    return params


async def test_plan_template_returns_a_validated_plan(workspace: Path, llm_server: ScriptedLLMServer) -> None:
    app = make_app(workspace, llm_server)
    llm_server.add_rule(
        system_prompt_contains("development plan"),
        json_output(
            {
                "instructions": "Make add() concatenate strings.",
                "files": ["pkg/calc.py"],
                "test_command": "pytest -q",
            }
        ),
    )
    result = await app.handle_task_command(
        PLAN, {"goal": "support strings in add", "context_string": "calc module"}
    )
    assert result.status is TaskStatus.COMPLETE, result
    plan = result.parsed_content
    assert (
        isinstance(plan, DevelopmentPlan)
        and plan.files == ["pkg/calc.py"]
        and plan.test_command == "pytest -q"
    )
    assert json.loads(result.content)["instructions"].startswith("Make add()")
    assert result.notes["template"] == PLAN and result.notes["usage"]["total_tokens"] > 0
    sent = llm_server.requests[-1]
    user = last_user_message(sent)
    assert "support strings in add" in user and "calc module" in user and "{{" not in user
    assert "final_result" in tool_names(sent)
    assert "system_execute_shell_command" not in tool_names(sent)


async def test_analysis_receives_test_output_and_returns_retry(
    workspace: Path, llm_server: ScriptedLLMServer
) -> None:
    app = make_app(workspace, llm_server)
    llm_server.add_rule(
        offers_tool("final_result"),
        json_output({"verdict": "RETRY", "message": "strings fail", "next_prompt": "use str() when mixed"}),
    )
    result = await app.tasks.execute_template(ANALYSIS, analysis_params())
    analysis = result.parsed_content
    assert isinstance(analysis, CombinedAnalysisResult)
    assert analysis.verdict is Verdict.RETRY and analysis.next_prompt == "use str() when mixed"
    assert analysis.next_files is None
    user = last_user_message(llm_server.requests[-1])
    assert "TypeError" in user and "unsupported operand" in user and "Exit code: 1" in user
    assert "iteration 1 of at most 3" in system_prompt(llm_server.requests[-1])


async def test_analyze_aider_result_judges_an_edit_without_a_test_run(
    workspace: Path, llm_server: ScriptedLLMServer
) -> None:
    # the seed orchestrator's third template: an edit judged from its diff alone (no test run),
    # reachable by id like the others (handle_task_command, aider-lsp.* commands, a model's tool)
    app = make_app(workspace, llm_server)
    llm_server.add_rule(
        system_prompt_contains("judge whether the Aider edit below achieves the goal"),
        json_output({"verdict": "RETRY", "message": "only add changed", "next_prompt": "also change sub"}),
    )
    result = await app.handle_task_command(
        "user:analyze-aider-result",
        {
            "original_goal": "support strings in add and sub",
            "aider_instructions": "change add",
            "aider_status": "COMPLETE",
            "aider_diff": "--- a/pkg/calc.py\n+++ b/pkg/calc.py\n@@ -1 +1 @@\n-x\n+y\n",
            "previous_files": ["pkg/calc.py"],
        },
    )
    analysis = result.parsed_content
    assert result.status is TaskStatus.COMPLETE, result.content
    assert isinstance(analysis, CombinedAnalysisResult) and analysis.verdict is Verdict.RETRY
    assert analysis.next_prompt == "also change sub"
    user = last_user_message(llm_server.requests[-1])
    assert "support strings in add and sub" in user and "+++ b/pkg/calc.py" in user and "pkg/calc.py" in user
    missing = await app.handle_task_command("user:analyze-aider-result", {"original_goal": "g"})
    assert missing.status is TaskStatus.FAILED and "aider_diff" in missing.content


async def test_invalid_output_is_retried_then_output_format_failure(
    workspace: Path, llm_server: ScriptedLLMServer
) -> None:
    app = make_app(workspace, llm_server)
    # RETRY without next_prompt violates CombinedAnalysisResult; then plain broken JSON.
    llm_server.add_rule(any_request, json_output({"verdict": "RETRY", "message": "x"}), times=1)
    llm_server.add_rule(any_request, tool_call("final_result", "{not json"))  # type: ignore[arg-type]
    result = await app.tasks.execute_template(ANALYSIS, analysis_params())
    assert result.status is TaskStatus.FAILED
    assert result.notes["error"]["reason"] == "output_format_failure"
    expected = 1 + app.handler.llm.output_retries
    assert len(llm_server.requests) == expected
    # pydantic-ai told the model what was wrong before trying again
    retry_feedback = json.dumps(llm_server.requests[1]["messages"][-1])
    assert "next_prompt" in retry_feedback
    assert result.notes["usage"]["requests"] == expected


async def test_valid_output_after_one_bad_answer_succeeds(
    workspace: Path, llm_server: ScriptedLLMServer
) -> None:
    app = make_app(workspace, llm_server)
    llm_server.add_rule(any_request, tool_call("final_result", {"files": ["a.py"]}), times=1)
    llm_server.add_rule(any_request, json_output({"instructions": "fixed", "files": ["a.py"]}))
    result = await app.tasks.execute_template(PLAN, {"goal": "g", "context_string": "c"})
    assert result.status is TaskStatus.COMPLETE and result.parsed_content.instructions == "fixed"
    assert len(llm_server.requests) == 2


async def test_missing_parameter_is_input_validation_failure(
    workspace: Path, llm_server: ScriptedLLMServer
) -> None:
    app = make_app(workspace, llm_server)
    params = analysis_params()
    del params["test_stderr"], params["iteration"]
    result = await app.tasks.execute_template(ANALYSIS, params)
    assert result.status is TaskStatus.FAILED
    assert result.notes["error"]["reason"] == "input_validation_failure"
    assert "test_stderr" in result.content and "iteration" in result.content
    unknown = await app.handle_task_command("user:no-such-template", {})
    assert unknown.notes["error"]["reason"] == "template_not_found"
    assert llm_server.requests == []


async def test_values_are_not_expanded_again_and_optional_inputs(
    workspace: Path, llm_server: ScriptedLLMServer
) -> None:
    app = make_app(workspace, llm_server)
    llm_server.add_rule(any_request, json_output({"instructions": "x", "files": []}))
    await app.tasks.execute_template(
        PLAN, {"goal": "literal {{context_string}} here", "context_string": "CTX"}
    )
    user = last_user_message(llm_server.requests[-1])
    assert "literal {{context_string}} here" in user
    assert "Files the user pointed at:\n(none)" in user
    await app.tasks.execute_template(
        PLAN, {"goal": "g", "context_string": "c", "file_context": ["pkg/calc.py"]}
    )
    assert '"pkg/calc.py"' in last_user_message(llm_server.requests[-1])


async def test_template_model_and_tools_overrides_reach_the_server(
    workspace: Path, llm_server: ScriptedLLMServer
) -> None:
    app = make_app(workspace, llm_server)
    llm_server.add_rule(any_request, json_output({"instructions": "x", "files": []}))
    await app.tasks.execute_template(
        PLAN, {"goal": "g", "context_string": "c"}, model_override="openai:big-model", tools_override=[]
    )
    sent = llm_server.requests[-1]
    assert sent["model"] == "big-model"
    assert tool_names(sent) == ["final_result"]
    await app.handle_task_command(PLAN, {"goal": "g", "context_string": "c", "model_override": "small-model"})
    assert llm_server.requests[-1]["model"] == "small-model"


async def test_plan_template_carries_the_data_context(workspace: Path, llm_server: ScriptedLLMServer) -> None:
    app = make_app(workspace, llm_server)
    await app.handler.prime_data_context(initial_files=["pkg/calc.py"])
    llm_server.add_rule(any_request, json_output({"instructions": "x", "files": ["pkg/calc.py"]}))
    await app.tasks.execute_template(PLAN, {"goal": "g", "context_string": "c"})
    prompt = system_prompt(llm_server.requests[-1])
    assert "development plan" in prompt and '<file path="pkg/calc.py">' in prompt


async def test_associative_matching_template(workspace: Path, llm_server: ScriptedLLMServer) -> None:
    app = make_app(workspace, llm_server)
    llm_server.add_rule(
        offers_tool("final_result"),
        json_output(
            {
                "context_summary": "calc",
                "matches": [
                    {
                        "id": "pkg/calc.py",
                        "content": "defines add",
                        "relevance_score": 0.9,
                        "source_path": "pkg/calc.py",
                    }
                ],
            }
        ),
    )
    candidates = [
        {
            "id": "pkg/calc.py",
            "content": "def add",
            "relevance_score": 0.4,
            "content_type": "file_content",
            "source_path": "pkg/calc.py",
        }
    ]
    result = await app.handle_task_command(
        "internal:associative_matching", {"query": "addition", "candidates": candidates, "max_results": 1}
    )
    assert isinstance(result.parsed_content, AssociativeMatchResult)
    assert result.parsed_content.matches[0].relevance_score == 0.9
    sent = llm_server.requests[-1]
    assert tool_names(sent) == ["final_result"]  # no tools for re-ranking
    assert '"source_path": "pkg/calc.py"' in last_user_message(sent)


def test_templates_reject_undeclared_placeholders(workspace: Path, llm_server: ScriptedLLMServer) -> None:
    app = make_app(workspace, llm_server)
    with pytest.raises(ValueError, match="undeclared"):
        app.tasks.register_template(
            TaskTemplate(name="x", description="d", instructions="{{nope}}", prompt="p", inputs=())
        )
    names = {t["name"] for t in app.tasks.list_templates()}
    assert {PLAN, ANALYSIS, "user:analyze-aider-result", "internal:associative_matching"} <= names


@pytest.mark.parametrize("mode", ["native", "prompted"])
async def test_output_modes_for_servers_without_tool_calls(
    workspace: Path, llm_server: ScriptedLLMServer, mode: str
) -> None:
    app = Application(
        workspace, Settings(model="openai:local", base_url=llm_server.base_url, output_mode=mode)
    )
    llm_server.add_rule(any_request, json_output({"instructions": "edit it", "files": ["pkg/calc.py"]}))
    result = await app.tasks.execute_template(PLAN, {"goal": "g", "context_string": "c"})
    assert isinstance(result.parsed_content, DevelopmentPlan), result
    sent = llm_server.requests[-1]
    assert "final_result" not in tool_names(sent)
    if mode == "native":
        assert sent["response_format"]["type"] == "json_schema"
    else:
        assert '"title": "DevelopmentPlan"' in system_prompt(sent)  # the schema is in the prompt
        assert tool_names(sent) == []  # no tools for models without tool calling


async def test_plan_paths_outside_the_workspace_are_sent_back_to_the_model(
    workspace: Path, llm_server: ScriptedLLMServer
) -> None:
    app = make_app(workspace, llm_server)
    llm_server.add_rule(
        any_request, json_output({"instructions": "x", "files": ["../../etc/passwd", ".env"]}), times=1
    )
    llm_server.add_rule(
        any_request, json_output({"instructions": "x", "files": ["pkg/calc.py", "pkg/new.py"]})
    )
    result = await app.tasks.execute_template(PLAN, {"goal": "g", "context_string": "c"})
    assert result.parsed_content.files == ["pkg/calc.py", "pkg/new.py"]
    feedback = json.dumps(llm_server.requests[1]["messages"][-1])
    assert "../../etc/passwd" in feedback and ".env" in feedback and "outside the workspace" in feedback

    llm_server.clear_rules()
    llm_server.add_rule(
        any_request,
        json_output({"verdict": "RETRY", "message": "m", "next_prompt": "p", "next_files": ["/etc/hosts"]}),
    )
    result = await app.tasks.execute_template(ANALYSIS, analysis_params())
    assert result.notes["error"]["reason"] == "output_format_failure"
