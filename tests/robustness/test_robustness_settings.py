"""Robustness of settings as a user meets them: bad values name the setting, never crash or
silently discard the good ones, and changes made mid-session reach the next call."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from lsprotocol import types

from aider_lsp.config.settings import SettingsError, load_settings
from aider_lsp_testing.llm_server import ScriptedLLMServer, json_output, offers_tool
from aider_lsp_testing.lsp_session import execute


@pytest.mark.parametrize(
    ("explicit", "environ", "named"),
    [
        pytest.param({"maxFileBytes": 10**30}, {}, "aiderLsp.maxFileBytes", id="huge-int"),
        pytest.param({"outputCapBytes": 10**30}, {}, "aiderLsp.outputCapBytes", id="huge-cap"),
        pytest.param({"timeouts": {"llm": 1e300}}, {}, "aiderLsp.timeouts.llm", id="huge-timeout"),
        pytest.param({"contextIndexPath": "a\x00b"}, {}, "aiderLsp.contextIndexPath", id="nul-path"),
        pytest.param({"testCommand": "pytest\x00"}, {}, "aiderLsp.testCommand", id="nul-command"),
        pytest.param({"secretPatterns": ["*.key\x00"]}, {}, "aiderLsp.secretPatterns", id="nul-pattern"),
        pytest.param({"aiderServer": {"args": ["\x00"]}}, {}, "aiderLsp.aiderServer.args", id="nul-arg"),
        pytest.param(
            {"aiderServer": {"env": {"MY_VAR": 1}}}, {}, "aiderLsp.aiderServer.env.MY_VAR", id="env-key"
        ),
        pytest.param({}, {"AIDER_LSP_TIMEOUTS": "{bad"}, "AIDER_LSP_TIMEOUTS", id="env-json"),
        pytest.param({}, {"AIDER_LSP_AIDER_SERVER": "[1"}, "AIDER_LSP_AIDER_SERVER", id="env-json-2"),
    ],
)
def test_bad_values_are_refused_by_exact_name(explicit: dict, environ: dict, named: str) -> None:
    """Values that would overflow or break an OS call later are refused here, by their name."""
    with pytest.raises(SettingsError) as caught:
        load_settings(explicit, environ)
    assert named in str(caught.value)


def test_a_settings_error_says_which_explicit_setting_to_drop() -> None:
    with pytest.raises(SettingsError) as caught:
        load_settings({"timeouts": {"llm": -1}, "model": "openai:m"}, {})
    assert caught.value.setting == "timeouts"
    with pytest.raises(SettingsError) as from_env:
        load_settings({}, {"AIDER_LSP_MAX_RETRIES": "many"})
    assert from_env.value.setting is None


RANKING = {
    "context_summary": "ranked",
    "matches": [
        {"id": "pkg/calc.py", "content": "add", "relevance_score": 0.9, "source_path": "pkg/calc.py"}
    ],
}


def _ranker(server: ScriptedLLMServer) -> ScriptedLLMServer:
    server.add_rule(offers_tool("final_result"), json_output(RANKING))
    return server


async def _rerank_model(client: Any, server: ScriptedLLMServer) -> str:
    """Run getContext (which re-ranks through the LLM) and return the model the server saw."""
    before = len(server.chat_requests())
    result = await execute(client, "aider-lsp.system.getContext", {"query": "add numbers"})
    assert result["status"] == "COMPLETE", result
    requests = server.chat_requests()
    assert len(requests) > before, f"no LLM call: {result['notes']['context_summary']}"
    return requests[-1]["model"]


async def _settle(client: Any) -> None:
    """A notification has no answer: a round trip after it means it has been handled."""
    await execute(client, "aider-lsp.tools.list", {})


def _messages(client: Any) -> list[str]:
    return [message.message for message in client.messages]


async def test_one_bad_setting_does_not_discard_the_others(lsp: Any, workspace: Path) -> None:
    """A typo in one setting must not cost the user their model: only the bad one is ignored."""
    with ScriptedLLMServer() as llm:
        _ranker(llm)
        options = {
            "model": "openai:ranker",
            "baseUrl": llm.base_url,
            "contextRerank": True,
            "maxRetries": 0,
            "timeouts": {"llm": -1},
            "maxFileBytes": 10**30,
        }
        async with lsp(workspace, init_options=options) as client:
            assert await _rerank_model(client, llm) == "ranker"
            read = await execute(client, "aider-lsp.system.readFiles", {"file_paths": ["pkg/calc.py"]})
            assert read["status"] == "COMPLETE", read  # maxFileBytes fell back to its default
            shown = [m for m in _messages(client) if "aider-lsp:" in m]
            assert any("timeouts.llm" in m and "maxFileBytes" in m for m in shown), shown


async def test_changes_mid_session_reach_the_next_call(lsp: Any, workspace: Path) -> None:
    """model, baseUrl and secretPatterns changed while running are used by the next command;
    a bad change is reported and leaves the server on the last good values."""
    with ScriptedLLMServer() as first, ScriptedLLMServer() as second:
        _ranker(first)
        _ranker(second)
        options = {
            "model": "openai:ranker",
            "baseUrl": first.base_url,
            "contextRerank": True,
            "maxRetries": 0,
        }
        async with lsp(workspace, init_options=options) as client:
            assert await _rerank_model(client, first) == "ranker"

            def change(section: dict[str, Any]) -> None:
                client.workspace_did_change_configuration(
                    types.DidChangeConfigurationParams(settings={"aiderLsp": section})
                )

            change({"model": "openai:other", "baseUrl": second.base_url})
            await _settle(client)
            assert await _rerank_model(client, second) == "other"

            # a bad value: reported by name, the model and URL stay what they were
            change({"model": 5, "baseUrl": second.base_url, "timeouts": None, "budget": {"maxCost": None}})
            await _settle(client)
            assert any("aiderLsp.model" in m for m in _messages(client)), _messages(client)
            assert await _rerank_model(client, second) == "other"

            # secretPatterns: a file readable a moment ago is now refused
            read = await execute(client, "aider-lsp.system.readFiles", {"file_paths": ["README.md"]})
            assert read["notes"]["files_read_count"] == 1
            change({"model": "openai:other", "baseUrl": second.base_url, "secretPatterns": ["*.md"]})
            await _settle(client)
            read = await execute(client, "aider-lsp.system.readFiles", {"file_paths": ["README.md"]})
            assert read["notes"]["files_read_count"] == 0, read
            assert "# demo" not in read["content"]

            # shapes a client may send: no section, a null section, garbage — the server goes on
            for settings in (None, {"aiderLsp": None}, [], "x", {"other": {"model": 1}}):
                client.workspace_did_change_configuration(
                    types.DidChangeConfigurationParams(settings=settings)
                )
            await _settle(client)
            listed = await execute(client, "aider-lsp.tools.list", {})
            assert listed["status"] == "COMPLETE"


async def test_bad_settings_never_crash_a_command(lsp: Any, workspace: Path) -> None:
    """Values that validate but are odd (a bad glob, an unreachable index path) still answer."""
    options = {
        "secretPatterns": ["[", "**/***"],
        "contextExcludes": ["["],
        "contextIndexPath": "/proc/no-such-dir/index.sqlite3",
        "aiderServer": None,
        "timeouts": None,
        "unknownSetting": {"deep": None},
    }
    async with lsp(workspace, init_options=options) as client:
        read = await execute(client, "aider-lsp.system.readFiles", {"file_paths": ["pkg/calc.py"]})
        assert read["status"] == "COMPLETE", read
        context = await execute(client, "aider-lsp.system.getContext", {"query": "add"})
        assert context["status"] in ("COMPLETE", "FAILED"), context
        if context["status"] == "FAILED":
            assert context["notes"]["error"]["message"]
        await asyncio.sleep(0)
        assert json.dumps(context)  # a plain JSON answer
