"""Settings: explicit > AIDER_LSP_* environment > defaults; bad values name the setting."""

from __future__ import annotations

from pathlib import Path

import pytest

from aider_lsp.config.settings import SettingsError, env_var_for, load_settings
from aider_lsp_testing.lsp_session import execute


def test_defaults() -> None:
    settings = load_settings({}, {})
    assert settings.model is None and settings.max_retries == 3 and settings.timeouts.aider > 0


def test_environment_then_explicit_wins() -> None:
    environ = {
        "AIDER_LSP_MODEL": "openai:gpt-4.1",
        "AIDER_LSP_BASE_URL": "http://127.0.0.1:1/v1",
        "AIDER_LSP_MAX_RETRIES": "5",
        "AIDER_LSP_TIMEOUTS": '{"llm": 7}',
        "AIDER_LSP_CONTEXT_EXCLUDES": '["build/"]',
    }
    from_env = load_settings({}, environ)
    assert from_env.model == "openai:gpt-4.1" and from_env.max_retries == 5
    assert from_env.timeouts.llm == 7 and from_env.context_excludes == ["build/"]
    explicit = load_settings({"model": "anthropic:claude-sonnet-4-5", "timeouts": {"aider": 9}}, environ)
    assert explicit.model == "anthropic:claude-sonnet-4-5"
    assert explicit.timeouts.llm == 7 and explicit.timeouts.aider == 9  # merged, not replaced
    assert explicit.base_url == "http://127.0.0.1:1/v1"


def test_camel_case_names_and_variables() -> None:
    settings = load_settings({"aiderModel": "openai/gpt-4.1", "testCommand": "pytest -q"}, {})
    assert settings.aider_model == "openai/gpt-4.1" and settings.test_command == "pytest -q"
    assert env_var_for("base_url") == "AIDER_LSP_BASE_URL"
    assert env_var_for("aider_model") == "AIDER_LSP_AIDER_MODEL"


@pytest.mark.parametrize(
    ("explicit", "environ", "named"),
    [
        ({"maxRetries": "many"}, {}, "maxRetries"),
        ({"timeouts": {"llm": -1}}, {}, "timeouts.llm"),
        ({}, {"AIDER_LSP_TIMEOUTS": "{not json"}, "AIDER_LSP_"),
    ],
)
def test_bad_values_name_the_setting(explicit: dict, environ: dict, named: str) -> None:
    with pytest.raises(SettingsError, match=named.replace(".", r"\.")):
        load_settings(explicit, environ)


async def test_configuration_and_environment_reach_the_server(lsp, workspace: Path) -> None:
    """workspace/configuration (aiderLsp) and AIDER_LSP_* both change what the server refuses."""
    (workspace / "vault.yaml").write_text("token: abc")
    (workspace / "tokens.ini").write_text("token: def")
    async with lsp(
        workspace,
        configuration={"secretPatterns": ["vault.*"]},
        env={"AIDER_LSP_SECRET_PATTERNS": '["tokens.*"]'},
    ) as client:
        result = await execute(
            client, "aider-lsp.system.readFiles", {"file_paths": ["vault.yaml", "pkg/calc.py"]}
        )
        assert result["notes"]["skipped_files"] == ["vault.yaml"]
    async with lsp(workspace, env={"AIDER_LSP_SECRET_PATTERNS": '["tokens.*"]'}) as client:
        result = await execute(client, "aider-lsp.system.readFiles", {"file_paths": ["tokens.ini"]})
        assert result["notes"]["skipped_files"] == ["tokens.ini"]


def test_debug_applies_live(workspace: Path) -> None:
    """`debug` changed in the editor reaches the handler and its LLM calls (it was read once)."""
    from aider_lsp.app import Application
    from aider_lsp.config.settings import Settings

    app = Application(workspace, Settings())
    assert app.handler.debug is False
    app.update_settings(load_settings({"debug": True}, {}))
    assert app.handler.debug is True and app.handler.llm.debug is True
    app.update_settings(load_settings({}, {}))
    assert app.handler.debug is False


async def test_file_and_output_limits_apply_live(workspace: Path) -> None:
    """`maxFileBytes`, `secretPatterns` and `outputCapBytes` changed in the editor reach the
    file reads and the shell at their next use."""
    from aider_lsp.app import Application
    from aider_lsp.config.settings import Settings

    (workspace / "big.txt").write_text("x" * 5000)
    app = Application(workspace, Settings())
    try:
        assert not app.files.read_text("big.txt").truncated and not app.files.is_secret("big.txt")
        app.update_settings(
            load_settings({"maxFileBytes": 1000, "secretPatterns": ["big.*"], "outputCapBytes": 300}, {})
        )
        assert app.files.read_text("big.txt", for_model=False).truncated and app.files.is_secret("big.txt")
        assert app.shell.output_cap == 300
    finally:
        await app.aclose()


def test_nested_variables_and_camel_keys_reach_nested_settings() -> None:
    settings = load_settings({"budget": {"maxTokens": 5}}, {"AIDER_LSP_TIMEOUTS__LLM": "7"})
    assert settings.timeouts.llm == 7 and settings.budget.max_tokens == 5
    assert load_settings({}, {"MODEL": "not-ours", "DEBUG": "1"}).model is None  # only AIDER_LSP_*
