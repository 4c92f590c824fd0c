"""Concurrency through a real `aider-lsp serve`: commands while an Aider edit runs, two edits at
once on one workspace, commands during the first indexing pass, a burst of requests. Nothing
deadlocks and every answer is right."""

from __future__ import annotations

import json
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
    last_user_contains,
    slow,
)
from aider_lsp_testing.raw_lsp import RawLspClient

ORIGINAL = "def add(a, b):\n    return a + b\n"


def _options(llm: ScriptedLLMServer) -> dict[str, Any]:
    return {
        "baseUrl": llm.base_url,
        "aiderModel": "openai/scripted-coder",
        "aiderServer": {"args": ["--edit-format", "whole"]},
    }


def _edit(client: RawLspClient, prompt: str, files: list[str]) -> int:
    return client.send_request(
        "workspace/executeCommand",
        {"command": "aider-lsp.aider.automatic", "arguments": [{"prompt": prompt, "file_context": files}]},
    )


@pytest.mark.aider
def test_reads_and_context_answer_while_an_edit_runs(tmp_path: Path, workspace: Path) -> None:
    """The model's answer to Aider is held until the reads are answered: a read that waited
    for the edit would never be answered (its cap fails), and the file it reads is the original."""
    let_go = threading.Event()
    with ScriptedLLMServer() as llm:
        llm.add_rule(
            any_request,
            held(let_go, aider_whole({"pkg/calc.py": "def add(a: int, b: int) -> int:\n    return a + b\n"})),
        )
        client = RawLspClient(tmp_path / "stderr.txt")
        try:
            client.initialize(workspace, _options(llm))
            edit = _edit(client, "add types", ["pkg/calc.py"])
            assert llm.wait_for_requests(1, 60)  # Aider is waiting for its model
            context = client.execute("aider-lsp.system.getContext", {"query": "add"}, timeout=60)["result"]
            read = client.execute("aider-lsp.system.readFiles", {"file_paths": ["pkg/calc.py"]}, timeout=60)[
                "result"
            ]
            assert "pkg/calc.py" in json.loads(context["content"])
            assert ORIGINAL in read["content"]  # the edit has not landed yet
            let_go.set()
            result = client.wait_response(edit, 60)["result"]
            assert result["status"] == "COMPLETE", result
            read = client.execute("aider-lsp.system.readFiles", {"file_paths": ["pkg/calc.py"]})["result"]
            assert "a: int" in read["content"]
            assert client.shutdown() == 0
            assert client.garbage == [], "stdout carried something that is not an LSP frame"
        finally:
            let_go.set()
            client.close()


@pytest.mark.aider
def test_two_edits_at_once_on_one_workspace(tmp_path: Path, workspace: Path) -> None:
    """Both are answered, one after the other; both changes land; undo takes back the last."""
    (workspace / "pkg" / "other.py").write_text("X = 1\n")
    with ScriptedLLMServer() as llm:
        llm.add_rule(
            last_user_contains("first"),
            slow(2, aider_whole({"pkg/calc.py": "def add(a, b):\n    return b + a\n"})),
        )
        llm.add_rule(last_user_contains("second"), aider_whole({"pkg/other.py": "X = 2\n"}))
        client = RawLspClient(tmp_path / "stderr.txt")
        try:
            client.initialize(workspace, _options(llm))
            first = _edit(client, "first change", ["pkg/calc.py"])
            second = _edit(client, "second change", ["pkg/other.py"])
            one = client.wait_response(first, 90)["result"]
            two = client.wait_response(second, 90)["result"]
            assert one["status"] == "COMPLETE", one
            assert two["status"] == "COMPLETE", two
            assert "b + a" in (workspace / "pkg" / "calc.py").read_text()
            assert (workspace / "pkg" / "other.py").read_text() == "X = 2\n"
            assert "pkg/other.py" not in one["content"] and "pkg/calc.py" not in two["content"]
            undone = client.execute("aider-lsp.workflow.undo", {})["result"]
            assert undone["status"] == "COMPLETE", undone
            assert (workspace / "pkg" / "other.py").read_text() == "X = 1\n"
            assert "b + a" in (workspace / "pkg" / "calc.py").read_text()
            assert client.shutdown() == 0
            assert client.garbage == [], "stdout carried something that is not an LSP frame"
            assert "Traceback" not in client.stderr_text()
        finally:
            client.close()


