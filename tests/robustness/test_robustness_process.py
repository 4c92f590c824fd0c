"""Process hygiene of `aider-lsp serve`: only LSP frames on stdout whatever libraries print,
a clean exit on shutdown, on a closed stdin and on SIGTERM, no Aider server left behind even
when the language server is killed, and a working --tcp mode."""

from __future__ import annotations

import json
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from aider_lsp_testing.llm_server import (
    ScriptedLLMServer,
    aider_whole,
    any_request,
    held,
    json_output,
    offers_tool,
)
from aider_lsp_testing.raw_lsp import SERVER_COMMAND, RawLspClient, alive, children_of, server_env
from aider_lsp_testing.waiting import wait_until

EDITED = "def add(a: int, b: int) -> int:\n    return a + b\n"


def _options(llm: ScriptedLLMServer, **extra: Any) -> dict[str, Any]:
    return {
        "model": "openai:scripted",
        "baseUrl": llm.base_url,
        "aiderModel": "openai/scripted-coder",
        "aiderServer": {"args": ["--edit-format", "whole"]},
        "maxRetries": 0,
        **extra,
    }


def _wait_gone(pids: set[int], timeout: float) -> set[int]:
    wait_until(lambda: not any(alive(pid) for pid in pids), timeout)
    return {pid for pid in pids if alive(pid)}


def _aider_editing(client: RawLspClient, workspace: Path, llm: ScriptedLLMServer) -> set[int]:
    """Start an edit whose model reply is held; once Aider has asked the model, its processes."""
    client.initialize(workspace, _options(llm))
    client.send_request(
        "workspace/executeCommand",
        {
            "command": "aider-lsp.aider.automatic",
            "arguments": [{"prompt": "add types", "file_context": ["pkg/calc.py"]}],
        },
    )
    assert llm.wait_for_requests(1, 60), client.stderr_text()[-2000:]
    return children_of(client.process.pid)


def test_stdout_is_only_lsp_frames_while_libraries_print(tmp_path: Path, workspace: Path) -> None:
    """Warnings on, a first LLM call (pydantic-ai imported then), a test command that prints on
    stdout and stderr: the client still reads nothing but well-formed frames."""
    (workspace / "noisy.py").write_text(
        "import sys, warnings\nprint('STDOUT-NOISE ' * 50)\nprint('ERR', file=sys.stderr)\n"
        "warnings.warn('loud')\n"
    )
    with ScriptedLLMServer() as llm:
        llm.add_rule(
            offers_tool("final_result"),
            json_output(
                {
                    "context_summary": "s",
                    "matches": [
                        {
                            "id": "pkg/calc.py",
                            "content": "c",
                            "relevance_score": 0.9,
                            "source_path": "pkg/calc.py",
                        }
                    ],
                }
            ),
        )
        client = RawLspClient(tmp_path / "stderr.txt", env={"PYTHONWARNINGS": "always"})
        try:
            client.initialize(
                workspace, _options(llm, contextRerank=True, testCommand=f"{sys.executable} noisy.py")
            )
            context = client.execute("aider-lsp.system.getContext", {"query": "add numbers"}, timeout=60)
            assert context["result"]["status"] == "COMPLETE", context
            assert llm.chat_requests(), "the re-ranking LLM call was not made"
            tests = client.execute("aider-lsp.system.runTests", {}, timeout=60)["result"]
            assert "STDOUT-NOISE" in tests["content"]
            assert client.shutdown() == 0
            assert client.garbage == []
            assert all(message.get("jsonrpc") == "2.0" for message in client.messages)
        finally:
            client.close()


@pytest.mark.aider
@pytest.mark.parametrize("ending", ["shutdown", "stdin-closed", "sigterm"])
def test_the_server_ends_cleanly_mid_edit_and_leaves_no_aider_process(
    tmp_path: Path, workspace: Path, ending: str
) -> None:
    let_go = threading.Event()  # the model's reply comes after the test: a server waiting for it fails
    with ScriptedLLMServer() as llm:
        llm.add_rule(any_request, held(let_go, aider_whole({"pkg/calc.py": EDITED})))
        client = RawLspClient(tmp_path / "stderr.txt")
        try:
            aider = _aider_editing(client, workspace, llm)
            assert aider, "no Aider server was started"
            if ending == "shutdown":  # as a client should: exit once shutdown is answered
                assert "result" in client.request("shutdown", None, timeout=60)
                client.notify("exit", None)
            elif ending == "stdin-closed":  # the editor died
                assert client.process.stdin is not None
                client.process.stdin.close()
            else:
                client.process.send_signal(signal.SIGTERM)
            assert client.process.wait(60) == 0  # a cap
            assert _wait_gone(aider, 60) == set(), "an Aider server outlived the language server"
            assert client.garbage == []
            assert "Traceback" not in client.stderr_text()
        finally:
            let_go.set()
            client.close()


