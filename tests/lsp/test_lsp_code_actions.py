"""Code actions over LSP: "Fix with Aider" on any tool's diagnostic edits the file with real Aider;
the workflow and edit-selection actions point at their commands; nothing runs until one is chosen.
"Edit selection with Aider" is a client-side command: only a client that says it has it gets it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from lsprotocol import types
from pytest_lsp import client_capabilities
from test_aider_lsp import options

from aider_lsp_testing.llm_server import aider_whole, any_request
from aider_lsp_testing.lsp_session import execute

BUGGY = "def add(a, b):\n    return a - b\n"
FIXED = "def add(a, b):\n    return a + b\n"


def ruff_diagnostic() -> types.Diagnostic:
    """Another tool's diagnostic, as the client holds it."""
    return types.Diagnostic(
        range=types.Range(types.Position(1, 4), types.Position(1, 16)),
        message="add() subtracts: expected a + b",
        source="ruff",
        code="X001",
        severity=types.DiagnosticSeverity.Error,
    )


def with_client_commands(*commands: str) -> types.ClientCapabilities:
    """VS Code's capabilities plus the experimental one the aider-lsp extension sends."""
    capabilities = client_capabilities("visual-studio-code")
    capabilities.experimental = {"aiderLsp": {"clientCommands": list(commands)}}
    return capabilities


EXTENSION = with_client_commands("aider-lsp.client.editSelection", "aider-lsp.client.edit")
MALFORMED = client_capabilities("visual-studio-code")
MALFORMED.experimental = {"aiderLsp": {"clientCommands": "aider-lsp.client.editSelection"}}  # not a list


def open_document(client: Any, path: Path) -> str:
    uri = path.as_uri()
    client.text_document_did_open(
        types.DidOpenTextDocumentParams(
            types.TextDocumentItem(uri=uri, language_id="python", version=1, text=path.read_text())
        )
    )
    return uri


def read_code_actions_as_sent(client: Any) -> None:
    """lsprotocol's client-side hook reads any item with a `command` key as a Command, losing a
    CodeAction's kind and diagnostics; a Command's `command` is a string, a CodeAction's is not."""
    converter = client.protocol._converter

    def structure(obj: Any, _: type) -> types.Command | types.CodeAction:
        kind = types.Command if isinstance(obj.get("command"), str) else types.CodeAction
        return converter.structure(obj, kind)  # type: ignore[no-any-return]

    converter.register_structure_hook(types.Command | types.CodeAction, structure)


async def code_actions(
    client: Any,
    uri: str,
    rng: types.Range,
    diagnostics: list[types.Diagnostic],
    only: list[str] | None = None,
) -> list[types.CodeAction] | None:
    read_code_actions_as_sent(client)
    return await client.text_document_code_action_async(  # type: ignore[no-any-return]
        types.CodeActionParams(
            text_document=types.TextDocumentIdentifier(uri=uri),
            range=rng,
            context=types.CodeActionContext(diagnostics=diagnostics, only=only),
        )
    )


