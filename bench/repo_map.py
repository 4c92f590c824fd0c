"""What Aider's repository map (`aiderMapTokens`) costs an edit on a real repository.

A clone of a real git repository (by default this project's own, `--repo` for another) gets one
small file to edit; the same one-line edit (whole format, the scripted model on 127.0.0.1) is
made through the bundled Aider server with the map off (0) and at the given sizes:
  - first edit: a new server on the new clone (Aider already imported: `--settle` seconds after
    its start), the tags cache empty at start: the server's warm-up fills it in the background
    (file by file, pausing for an edit), the edit's map parses whatever is not parsed yet;
  - background build: a new server, the tags cache emptied, no edit: how long its warm-up takes to fill
    the tags cache (the cache's rows stop growing), then the first edit;
  - first edit, cache warm: a new server again, the tags cache in `.aider-lsp/` kept;
  - warm edits: the next edits in the same server (median), one-shot (`aider_ai_code`, a new
    Aider coder each: the map is ranked again) and as turns of one chat (a workflow run's
    edits: the map is reused while the chat's files stay the same).
Prints each, and the prompt tokens Aider sent per edit (the map's token cost).
Needs the Aider environment (`aider-lsp setup-aider`).

    .venv/bin/python bench/repo_map.py [--repo DIR] [--sizes 0 1024] [--warm 5] [--settle 8]
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import sqlite3
import statistics
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

from aider_lsp.aider.bridge import AiderBridge
from aider_lsp.config import aider_env
from aider_lsp.config.settings import load_settings
from aider_lsp.guards.files import FileAccessManager
from aider_lsp_testing.llm_server import ScriptedLLMServer, aider_whole, last_user_contains

MODEL = "openai/bench-coder"
TARGET = "bench_target.py"
VERSIONS = {
    "v1": "def add(a, b):\n    return a + b  # v1\n",
    "v2": "def add(a, b):\n    return a + b  # v2\n",
}
GIT = ["git", "-c", "user.name=bench", "-c", "user.email=bench@example.com"]


def clone(repo: Path) -> Path:
    """A private clone with the file to edit committed (the map lists tracked files)."""
    root = Path(tempfile.mkdtemp(prefix="aider-bench-map-")) / "repo"
    subprocess.run(["git", "clone", "--quiet", "--local", str(repo), str(root)], check=True)
    (root / TARGET).write_text(VERSIONS["v2"])
    subprocess.run([*GIT, "add", TARGET], cwd=root, check=True)
    subprocess.run([*GIT, "commit", "--quiet", "-m", "bench target"], cwd=root, check=True)
    return root


def next_prompt(root: Path) -> str:
    return "Change the comment to v2" if "# v1" in (root / TARGET).read_text() else "Change the comment to v1"


async def edit(bridge: AiderBridge, root: Path) -> tuple[float, int]:
    """One edit: (seconds, prompt tokens Aider sent)."""
    started = time.perf_counter()
    outcome = await bridge.edit(
        "aider_ai_code", {"ai_coding_prompt": next_prompt(root), "relative_editable_files": [TARGET]}
    )
    elapsed = time.perf_counter() - started
    if not outcome.success:
        raise SystemExit(f"edit failed: {outcome.error}")
    return elapsed, outcome.usage.input_tokens if outcome.usage else -1


async def chat_turn(bridge: AiderBridge, root: Path, session: str | None) -> tuple[float, str]:
    """One turn of a kept chat (a workflow run's edits): (seconds, the session)."""
    call: dict[str, Any] = {"message": next_prompt(root), "relative_editable_files": [TARGET]}
    if session:
        call["session_id"] = session
    started = time.perf_counter()
    outcome = await bridge.edit("aider_chat", call)
    elapsed = time.perf_counter() - started
    if not outcome.changed_files or not outcome.session_id:
        raise SystemExit(f"chat turn failed: {outcome.error}")
    return elapsed, outcome.session_id


async def first_edit(root: Path, settings: Any, settle: float) -> tuple[float, int, AiderBridge]:
    bridge = AiderBridge(FileAccessManager(root), lambda: settings)
    if not await bridge.warm_up():
        raise SystemExit("the Aider server did not start")
    await asyncio.sleep(settle)  # Aider imported in the background: only the edit is timed
    seconds, tokens = await edit(bridge, root)
    return seconds, tokens, bridge


def cached_files(root: Path) -> int:
    """Rows in Aider's tags cache (a diskcache: SQLite, one row a parsed file)."""
    database = root / ".aider-lsp" / "aider.tags.cache.v4" / "cache.db"
    try:
        with sqlite3.connect(database, timeout=1) as connection:
            return int(connection.execute("SELECT COUNT(*) FROM Cache").fetchone()[0])
    except sqlite3.Error:
        return 0


async def background_build(root: Path, settings: Any, quiet: float = 3.0) -> tuple[float, int, float]:
    """A new server, no edit: (seconds until its tags cache stopped growing, its rows, then
    the first edit's seconds)."""
    shutil.rmtree(root / ".aider-lsp", ignore_errors=True)
    bridge = AiderBridge(FileAccessManager(root), lambda: settings)
    started = time.perf_counter()
    try:
        if not await bridge.warm_up():
            raise SystemExit("the Aider server did not start")
        rows, last_change = 0, time.perf_counter()
        while rows == 0 or time.perf_counter() - last_change < quiet:
            await asyncio.sleep(0.25)
            now = cached_files(root)
            if now != rows:
                rows, last_change = now, time.perf_counter()
        built = last_change - started
        seconds, _ = await edit(bridge, root)
    finally:
        await bridge.aclose()
    return built, rows, seconds


async def bench_size(root: Path, base_url: str, size: int, warm_runs: int, settle: float) -> dict[str, Any]:
    settings = load_settings(
        {
            "baseUrl": base_url,
            "aiderModel": MODEL,
            "aiderServer": {"args": ["--edit-format", "whole"]},
            "aiderMapTokens": size,
        },
        environ={},
    )
    shutil.rmtree(root / ".aider-lsp", ignore_errors=True)  # an empty tags cache
    cold, tokens, bridge = await first_edit(root, settings, settle)
    await bridge.aclose()
    if size > 0:
        built_seconds, rows, after_build = await background_build(root, settings)
    else:  # no map: nothing to build
        built_seconds, rows, after_build = 0.0, 0, cold
    cached, _, bridge = await first_edit(root, settings, settle)
    try:
        warm = [await edit(bridge, root) for _ in range(warm_runs)]
        _, session = await chat_turn(bridge, root, None)
        turns = [(await chat_turn(bridge, root, session))[0] for _ in range(warm_runs)]
    finally:
        await bridge.aclose()
    return {
        "cold": cold,
        "built": built_seconds,
        "rows": rows,
        "after_build": after_build,
        "cached": cached,
        "warm": statistics.median(seconds for seconds, _ in warm),
        "turn": statistics.median(turns),
        "tokens": statistics.median(sent for _, sent in warm) if warm else tokens,
    }


def tracked_files(root: Path) -> int:
    listed = subprocess.run(["git", "ls-files"], cwd=root, capture_output=True, text=True, check=True)
    return len(listed.stdout.splitlines())


def main() -> int:
    here = Path(__file__).resolve().parent.parent
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--repo", type=Path, default=here, help="a git repository to clone (default: this one)"
    )
    parser.add_argument("--sizes", type=int, nargs="+", default=[0, 1024], help="aiderMapTokens values")
    parser.add_argument("--warm", type=int, default=5, help="warm edits per size")
    parser.add_argument("--settle", type=float, default=8.0, help="seconds for Aider's import after start")
    args = parser.parse_args()
    if not aider_env.is_ready():
        print(f"the Aider environment is missing: run `aider-lsp setup-aider` ({aider_env.env_dir()})")
        return 1
    root = clone(args.repo)
    count = tracked_files(root)
    server = ScriptedLLMServer().start()
    for tag, content in VERSIONS.items():
        server.add_rule(last_user_contains(f"to {tag}"), aider_whole({TARGET: content}))
    try:
        rows = [
            (size, asyncio.run(bench_size(root, server.base_url, size, args.warm, args.settle)))
            for size in args.sizes
        ]
    finally:
        server.stop()
        shutil.rmtree(root.parent, ignore_errors=True)
    print(f"One-line edit on a clone of {args.repo} ({count} tracked files), scripted model:")
    header = (
        "aiderMapTokens",
        f"first edit @{args.settle:g}s",
        "cache built in",
        "first after build",
        "first, cache warm",
        "warm edit",
        "chat turn",
        "tokens sent",
    )
    print("  " + "  ".join(f"{name:>17}" for name in header))
    for size, row in rows:
        built = f"{row['built']:.1f} s ({row['rows']} files)"
        times = [f"{row[key]:.2f} s" for key in ("after_build", "cached", "warm", "turn")]
        cells = [str(size), f"{row['cold']:.2f} s", built, *times, f"{row['tokens']:.0f}"]
        print("  " + "  ".join(f"{cell:>17}" for cell in cells))
        if size > 0:
            ratio = row["after_build"] / row["warm"]
            verdict = "OK" if ratio <= 2 else "MISSED"
            print(f"    first edit after the build / warm edit: {ratio:.2f} (target <= 2: {verdict})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