@pytest.mark.aider
def test_a_killed_server_does_not_leave_aider_editing(tmp_path: Path, workspace: Path) -> None:
    """SIGKILL gives the server no chance to clean up: the Aider server notices and exits."""
    let_go = threading.Event()  # the model's reply comes after the test
    with ScriptedLLMServer() as llm:
        llm.add_rule(any_request, held(let_go, aider_whole({"pkg/calc.py": EDITED})))
        client = RawLspClient(tmp_path / "stderr.txt")
        try:
            aider = _aider_editing(client, workspace, llm)
            client.process.kill()
            client.process.wait(60)
            left = _wait_gone(aider, 60)  # a cap: an Aider server left running would wait for ever
            for pid in left:  # do not leak it into the rest of the run
                subprocess.run(["kill", "-9", str(pid)], check=False)
            assert left == set(), "the Aider server kept running after the language server was killed"
            assert "def add(a, b)" in (workspace / "pkg" / "calc.py").read_text()
        finally:
            let_go.set()
            client.close()


def _frame(message: dict[str, Any]) -> bytes:
    body = json.dumps(message).encode()
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


def _read_frame(stream: Any) -> dict[str, Any]:
    length = 0
    while (line := stream.readline()) not in (b"\r\n", b""):
        if line.lower().startswith(b"content-length:"):
            length = int(line.split(b":")[1])
    return json.loads(stream.read(length))


def test_tcp_mode_answers_initialize_and_exits(tmp_path: Path, workspace: Path) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    process = subprocess.Popen(
        [*SERVER_COMMAND, "--tcp", f"127.0.0.1:{port}"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=server_env(),
    )
    try:
        deadline = time.monotonic() + 60  # a cap
        while True:
            try:
                connection = socket.create_connection(("127.0.0.1", port), timeout=20)
                break
            except OSError:
                assert time.monotonic() < deadline and process.poll() is None, "the TCP server did not start"
                time.sleep(0.1)
        with connection:
            stream = connection.makefile("rb")
            connection.sendall(
                _frame(
                    {
                        "jsonrpc": "2.0",
                        "id": 1,
                        "method": "initialize",
                        "params": {"processId": None, "capabilities": {}, "rootUri": workspace.as_uri()},
                    }
                )
            )
            answer = _read_frame(stream)
            assert (
                "aider-lsp.tools.list"
                in answer["result"]["capabilities"]["executeCommandProvider"]["commands"]
            )
            connection.sendall(_frame({"jsonrpc": "2.0", "method": "initialized", "params": {}}))
            connection.sendall(
                _frame(
                    {
                        "jsonrpc": "2.0",
                        "id": 2,
                        "method": "workspace/executeCommand",
                        "params": {"command": "aider-lsp.tools.list", "arguments": [{}]},
                    }
                )
            )
            while (listed := _read_frame(stream)).get("id") != 2:
                pass
            assert listed["result"]["status"] == "COMPLETE"
            connection.sendall(_frame({"jsonrpc": "2.0", "id": 3, "method": "shutdown"}))
            connection.sendall(_frame({"jsonrpc": "2.0", "method": "exit"}))
            process.wait(60)
        stdout, stderr = process.communicate(timeout=60)
        assert stdout == b""
        assert b"Traceback" not in stderr
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()


@pytest.mark.parametrize(
    ("address", "code", "says"),
    [("nonsense", 2, "HOST:PORT"), ("127.0.0.1:99999", 2, "0-65535"), ("BUSY", 1, "cannot listen")],
)
def test_bad_tcp_addresses_are_a_message_not_a_traceback(address: str, code: int, says: str) -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        if address == "BUSY":
            address = f"127.0.0.1:{busy.getsockname()[1]}"
        done = subprocess.run(
            [*SERVER_COMMAND, "--tcp", address], capture_output=True, text=True, timeout=30, env=server_env()
        )
    assert done.returncode == code, done.stderr
    assert says in done.stderr and "Traceback" not in done.stderr
    assert done.stdout == ""