def test_commands_during_the_first_indexing_pass(tmp_path: Path) -> None:
    """A command sent right after `initialized` on a big workspace answers (perhaps saying the
    index is still being built) and a later one sees the whole index."""
    root = tmp_path / "big"
    for package in range(30):
        folder = root / f"pkg{package}"
        folder.mkdir(parents=True)
        for module in range(100):
            (folder / f"mod{module}.py").write_text(
                f'"""Module {module} of package {package}."""\n\ndef handler_{package}_{module}(x):\n'
                f"    return x * {module}\n"
            )
    (root / "pkg7" / "needle.py").write_text("def find_the_needle_in_the_haystack():\n    pass\n")
    client = RawLspClient(tmp_path / "stderr.txt")
    try:
        client.initialize(root)
        burst = [
            client.send_request(
                "workspace/executeCommand",
                {"command": "aider-lsp.system.getContext", "arguments": [{"query": "needle haystack"}]},
            )
            for _ in range(5)
        ] + [
            client.send_request(
                "workspace/executeCommand",
                {"command": "aider-lsp.system.readFiles", "arguments": [{"file_paths": ["pkg7/needle.py"]}]},
            )
            for _ in range(5)
        ]
        for msg_id in burst:
            answer = client.wait_response(msg_id, 60)
            assert answer["result"]["status"] == "COMPLETE", answer
        deadline = time.monotonic() + 60
        while True:
            context = client.execute("aider-lsp.system.getContext", {"query": "needle haystack"})["result"]
            if (
                json.loads(context["content"])[:1] == ["pkg7/needle.py"]
                and "in progress" not in context["notes"]["context_summary"]
            ):
                break
            assert time.monotonic() < deadline, context["notes"]["context_summary"]
            time.sleep(0.5)
        assert client.shutdown() == 0
        assert client.garbage == []
        assert "Traceback" not in client.stderr_text()
    finally:
        client.close()


@pytest.mark.aider
def test_cancelling_a_queued_edit_leaves_the_running_one_alone(tmp_path: Path, workspace: Path) -> None:
    """The first edit's answer is held until the queued one's cancel is answered: the second
    is cancelled while queued behind it, never after it ran."""
    (workspace / "pkg" / "other.py").write_text("B = 0\n")
    let_go = threading.Event()
    with ScriptedLLMServer() as llm:
        llm.add_rule(last_user_contains("first"), held(let_go, aider_whole({"pkg/calc.py": "A = 1\n"})))
        llm.add_rule(last_user_contains("second"), aider_whole({"pkg/other.py": "B = 1\n"}))
        client = RawLspClient(tmp_path / "stderr.txt")
        try:
            client.initialize(workspace, _options(llm))
            first = _edit(client, "first", ["pkg/calc.py"])
            assert llm.wait_for_requests(1, 60)
            second = _edit(client, "second", ["pkg/other.py"])
            time.sleep(0.3)  # the second reaches the queue (a cancel sent with it works as well)
            client.notify("$/cancelRequest", {"id": second})
            assert client.wait_response(second, 60)["error"]["code"] == -32800
            let_go.set()
            assert client.wait_response(first, 60)["result"]["status"] == "COMPLETE"
            assert (workspace / "pkg" / "calc.py").read_text() == "A = 1\n"
            assert (workspace / "pkg" / "other.py").read_text() == "B = 0\n"  # never ran
            assert len(llm.chat_requests()) == 1
            assert client.shutdown() == 0
            assert client.garbage == [], "stdout carried something that is not an LSP frame"
        finally:
            let_go.set()
            client.close()
