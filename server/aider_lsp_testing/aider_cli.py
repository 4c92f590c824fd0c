"""Aider's own command line, run the way the benchmarks compare it with ours: one message,
answered by the scripted model on 127.0.0.1, no git, no map, no prompts, nothing downloaded."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from aider_lsp.config import aider_env

QUIET_FLAGS = (
    "--yes-always",
    "--edit-format",
    "whole",
    "--no-git",
    "--no-auto-commits",
    "--no-check-update",
    "--no-analytics",
    "--no-show-model-warnings",
    "--no-pretty",
    "--no-stream",
    "--map-tokens",
    "0",
    "--no-auto-lint",
    "--no-show-release-notes",
)


def aider_command(message: str, model: str, history: Path, files: list[str], *extra: str) -> list[str]:
    """`aider --message …` with the quiet flags, its history files under `history`."""
    return [
        str(aider_env.aider_executable()),
        "--message",
        message,
        "--model",
        model,
        *QUIET_FLAGS,
        *extra,
        "--chat-history-file",
        str(history / "chat.md"),
        "--input-history-file",
        str(history / "input"),
        *files,
    ]


def aider_environment(base_url: str, home: Path | None = None) -> dict[str, str]:
    """The environment pointing Aider at the scripted model (and, given, at a HOME whose price
    cache is filled: see `aider_home`)."""
    env = dict(os.environ)
    env.update(
        {"OPENAI_API_BASE": base_url, "OPENAI_API_KEY": "sk-bench", "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    )
    if home is not None:
        env["HOME"] = str(home)
    return env


def aider_home(base: Path) -> Path:
    """A HOME whose Aider price cache is filled from litellm's bundled map: without it Aider's
    CLI tries to download the list on every run (seconds without a network), which a user
    with a network does once a day; our server serves the same map to Aider (engine.py)."""
    home = base / "home"
    caches = home / ".aider" / "caches"
    caches.mkdir(parents=True)
    dump = "import json, sys, litellm; json.dump(litellm.model_cost, open(sys.argv[1], 'w'))"
    env = dict(os.environ, LITELLM_LOCAL_MODEL_COST_MAP="True")
    target = caches / "model_prices_and_context_window.json"
    subprocess.run([str(aider_env.aider_python()), "-c", dump, str(target)], env=env, check=True)
    return home
