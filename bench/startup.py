"""Startup: median time from process start to the `initialize` response, over 10 starts.

Printed beside the floor measured in the same run, the two interleaved so that a busy machine
weighs on both alike: the median time until `python -c "import pygls.lsp.server; print()"`
has printed its line (a server cannot answer before pygls is imported; neither side counts the
interpreter's exit). Target: within 1.2x of the floor. Also printed: the smallest pygls server's
initialize answer (what any pygls server pays beyond the import: its converter, asyncio).

The server's modules are byte-compiled first, as an installed wheel's are: a checkout run with
PYTHONDONTWRITEBYTECODE set (as on our machines) would otherwise compile them at every start
(about 30 ms more), which no user pays; pygls in site-packages is compiled already.
"""

from __future__ import annotations

import compileall
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

RUNS = 10


def _frame(message: dict) -> bytes:
    body = json.dumps(message).encode()
    return b"Content-Length: %d\r\n\r\n%s" % (len(body), body)


def _read_message(stream) -> dict:
    length = 0
    while True:
        line = stream.readline()
        if not line:
            raise RuntimeError("server closed stdout")
        if line in (b"\r\n", b"\n"):
            break
        name, _, value = line.decode().partition(":")
        if name.lower() == "content-length":
            length = int(value)
    return json.loads(stream.read(length))


# the smallest pygls server (pygls's own examples start this way): what any pygls server pays
# beyond the import floor (its converter, asyncio) before it can answer initialize
MINIMAL_PYGLS_SERVER = (
    "from pygls.lsp.server import LanguageServer; LanguageServer('minimal', '0').start_io()"
)


def time_initialize(workspace: Path, command: list[str] | None = None) -> float:
    started = time.perf_counter()
    process = subprocess.Popen(
        command or [sys.executable, "-m", "aider_lsp", "serve"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )
    assert process.stdin and process.stdout
    process.stdin.write(
        _frame(
            {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "initialize",
                "params": {"processId": None, "rootUri": workspace.as_uri(), "capabilities": {}},
            }
        )
    )
    process.stdin.flush()
    while True:
        message = _read_message(process.stdout)
        if message.get("id") == 1:
            break
    elapsed = time.perf_counter() - started
    process.stdin.write(_frame({"jsonrpc": "2.0", "id": 2, "method": "shutdown"}))
    process.stdin.write(_frame({"jsonrpc": "2.0", "method": "exit"}))
    process.stdin.flush()
    process.wait(timeout=10)
    return elapsed


def time_floor() -> float:
    started = time.perf_counter()
    process = subprocess.Popen(
        [sys.executable, "-c", "import pygls.lsp.server; print('ready', flush=True)"],
        stdout=subprocess.PIPE,
    )
    assert process.stdout
    process.stdout.readline()
    elapsed = time.perf_counter() - started
    process.wait(timeout=10)
    return elapsed


def compile_server() -> None:
    """Write the server package's bytecode, as pip does when it installs the wheel."""
    import aider_lsp

    compileall.compile_dir(Path(aider_lsp.__file__).parent, quiet=1)


def main() -> None:
    compile_server()
    with tempfile.TemporaryDirectory() as directory:
        workspace = Path(directory)
        time_initialize(workspace)  # warm the OS file cache for both
        time_floor()
        server: list[float] = []
        floor: list[float] = []
        minimal: list[float] = []
        for _ in range(RUNS):
            server.append(time_initialize(workspace))
            floor.append(time_floor())
            minimal.append(time_initialize(workspace, [sys.executable, "-c", MINIMAL_PYGLS_SERVER]))
    server_ms = statistics.median(server) * 1000
    floor_ms = statistics.median(floor) * 1000
    minimal_ms = statistics.median(minimal) * 1000
    print(f"initialize response, median of {RUNS}: {server_ms:.0f} ms")
    print(f"floor (import pygls.lsp.server), median of {RUNS}: {floor_ms:.0f} ms")
    print(f"a minimal pygls server's initialize response, median of {RUNS}: {minimal_ms:.0f} ms")
    print(
        f"ratio: {server_ms / floor_ms:.2f}x (target <= 1.2x); over the minimal pygls server: "
        f"{server_ms / minimal_ms:.2f}x"
    )


if __name__ == "__main__":
    main()
