"""A seeded bad-input fuzz over every command and notification of a real `aider-lsp serve`.

Each round sends one hostile message (a command whose argument is its schema's shape with
values swapped for hostile ones, a notification likewise, or bytes that are not JSON at all),
then a cheap probe request. The server must answer every request (a result or an error),
print no traceback, put only LSP frames on stdout and shut down cleanly, and no message may
stall it: a message and the probe after it may cost its event loop (the main thread) at most
LOOP_CPU_LIMIT_S of CPU time, the work a request would wait behind (a costly round is blamed
on the message when the same message sent again costs as much again: a first use imports a
module once). CPU time, not the wall clock: these machines are shared and busy, and a request
waits a second now and then on its own. ROUNDS rounds (the same messages for a seed, however
fast the machine); the seed is in the test id, and AIDER_LSP_FUZZ_SEED / AIDER_LSP_FUZZ_ROUNDS
run another one or a longer one. Linux only (/proc).
"""

from __future__ import annotations

import json
import os
import random
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from aider_lsp.lsp.commands import COMMANDS, CommandSpec
from aider_lsp_testing.raw_lsp import RawLspClient
from aider_lsp_testing.waiting import wait_until

ROUNDS = int(os.environ.get("AIDER_LSP_FUZZ_ROUNDS", "1000"))
SEED = int(os.environ.get("AIDER_LSP_FUZZ_SEED", "21"))
LOOP_CPU_LIMIT_S = 1.0  # a round costs the loop ~0.01 s, 0.2 s at most; a stalling message seconds
ANSWER_LIMIT_S = 60.0  # every fuzzed request is answered, long-running ones included (a cap)
PROBE = "aider-lsp.tools.list"

HOSTILE: list[Any] = [
    None,
    True,
    -1,
    2**63,
    1e308,
    "",
    " ",
    "\x00",
    "\ud800",  # a lone surrogate: valid JSON, not encodable as UTF-8
    "../../etc/passwd",
    "/etc/passwd",
    "file:///etc/passwd",
    "http://example.com/x",
    "C:\\Windows\\x.py",
    ".env",
    ".git/config",
    "%2e%2e/%2e%2e/x",
    "\u202ecod.py",
    "💥" * 500,
    "x" * 100_000,
    "A" * 300 + ".py",
    "[" * 20_000 + "]" * 20_000,  # a JSON string nested too deeply
    '["a.py", ',
    [],
    {},
    [None],
    [[[[[[[[[[[]]]]]]]]]]],
    {"a": {"b": {"c": [1, {"d": None}]}}},
    ["pkg/calc.py"] * 30_000,  # more items than a message may carry
    [0] * 300,
]

NOTIFICATIONS: dict[str, Any] = {
    "textDocument/didOpen": {
        "textDocument": {"uri": "file:///p/a.py", "languageId": "python", "version": 1, "text": "x"}
    },
    "textDocument/didChange": {
        "textDocument": {"uri": "file:///p/a.py", "version": 2},
        "contentChanges": [{"text": "y"}],
    },
    "textDocument/didSave": {"textDocument": {"uri": "file:///p/a.py"}, "text": "y"},
    "textDocument/didClose": {"textDocument": {"uri": "file:///p/a.py"}},
    "workspace/didChangeConfiguration": {
        "settings": {"aiderLsp": {"maxRetries": 1, "timeouts": {"test": 2}}}
    },
    "workspace/didChangeWatchedFiles": {"changes": [{"uri": "file:///p/a.py", "type": 2}]},
    "workspace/didChangeWorkspaceFolders": {"event": {"added": [], "removed": []}},
    "workspace/didRenameFiles": {"files": [{"oldUri": "file:///p/a.py", "newUri": "file:///p/b.py"}]},
    "$/cancelRequest": {"id": 1},
    "$/setTrace": {"value": "off"},
    "window/workDoneProgress/cancel": {"token": "t"},
    "aider-lsp/no-such-notification": {"x": 1},
}

