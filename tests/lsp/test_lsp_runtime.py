"""The command runtime as editors meet it: progress under the client's own token or a fresh
one, Neovim's `[]` for `{}`, one report per settings problem, failing test output in content,
and buffers judged unsaved by the editor's own changes."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from lsprotocol import types

from aider_lsp_testing.lsp_session import execute

FAILING = (
    f"{sys.executable} -c \"import sys; print('1 passed'); "
    "print('E assert 1 == 2', file=sys.stderr); sys.exit(1)\""
)


def _kinds(client: Any, token: Any) -> list[str]:
    return [report.kind for report in client.progress_reports.get(token, [])]


async def test_progress_uses_the_clients_work_done_token(lsp: Any, workspace: Path) -> None:
    async with lsp(workspace, init_options={"testCommand": FAILING}) as client:
        client.progress_reports.setdefault("client-token-1", [])  # the client made this token
        result = await client.workspace_execute_command_async(
            types.ExecuteCommandParams(
                command="aider-lsp.system.runTests", arguments=[{}], work_done_token="client-token-1"
            )
        )
        assert result["notes"]["exit_code"] == 1
        kinds = _kinds(client, "client-token-1")
        assert kinds[0] == "begin" and kinds[-1] == "end", kinds
        assert client.progress_reports["client-token-1"][0].title == "Running tests"
        runs = [  # no token of the server's own for this run (the index has its own)
            token
            for token, reports in client.progress_reports.items()
            if reports and getattr(reports[0], "title", None) == "Running tests"
        ]
        assert runs == ["client-token-1"]


async def test_progress_without_a_client_token_gets_a_fresh_one_each_run(lsp: Any, workspace: Path) -> None:
    async with lsp(workspace, init_options={"testCommand": FAILING}) as client:
        for _ in range(2):
            await execute(client, "aider-lsp.system.runTests", {})
        runs = [
            token
            for token, reports in client.progress_reports.items()
            if reports and getattr(reports[0], "title", None) == "Running tests"
        ]
        assert len(runs) == 2
        for token in runs:
            kinds = _kinds(client, token)
            assert kinds[0] == "begin" and kinds[-1] == "end", kinds
            assert client.progress_reports[token][-1].message == "complete"


async def test_failing_test_output_is_in_content(lsp: Any, workspace: Path) -> None:
    async with lsp(workspace, init_options={"testCommand": FAILING}) as client:
        result = await execute(client, "aider-lsp.system.runTests", {})
    assert result["status"] == "COMPLETE"
    assert "exit code 1" in result["content"]
    assert "1 passed" in result["content"] and "E assert 1 == 2" in result["content"]
    assert "E assert 1 == 2" in result["notes"]["stderr"]


async def test_an_empty_array_is_the_empty_argument_object(lsp: Any, workspace: Path) -> None:
    """Neovim's Lua encodes `{}` as `[]`: `arguments: [[]]` and `arguments: []` both mean {}."""
    async with lsp(workspace) as client:
        listed = await execute(client, "aider-lsp.tools.list", [])
        assert listed["status"] == "COMPLETE"
        undo = await execute(client, "aider-lsp.workflow.undo", [])
        assert undo["status"] in ("COMPLETE", "FAILED") and "invalid argument" not in undo["content"]
        bare = await client.workspace_execute_command_async(
            types.ExecuteCommandParams(command="aider-lsp.tools.list", arguments=[])
        )
        assert bare["status"] == "COMPLETE"


def _settings_messages(client: Any, name: str) -> list[str]:
    return [m.message for m in client.messages if name in m.message]


async def test_one_bad_setting_is_reported_once_across_sources(lsp: Any, workspace: Path) -> None:
    """initializationOptions, the configuration pull and didChangeConfiguration carry the same
    bad value: the user sees it once; a different problem is shown again."""
    bad = {"maxRetries": "many"}
    async with lsp(workspace, init_options=bad, configuration=bad) as client:
        await execute(client, "aider-lsp.tools.list", {})  # after the configuration pull
        client.workspace_did_change_configuration(
            types.DidChangeConfigurationParams(settings={"aiderLsp": bad})
        )
        await execute(client, "aider-lsp.tools.list", {})
        assert len(_settings_messages(client, "maxRetries")) == 1, [m.message for m in client.messages]
        other = {"maxRetries": "many", "timeouts": {"llm": -1}}
        client.workspace_did_change_configuration(
            types.DidChangeConfigurationParams(settings={"aiderLsp": other})
        )
        await execute(client, "aider-lsp.tools.list", {})
        assert len(_settings_messages(client, "timeouts.llm")) == 1
        client.workspace_did_change_configuration(
            types.DidChangeConfigurationParams(settings={"aiderLsp": {}})
        )
        await execute(client, "aider-lsp.tools.list", {})
        client.workspace_did_change_configuration(
            types.DidChangeConfigurationParams(settings={"aiderLsp": bad})
        )
        await execute(client, "aider-lsp.tools.list", {})  # fixed, then broken again: shown again
        assert len(_settings_messages(client, "maxRetries")) == 3


