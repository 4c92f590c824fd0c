"""The wire as a second editor and a fuzzer meet it: a huge malformed message is answered at
once with a short error, and an editor closing the pipe early leaves no tracebacks."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from aider_lsp_testing.raw_lsp import RawLspClient, server_env


def test_a_huge_malformed_request_is_answered_and_the_next_one_at_once(
    tmp_path: Path, workspace: Path
) -> None:
    client = RawLspClient(tmp_path / "stderr.txt")
    try:
        client.initialize(workspace)
        assert client.execute("aider-lsp.tools.list", {})["result"]["status"] == "COMPLETE"
        bad_diagnostic = {"range": 1, "message": 2}
        params = {
            "textDocument": {"uri": workspace.joinpath("pkg", "calc.py").as_uri()},
            "range": {"start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 0}},
            "context": {"diagnostics": [bad_diagnostic] * 11_000},
        }
        assert len(json.dumps(params)) > 300_000
        bad = client.send_request("textDocument/codeAction", params)
        huge_name = client.send_request("workspace/executeCommand", {"command": "x" * 300_000})
        after = client.execute("aider-lsp.tools.list", {}, timeout=60)  # answered after the errors (a cap)
        assert after["result"]["status"] == "COMPLETE"
        for msg_id in (bad, huge_name):
            error = client.wait_response(msg_id, timeout=60)["error"]
            assert error["code"] == -32602, error
            assert len(error["message"]) < 2_000
        # named from a pruned copy (the first items): decoding all 11 000 bad ones, what would
        # hold up the next request for seconds, never ran
        assert "$.params.context.diagnostics[0]" in client.wait_response(bad)["error"]["message"]
        assert client.shutdown() == 0
        assert "Traceback" not in client.stderr_text()
        assert len(client.stderr_text()) < 100_000  # the messages are not logged whole
    finally:
        client.close()


def _frame(message: dict) -> bytes:
    body = json.dumps(message).encode()
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


def test_an_editor_closing_the_pipe_before_the_shutdown_answer_leaves_no_traceback(
    tmp_path: Path, workspace: Path
) -> None:
    process = subprocess.Popen(
        [sys.executable, "-m", "aider_lsp", "serve"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=server_env(),
    )
    assert process.stdin and process.stdout and process.stderr
    initialize = {
        "processId": None,
        "rootUri": workspace.as_uri(),
        "capabilities": {"window": {"workDoneProgress": True}},
    }
    process.stdin.write(_frame({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": initialize}))
    process.stdin.flush()
    length = int(process.stdout.readline().split(b":")[1])
    while process.stdout.readline() != b"\r\n":
        pass
    process.stdout.read(length)
    for message in (
        {"jsonrpc": "2.0", "method": "initialized", "params": {}},
        {"jsonrpc": "2.0", "id": 2, "method": "shutdown"},
        {"jsonrpc": "2.0", "method": "exit"},
    ):
        process.stdin.write(_frame(message))
    process.stdout.close()  # gone before the answers
    process.stdin.close()
    assert process.wait(30) == 0
    stderr = process.stderr.read().decode(errors="replace")
    assert "Traceback" not in stderr and "BrokenPipeError" not in stderr, stderr