async def test_actions_are_declared_and_cheap(lsp: Any, workspace: Path, llm_server: Any) -> None:
    calc = workspace / "pkg" / "calc.py"
    calc.write_text(BUGGY)
    async with lsp(workspace, init_options=options(llm_server), capabilities=EXTENSION) as client:
        provider = client.initialize_result.capabilities.code_action_provider
        assert types.CodeActionKind.QuickFix in provider.code_action_kinds
        uri = open_document(client, calc)
        diagnostic = ruff_diagnostic()
        actions = await code_actions(client, uri, diagnostic.range, [diagnostic])
        by_title = {action.title: action for action in actions or []}
        assert set(by_title) == {
            "Fix with Aider",
            "Edit selection with Aider",
            "Run Aider workflow on this file",
        }

        fix = by_title["Fix with Aider"]
        assert fix.kind == types.CodeActionKind.QuickFix
        assert fix.diagnostics and fix.diagnostics[0].message == diagnostic.message
        assert fix.command.command == "aider-lsp.aider.automatic"
        argument = fix.command.arguments[0]
        assert argument["file_context"] == ["pkg/calc.py"]
        assert "add() subtracts" in argument["prompt"] and "ruff" in argument["prompt"]
        assert "line 2" in argument["prompt"]

        workflow = by_title["Run Aider workflow on this file"]
        assert workflow.command.command == "aider-lsp.workflow.run"
        assert workflow.command.arguments[0]["file_context"] == ["pkg/calc.py"]
        assert "add() subtracts" in workflow.command.arguments[0]["goal"]

        edit = by_title["Edit selection with Aider"]
        assert edit.command.command == "aider-lsp.client.editSelection"
        assert edit.command.arguments[0] == {
            "uri": uri,
            "range": {"start": {"line": 1, "character": 4}, "end": {"line": 1, "character": 16}},
        }

        # an empty range and no diagnostic: only the workflow; `only` filters by kind
        cursor = types.Range(types.Position(0, 0), types.Position(0, 0))
        plain = await code_actions(client, uri, cursor, [])
        assert [action.title for action in plain or []] == ["Run Aider workflow on this file"]
        assert "make the tests pass" in plain[0].command.arguments[0]["goal"].lower()
        assert await code_actions(client, uri, cursor, [], only=[types.CodeActionKind.QuickFix]) is None

        # a file outside the workspace gets none
        outside = workspace.parent / "elsewhere.py"
        outside.write_text("x = 1\n")
        assert await code_actions(client, open_document(client, outside), cursor, []) is None

        # computing actions asked nothing of the model
        assert llm_server.chat_requests() == []
        assert calc.read_text() == BUGGY


@pytest.mark.parametrize(
    "capabilities",
    [
        pytest.param("visual-studio-code", id="no-experimental-capability"),
        pytest.param("neovim", id="neovim"),
        pytest.param(with_client_commands("aider-lsp.client.edit"), id="other-client-commands"),
        pytest.param(with_client_commands(), id="empty-list"),
        pytest.param(MALFORMED, id="malformed"),
    ],
)
async def test_edit_selection_only_for_a_client_that_has_the_command(
    lsp: Any, workspace: Path, capabilities: str | types.ClientCapabilities
) -> None:
    async with lsp(workspace, capabilities=capabilities) as client:
        uri = open_document(client, workspace / "pkg" / "calc.py")
        diagnostic = ruff_diagnostic()
        actions = await code_actions(client, uri, diagnostic.range, [diagnostic])
        assert {action.title for action in actions or []} == {
            "Fix with Aider",
            "Run Aider workflow on this file",
        }
        rewrite = [types.CodeActionKind.RefactorRewrite]
        assert await code_actions(client, uri, diagnostic.range, [], only=rewrite) is None


@pytest.mark.aider
async def test_fix_with_aider_edits_the_file(lsp: Any, workspace: Path, llm_server: Any) -> None:
    calc = workspace / "pkg" / "calc.py"
    calc.write_text(BUGGY)
    llm_server.add_rule(any_request, aider_whole({"pkg/calc.py": FIXED}))
    async with lsp(workspace, init_options=options(llm_server)) as client:
        uri = open_document(client, calc)
        diagnostic = ruff_diagnostic()
        actions = await code_actions(client, uri, diagnostic.range, [diagnostic])
        fix = next(action for action in actions or [] if action.title == "Fix with Aider")
        result = await execute(client, fix.command.command, *fix.command.arguments)
        assert result["status"] == "COMPLETE", result["content"]
        assert calc.read_text() == FIXED
        prompt = str(llm_server.chat_requests()[-1]["messages"])
        assert "add() subtracts: expected a + b" in prompt
        assert "return a - b" in prompt  # the diagnostic's code went with it
