"""End-to-end: `aider-lsp serve` → AiderBridge → bundled Aider MCP server → REAL Aider → scripted LLM."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from lsprotocol import types

from aider_lsp_testing.llm_server import aider_whole, any_request, dribbled, model_is
from aider_lsp_testing.lsp_session import execute, start_command

pytestmark = pytest.mark.aider

ORIGINAL = "def add(a, b):\n    return a + b\n"
EDITED = "def add(a: int, b: int) -> int:\n    return a + b\n"


def options(llm_server: Any) -> dict[str, Any]:
    return {
        "baseUrl": llm_server.base_url,
        "aiderModel": "openai/scripted-coder",
        "aiderServer": {"args": ["--edit-format", "whole"]},
    }


async def test_edit_selection_refuse_unsaved_and_undo_over_lsp(
    lsp: Any, workspace: Path, llm_server: Any
) -> None:
    llm_server.add_rule(any_request, aider_whole({"pkg/calc.py": EDITED}))
    calc = workspace / "pkg" / "calc.py"
    uri = calc.as_uri()
    selection = {
        "uri": uri,
        "range": {"start": {"line": 0, "character": 0}, "end": {"line": 1, "character": 16}},
        "text": "def add(a, b):\n    return a + b",
    }
    async with lsp(workspace, init_options=options(llm_server)) as client:
        commands = set(client.initialize_result.capabilities.execute_command_provider.commands)
        assert {
            "aider-lsp.aider.automatic",
            "aider-lsp.aider.interactive",
            "aider-lsp.aider.listModels",
            "aider-lsp.workflow.undo",
        } <= commands

        # an open buffer with unsaved changes is never overwritten
        client.text_document_did_open(
            types.DidOpenTextDocumentParams(
                types.TextDocumentItem(uri=uri, language_id="python", version=1, text=ORIGINAL + "# typing\n")
            )
        )
        refused = await execute(
            client, "aider-lsp.aider.automatic", {"prompt": "add type hints", "selection": selection}
        )
        assert refused["status"] == "FAILED"
        assert "unsaved changes" in refused["content"]
        assert calc.read_text() == ORIGINAL
        assert llm_server.chat_requests() == []

        client.text_document_did_close(
            types.DidCloseTextDocumentParams(types.TextDocumentIdentifier(uri=uri))
        )
        edited = await execute(
            client, "aider-lsp.aider.automatic", {"prompt": "add type hints", "selection": selection}
        )
        assert edited["status"] == "COMPLETE", edited["content"]
        assert calc.read_text() == EDITED
        assert "+def add(a: int, b: int) -> int:" in edited["content"]
        # the selection reached Aider's prompt
        assert "selected code in pkg/calc.py (lines 1-2)" in str(llm_server.chat_requests()[-1]["messages"])

        undone = await execute(client, "aider-lsp.workflow.undo", {})
        assert undone["status"] == "COMPLETE", undone["content"]
        assert calc.read_text() == ORIGINAL

        models = await execute(client, "aider-lsp.aider.listModels", {"substring": "gpt-4.1-mini"})
        assert "openai/gpt-4.1-mini" in models["parsedContent"]


def _reported(client: Any) -> list[str]:
    return [
        report.message
        for reports in client.progress_reports.values()
        for report in reports
        if report.kind == "report" and report.message
    ]


@pytest.mark.parametrize("command", ["aider-lsp.aider.automatic", "aider-lsp.aider.interactive"])
async def test_the_edit_progress_shows_aiders_reply_as_it_is_written(
    lsp: Any, workspace: Path, llm_server: Any, command: str
) -> None:
    # the model writes slowly: VS Code's notification shows the reply's latest line meanwhile,
    # for an edit and for a turn of a kept chat alike
    preface = "First I read add.\nThen I add the type hints to its arguments."
    answer = aider_whole({"pkg/calc.py": EDITED}, preface=preface)
    llm_server.add_rule(any_request, dribbled(answer, pieces=6, every=0.3))
    async with lsp(workspace, init_options=options(llm_server)) as client:
        argument = {"prompt": "add type hints", "file_context": ["pkg/calc.py"]}
        _, pending = start_command(client, command, argument)
        lines = [line.strip() for line in answer.content.splitlines() if line.strip()]
        while not pending.done() and not any(message in lines for message in _reported(client)):
            await asyncio.sleep(0.02)
        seen_before_the_answer = [message for message in _reported(client) if message in lines]
        result = await pending
    assert result["status"] == "COMPLETE", result["content"]
    assert seen_before_the_answer, _reported(client)
    assert (workspace / "pkg" / "calc.py").read_text() == EDITED


async def test_the_next_edit_uses_the_model_the_user_just_picked(
    lsp: Any, workspace: Path, llm_server: Any
) -> None:
    """Select Model… writes `aiderModel`; the editor says so (didChangeConfiguration, then the
    pull): the very next edit goes to that model, without a restart."""
    calc = workspace / "pkg" / "calc.py"
    llm_server.add_rule(model_is("picked-coder"), aider_whole({"pkg/calc.py": ORIGINAL}))
    llm_server.add_rule(any_request, aider_whole({"pkg/calc.py": EDITED}))
    async with lsp(workspace, init_options=options(llm_server), configuration=options(llm_server)) as client:
        first = await execute(
            client, "aider-lsp.aider.automatic", {"prompt": "hints", "file_context": [str(calc)]}
        )
        assert first["status"] == "COMPLETE", first["content"]
        assert llm_server.chat_requests()[-1]["model"] == "scripted-coder"

        picked = {**options(llm_server), "aiderModel": "openai/picked-coder"}
        client.set_configuration(picked, section="aiderLsp")
        client.workspace_did_change_configuration(
            types.DidChangeConfigurationParams(settings={"aiderLsp": picked})
        )
        second = await execute(
            client, "aider-lsp.aider.automatic", {"prompt": "undo hints", "file_context": [str(calc)]}
        )
        assert second["status"] == "COMPLETE", second["content"]
        assert llm_server.chat_requests()[-1]["model"] == "picked-coder"
        assert calc.read_text() == ORIGINAL
