"""Adversarial input to every command of a real `aider-lsp serve`, over a strict raw JSON-RPC
client: each bad input gets a JSON-RPC error or a FAILED TaskResult naming the problem, the
server keeps serving, stdout carries only LSP frames and stderr no traceback."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from aider_lsp.lsp.commands import COMMANDS
from aider_lsp_testing.raw_lsp import RawLspClient

INVALID_PARAMS = -32602


@pytest.fixture
def odd_workspace(tmp_path: Path) -> Path:
    """A workspace whose own path has a space, with percent signs and non-ASCII in file names."""
    root = tmp_path / "my project"
    (root / "pkg").mkdir(parents=True)
    (root / "pkg" / "calc.py").write_text("def add(a, b):\n    return a + b\n")
    (root / "a b%20c.py").write_text("PERCENT = 1\n")
    (root / "ünï.py").write_text("UNICODE = 2\n")
    (root / ".env").write_text("OPENAI_API_KEY=sk-secret-do-not-leak\n")
    return root


@pytest.fixture
def client(tmp_path: Path, odd_workspace: Path) -> Iterator[RawLspClient]:
    raw = RawLspClient(tmp_path / "stderr.txt")
    try:
        raw.initialize(odd_workspace)
        yield raw
        assert raw.shutdown() == 0
        assert raw.garbage == [], "stdout carried something that is not an LSP frame"
        assert "Traceback" not in raw.stderr_text()
    finally:
        raw.close()


def _answer(response: dict[str, Any]) -> str:
    """'error: <message>' or '<STATUS>: <content>' — what the user would see."""
    if "error" in response:
        return f"error {response['error']['code']}: {response['error']['message']}"
    result = response["result"]
    return f"{result['status']}: {result['content']}"


BAD_SHAPES: list[Any] = [1, "x", [1], True]  # `[]` is the empty object (Neovim's Lua sends {} as [])
BAD_FIELDS: dict[str, list[tuple[dict[str, Any], str]]] = {
    "aider-lsp.system.readFiles": [
        ({"file_paths": None}, "file_paths"),
        ({"file_paths": [None]}, "file_paths.0"),
        ({"file_paths": "pkg/calc.py"}, "file_paths"),
    ],
    "aider-lsp.system.getContext": [
        ({"query": None}, "query"),
        ({"query": "add", "max_results": "ten"}, "max_results"),
        ({"query": "add", "max_results": 10**9}, "max_results"),
        ({"query": "add", "target_files": [{"a": 1}]}, "target_files.0"),
    ],
    "aider-lsp.handler.primeContext": [({"initial_files": "a.py"}, "initial_files")],
    "aider-lsp.aider.automatic": [
        ({"prompt": None}, "prompt"),
        ({"prompt": "x", "file_context": 5}, "file_context"),
        ({"prompt": "x", "selection": {"uri": 5}}, "selection.uri"),
        (
            {"prompt": "x", "selection": {"uri": "file:///a.py", "range": {"start": "a"}}},
            "selection.range.start",
        ),
        (
            {
                "prompt": "x",
                "selection": {
                    "uri": "file:///a.py",
                    "range": {"start": {"line": -1, "character": 0}, "end": {"line": 0, "character": 0}},
                },
            },
            "selection.range.start.line",
        ),
    ],
    "aider-lsp.aider.interactive": [({"session_id": 5}, "session_id")],
    "aider-lsp.aider.listModels": [({"substring": 5}, "substring")],
    "aider-lsp.system.runTests": [({"command": 5}, "command")],
}


def test_every_command_refuses_bad_arguments_by_name_and_goes_on(client: RawLspClient) -> None:
    for spec in COMMANDS:
        for shape in BAD_SHAPES:
            answer = _answer(client.execute(spec.id, shape))
            assert answer.startswith(f"error {INVALID_PARAMS}"), (spec.id, shape, answer)
            assert "one object argument" in answer, answer
        empty_object = _answer(client.execute(spec.id, {}))
        if empty_object.startswith(f"error {INVALID_PARAMS}"):  # a required field is missing
            assert _answer(client.execute(spec.id, [])) == empty_object
        answer = _answer(client.execute(spec.id, {"no_such_field": 1}))
        assert answer.startswith(f"error {INVALID_PARAMS}") and "no_such_field" in answer, answer
        for arguments, field in BAD_FIELDS.get(spec.id, []):
            answer = _answer(client.execute(spec.id, arguments))
            assert answer.startswith(f"error {INVALID_PARAMS}"), (spec.id, arguments, answer)
            assert field in answer, (spec.id, arguments, answer)
        # and it still answers a good call
        assert client.execute("aider-lsp.tools.list", {})["result"]["status"] == "COMPLETE"


def test_huge_strings_and_nul_bytes_are_answered(client: RawLspClient) -> None:
    huge = "x" * 1_000_000
    for command, arguments in [
        ("aider-lsp.system.readFiles", {"file_paths": [huge, "x/" * 5000, "pkg/calc.py\x00"]}),
        ("aider-lsp.system.getContext", {"query": huge, "target_files": ["\x00", "../../etc/passwd"]}),
        ("aider-lsp.system.getContext", {"query": "add\x00numbers"}),
        ("aider-lsp.handler.primeContext", {"initial_files": [huge, "\x00"]}),
        ("aider-lsp.system.runTests", {"command": "\x00"}),
        ("aider-lsp.aider.automatic", {"prompt": huge, "file_context": ["\x00"]}),
    ]:
        response = client.execute(command, arguments, timeout=60)
        assert "result" in response, (command, _answer(response))
        result = response["result"]
        if result["status"] == "FAILED":
            assert result["notes"]["error"]["message"], result
        assert "sk-secret" not in result["content"]
    read = client.execute("aider-lsp.system.readFiles", {"file_paths": ["pkg/calc.py\x00"]})["result"]
    assert "NUL" in read["notes"]["skipped_reasons"][0]["reason"]


def test_paths_and_uris_as_editors_send_them(client: RawLspClient, odd_workspace: Path) -> None:
    """Spaces, percent-encoding and non-ASCII in workspace paths and URIs read the right file;
    Windows-style and foreign URIs are refused with a reason, never a crash."""
    readable = {
        "a b%20c.py": "PERCENT",
        (odd_workspace / "a b%20c.py").as_uri(): "PERCENT",  # %2520 in the URI
        "ünï.py": "UNICODE",
        (odd_workspace / "ünï.py").as_uri(): "UNICODE",  # %C3%BC…
        "file://" + str(odd_workspace / "pkg" / "calc.py"): "def add",  # unencoded space
    }
    for path, expected in readable.items():
        result = client.execute("aider-lsp.system.readFiles", {"file_paths": [path]})["result"]
        assert result["notes"]["files_read_count"] == 1, (path, result["notes"])
        assert expected in result["content"], path
    for path in [
        "pkg\\calc.py",
        "C:\\Users\\me\\calc.py",
        "file:///C:/Users/me/calc.py",
        "file:///",
        ".",
        ".env",
    ]:
        result = client.execute("aider-lsp.system.readFiles", {"file_paths": [path]})["result"]
        assert result["status"] == "COMPLETE" and result["notes"]["files_read_count"] == 0, path
        assert result["notes"]["skipped_reasons"][0]["reason"], path
        assert "sk-secret" not in result["content"]


def test_malformed_requests_are_answered_and_notifications_do_not_pop_up(
    client: RawLspClient, odd_workspace: Path
) -> None:
    """pygls drops a request whose params do not decode: the client would wait forever."""
    response = client.request("workspace/executeCommand", None, timeout=60)
    assert response["error"]["code"] == INVALID_PARAMS
    assert "workspace/executeCommand" in response["error"]["message"]
    response = client.request("workspace/executeCommand", {"arguments": []}, timeout=60)
    assert response["error"]["code"] == INVALID_PARAMS
    assert "command" in response["error"]["message"]
    assert client.request("no/such/method", {}, timeout=60)["error"]["code"] == -32601

    # malformed notifications: logged for the user (Output), no "Error in server" pop-up
    client.notify("textDocument/didOpen", {"textDocument": {"uri": 5}})
    client.notify(
        "textDocument/didChange",
        {"textDocument": {"uri": "file:///never/opened.py", "version": 2}, "contentChanges": [{"text": "y"}]},
    )
    client.notify("workspace/didChangeConfiguration", None)
    client.notify("workspace/didChangeWatchedFiles", {"changes": [{"uri": "bogus", "type": 2}]})
    client.notify("textDocument/didSave", {"textDocument": {"uri": "untitled:Untitled-1"}})
    client._send([1, 2, 3])  # type: ignore[arg-type] - not even an object
    assert client.execute("aider-lsp.tools.list", {})["result"]["status"] == "COMPLETE"
    popups = [m for m in client.messages if m.get("method") == "window/showMessage"]
    assert popups == [], popups
    logged = [m["params"]["message"] for m in client.messages if m.get("method") == "window/logMessage"]
    assert any("textDocument/didOpen" in message for message in logged), logged


def test_commands_without_a_workspace_say_so(tmp_path: Path) -> None:
    raw = RawLspClient(tmp_path / "stderr.txt")
    try:
        raw.initialize(None)
        for spec in COMMANDS:
            if spec.id == "aider-lsp.system.getContext":
                arguments: dict[str, Any] = {"query": "x"}
            elif spec.id == "aider-lsp.system.readFiles":
                arguments = {"file_paths": ["a.py"]}
            elif spec.id == "aider-lsp.aider.automatic":
                arguments = {"prompt": "x"}
            elif spec.id == "aider-lsp.workflow.run":
                arguments = {"goal": "x"}
            elif spec.id == "aider-lsp.workflow.steer":
                arguments = {"note": "x"}
            elif "run_id" in spec.params_model.model_fields and spec.id != "aider-lsp.workflow.undo":
                arguments = {"run_id": "x"}  # history.diff and the ready runs' commands
            else:
                arguments = {}
            result = raw.execute(spec.id, arguments)["result"]
            assert result["status"] == "FAILED", spec.id
            assert result["notes"]["error"]["reason"] == "configuration_error", spec.id
            assert "open a folder" in result["content"]
        assert raw.shutdown() == 0
        assert "Traceback" not in raw.stderr_text()
    finally:
        raw.close()


def test_requests_after_shutdown_are_refused_not_dropped(tmp_path: Path, odd_workspace: Path) -> None:
    """A request that arrives after shutdown gets InvalidRequest (pygls would leave it unanswered)."""
    raw = RawLspClient(tmp_path / "stderr.txt")
    try:
        raw.initialize(odd_workspace)
        assert "result" in raw.request("shutdown", None)
        late = raw.execute("aider-lsp.tools.list", {}, timeout=60)
        assert late["error"]["code"] == -32600 and "shutting down" in late["error"]["message"]
        raw.notify("exit", None)
        assert raw.process.wait(60) == 0
    finally:
        raw.close()


def test_exit_without_shutdown_ends_with_code_1(tmp_path: Path, odd_workspace: Path) -> None:
    raw = RawLspClient(tmp_path / "stderr.txt")
    try:
        raw.initialize(odd_workspace)
        raw.notify("exit", None)
        assert raw.process.wait(60) == 1
        assert "Traceback" not in raw.stderr_text()
    finally:
        raw.close()


@pytest.mark.parametrize("name", ["p%20.py", "ün i%20.py", "a b.py"])
def test_unsaved_buffers_with_odd_names_are_never_overwritten(
    tmp_path: Path, odd_workspace: Path, llm_server: Any, name: str
) -> None:
    """pygls keys open documents by an unquoted URI; decoding it again lost `%20` file names,
    so Aider overwrote an open buffer with unsaved changes."""
    from aider_lsp_testing.llm_server import aider_whole, any_request

    target = odd_workspace / name
    target.write_text("X = 1\n")
    llm_server.add_rule(any_request, aider_whole({name: "X = 2\n"}))
    raw = RawLspClient(tmp_path / "stderr.txt")
    try:
        raw.initialize(
            odd_workspace,
            {
                "baseUrl": llm_server.base_url,
                "aiderModel": "openai/scripted-coder",
                "aiderServer": {"args": ["--edit-format", "whole"]},
            },
        )
        raw.notify(
            "textDocument/didOpen",
            {
                "textDocument": {
                    "uri": target.as_uri(),
                    "languageId": "python",
                    "version": 1,
                    "text": "X = 1  # typing\n",
                }
            },
        )
        for arguments in (
            {"prompt": "x", "file_context": [name]},
            {"prompt": "x", "selection": {"uri": target.as_uri(), "text": "X = 1"}},
        ):
            result = raw.execute("aider-lsp.aider.automatic", arguments, timeout=120)["result"]
            assert result["status"] == "FAILED", result
            assert "unsaved changes" in result["content"], result
        assert target.read_text() == "X = 1\n"
        assert llm_server.chat_requests() == []
        assert raw.shutdown() == 0
    finally:
        raw.close()


@pytest.mark.parametrize("kind", ["missing", "a-file"])
def test_a_workspace_folder_that_cannot_be_opened_is_named(tmp_path: Path, kind: str) -> None:
    """Not "open a folder" when the user did: say which folder and why it cannot be used."""
    folder = tmp_path / "gone"
    if kind == "a-file":
        folder.write_text("not a folder")
    raw = RawLspClient(tmp_path / "stderr.txt")
    try:
        raw.initialize(folder)
        result = raw.execute("aider-lsp.system.readFiles", {"file_paths": ["a.py"]})["result"]
        assert result["status"] == "FAILED"
        assert result["notes"]["error"]["reason"] == "configuration_error"
        assert str(folder) in result["content"] and "not a directory" in result["content"], result
        assert raw.shutdown() == 0
    finally:
        raw.close()
