"""Issue 21's bad days over a real `aider-lsp serve`: odd test output, runaway test processes,
slow models and hostile arguments end with a result that says what happened and what to do,
within their timeouts, and never with a traceback."""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from aider_lsp.lsp.protocol import MAX_MESSAGE_ITEMS
from aider_lsp_testing.llm_server import (
    IS_PLAN,
    ScriptedLLMServer,
    aider_whole,
    any_request,
    held,
    json_output,
    tool_call,
)
from aider_lsp_testing.raw_lsp import RawLspClient, alive
from aider_lsp_testing.waiting import wait_until

# a goal whose words the index finds in no file: the plan comes first (nothing to edit before it)
VAGUE_GOAL = "write some documentation"


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    root.mkdir()
    (root / "calc.py").write_text("def add(a, b):\n    return a + b\n")
    return root


def start(tmp_path: Path, root: Path, options: dict[str, Any] | None = None) -> RawLspClient:
    client = RawLspClient(tmp_path / "stderr.txt", configuration=options or {})
    client.initialize(root, options or {})
    return client


@pytest.fixture
def client(tmp_path: Path, project: Path) -> Iterator[RawLspClient]:
    raw = start(tmp_path, project, {"timeouts": {"test": 2}})
    try:
        yield raw
        assert raw.shutdown() == 0
        assert "Traceback" not in raw.stderr_text()
    finally:
        raw.close()


def run_tests(client: RawLspClient, script: str, project: Path, timeout: float = 30) -> dict[str, Any]:
    (project / "check.py").write_text(script)
    response = client.execute(
        "aider-lsp.system.runTests", {"command": f"{sys.executable} check.py"}, timeout=timeout
    )
    assert "result" in response, response
    return response["result"]


def test_a_test_output_line_too_long_for_a_path_is_read_not_fatal(
    client: RawLspClient, project: Path
) -> None:
    """Minified JS, base64, a long hash: a 300-character token is not probed as a file."""
    script = (
        "import sys\n"
        "print('A' * 300)\n"
        "print('calc.py:1: ' + 'B' * 5000)\n"
        "print('B' * 300 + ':12: error')\n"
        "print('  File \"' + 'C/' * 3000 + '\", line 3')\n"
        "print('FAILED ' + 'D' * 400 + '::test_x - boom')\n"
        "sys.exit(1)\n"
    )
    result = run_tests(client, script, project)
    assert result["status"] == "COMPLETE", result  # the tests ran (and failed): not a server error
    assert result["notes"]["exit_code"] == 1, result["notes"]
    assert result["content"].startswith("the tests fail (exit code 1)"), result["content"][:200]


def test_a_daemonised_grandchild_does_not_keep_the_run_past_its_timeout(
    project: Path, tmp_path: Path
) -> None:
    """The grandchild leaves the process group (setsid) and keeps stdout open, and it and the
    test command would run for longer than the test waits: the run still ends (only
    timeouts.test can end it within the cap; 5 s leaves a busy machine the time to start them),
    says it timed out, names the setting, and ends the grandchild with it."""
    pid_file = tmp_path / "grandchild.pid"
    script = (
        "import os, sys, time\n"
        "child = os.fork()\n"
        "if child == 0:\n"
        "    os.setsid()\n"
        "    time.sleep(600)\n"
        "    os._exit(0)\n"
        f"open({str(pid_file)!r}, 'w').write(str(child))\n"
        "print('started', flush=True)\n"
        "time.sleep(600)\n"
    )
    client = start(tmp_path, project, {"timeouts": {"test": 5}})
    try:
        result = run_tests(client, script, project, timeout=60)  # a cap: the script would sleep 10 min
        assert result["status"] == "FAILED", result
        assert result["notes"]["error"]["reason"] == "execution_timeout", result
        assert "timeouts.test" in result["notes"]["error"]["message"], result
        grandchild = int(pid_file.read_text())
        assert wait_until(lambda: not alive(grandchild)), "the daemonised grandchild outlived the run"
        assert client.shutdown() == 0
        assert "Traceback" not in client.stderr_text()
    finally:
        client.close()
        if pid_file.exists():
            with contextlib.suppress(ProcessLookupError, ValueError):
                os.kill(int(pid_file.read_text()), signal.SIGKILL)


def llm_options(llm: ScriptedLLMServer, **extra: Any) -> dict[str, Any]:
    return {
        "model": "openai:scripted-planner",
        "baseUrl": llm.base_url,
        "apiKey": "test-key",
        "aiderModel": "openai/scripted-coder",
        "testCommand": f"{sys.executable} -c pass",
        **extra,
    }