def _open(client: Any, path: Path, text: str) -> None:
    client.text_document_did_open(
        types.DidOpenTextDocumentParams(
            types.TextDocumentItem(uri=path.as_uri(), language_id="python", version=1, text=text)
        )
    )


def _refused_as_unsaved(result: dict[str, Any]) -> bool:
    return "unsaved changes" in result["content"]


async def test_a_stale_unmodified_buffer_does_not_block_edits_or_undo(lsp: Any, workspace: Path) -> None:
    """After an edit, an editor that has not reloaded the file (Neovim until :checktime) holds
    the old text unmodified: that is not unsaved work. A buffer changed and not saved is."""
    calc = workspace / "pkg" / "calc.py"
    async with lsp(workspace, env={"AIDER_LSP_AIDER_MODEL": ""}) as client:
        _open(client, calc, calc.read_text())
        await execute(client, "aider-lsp.tools.list", {})  # didOpen handled
        calc.write_text("def add(a, b):\n    return b + a\n")  # the edit changed the file on disk
        edit = await execute(
            client, "aider-lsp.aider.automatic", {"prompt": "x", "file_context": ["pkg/calc.py"]}
        )
        assert not _refused_as_unsaved(edit), edit
        assert edit["notes"]["error"]["reason"] == "configuration_error", edit  # got past the guard
        undo = await execute(client, "aider-lsp.workflow.undo", {})
        assert not _refused_as_unsaved(undo), undo

        client.text_document_did_change(
            types.DidChangeTextDocumentParams(
                text_document=types.VersionedTextDocumentIdentifier(uri=calc.as_uri(), version=2),
                content_changes=[types.TextDocumentContentChangeWholeDocument(text="# mine\n")],
            )
        )
        edit = await execute(
            client, "aider-lsp.aider.automatic", {"prompt": "x", "file_context": ["pkg/calc.py"]}
        )
        assert _refused_as_unsaved(edit), edit

        calc.write_text("# mine\n")  # the editor saved it
        client.text_document_did_save(
            types.DidSaveTextDocumentParams(text_document=types.TextDocumentIdentifier(uri=calc.as_uri()))
        )
        edit = await execute(
            client, "aider-lsp.aider.automatic", {"prompt": "x", "file_context": ["pkg/calc.py"]}
        )
        assert not _refused_as_unsaved(edit), edit


async def test_a_buffer_that_lags_behind_a_reload_does_not_block_the_next_edit(
    lsp: Any, workspace: Path
) -> None:
    """VS Code reloads a file changed on disk with a didChange; when the next edit writes the
    file before the editor reloads again, the buffer holds the previous disk text: not unsaved
    work (a workflow's second iteration was refused for it)."""
    calc = workspace / "pkg" / "calc.py"
    async with lsp(workspace, env={"AIDER_LSP_AIDER_MODEL": ""}) as client:
        _open(client, calc, calc.read_text())
        first_edit = "def add(a, b):\n    return b + a\n"
        calc.write_text(first_edit)  # iteration 1's edit
        client.text_document_did_change(  # the editor reloads it
            types.DidChangeTextDocumentParams(
                text_document=types.VersionedTextDocumentIdentifier(uri=calc.as_uri(), version=2),
                content_changes=[types.TextDocumentContentChangeWholeDocument(text=first_edit)],
            )
        )
        await execute(client, "aider-lsp.tools.list", {})  # didChange handled
        calc.write_text("def add(a, b):\n    return a + b  # fixed\n")  # iteration 2, before the next reload
        edit = await execute(
            client, "aider-lsp.aider.automatic", {"prompt": "x", "file_context": ["pkg/calc.py"]}
        )
        assert not _refused_as_unsaved(edit), edit
        undo = await execute(client, "aider-lsp.workflow.undo", {})
        assert not _refused_as_unsaved(undo), undo

        client.text_document_did_change(  # now the user types: that is unsaved work
            types.DidChangeTextDocumentParams(
                text_document=types.VersionedTextDocumentIdentifier(uri=calc.as_uri(), version=3),
                content_changes=[types.TextDocumentContentChangeWholeDocument(text=first_edit + "# mine\n")],
            )
        )
        edit = await execute(
            client, "aider-lsp.aider.automatic", {"prompt": "x", "file_context": ["pkg/calc.py"]}
        )
        assert _refused_as_unsaved(edit), edit
