"""Where aider-lsp keeps its state: the workspace's `.aider-lsp/` folder (checkpoints, the
index) and, for what the user decided about a workspace, a folder of the user's own.

One place creates `.aider-lsp/`, with a `.gitignore` that ignores the whole folder, so git
never sees the state whichever part of the server writes first. A user's decision (the test
command they confirmed) lives outside the workspace, under `$XDG_STATE_HOME/aider-lsp/` (default
`~/.local/state/aider-lsp/`): a file inside a cloned repository could otherwise pre-confirm a
command the user never saw (a repository is not trusted to choose what runs).
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

STATE_DIR = ".aider-lsp"
GITIGNORE_TEXT = "*\n"  # everything in it, this file included


def ensure_state_dir(root: Path) -> Path:
    """`<root>/.aider-lsp/`, created with its `.gitignore` when missing (OSError if it cannot be)."""
    folder = root / STATE_DIR
    folder.mkdir(exist_ok=True)
    ignore = folder / ".gitignore"
    if not ignore.exists():
        ignore.write_text(GITIGNORE_TEXT, encoding="utf-8")
    return folder


def user_state_dir(root: Path) -> Path:
    """The user's own state folder for the workspace `root` (not created): one per workspace
    path, under `$XDG_STATE_HOME/aider-lsp/workspaces/`."""
    base = Path(os.environ.get("XDG_STATE_HOME") or Path.home() / ".local" / "state")
    key = hashlib.sha256(str(root.resolve()).encode("utf-8", "surrogateescape")).hexdigest()[:20]
    return base / "aider-lsp" / "workspaces" / key