def test_timeouts_llm_is_a_deadline_for_the_whole_call(tmp_path: Path, project: Path) -> None:
    """A model slower than timeouts.llm (its answer is held until the end of the test): the
    call ends at the deadline, with one request to the model, not one per transport retry."""
    let_go = threading.Event()
    with ScriptedLLMServer() as llm:
        llm.add_rule(IS_PLAN, held(let_go, json_output({"instructions": "x", "files": ["calc.py"]})))
        client = start(tmp_path, project, llm_options(llm, timeouts={"llm": 1.5}))
        try:
            result = client.execute("aider-lsp.workflow.run", {"goal": VAGUE_GOAL}, timeout=60)["result"]
            assert result["status"] == "FAILED", result
            message = result["notes"]["error"]["message"]
            assert "1.5 s" in message and "aiderLsp.timeouts.llm" in message, message
            plans = [request for request in llm.chat_requests() if IS_PLAN(request)]
            assert len(plans) == 1, f"the planning call was sent {len(plans)} times within its deadline"
            assert client.shutdown() == 0
            assert "Traceback" not in client.stderr_text()
        finally:
            let_go.set()
            client.close()


DEEP = "[" * 100_000 + "]" * 100_000  # a JSON string nested deeper than any parser recurses


@pytest.mark.parametrize(
    ("command", "arguments", "field"),
    [
        ("aider-lsp.aider.automatic", {"prompt": "x", "file_context": DEEP}, "file_context"),
        ("aider-lsp.aider.interactive", {"prompt": "x", "file_context": DEEP}, "file_context"),
        ("aider-lsp.workflow.run", {"goal": "x", "file_context": DEEP}, "file_context"),
        ("aider-lsp.system.readFiles", {"file_paths": DEEP}, "file_paths"),
        ("aider-lsp.system.getContext", {"query": "x", "target_files": DEEP}, "target_files"),
    ],
)
def test_a_deeply_nested_json_string_is_invalid_params(
    client: RawLspClient, command: str, arguments: dict[str, Any], field: str
) -> None:
    response = client.execute(command, arguments, timeout=30)
    assert "error" in response, response
    assert response["error"]["code"] == -32602, response
    message = response["error"]["message"]
    assert field in message and "nested too deeply" in message, message


def _still_answers(client: RawLspClient) -> None:
    """A request sent after the message is answered (the cap is a safety net: how soon is not
    asserted; that the message was never decoded is, by the log line that says so)."""
    answer = client.execute("aider-lsp.tools.list", {}, timeout=60)
    assert answer.get("result", {}).get("status") == "COMPLETE", (answer, client.stderr_text()[-3000:])


def _not_decoded(client: RawLspClient, method: str) -> None:
    """The server's log says `method`'s message was handled without being decoded: counted
    (milliseconds), then refused unread or handled as a whole; decoding it, the part that takes
    seconds and would hold up every request behind it, never started."""
    _still_answers(client)  # the log line is written before the next message is read
    log = client.stderr_text()
    assert (
        f"{method}: more than {MAX_MESSAGE_ITEMS} items; handled as a whole" in log
        or f"invalid params for {method}: more than {MAX_MESSAGE_ITEMS} items in one message; refused unread"
        in log
    ), log[-3000:]


HUGE = 300_000


@pytest.mark.parametrize(
    ("method", "params"),
    [
        (
            "workspace/didChangeWatchedFiles",
            {"changes": [{"uri": "file:///x.py", "type": 2}] * HUGE + [{"uri": 5}]},
        ),
        (
            "textDocument/didChange",
            {"textDocument": {"uri": "file:///x.py", "version": 1}, "contentChanges": [{"text": 1}] * HUGE},
        ),
        (
            "workspace/didChangeWorkspaceFolders",
            {"event": {"added": [{"uri": 1, "name": 2}] * HUGE, "removed": []}},
        ),
        ("workspace/didChangeConfiguration", {"settings": {"aiderLsp": {"contextExcludes": [1] * HUGE}}}),
        ("$/cancelRequest", {"id": [1] * HUGE}),
        ("workspace/didChangeWatchedFiles", {"changes": [[]] * HUGE}),
    ],
    ids=["watched", "didChange", "folders", "configuration", "cancel", "nested-lists"],
)
def test_a_huge_malformed_notification_does_not_stall_the_server(
    client: RawLspClient, method: str, params: Any
) -> None:
    client.notify(method, params)
    _not_decoded(client, method)


