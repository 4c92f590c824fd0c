"""BaseHandler + LLMInteractionManager over real HTTP to the scripted LLM server."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from aider_lsp.app import Application
from aider_lsp.config.settings import Settings, load_settings
from aider_lsp.llm import BaseHandler
from aider_lsp.llm.model_config import resolve_model_config
from aider_lsp.models import DevelopmentPlan, HistoryConfigSettings, TaskStatus, ToolSpec, complete_result
from aider_lsp.tools.registry import ToolRegistry
from aider_lsp_testing.llm_server import (
    ScriptedLLMServer,
    any_request,
    fault,
    has_tool_result,
    held,
    last_user_contains,
    malformed,
    offers_tool,
    slow,
    system_prompt,
    text,
    tool_call,
    tool_names,
)


def make_app(root: Path, server: ScriptedLLMServer, **settings: Any) -> Application:
    values: dict[str, Any] = {"model": "openai:scripted-model", "base_url": server.base_url}
    values.update(settings)
    app = Application(root, Settings(**values))
    app.handler.llm.request_retries = 1  # keep fault tests fast; the default is 3
    return app


def reason(result: Any) -> str:
    assert result.status is TaskStatus.FAILED, result
    return result.notes["error"]["reason"]


async def test_text_call_sends_system_prompt_and_reports_usage(
    workspace: Path, llm_server: ScriptedLLMServer
) -> None:
    app = make_app(workspace, llm_server)
    llm_server.add_rule(last_user_contains("hello"), text("hi back"))
    result = await app.handler.execute_llm_call("hello", system_prompt_override="YOU ARE A TEST")
    assert result.status is TaskStatus.COMPLETE and result.content == "hi back"
    sent = llm_server.requests[-1]
    assert system_prompt(sent) == "YOU ARE A TEST"
    assert sent["model"] == "scripted-model"
    usage = result.notes["usage"]
    assert usage["input_tokens"] > 0 and usage["output_tokens"] > 0 and usage["requests"] == 1
    await app.handler.execute_llm_call("hello again", system_prompt_override="x")
    totals = app.handler.usage_totals
    assert totals.requests == 2 and totals.calls == 2
    assert totals.input_tokens > usage["input_tokens"]


async def test_data_context_reaches_the_system_prompt(workspace: Path, llm_server: ScriptedLLMServer) -> None:
    app = make_app(workspace, llm_server)
    primed = await app.handler.prime_data_context(initial_files=["pkg/calc.py", ".env", "missing.py"])
    assert primed.status is TaskStatus.COMPLETE
    assert primed.notes["file_paths"] == ["pkg/calc.py"]
    assert set(primed.notes["skipped_files"]) == {".env", "missing.py"}
    llm_server.add_rule(any_request, text("ok"))
    await app.handler.execute_llm_call("what does add do?")
    prompt = system_prompt(llm_server.requests[-1])
    assert '<file path="pkg/calc.py">' in prompt and "return a + b" in prompt
    assert "sk-secret" not in json.dumps(llm_server.requests)

    app.handler.reset()
    await app.handler.execute_llm_call("and now?")
    assert "<file" not in system_prompt(llm_server.requests[-1])


async def test_prime_with_a_query_uses_system_get_context(
    workspace: Path, llm_server: ScriptedLLMServer
) -> None:
    app = make_app(workspace, llm_server)
    seen: list[dict[str, Any]] = []

    async def get_context(params: dict[str, Any]) -> Any:
        seen.append(params)
        return complete_result(
            '["README.md"]', notes={"file_paths": ["README.md"], "context_summary": "docs"}
        )

    # A handler over its own registry, with a stand-in context tool.
    handler = BaseHandler(
        settings=app.current_settings, tools=ToolRegistry(), files=app.files, shell=app.shell
    )
    assert (await handler.prime_data_context(query="readme")).notes["error"][
        "reason"
    ] == "context_retrieval_failure"
    assert handler.register_tool(
        ToolSpec(name="system:get_context", description="find files", input_schema={"type": "object"}),
        get_context,
    )
    primed = await handler.prime_data_context(query="readme")
    assert primed.notes["file_paths"] == ["README.md"] and seen[0]["query"] == "readme"
    prompt = handler.build_system_prompt()
    assert '<file path="README.md">' in prompt and "# demo" in prompt and "docs" in prompt


async def test_tools_default_override_and_never_shell(workspace: Path, llm_server: ScriptedLLMServer) -> None:
    app = make_app(workspace, llm_server)

    async def noop(params: dict[str, Any]) -> Any:
        return complete_result("x")

    app.handler.register_tool(ToolSpec(name="aider:automatic", description="edit", read_only=False), noop)
    llm_server.add_rule(any_request, text("ok"))

    await app.handler.execute_llm_call("default tools")
    offered = tool_names(llm_server.requests[-1])
    assert "system_read_files" in offered
    assert "system_execute_shell_command" not in offered and "aider_automatic" not in offered

    await app.handler.execute_llm_call("only aider", tools_override=["aider:automatic"])
    assert tool_names(llm_server.requests[-1]) == ["aider_automatic"]

    await app.handler.execute_llm_call("no tools", tools_override=[])
    assert tool_names(llm_server.requests[-1]) == []

    count = len(llm_server.requests)
    refused = await app.handler.execute_llm_call("shell", tools_override=["system:execute_shell_command"])
    assert reason(refused) == "input_validation_failure" and "never offered" in refused.content
    assert len(llm_server.requests) == count


async def test_model_tool_call_runs_the_real_tool(workspace: Path, llm_server: ScriptedLLMServer) -> None:
    app = make_app(workspace, llm_server)
    llm_server.add_rule(has_tool_result("system_read_files"), text("the file adds numbers"))
    llm_server.add_rule(
        offers_tool("system_read_files"),
        tool_call("system_read_files", {"file_paths": ["pkg/calc.py", ".env"]}),
    )
    result = await app.handler.execute_llm_call("read calc")
    assert result.content == "the file adds numbers"
    follow_up = llm_server.requests[-1]
    tool_message = [m for m in follow_up["messages"] if m["role"] == "tool"][-1]
    assert "return a + b" in tool_message["content"]
    assert "sk-secret" not in json.dumps(llm_server.requests)
    assert result.notes["usage"]["requests"] == 2


async def test_output_type_and_model_override_reach_the_server(
    workspace: Path, llm_server: ScriptedLLMServer
) -> None:
    app = make_app(workspace, llm_server)
    llm_server.add_rule(
        offers_tool("final_result"),
        lambda req: tool_call("final_result", {"instructions": "go", "files": ["a.py"]}),
    )
    result = await app.handler.execute_llm_call(
        "plan", output_type_override=DevelopmentPlan, model_override="openai:other-model"
    )
    assert isinstance(result.parsed_content, DevelopmentPlan)
    assert result.parsed_content.files == ["a.py"]
    sent = llm_server.requests[-1]
    assert sent["model"] == "other-model"
    final = next(t for t in sent["tools"] if t["function"]["name"] == "final_result")
    assert "instructions" in final["function"]["parameters"]["properties"]


async def test_history_config_is_honoured(workspace: Path, llm_server: ScriptedLLMServer) -> None:
    app = make_app(workspace, llm_server)
    llm_server.add_rule(any_request, text("noted"))
    h = app.handler
    await h.execute_llm_call("first message")
    await h.execute_llm_call("second message")
    users = [m["content"] for m in llm_server.requests[-1]["messages"] if m["role"] == "user"]
    assert users == ["first message", "second message"]

    await h.execute_llm_call("third", history_config=HistoryConfigSettings(history_turns_to_include=1))
    users = [m["content"] for m in llm_server.requests[-1]["messages"] if m["role"] == "user"]
    assert users == ["second message", "third"]

    await h.execute_llm_call(
        "private",
        history_config=HistoryConfigSettings(use_session_history=False, record_in_session_history=False),
    )
    assert [m["role"] for m in llm_server.requests[-1]["messages"]] == ["system", "user"]
    await h.execute_llm_call("fourth")
    assert "private" not in json.dumps(llm_server.requests[-1]["messages"])

    h.reset_conversation()
    await h.execute_llm_call("fresh")
    assert [m["content"] for m in llm_server.requests[-1]["messages"] if m["role"] == "user"] == ["fresh"]


async def test_rate_limit_then_success_is_retried(workspace: Path, llm_server: ScriptedLLMServer) -> None:
    app = make_app(workspace, llm_server)
    llm_server.add_rule(any_request, fault(429, retry_after=0.01), times=1)
    llm_server.add_rule(any_request, text("after the rate limit"))
    result = await app.handler.execute_llm_call("go")
    assert result.content == "after the rate limit"
    assert len(llm_server.requests) == 2


async def test_server_errors_end_as_llm_error_with_provider_message(
    workspace: Path, llm_server: ScriptedLLMServer
) -> None:
    app = make_app(workspace, llm_server)
    llm_server.add_rule(
        any_request,
        fault(
            503,
            {"error": {"message": "backend overloaded, try later", "type": "server_error"}},
            retry_after=0.01,
        ),
    )
    result = await app.handler.execute_llm_call("go")
    assert reason(result) == "llm_error"
    assert "backend overloaded, try later" in result.content and "503" in result.content
    assert len(llm_server.requests) == 2  # one attempt + request_retries=1
    assert "usage" in result.notes


async def test_timeout_and_malformed_body_are_llm_errors(
    workspace: Path, llm_server: ScriptedLLMServer
) -> None:
    app = make_app(workspace, llm_server, timeouts={"llm": 0.3})
    app.handler.llm.request_retries = 0
    llm_server.add_rule(last_user_contains("slow"), slow(1.5, text("too late")))
    llm_server.add_rule(last_user_contains("broken"), malformed())
    assert reason(await app.handler.execute_llm_call("slow")) == "llm_error"
    assert reason(await app.handler.execute_llm_call("broken")) == "llm_error"


async def test_missing_model_or_key_is_a_configuration_error(
    workspace: Path, llm_server: ScriptedLLMServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    monkeypatch.delenv("AIDER_LSP_MODEL", raising=False)
    app = Application(workspace, load_settings({}, environ={}))
    result = await app.handler.execute_llm_call("hi")
    assert reason(result) == "configuration_error"
    assert "aiderLsp.model" in result.content  # named as the editor's user sets it
    from_environment = Application(workspace, load_settings(environ={}))  # the CLI's, an ACP agent's
    said = await from_environment.handler.execute_llm_call("hi")
    assert "AIDER_LSP_MODEL" in said.content and "aiderLsp" not in said.content

    app = Application(workspace, load_settings({"model": "anthropic:claude-sonnet-4-5"}, environ={}))
    result = await app.tasks.execute_template(
        "user:generate-plan-from-goal", {"goal": "g", "context_string": "c"}
    )
    assert reason(result) == "configuration_error" and "ANTHROPIC_API_KEY" in result.content
    assert llm_server.requests == []

    env_settings = load_settings({}, environ={"AIDER_LSP_MODEL": "openai:gpt-4.1"})
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    assert resolve_model_config(env_settings).problem is None
    assert resolve_model_config(env_settings).api_key_source == "OPENAI_API_KEY"


def test_model_config_with_base_url_uses_chat_completions(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    config = resolve_model_config(Settings(model="anthropic:claude-x", base_url="http://127.0.0.1:9/v1"))
    assert config.problem is None and config.model_name == "claude-x"
    assert config.describe()["transport"] == "chat-completions"
    assert config.api_key_source.startswith("placeholder")
    assert resolve_model_config(Settings(model="ollama:qwen2.5-coder")).base_url.endswith("/v1")


async def test_execute_file_path_command_keeps_existing_confined_files(
    workspace: Path, llm_server: ScriptedLLMServer
) -> None:
    """What a command such as `git diff --name-only` prints, kept only where a model may see it:
    existing workspace files, once each; an outside, missing or secret path or a folder is
    dropped with why."""
    (workspace.parent / "outside.py").write_text("x = 1\n")
    app = make_app(workspace, llm_server, test_shell=True)
    printed = ["pkg/calc.py", "nope.py", "/etc/passwd", "../outside.py", ".env", "pkg", "README.md"]
    printed.append(str(workspace / "pkg" / "calc.py"))  # absolute, inside: the same file again
    result = await app.handler.execute_file_path_command("printf '%s\\n' " + " ".join(printed))
    assert result.ok and json.loads(result.content) == ["pkg/calc.py", "README.md"]
    assert result.notes["absolute_paths"] == [str(workspace / "pkg/calc.py"), str(workspace / "README.md")]
    assert result.notes["skipped"] == ["nope.py", "/etc/passwd", "../outside.py", ".env", "pkg"]
    why = {r["path"]: r["reason"] for r in result.notes["skipped_reasons"]}
    assert "outside the workspace" in why["../outside.py"] and "secret" in why[".env"]

    failing = await app.handler.execute_file_path_command("ls no-such-folder")
    assert reason(failing) == "tool_execution_error" and "no-such-folder" in failing.content
    assert reason(await app.handler.execute_file_path_command("  ")) == "input_validation_failure"


async def test_debug_mode_shows_the_llm_layers_details_in_the_log(
    workspace: Path, llm_server: ScriptedLLMServer, caplog: pytest.LogCaptureFixture
) -> None:
    """The `debug` setting, or set_debug_mode (`aider-lsp run --debug`) over it, shows the
    prompts a call sends at INFO (the editor's log); without it they stay at DEBUG."""
    app = make_app(workspace, llm_server)
    llm_server.add_rule(any_request, text("ok"))
    caplog.set_level("INFO", logger="aider_lsp")

    def shown() -> list[str]:
        lines = [r.getMessage() for r in caplog.records if r.levelname == "INFO"]
        return [line for line in lines if "[DEBUG]" in line]

    await app.handler.execute_llm_call("quiet", system_prompt_override="the quiet prompt")
    assert shown() == []
    app.set_debug_mode(True)
    await app.handler.execute_llm_call("loud", system_prompt_override="the loud prompt")
    assert "[DEBUG] debug mode on" in shown()
    assert any("the loud prompt" in line for line in shown())
    caplog.clear()
    app.handler.set_debug_mode(None)  # back to the setting (off)
    await app.handler.execute_llm_call("quiet", system_prompt_override="the quiet prompt")
    assert shown() == ["[DEBUG] debug mode off"]
    app.update_settings(Settings(model="openai:scripted-model", base_url=llm_server.base_url, debug=True))
    app.handler.log_debug("from %s", "the setting")
    assert "[DEBUG] from the setting" in shown()


async def test_agent_and_pydantic_ai_are_lazy(workspace: Path, llm_server: ScriptedLLMServer) -> None:
    app = make_app(workspace, llm_server)
    assert app.handler.llm._agent is None
    llm_server.add_rule(any_request, text("x"))
    assert (await app.handler.execute_llm_call("x")).content == "x"
    assert app.handler.llm._agent is not None


async def test_ollama_models_and_api_key_reach_an_openai_compatible_server(
    workspace: Path, llm_server: ScriptedLLMServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    llm_server.add_rule(any_request, text("ok"))
    monkeypatch.setenv("OLLAMA_BASE_URL", llm_server.base_url)
    app = Application(workspace, Settings(model="ollama:qwen2.5-coder"))
    assert (await app.handler.execute_llm_call("hi")).content == "ok"
    assert llm_server.requests[-1]["model"] == "qwen2.5-coder"

    app = Application(
        workspace, Settings(model="openai:m", base_url=llm_server.base_url, api_key="sk-from-settings")
    )
    await app.handler.execute_llm_call("hi")
    assert llm_server.request_headers[-1]["authorization"] == "Bearer sk-from-settings"
    assert app.handler.get_provider_identifier() == f"openai-compatible:m@{llm_server.base_url}"
    assert llm_server.requests[-1]["model"] == "m"  # the provider named is the one answering


async def test_settings_change_switches_the_model(workspace: Path, llm_server: ScriptedLLMServer) -> None:
    app = make_app(workspace, llm_server)
    llm_server.add_rule(any_request, text("ok"))
    await app.handler.execute_llm_call("one")
    app.update_settings(Settings(model="openai:second", base_url=llm_server.base_url))
    await app.handler.execute_llm_call("two")
    assert [r["model"] for r in llm_server.requests] == ["scripted-model", "second"]


async def test_budget_caps_the_calls_of_a_run(workspace: Path, llm_server: ScriptedLLMServer) -> None:
    app = make_app(workspace, llm_server)
    llm_server.add_rule(any_request, text("a fairly long answer " * 10))
    app.set_budget(max_tokens=100, max_cost=None)
    first = await app.handler.execute_llm_call("one", system_prompt_override="s")
    assert first.ok and 50 < first.notes["usage"]["total_tokens"] < 100
    second = await app.handler.execute_llm_call("two", system_prompt_override="s")  # overshoots
    spent = app.spent().all.total_tokens
    assert spent > 100  # the call's own tokens count, though the model library stopped it
    assert reason(second) == "budget_exceeded" and second.notes["budget_exhausted"] is True
    # the user's budget and the run's spend (one message with the workflow's), not the
    # remainder the model library was given as the call's limit
    assert f"the token budget of 100 is used up ({spent} used)" in second.content
    assert "total_tokens_limit" not in second.content
    count = len(llm_server.requests)
    third = await app.handler.execute_llm_call("three", system_prompt_override="s")
    assert reason(third) == "budget_exceeded" and "raise aiderLsp.budget.maxTokens" in third.content
    assert len(llm_server.requests) == count  # refused before calling the model
    app.clear_budget()
    assert (await app.handler.execute_llm_call("four", system_prompt_override="s")).ok


async def test_cancelling_a_call_stops_it_promptly(workspace: Path, llm_server: ScriptedLLMServer) -> None:
    """A cancel ends the call while the model is still answering: the model's answer is held
    until the end of the test, so a call that waited for it would never end (the cap fails)."""
    import asyncio
    import threading

    app = make_app(workspace, llm_server)
    let_go = threading.Event()
    llm_server.add_rule(any_request, held(let_go, text("too late")))
    task = asyncio.create_task(app.handler.execute_llm_call("slow one"))
    try:
        assert await asyncio.to_thread(llm_server.wait_for_requests, 1, 60)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await asyncio.wait_for(task, 60)  # a cap: the answer it must not wait for never comes
    finally:
        let_go.set()
    assert app.handler.llm.history_turns == 0
    assert len(llm_server.chat_requests()) == 1  # cancelled, not retried


async def test_large_tool_answers_are_capped(workspace: Path, llm_server: ScriptedLLMServer) -> None:
    from aider_lsp.llm.interaction import MAX_TOOL_RESULT_CHARS

    (workspace / "big.txt").write_text("HEAD" + "x" * (MAX_TOOL_RESULT_CHARS * 2) + "TAIL")
    app = make_app(workspace, llm_server)
    llm_server.add_rule(has_tool_result(), text("read it"))
    llm_server.add_rule(any_request, tool_call("system_read_files", {"file_paths": ["big.txt"]}))
    assert (await app.handler.execute_llm_call("read big")).content == "read it"
    sent = [m for m in llm_server.requests[-1]["messages"] if m["role"] == "tool"][-1]["content"]
    assert len(sent) < MAX_TOOL_RESULT_CHARS + 200
    assert "HEAD" in sent and "TAIL" in sent and "characters omitted" in sent


async def test_cost_is_reported_when_known_and_capped_by_budget(
    workspace: Path, llm_server: ScriptedLLMServer
) -> None:
    app = make_app(workspace, llm_server, model="openai:gpt-4o")  # a priced model name, served locally
    llm_server.add_rule(any_request, text("ok"))
    first = await app.handler.execute_llm_call("one")
    cost = first.notes["usage"]["cost"]
    assert cost is not None and cost > 0
    assert app.handler.usage_totals.cost == pytest.approx(cost)
    app.set_budget(max_tokens=None, max_cost=cost / 2)
    assert (await app.handler.execute_llm_call("two")).ok  # the budget starts now
    refused = await app.handler.execute_llm_call("three")
    assert reason(refused) == "budget_exceeded" and "aiderLsp.budget.maxCost" in refused.content
