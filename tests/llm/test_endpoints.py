"""Endpoint mistakes named for what they are, for both models, with the setting to change, by
the call that meets them (endpoints.py; `doctor`'s side: test_handler_doctor.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from aider_lsp.app import Application
from aider_lsp.config.endpoints import ModelRole, name_problem
from aider_lsp.config.settings import load_settings
from aider_lsp.models import ErrorReason, TaskStatus
from aider_lsp_testing.apps import scripted_app
from aider_lsp_testing.llm_server import IS_AIDER, ScriptedLLMServer, any_request, fault

PLANNING = ModelRole("the planning model", "m", "AIDER_LSP_MODEL", "AIDER_LSP_BASE_URL", "AIDER_LSP_API_KEY")
AIDER = ModelRole("Aider's model", "openai/c", "aiderLsp.aiderModel", "aiderLsp.baseUrl", "aiderLsp.apiKey")


@pytest.mark.parametrize(
    ("text", "reason", "words"),
    [
        (
            "litellm.NotFoundError: OpenAIException - Error code: 404 - {'detail': 'Not Found'}",
            "configuration_error",
            ["404", "/v1", "baseUrl"],
        ),
        (
            "ModelHTTPError: status_code: 404, body: {'error': 'The model `gpt-9` does not exist'}",
            "configuration_error",
            ["does not have", "aiderModel"],
        ),
        (
            "litellm.AuthenticationError: Error code: 401 - Incorrect API key provided",
            "configuration_error",
            ["refused the key", "apiKey"],
        ),
        (
            "The API provider is not able to authenticate you. Check your API key.",
            "configuration_error",
            ["refused the key"],
        ),
        ("litellm.APIConnectionError: Connection error.", "connection_error", ["cannot reach", "baseUrl"]),
        ("This model's maximum context length is 8192 tokens", "llm_error", ["context length", "aiderModel"]),
    ],
)
def test_each_mistake_is_named_with_the_setting_to_change(text: str, reason: str, words: list[str]) -> None:
    problem = name_problem(text, AIDER, "http://127.0.0.1:8080")
    assert problem is not None and problem.reason.value == reason
    assert all(word in problem.message for word in words), problem.message
    assert "Aider's model 'openai/c'" in problem.message


def test_other_failures_are_not_taken_for_endpoint_mistakes() -> None:
    assert name_problem("the model answered 500: overloaded", PLANNING) is None
    assert name_problem("Exceeded maximum output retries (2)", PLANNING) is None


async def test_a_planning_call_refused_by_the_endpoint_names_the_variable(
    tmp_path: Path, llm_server: ScriptedLLMServer
) -> None:
    llm_server.add_rule(any_request, fault(404, {"detail": "Not Found"}))
    settings = load_settings(
        environ={"AIDER_LSP_MODEL": "openai:m", "AIDER_LSP_BASE_URL": llm_server.base_url}
    )
    app = Application(tmp_path, settings)
    try:
        result = await app.handler.execute_llm_call("hi")
    finally:
        await app.aclose()
    assert result.status is TaskStatus.FAILED and result.error is not None
    assert result.error.reason is ErrorReason.CONFIGURATION_ERROR
    assert "answered 404" in result.content and "AIDER_LSP_BASE_URL" in result.content


@pytest.mark.aider
async def test_aiders_endpoint_answering_404_fails_the_edit_by_name_not_as_no_change(
    workspace: Path, llm_server: ScriptedLLMServer
) -> None:
    llm_server.add_rule(IS_AIDER, fault(404, {"detail": "Not Found"}))
    app = scripted_app(workspace, llm_server.base_url)
    try:
        result = await app.handle_task_command(
            "aider:automatic", {"prompt": "x", "file_context": ["pkg/calc.py"]}
        )
    finally:
        await app.aclose()
    assert result.error is not None and result.error.reason is ErrorReason.CONFIGURATION_ERROR
    assert "answered 404" in result.content and "aiderLsp.baseUrl" in result.content
