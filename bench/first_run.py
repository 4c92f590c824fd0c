"""From nothing to the first green turn, as a new user of an ACP editor meets it: `uvx --from
<this project's wheel> aider-lsp acp` with every cache empty (uv's, pip's, Aider's environment),
one Workflow turn on a copy of the example calculator against the scripted model (real HTTP;
the edits are the real Aider's). The first prompt sets Aider's environment up (its tool call is
watched) and then fixes the calculator.

Prints the time to the first answer of `initialize`, the set-up's time, the whole turn's, and
what was downloaded (the caches' sizes, MB). Needs `uv` (`pip install uv`) and the network to
the package registry.

    .venv/bin/python bench/first_run.py [--uvx PATH]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from aider_lsp.cli.demo import scripted_answers  # the demo's scripted calculator story
from aider_lsp.cli.offline_llm import OfflineLLMServer

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "server" / "aider_lsp" / "examples" / "calculator"


def megabytes(folder: Path) -> float:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file() and not p.is_symlink()) / 1e6


class Editor:
    def __init__(self) -> None:
        self.updates: list[tuple[float, Any]] = []

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        self.updates.append((time.monotonic(), update))

    def on_connect(self, conn: Any) -> None:
        """Nothing to keep."""


async def turn(uvx: str, wheel: Path, work: Path, base_url: str) -> dict[str, Any]:
    from acp.schema import ClientCapabilities, ToolCallProgress, ToolCallStart

    from acp import spawn_agent_process, text_block

    caches = {"uv": work / "uv-cache", "xdg": work / "xdg-cache", "tools": work / "uv-tools"}
    # the user's environment (its proxy and certificates), every cache empty
    env = {
        key: value for key, value in os.environ.items() if not key.startswith(("AIDER_LSP_", "UV_", "PIP_"))
    }
    env |= {
        "PATH": f"{Path(uvx).parent}:{os.environ.get('PATH', '/usr/bin:/bin')}",
        "XDG_CACHE_HOME": str(caches["xdg"]),
        "XDG_STATE_HOME": str(work / "state"),
        "UV_CACHE_DIR": str(caches["uv"]),
        "UV_TOOL_DIR": str(caches["tools"]),
        "AIDER_LSP_MODEL": "openai:scripted-planner",
        "AIDER_LSP_AIDER_MODEL": "openai/scripted-coder",
        "AIDER_LSP_BASE_URL": base_url,
        "AIDER_LSP_AIDER_SERVER": json.dumps({"args": ["--edit-format", "whole"]}),
        "AIDER_LSP_TEST_COMMAND": f"{sys.executable} -m unittest",
    }
    workspace = work / "calculator"
    shutil.copytree(EXAMPLE, workspace)
    editor = Editor()
    started = time.monotonic()
    async with spawn_agent_process(
        editor, uvx, "--from", str(wheel), "aider-lsp", "acp", env=env, cwd=work
    ) as (conn, _):
        await conn.initialize(protocol_version=1, client_capabilities=ClientCapabilities())
        initialized = time.monotonic() - started
        session = (await conn.new_session(cwd=str(workspace), mcp_servers=[])).session_id
        await conn.set_config_option(config_id="mode", session_id=session, value="workflow")
        asked = time.monotonic()
        answer = await conn.prompt(session_id=session, prompt=[text_block("Make the tests pass.")])
        ended = time.monotonic()
    setup = [
        u for _, u in editor.updates if isinstance(u, ToolCallStart) and u.title.startswith("Setting up")
    ]
    closed = [
        t
        for t, u in editor.updates
        if isinstance(u, ToolCallProgress) and setup and u.tool_call_id == setup[0].tool_call_id and u.status
    ]
    green = (
        subprocess.run([sys.executable, "-m", "unittest"], cwd=workspace, capture_output=True).returncode == 0
    )
    return {
        "initialize_s": initialized,
        "setup_s": (closed[-1] - asked) if closed else None,
        "turn_s": ended - asked,
        "total_s": ended - started,
        "stop_reason": answer.stop_reason,
        "tests_pass_on_disk": green,
        "downloaded_mb": {name: round(megabytes(path), 1) for name, path in caches.items() if path.exists()},
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--uvx", default=shutil.which("uvx") or "uvx")
    args = parser.parse_args()
    # bench/acp.py, first on sys.path with this file's folder, would shadow the SDK's `acp`
    here = Path(__file__).resolve().parent
    sys.path[:] = [entry for entry in sys.path if Path(entry or ".").resolve() != here]
    work = Path(tempfile.mkdtemp(prefix="aider-lsp-first-run-"))
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", str(ROOT), "--no-deps", "-q", "-w", str(work / "dist")],
        check=True,
    )
    wheel = next((work / "dist").glob("aider_lsp-*.whl"))
    answers = scripted_answers((EXAMPLE / "calculator.py").read_text())
    with OfflineLLMServer(answers, models=["scripted-planner", "scripted-coder"]) as server:
        figures = asyncio.run(turn(args.uvx, wheel, work, server.base_url))
    for key, value in figures.items():
        print(f"{key}: {value:.1f}" if isinstance(value, float) else f"{key}: {value}")
    return 0 if figures["tests_pass_on_disk"] and figures["stop_reason"] == "end_turn" else 1


if __name__ == "__main__":
    raise SystemExit(main())
