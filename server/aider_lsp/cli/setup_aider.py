"""`aider-lsp setup-aider [--force]`: create the separate Aider environment (aider-chat + mcp 1.x)
in the user cache; aider_env.py owns what it holds and how it is found. The editor client runs
this subcommand on its zero set-up path and shows its output as it comes."""

from __future__ import annotations

import sys

from ..config import aider_env


def setup_aider(*, force: bool = False) -> int:
    """0 when the environment is ready, 1 (the reason on stderr) when it cannot be made."""
    try:
        # flushed line by line: an editor reading the pipe shows pip's progress as it comes
        aider_env.setup(force=force, log=lambda line: print(line, flush=True))
    except (RuntimeError, OSError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return 0
