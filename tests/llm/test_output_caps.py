"""Every model call is capped and can be walked away from: the planning model's and Aider's
requests carry the reply's cap (`maxOutputTokens`), and the planning model's stream, so that a
server notices a closed connection (a timeout, a cancel) and stops writing."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from aider_lsp.models import TaskStatus
from aider_lsp_testing.apps import scripted_app
from aider_lsp_testing.llm_server import IS_AIDER, ScriptedLLMServer, aider_whole, any_request, slow, text


async def test_the_planning_models_requests_are_capped_and_streamed(
    workspace: Path, llm_server: ScriptedLLMServer
) -> None:
    llm_server.add_rule(any_request, text("hello"))
    app = scripted_app(workspace, llm_server.base_url)
    app.update_settings(
        app.settings.model_copy(
            update={"max_output_tokens": app.settings.max_output_tokens.model_copy(update={"planning": 321})}
        )
    )
    try:
        result = await app.handler.execute_llm_call("hi")
    finally:
        await app.aclose()
    assert result.status is TaskStatus.COMPLETE and result.content == "hello"
    (request,) = llm_server.chat_requests()
    # `max_tokens`: the field every OpenAI-compatible server reads (llama.cpp's Python server
    # ignores `max_completion_tokens`)
    assert request.get("max_tokens") == 321 and "max_completion_tokens" not in request, request
    assert request.get("stream") is True


@pytest.mark.aider
async def test_aiders_requests_carry_the_cap(workspace: Path, llm_server: ScriptedLLMServer) -> None:
    llm_server.add_rule(IS_AIDER, aider_whole({"pkg/calc.py": "def add(a, b):\n    return b + a\n"}))
    app = scripted_app(workspace, llm_server.base_url)
    try:
        result = await app.handle_task_command(
            "aider:automatic", {"prompt": "swap", "file_context": ["pkg/calc.py"]}
        )
    finally:
        await app.aclose()
    assert result.status is TaskStatus.COMPLETE, result.content
    aider_request: dict[str, Any] = next(r for r in llm_server.chat_requests() if IS_AIDER(r))
    assert aider_request.get("max_tokens") == app.settings.max_output_tokens.aider == 16384


# -- every request counted, what was not reported estimated and labelled ------------------------
async def test_a_stream_without_usage_is_counted_as_an_estimate(
    workspace: Path, llm_server: ScriptedLLMServer
) -> None:
    llm_server.never_stream_usage = True  # many local servers
    llm_server.add_rule(any_request, text("a reply of some length " * 20))
    app = scripted_app(workspace, llm_server.base_url)
    try:
        result = await app.handler.execute_llm_call("hi")
        spent = app.spent()
    finally:
        await app.aclose()
    usage = result.notes["usage"]
    assert usage["requests"] == 1 and usage["input_tokens"] == usage["output_tokens"] == 0
    assert usage["estimated_tokens"] > 100  # the prompt and the reply's bytes, about 4 a token
    assert spent.planning.total_tokens == usage["estimated_tokens"]
    assert "estimated, not reported" in spent.describe()


async def test_requests_that_timed_out_are_counted(workspace: Path, llm_server: ScriptedLLMServer) -> None:
    llm_server.add_rule(any_request, slow(2.0, text("too late")))
    app = scripted_app(workspace, llm_server.base_url)
    app.update_settings(
        app.settings.model_copy(update={"timeouts": app.settings.timeouts.model_copy(update={"llm": 0.5})})
    )
    app.handler.llm.request_retries = 1  # the client retries once: two requests sent
    try:
        result = await app.handler.execute_llm_call("hi")
    finally:
        await app.aclose()
    assert result.status is TaskStatus.FAILED
    usage = result.notes["usage"]
    assert usage["requests"] == len(llm_server.chat_requests()) >= 1, usage  # every one sent
    assert usage["estimated_tokens"] > 0, usage  # never 0 for work sent
    assert app.spent().planning.requests == usage["requests"]
