"""A raw ACP client over a real `aider-lsp acp` subprocess: newline-delimited JSON-RPC, written
and read as bytes, so a test can send what a typed SDK client cannot (a malformed
notification) and drive a turn from plain threads. A permission request is answered by
`choose` (none: cancelled); other requests from the agent (files, terminals) are answered
"method not found": the client declares no capability for them."""

from __future__ import annotations

import itertools
import json
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

AGENT_COMMAND = [sys.executable, "-m", "aider_lsp", "acp"]
# a permission request's params → the option id chosen (None: the question is cancelled)
Choose = Callable[[dict[str, Any]], str | None]


class RawAcpClient:
    """One agent subprocess; `request` blocks for the answer, `send` does not."""

    def __init__(self, stderr_path: Path, env: dict[str, str], cwd: Path | None = None) -> None:
        self.stderr_path = stderr_path
        self._stderr = open(stderr_path, "wb")  # noqa: SIM115 - closed in close()
        self.process = subprocess.Popen(
            AGENT_COMMAND,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._stderr,
            env=env,
            cwd=cwd,
        )
        self.messages: list[dict[str, Any]] = []
        self._cond = threading.Condition()
        self._ids = itertools.count(1)
        self._write_lock = threading.Lock()
        self.eof = False
        self.choose: Choose | None = None
        self._reader = threading.Thread(target=self._read_loop, daemon=True)
        self._reader.start()

    def send(self, message: dict[str, Any] | bytes) -> None:
        """One line: a message (JSON-RPC 2.0 added) or raw bytes as they are."""
        line = message if isinstance(message, bytes) else json.dumps({"jsonrpc": "2.0", **message}).encode()
        with self._write_lock:
            assert self.process.stdin is not None
            self.process.stdin.write(line.rstrip(b"\n") + b"\n")
            self.process.stdin.flush()

    def start_request(self, method: str, params: Any) -> int:
        msg_id = next(self._ids)
        self.send({"id": msg_id, "method": method, "params": params})
        return msg_id

    def wait_response(self, msg_id: int, timeout: float = 30.0) -> dict[str, Any]:
        return self.wait_for(lambda m: m.get("id") == msg_id and "method" not in m, timeout)

    def request(self, method: str, params: Any, timeout: float = 30.0) -> dict[str, Any]:
        """The raw response: {'result': ...} or {'error': {...}}."""
        return self.wait_response(self.start_request(method, params), timeout)

    def wait_for(self, predicate: Any, timeout: float = 30.0) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        with self._cond:
            while True:
                for message in self.messages:
                    if predicate(message):
                        return message
                remaining = deadline - time.monotonic()
                if remaining <= 0 or self.eof:
                    raise TimeoutError("message not seen")
                self._cond.wait(remaining)

    def open_session(self, cwd: Path, mode: str | None = None) -> str:
        """initialize, session/new on `cwd` (and its mode): the session's id."""
        self.request("initialize", {"protocolVersion": 1, "clientCapabilities": {}})
        session = self.request("session/new", {"cwd": str(cwd), "mcpServers": []}, timeout=60)
        assert "result" in session, session
        session_id = str(session["result"]["sessionId"])
        if mode is not None:
            params = {"sessionId": session_id, "configId": "mode", "value": mode}
            assert "result" in self.request("session/set_config_option", params), "mode not set"
        return session_id

    def updates(self) -> list[dict[str, Any]]:
        """Every session/update's update, in order."""
        with self._cond:
            return [m["params"]["update"] for m in self.messages if m.get("method") == "session/update"]

    def around(self, msg_id: int) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        """The session/updates' updates that came before the answer to `msg_id`, and after it."""
        with self._cond:
            messages = list(self.messages)
        answer = next(i for i, m in enumerate(messages) if m.get("id") == msg_id and "method" not in m)
        update = [m["params"]["update"] if m.get("method") == "session/update" else None for m in messages]
        return [u for u in update[:answer] if u], [u for u in update[answer:] if u]

    def questions(self) -> list[dict[str, Any]]:
        """Every session/request_permission's params, in order."""
        with self._cond:
            return [m["params"] for m in self.messages if m.get("method") == "session/request_permission"]

    def stderr_text(self) -> str:
        if not self._stderr.closed:
            self._stderr.flush()
        return self.stderr_path.read_text(errors="replace")

    def close(self) -> None:
        if self.process.poll() is None:
            assert self.process.stdin is not None
            self.process.stdin.close()  # the client is gone: the agent ends
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(10)
        self._reader.join(5)
        self._stderr.close()

    def _read_loop(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            try:
                message = json.loads(line)
            except ValueError:
                continue
            with self._cond:
                self.messages.append(message)
                self._cond.notify_all()
            if "method" in message and "id" in message:  # a request from the agent
                self.send({"id": message["id"], **self._answer(message)})
        with self._cond:
            self.eof = True
            self._cond.notify_all()

    def _answer(self, request: dict[str, Any]) -> dict[str, Any]:
        """A request's answer: the option `choose` picks for a permission, else an error."""
        if request["method"] != "session/request_permission" or self.choose is None:
            return {"error": {"code": -32601, "message": "not offered by this client"}}
        chosen = self.choose(request["params"])
        if chosen is None:
            return {"result": {"outcome": {"outcome": "cancelled"}}}
        return {"result": {"outcome": {"outcome": "selected", "optionId": chosen}}}
