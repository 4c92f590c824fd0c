"""Aider edit latency: warm persistent bridge vs cold session vs the `aider` CLI, same run.

The same one-line edit (whole format, answered by the scripted LLM server on 127.0.0.1) is made
  - warm: through one AiderBridge whose server is already running (the normal case),
  - cold: through a new AiderBridge each time (server start + Aider import + edit),
  - CLI:  `aider --message ... --yes-always` as a fresh process (the aider env's binary),
  - over LSP: a real `aider-lsp serve` (which starts Aider in the background after
    `initialized`): the first edit asked 10 s after start-up, then warm edits in the same server.
Prints the medians and the ratios. Targets: warm at most 1/5 of the CLI; the first LSP edit
within 2x of a warm LSP edit.
Needs the Aider environment (`aider-lsp setup-aider`).

    .venv/bin/python bench/aider_edit.py [--warm 9] [--cold 3] [--cli 3] [--lsp-warm 5] [--delay 10]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

from aider_lsp.aider.bridge import AiderBridge
from aider_lsp.config import aider_env
from aider_lsp.config.settings import load_settings
from aider_lsp.guards.files import FileAccessManager
from aider_lsp_testing.aider_cli import aider_command, aider_environment
from aider_lsp_testing.llm_server import ScriptedLLMServer, aider_whole, last_user_contains
from aider_lsp_testing.raw_lsp import RawLspClient

MODEL = "openai/bench-coder"
VERSIONS = {
    "v1": "def add(a, b):\n    return a + b  # v1\n",
    "v2": "def add(a, b):\n    return a + b  # v2\n",
}


def setup_workspace() -> Path:
    root = Path(tempfile.mkdtemp(prefix="aider-bench-"))
    (root / "calc.py").write_text(VERSIONS["v2"])
    return root


def scripted_server() -> ScriptedLLMServer:
    server = ScriptedLLMServer().start()
    for tag, content in VERSIONS.items():
        server.add_rule(last_user_contains(f"to {tag}"), aider_whole({"calc.py": content}))
    return server


def next_prompt(workspace: Path) -> str:
    """Ask for the version the file does not have, so every edit really changes it."""
    return (
        "Change the comment to v2"
        if "# v1" in (workspace / "calc.py").read_text()
        else "Change the comment to v1"
    )


async def edit(bridge: AiderBridge, prompt: str) -> float:
    started = time.perf_counter()
    result = await bridge.call_aider_tool(
        "aider_ai_code", {"ai_coding_prompt": prompt, "relative_editable_files": ["calc.py"]}
    )
    elapsed = time.perf_counter() - started
    if not result.notes.get("success"):
        raise SystemExit(f"edit failed: {result.content}")
    return elapsed


async def bench_bridge(
    workspace: Path, base_url: str, warm_runs: int, cold_runs: int
) -> tuple[list[float], list[float]]:
    settings = load_settings(
        {"baseUrl": base_url, "aiderModel": MODEL, "aiderServer": {"args": ["--edit-format", "whole"]}},
        environ={},
    )
    files = FileAccessManager(workspace)
    cold: list[float] = []
    for _ in range(cold_runs):
        bridge = AiderBridge(files, lambda: settings)
        try:
            cold.append(await edit(bridge, next_prompt(workspace)))
        finally:
            await bridge.aclose()
    bridge = AiderBridge(files, lambda: settings)
    try:
        await edit(bridge, next_prompt(workspace))  # start the server
        warm = [await edit(bridge, next_prompt(workspace)) for _ in range(warm_runs)]
    finally:
        await bridge.aclose()
    return warm, cold


def bench_lsp_first_edit(
    workspace: Path, base_url: str, delay: float, warm_runs: int
) -> tuple[float, list[float]]:
    """The first edit asked `delay` seconds after the server started, then warm edits."""
    options = {"baseUrl": base_url, "aiderModel": MODEL, "aiderServer": {"args": ["--edit-format", "whole"]}}
    client = RawLspClient(
        Path(tempfile.mkstemp(prefix="aider-bench-lsp-", suffix=".log")[1]), configuration=options
    )
    try:
        client.initialize(workspace, options)
        time.sleep(delay)  # the user opens a file, reads, then asks for an edit

        def lsp_edit() -> float:
            started = time.perf_counter()
            answer = client.execute(
                "aider-lsp.aider.automatic",
                {"prompt": next_prompt(workspace), "file_context": ["calc.py"]},
                timeout=120,
            )
            elapsed = time.perf_counter() - started
            if answer.get("result", {}).get("status") != "COMPLETE":
                raise SystemExit(f"LSP edit failed: {answer}")
            return elapsed

        first = lsp_edit()
        warm = [lsp_edit() for _ in range(warm_runs)]
        client.shutdown()
    finally:
        client.close()
    return first, warm


def bench_cli(workspace: Path, base_url: str, runs: int) -> list[float]:
    env = aider_environment(base_url)
    history = Path(tempfile.mkdtemp(prefix="aider-bench-history-"))
    times: list[float] = []
    for _ in range(runs):
        command = aider_command(next_prompt(workspace), MODEL, history, ["calc.py"])
        before = (workspace / "calc.py").read_text()
        started = time.perf_counter()
        subprocess.run(
            command, cwd=workspace, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True
        )
        times.append(time.perf_counter() - started)
        if (workspace / "calc.py").read_text() == before:
            raise SystemExit("the CLI run did not edit calc.py")
    return times


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--warm", type=int, default=9)
    parser.add_argument("--cold", type=int, default=3)
    parser.add_argument("--cli", type=int, default=3)
    parser.add_argument("--lsp-warm", type=int, default=5)
    parser.add_argument(
        "--delay", type=float, default=10.0, help="seconds between start-up and the first edit"
    )
    args = parser.parse_args()
    if not aider_env.is_ready():
        print(f"the Aider environment is missing: run `aider-lsp setup-aider` ({aider_env.env_dir()})")
        return 1
    workspace = setup_workspace()
    server = scripted_server()
    try:
        warm, cold = asyncio.run(bench_bridge(workspace, server.base_url, args.warm, args.cold))
        cli = bench_cli(workspace, server.base_url, args.cli)
        lsp_first, lsp_warm = bench_lsp_first_edit(workspace, server.base_url, args.delay, args.lsp_warm)
    finally:
        server.stop()
    warm_ms, cold_ms, cli_ms = (statistics.median(x) * 1000 for x in (warm, cold, cli))
    print("Aider one-line edit (scripted LLM on 127.0.0.1), median latency:")
    print(f"  warm bridge (persistent session) : {warm_ms:8.1f} ms  (n={len(warm)})")
    print(f"  cold bridge (new server+session) : {cold_ms:8.1f} ms  (n={len(cold)})")
    print(f"  aider CLI --message --yes-always : {cli_ms:8.1f} ms  (n={len(cli)})")
    ratio = warm_ms / cli_ms
    print(
        f"  warm / CLI = {ratio:.3f}  (1/{cli_ms / warm_ms:.0f}; target <= 0.2): "
        f"{'OK' if ratio <= 0.2 else 'MISSED'}"
    )
    print(f"  cold / CLI = {cold_ms / cli_ms:.3f}")
    first_ms, lsp_warm_ms = lsp_first * 1000, statistics.median(lsp_warm) * 1000
    print("Over LSP (aider-lsp serve, Aider started in the background after `initialized`):")
    print(f"  first edit, asked {args.delay:g} s after start-up : {first_ms:8.1f} ms")
    print(f"  warm edit, same server             : {lsp_warm_ms:8.1f} ms  (n={len(lsp_warm)})")
    first_ratio = first_ms / lsp_warm_ms
    print(f"  first / warm = {first_ratio:.2f}  (target <= 2): {'OK' if first_ratio <= 2 else 'MISSED'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