REQUESTS: dict[str, Any] = {
    "textDocument/codeAction": {
        "textDocument": {"uri": "file:///p/a.py"},
        "range": {"start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 1}},
        "context": {"diagnostics": []},
    },
    "aider-lsp/no-such-request": {"x": 1},
}

RAW_BODIES: list[bytes] = [  # their ids are never the client's own (its answers would be taken)
    b"{",
    b"NaN",
    b"[]",
    b'"just a string"',
    b'{"jsonrpc": "2.0", "id": 99999, "method": ',
    b"\xff\xfe\x00garbage",
    b'{"jsonrpc": "2.0", "method": "x", "params": ' + b"[" * 100_000 + b"]" * 100_000 + b"}",
    b'{"jsonrpc": "1.0", "id": "fuzz-5", "method": "workspace/executeCommand"}',
    b'{"jsonrpc": "2.0", "id": {"a": 1}, "method": "workspace/executeCommand", "params": {}}',
    b'{"jsonrpc": "2.0", "id": "fuzz-7", "result": {"unexpected": "answer"}}',
]


def sample(schema: dict[str, Any], defs: dict[str, Any], rng: random.Random, depth: int = 0) -> Any:
    """A value of the schema's shape (the fuzz's starting point), from its own examples."""
    if "$ref" in schema:
        return sample(defs[schema["$ref"].split("/")[-1]], defs, rng, depth)
    for key in ("anyOf", "oneOf"):
        if key in schema:
            options = [option for option in schema[key] if option.get("type") != "null"] or schema[key]
            return sample(rng.choice(options), defs, rng, depth)
    kind = schema.get("type")
    if kind == "object" or "properties" in schema:
        if depth > 4:
            return {}
        return {
            name: sample(sub, defs, rng, depth + 1)
            for name, sub in schema.get("properties", {}).items()
            if name in schema.get("required", []) or rng.random() < 0.6
        }
    if kind == "array":
        return [sample(schema.get("items", {}), defs, rng, depth + 1) for _ in range(rng.randint(0, 2))]
    if kind == "integer":
        return rng.choice([0, 1, 3])
    if kind == "number":
        return rng.choice([0.5, 2.0])
    if kind == "boolean":
        return rng.random() < 0.5
    if "enum" in schema:
        return rng.choice(schema["enum"])
    return rng.choice(["calc.py", "pkg/calc.py", "fix the add function", "x"])


def mutate(value: Any, rng: random.Random, depth: int = 0) -> Any:
    """The value with some parts swapped for hostile ones (or added, for objects)."""
    if rng.random() < 0.25 or depth > 6:
        return rng.choice(HOSTILE)
    if isinstance(value, dict):
        out = {
            key: mutate(item, rng, depth + 1) if rng.random() < 0.5 else item for key, item in value.items()
        }
        if rng.random() < 0.15:
            out[rng.choice(["extra", "uri", "id", "jsonrpc", "__proto__"])] = rng.choice(HOSTILE)
        return out
    if isinstance(value, list):
        return [mutate(item, rng, depth + 1) for item in value] + (
            [rng.choice(HOSTILE)] if rng.random() < 0.3 else []
        )
    return value if rng.random() < 0.5 else rng.choice(HOSTILE)


def command_message(spec: CommandSpec, rng: random.Random) -> dict[str, Any]:
    schema = spec.params_model.model_json_schema()
    argument = mutate(sample(schema, schema.get("$defs", {}), rng), rng)
    arguments: Any = [argument]
    roll = rng.random()
    if roll < 0.05:
        arguments = [argument, argument]
    elif roll < 0.1:
        arguments = rng.choice(HOSTILE)  # not even a list
    params: dict[str, Any] = {"command": spec.id, "arguments": arguments}
    if rng.random() < 0.1:
        params["workDoneToken"] = rng.choice(HOSTILE)
    return params


def write_raw(client: RawLspClient, body: bytes) -> None:
    assert client.process.stdin is not None
    client.process.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
    client.process.stdin.flush()


@pytest.fixture
def fuzz_workspace(tmp_path: Path) -> Path:
    root = tmp_path / "fuzz project"
    (root / "pkg").mkdir(parents=True)
    (root / "pkg" / "calc.py").write_text("def add(a, b):\n    return a + b\n")
    (root / "calc.py").write_text("X = 1\n")
    (root / ".env").write_text("OPENAI_API_KEY=sk-fuzz-secret\n")
    return root


@pytest.mark.parametrize("seed", [SEED])
def test_bad_input_fuzz_finds_no_traceback_and_no_stall(
    tmp_path: Path, fuzz_workspace: Path, seed: int
) -> None:
    rng = random.Random(seed)
    options = {
        # every model call fails fast (nothing listens on port 9), Aider cannot start, tests end at 2 s
        "model": "openai:fuzz",
        "baseUrl": "http://127.0.0.1:9/v1",
        "apiKey": "fuzz",
        "aiderModel": "openai/fuzz",
        "aiderServer": {"command": "/bin/false"},
        "testCommand": "true",
        "timeouts": {"llm": 2, "test": 2, "aider": 5},
    }
    client = RawLspClient(tmp_path / "stderr.txt", configuration=options)
    pending: dict[int, str] = {}
    costly: list[tuple[str, float]] = []
    try:
        client.initialize(fuzz_workspace, options)
        client.execute(PROBE, {})
        wait_warm(client)
        for _round in range(ROUNDS):
            what, send = next_message(rng)
            for _attempt in range(2):  # a costly round is the message's fault if it costs as much again
                before = loop_cpu_seconds(client.process.pid)
                msg_id = send(client)
                if msg_id is not None:
                    pending[msg_id] = what
                probe(client)
                cost = loop_cpu_seconds(client.process.pid) - before
                if cost <= LOOP_CPU_LIMIT_S:
                    break
            else:  # costly twice in a row (a module imported on first use is not): the message's fault
                costly.append((what, round(cost, 2)))
        for msg_id, what in pending.items():
            answer = client.wait_response(msg_id, timeout=ANSWER_LIMIT_S)
            check_answer(answer, what)
        assert costly == [], f"messages that held up the server's event loop (CPU seconds): {costly}"
        assert client.shutdown() == 0
        assert client.garbage == [], "stdout carried something that is not an LSP frame"
        stderr = client.stderr_text()
        assert "Traceback" not in stderr, stderr[stderr.find("Traceback") - 2000 :][:6000]
        assert "sk-fuzz-secret" not in json.dumps(client.messages)
    finally:
        client.close()


def wait_warm(client: RawLspClient, timeout: float = 90) -> None:
    """The server's start-up imports (the model's SDK, the MCP client: seconds of CPU in a
    worker thread) end with its attempt to pre-start Aider (/bin/false here): the fuzz starts
    after them, so a slow probe is a message's fault, not the start-up's."""
    warm = wait_until(lambda: "could not pre-start the Aider MCP server" in client.stderr_text(), timeout)
    assert warm, "the server never finished warming up"


def next_message(rng: random.Random) -> tuple[str, Callable[[RawLspClient], int | None]]:
    """One hostile message: what it is (for a failure's message) and how to send it (the id of
    a request, None for the rest); sending it again sends the same bytes."""
    roll = rng.random()
    if roll < 0.55:
        spec = rng.choice(COMMANDS)
        params = command_message(spec, rng)
        return f"{spec.id} {str(params)[:300]}", lambda c: c.send_request("workspace/executeCommand", params)
    if roll < 0.85:
        method = rng.choice(list(NOTIFICATIONS))
        params = mutate(NOTIFICATIONS[method], rng)
        return f"{method} {str(params)[:300]}", lambda c: c.notify(method, params)
    if roll < 0.93:
        method = rng.choice(list(REQUESTS))
        params = mutate(REQUESTS[method], rng)
        return f"{method} {str(params)[:300]}", lambda c: c.send_request(method, params)
    body = rng.choice(RAW_BODIES)
    return f"raw {body[:60]!r}", lambda c: write_raw(c, body)


def probe(client: RawLspClient) -> None:
    """A cheap request is answered (the cap is a safety net, not a timing)."""
    answer = client.execute(PROBE, {}, timeout=60)
    assert answer.get("result", {}).get("status") == "COMPLETE", answer


def loop_cpu_seconds(pid: int) -> float:
    """The CPU time the server's main thread, its event loop, has used (user and system): the
    work a request waits behind, which a busy machine does not inflate as it does the clock."""
    with open(f"/proc/{pid}/task/{pid}/stat") as handle:
        fields = handle.read().rsplit(")", 1)[1].split()  # from the 3rd field, the state, on
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime, stime


def check_answer(answer: dict[str, Any], what: str) -> None:
    """A JSON-RPC error with a message, or a TaskResult whose failure says what happened."""
    if "error" in answer:
        assert answer["error"].get("message"), (what, answer)
        assert len(answer["error"]["message"]) < 5_000, (what, answer["error"]["message"][:500])
        return
    result = answer.get("result")
    if isinstance(result, dict) and result.get("status") == "FAILED":
        error = result.get("notes", {}).get("error", {})
        assert error.get("message") and error.get("reason"), (what, result)
        assert error["reason"] != "unexpected_error", (what, error)
