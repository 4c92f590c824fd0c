"""End-to-end: the workspace index behind a real `aider-lsp serve` (didSave, watched files,
progress, restart), driven by pytest-lsp."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from lsprotocol import types

from aider_lsp_testing.lsp_session import execute
from aider_lsp_testing.waiting import eventually


def _project(root: Path) -> Path:
    (root / "app").mkdir(parents=True)
    (root / "app" / "retry.py").write_text(
        '"""Retry a failing test command with exponential backoff."""\n'
        "def run_with_retries(command):\n    return command\n"
    )
    (root / "app" / "http_client.py").write_text(
        '"""A small HTTP client with connection pooling."""\nclass HttpClient:\n    pass\n'
    )
    (root / "README.md").write_text("# demo\n\nA demo project.\n")
    (root / ".env").write_text("OPENAI_API_KEY=sk-exponential-backoff-secret\n")
    return root


def _index_end_messages(client: Any) -> list[str]:
    messages = []
    for reports in client.progress_reports.values():
        if (
            reports
            and isinstance(reports[0], types.WorkDoneProgressBegin)
            and reports[0].title == "Indexing workspace"
            and isinstance(reports[-1], types.WorkDoneProgressEnd)
        ):
            messages.append(reports[-1].message or "")
    return messages


async def _wait_for_index(client: Any, timeout: float = 15.0) -> str:
    ended = await eventually(lambda: _index_end_messages(client), timeout)
    assert ended, f"no indexing progress end: {client.progress_reports}"
    return _index_end_messages(client)[0]


async def _top(client: Any, query: str) -> list[str]:
    result = await execute(client, "aider-lsp.system.getContext", {"query": query})
    assert result["status"] == "COMPLETE", result
    return result["notes"]["file_paths"]


async def _leads(client: Any, query: str, path: str) -> bool:
    """`path` is the best answer to `query`."""
    return (await _top(client, query))[:1] == [path]


async def _absent(client: Any, query: str, path: str) -> bool:
    return path not in await _top(client, query)


async def test_index_query_save_delete_and_restart(lsp, tmp_path: Path) -> None:
    root = _project(tmp_path / "proj")
    async with lsp(root) as client:
        assert await _wait_for_index(client) == "3 files indexed, 3 read"  # .env is not
        paths = await _top(client, "exponential backoff")
        assert paths[0] == "app/retry.py" and ".env" not in paths

        result = await execute(client, "aider-lsp.system.getContext", {"query": "exponential backoff"})
        assert result["content"].startswith('["app/retry.py"')
        assert "match" in result["notes"]["context_summary"]

        # edit a file in the editor and save it: the ranking follows
        target = root / "app" / "http_client.py"
        uri = target.as_uri()
        new_text = '"""Exponential backoff for HTTP: exponential backoff everywhere."""\n'
        client.text_document_did_open(
            types.DidOpenTextDocumentParams(
                text_document=types.TextDocumentItem(
                    uri=uri, language_id="python", version=1, text=target.read_text()
                )
            )
        )
        target.write_text(new_text)
        client.text_document_did_save(
            types.DidSaveTextDocumentParams(text_document=types.TextDocumentIdentifier(uri=uri))
        )
        assert await eventually(lambda: _leads(client, "exponential backoff", "app/http_client.py"))

        # a file deleted outside the editor (watched-file event): gone from the answers
        (root / "app" / "retry.py").unlink()
        client.workspace_did_change_watched_files(
            types.DidChangeWatchedFilesParams(
                changes=[
                    types.FileEvent(
                        uri=(root / "app" / "retry.py").as_uri(), type=types.FileChangeType.Deleted
                    )
                ]
            )
        )
        assert await eventually(lambda: _absent(client, "retry backoff", "app/retry.py"))

        # the server asked the client to watch every file; a file created outside the editor
        watched = [r for r in client.registrations if r.method == "workspace/didChangeWatchedFiles"]
        assert watched and watched[0].register_options["watchers"][0]["globPattern"] == "**/*"
        (root / "app" / "jitter.py").write_text('"""Random jitter for retry delays."""\n')
        client.workspace_did_change_watched_files(
            types.DidChangeWatchedFilesParams(
                changes=[
                    types.FileEvent(
                        uri=(root / "app" / "jitter.py").as_uri(), type=types.FileChangeType.Created
                    )
                ]
            )
        )
        assert await eventually(lambda: _leads(client, "random jitter", "app/jitter.py"))

        empty = await execute(client, "aider-lsp.system.getContext", {"query": ""})
        assert empty["status"] == "FAILED"
        assert empty["notes"]["error"]["reason"] == "input_validation_failure"

        primed = await execute(
            client,
            "aider-lsp.handler.primeContext",
            {"query": "exponential backoff", "initial_files": ["README.md", ".env"]},
        )
        assert primed["status"] == "COMPLETE", primed
        assert primed["notes"]["file_paths"][:2] == ["README.md", "app/http_client.py"]
        assert ".env" not in primed["notes"]["file_paths"]

    # restart: the index on disk is reused, no file is read again
    async with lsp(root) as client:
        assert await _wait_for_index(client) == "3 files indexed, 0 read"
        assert (await _top(client, "exponential backoff"))[0] == "app/http_client.py"


async def test_rename_in_the_editor_moves_the_file_in_the_index(lsp, tmp_path: Path) -> None:
    root = _project(tmp_path / "proj")
    async with lsp(root) as client:
        await _wait_for_index(client)
        capabilities = client.initialize_result.capabilities
        assert capabilities.workspace.file_operations.did_rename is not None
        old, new = root / "app" / "retry.py", root / "app" / "backoff.py"
        old.rename(new)
        client.workspace_did_rename_files(
            types.RenameFilesParams(files=[types.FileRename(old_uri=old.as_uri(), new_uri=new.as_uri())])
        )
        assert await eventually(lambda: _leads(client, "exponential backoff", "app/backoff.py"))
        paths = await _top(client, "exponential backoff")
        assert paths[0] == "app/backoff.py" and "app/retry.py" not in paths