def test_a_huge_request_is_refused_at_once_and_named(client: RawLspClient) -> None:
    """Refused unread: its items are counted, never decoded one by one (nor the files read)."""
    response = client.execute("aider-lsp.system.readFiles", {"file_paths": ["calc.py"] * HUGE}, timeout=60)
    assert response["error"]["code"] == -32602, response
    message = response["error"]["message"]
    assert f"more than {MAX_MESSAGE_ITEMS} items in one message; refused unread" in message, message
    _still_answers(client)


def test_a_message_nested_too_deeply_to_parse_is_one_log_line(client: RawLspClient) -> None:
    body = (
        '{"jsonrpc":"2.0","method":"workspace/didChangeWatchedFiles","params":'
        + "[" * 100_000
        + "]" * 100_000
        + "}"
    ).encode()
    assert client.process.stdin is not None
    client.process.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
    client.process.stdin.flush()
    _still_answers(client)
    ignored = client.stderr_text().count("ignored a malformed message from the client")
    assert ignored == 1, client.stderr_text()[-3000:]


def _index_passes(client: RawLspClient, kind: str) -> list[dict[str, Any]]:
    """The `$/progress` notifications of the index's passes of this `kind` (begin, end)."""
    indexing = {
        message["params"]["token"]
        for message in list(client.messages)
        if message.get("method") == "$/progress"
        and message["params"]["value"].get("title", "").startswith("Indexing workspace")
    }
    return [
        message
        for message in list(client.messages)
        if message.get("method") == "$/progress"
        and message["params"]["token"] in indexing
        and message["params"]["value"].get("kind") == kind
    ]


def test_thousands_of_watched_file_events_become_one_index_pass(client: RawLspClient, project: Path) -> None:
    """A checkout reports every file at once: valid events, too many to follow one by one."""
    client.wait_for(lambda _: len(_index_passes(client, "end")) >= 1, timeout=60)  # the first pass
    changes = [{"uri": (project / f"gen_{n}.py").as_uri(), "type": 1} for n in range(30_000)]
    client.notify("workspace/didChangeWatchedFiles", {"changes": changes})
    _not_decoded(client, "workspace/didChangeWatchedFiles")
    client.wait_for(lambda _: len(_index_passes(client, "end")) >= 2, timeout=60)
    time.sleep(1.0)  # nothing more follows: not one update per file
    assert len(_index_passes(client, "begin")) == 2


def test_budget_exceeded_names_the_users_budget_and_the_spend(tmp_path: Path, project: Path) -> None:
    """The model layer stops a call at the budget's remainder; the user reads their own budget."""
    with ScriptedLLMServer() as llm:
        llm.add_rule(
            IS_PLAN,
            tool_call("system_read_files", {"file_paths": ["calc.py"]}),
            times=1,
        )
        llm.add_rule(
            IS_PLAN,
            json_output(
                {"instructions": "x", "files": ["calc.py"]},
                usage={"prompt_tokens": 900, "completion_tokens": 100, "total_tokens": 1000},
            ),
        )
        client = start(tmp_path, project, llm_options(llm, budget={"maxTokens": 700}))
        try:
            result = client.execute("aider-lsp.workflow.run", {"goal": VAGUE_GOAL}, timeout=90)["result"]
            assert result["status"] == "FAILED", result
            error = result["notes"]["error"]
            assert error["reason"] == "budget_exceeded", error
            message = error["message"]
            assert "aiderLsp.budget.maxTokens" in message and "700" in message, message
            assert "total_tokens_limit" not in message, message
            assert client.shutdown() == 0
        finally:
            client.close()


@pytest.mark.parametrize(
    ("planned", "why"),
    [
        ("../outside.py", "outside the workspace"),
        (".env", "secret"),
        ("/etc/hostname", "absolute path"),
    ],
)
def test_a_plan_naming_a_file_it_cannot_edit_says_which_and_why(
    tmp_path: Path, project: Path, planned: str, why: str
) -> None:
    (project / ".env").write_text("OPENAI_API_KEY=sk-do-not-leak\n")
    with ScriptedLLMServer() as llm:
        llm.add_rule(IS_PLAN, json_output({"instructions": "edit it", "files": ["calc.py", planned]}))
        client = start(tmp_path, project, llm_options(llm))
        try:
            result = client.execute("aider-lsp.workflow.run", {"goal": VAGUE_GOAL}, timeout=90)["result"]
            assert result["status"] == "FAILED", result
            message = result["notes"]["error"]["message"]
            assert planned in message and why in message, message
            assert "Exceeded maximum output retries" not in message, message
            assert "calc.py" not in message.replace(planned, ""), message  # only the bad file is named
            assert client.shutdown() == 0
            assert "Traceback" not in client.stderr_text()
        finally:
            client.close()


