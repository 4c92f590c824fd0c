"""The workspace's `.aider-lsp/` folder: aider-lsp's own state (checkpoints, the index).

One place creates it, with a `.gitignore` that ignores the whole folder, so git never sees
the state whichever part of the server writes first.
"""

from __future__ import annotations

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
