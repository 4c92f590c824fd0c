"""A strict raw JSON-RPC client for `aider-lsp serve`: every byte on stdout must be an LSP frame.

Why not pytest-lsp here: its reader skips what it cannot parse, so stray prints on stdout
would go unnoticed. This client records anything that is not a well-formed frame in
`garbage`, answers the server's own requests (configuration, progress tokens,
registrations) and keeps stderr in a file for traceback checks.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

SERVER_COMMAND = [sys.executable, "-m", "aider_lsp", "serve"]


def server_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    env = {key: value for key, value in os.environ.items() if not key.startswith("AIDER_LSP_")}
    env.update(extra or {})
    return env


class RawLspClient:
    """One server subprocess; `request` blocks for the answer, `notify` does not."""

    def __init__(
        self,
        stderr_path: Path,
        *,
        env: dict[str, str] | None = None,
        configuration: Any = None,
        command: list[str] | None = None,
    ) -> None:
        self.stderr_path = stderr_path
        self._stderr = open(stderr_path, "wb")  # noqa: SIM115 - closed in close()
        self.process = subprocess.Popen(
            command or SERVER_COMMAND,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._stderr,
            env=server_env(env),
        )
        self.configuration = configuration
        self.messages: list[dict[str, Any]] = []
        self.garbage: list[bytes] = []
        self.server_requests: list[dict[str, Any]] = []
        self._responses: dict[Any, dict[str, Any]] = {}
        self._cond = threading.Condition()
        self._ids = itertools.count(1)
        self._write_lock = threading.Lock()
        self.eof = False
        self._reader = threading.Thread(target=self._read_loop, daemon=True)
        self._reader.start()

    # -- wire ---------------------------------------------------------------------------
    def _send(self, message: dict[str, Any]) -> None:
        body = json.dumps(message).encode("utf-8")
        with self._write_lock:
            assert self.process.stdin is not None
            self.process.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
            self.process.stdin.flush()

    def _read_frame(self, stream: Any) -> dict[str, Any] | None:
        headers: dict[str, str] = {}
        while True:
            line = stream.readline()
            if not line:
                return None
            if line == b"\r\n":
                break
            if not line.endswith(b"\r\n") or b":" not in line:
                self.garbage.append(line)
                continue
            name, _, value = line.decode("ascii", "replace").partition(":")
            if name.strip().lower() not in ("content-length", "content-type"):
                self.garbage.append(line)
                continue
            headers[name.strip().lower()] = value.strip()
        if "content-length" not in headers:
            self.garbage.append(b"<frame without Content-Length>")
            return {}
        body = stream.read(int(headers["content-length"]))
        try:
            return json.loads(body)
        except ValueError:
            self.garbage.append(body)
            return {}

    def _read_loop(self) -> None:
        stream = self.process.stdout
        while True:
            message = self._read_frame(stream)
            if message is None:
                break
            if not message:
                continue
            with self._cond:
                self.messages.append(message)
                if "id" in message and "method" not in message and _hashable(message["id"]):
                    self._responses[message["id"]] = message  # a bad id (a fuzz's) stays in messages
                self._cond.notify_all()
            if "id" in message and "method" in message:
                self.server_requests.append(message)
                self._answer_server_request(message)
        with self._cond:
            self.eof = True
            self._cond.notify_all()

    def _answer_server_request(self, message: dict[str, Any]) -> None:
        method = message["method"]
        result: Any = None
        if method == "workspace/configuration":
            items = message.get("params", {}).get("items", [])
            result = [self.configuration for _ in items]
        with contextlib.suppress(BrokenPipeError, ValueError, OSError):
            self._send({"jsonrpc": "2.0", "id": message["id"], "result": result})

    # -- API ----------------------------------------------------------------------------
    def send_request(self, method: str, params: Any = None) -> int:
        msg_id = next(self._ids)
        self._send({"jsonrpc": "2.0", "id": msg_id, "method": method, "params": params})
        return msg_id

    def wait_response(self, msg_id: int, timeout: float = 30.0) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        with self._cond:
            while msg_id not in self._responses:
                remaining = deadline - time.monotonic()
                if remaining <= 0 or self.eof:
                    raise TimeoutError(
                        f"no answer to request {msg_id}; stderr:\n{self.stderr_text()[-3000:]}"
                    )
                self._cond.wait(remaining)
            return self._responses[msg_id]

    def request(self, method: str, params: Any = None, timeout: float = 30.0) -> dict[str, Any]:
        return self.wait_response(self.send_request(method, params), timeout)

    def notify(self, method: str, params: Any = None) -> None:
        self._send({"jsonrpc": "2.0", "method": method, "params": params})

    def execute(self, command: str, *arguments: Any, timeout: float = 30.0) -> dict[str, Any]:
        """The raw response: {'result': ...} or {'error': {...}}."""
        return self.request(
            "workspace/executeCommand", {"command": command, "arguments": list(arguments)}, timeout
        )

    def wait_for(self, predicate: Callable[[dict[str, Any]], bool], timeout: float = 30.0) -> dict[str, Any]:
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

    def initialize(
        self, root: Path | None, init_options: Any = None, *, capabilities: dict[str, Any] | None = None
    ) -> dict[str, Any]:
        caps = (
            capabilities
            if capabilities is not None
            else {
                "workspace": {"configuration": True, "didChangeConfiguration": {"dynamicRegistration": True}},
                "window": {"workDoneProgress": True},
            }
        )
        params: dict[str, Any] = {"processId": os.getpid(), "capabilities": caps}
        if root is not None:
            params["rootUri"] = root.as_uri()
            params["workspaceFolders"] = [{"uri": root.as_uri(), "name": root.name}]
        else:
            params["rootUri"] = None
        if init_options is not None:
            params["initializationOptions"] = init_options
        answer = self.request("initialize", params)
        self.notify("initialized", {})
        return answer

    def shutdown(self, timeout: float = 30.0) -> int:
        """shutdown + exit; returns the exit code."""
        self.request("shutdown", None, timeout)
        self.notify("exit", None)
        return self.process.wait(timeout)

    def stderr_text(self) -> str:
        self._stderr.flush()
        return self.stderr_path.read_text(errors="replace")

    def close(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait(10)
        self._reader.join(5)
        self._stderr.close()


def _hashable(value: Any) -> bool:
    return isinstance(value, (int, str)) or value is None


def children_of(pid: int) -> set[int]:
    """All live descendants of `pid`, from /proc (no psutil)."""
    parents: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as handle:
                stat = handle.read().decode("ascii", "replace")
        except OSError:
            continue
        fields = stat[stat.rfind(")") + 2 :].split()
        if fields[0] == "Z":
            continue
        parents[int(entry)] = int(fields[1])
    found: set[int] = set()
    frontier = [pid]
    while frontier:
        current = frontier.pop()
        for child, parent in parents.items():
            if parent == current and child not in found:
                found.add(child)
                frontier.append(child)
    return found


def alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            stat = handle.read().decode("ascii", "replace")
    except OSError:
        return False
    return stat[stat.rfind(")") + 2 :].split()[0] != "Z"