def test_read_files_says_which_files_it_did_not_read_and_why(client: RawLspClient, project: Path) -> None:
    """The answer (what a model and an editor see) names each file left out, not only notes."""
    (project / ".env").write_text("OPENAI_API_KEY=sk-do-not-leak\n")
    (project / "pkg").mkdir()
    (project / "blob.bin").write_bytes(b"\x00\x01\x02" * 100)
    asked = {
        "calc.py": None,
        "missing.py": "not found",
        ".env": "secret",
        "../outside.py": "outside the workspace",
        "pkg": "folder",
        "blob.bin": "binary",
    }
    result = client.execute("aider-lsp.system.readFiles", {"file_paths": list(asked)})["result"]
    assert result["status"] == "COMPLETE", result
    notes = result["notes"]
    assert notes["files_read_count"] == 1
    assert notes["skipped_files"] == [path for path, why in asked.items() if why]
    reasons = {item["path"]: item["reason"] for item in notes["skipped_reasons"]}
    content = result["content"]
    assert "def add" in content and "sk-do-not-leak" not in content
    for path, why in asked.items():
        if why is None:
            continue
        assert why in reasons[path], (path, reasons[path])
        assert f"--- SKIPPED: {path} " in content and reasons[path] in content, content


@pytest.mark.aider
@pytest.mark.parametrize("command", ["aider-lsp.aider.automatic", "aider-lsp.aider.interactive"])
def test_a_file_aider_cannot_read_as_utf8_is_named_with_what_to_do(
    tmp_path: Path, project: Path, command: str
) -> None:
    (project / "legacy.py").write_bytes(b"# -*- coding: latin-1 -*-\nNAME = 'caf\xe9'\n")
    with ScriptedLLMServer() as llm:
        llm.add_rule(any_request, aider_whole({"legacy.py": "NAME = 'cafe'\n"}))
        client = start(tmp_path, project, llm_options(llm, aiderServer={"args": ["--edit-format", "whole"]}))
        try:
            result = client.execute(
                command, {"prompt": "rename NAME to TITLE", "file_context": ["legacy.py"]}, timeout=120
            )["result"]
            assert result["status"] == "FAILED", result
            message = result["notes"]["error"]["message"]
            assert "legacy.py" in message and "UTF-8" in message and "line 2" in message, message
            assert "--encoding" not in message, message
            assert (project / "legacy.py").read_bytes().endswith(b"caf\xe9'\n")
            assert client.shutdown() == 0
            assert "Traceback" not in client.stderr_text()
        finally:
            client.close()


@pytest.mark.parametrize(
    ("command", "arguments"),
    [
        ("aider-lsp.handler.primeContext", {"query": "add\ud800", "initial_files": ["calc.py"]}),
        ("aider-lsp.system.readFiles", {"file_paths": ["calc\udc80.py"]}),
        ("aider-lsp.aider.automatic", {"prompt": "\ud800", "file_context": ["calc.py"]}),
    ],
)
def test_text_that_is_not_unicode_is_invalid_params(
    client: RawLspClient, command: str, arguments: dict[str, Any]
) -> None:
    """`"\\ud800"` is valid JSON but no text: it can be neither written nor sent on."""
    response = client.execute(command, arguments)
    assert response.get("error", {}).get("code") == -32602, response
    assert "not valid text" in response["error"]["message"] and "arguments[0]" in response["error"]["message"]


@pytest.mark.parametrize("command", ["💥" * 200, "no-such-program-here --x", "./calc.py"])
def test_a_test_command_that_cannot_start_says_so(client: RawLspClient, command: str) -> None:
    result = client.execute("aider-lsp.system.runTests", {"command": command})["result"]
    assert result["status"] == "FAILED", result
    error = result["notes"]["error"]
    assert error["reason"] == "tool_execution_error", error
    assert "cannot start the command" in error["message"] and "aiderLsp.testCommand" in error["message"]


def test_ids_and_tokens_that_are_not_numbers_or_strings_are_refused_not_crashing(
    client: RawLspClient,
) -> None:
    response = client.request(
        "workspace/executeCommand",
        {"command": "aider-lsp.aider.automatic", "arguments": [{"prompt": "x"}], "workDoneToken": [1]},
    )
    assert response["error"]["code"] == -32602 and "workDoneToken" in response["error"]["message"], response
    for method, params in [
        ("$/cancelRequest", {"id": [1]}),
        ("window/workDoneProgress/cancel", {"token": {"a": 1}}),
        ("$/progress", {"token": [1], "value": {}}),
    ]:
        client.notify(method, params)
    _still_answers(client)
