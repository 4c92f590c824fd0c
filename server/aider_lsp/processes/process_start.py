"""Our own Python processes never import a workspace's modules.

Python puts the folder a program starts from first on `sys.path` (`python -m` and `-c`: the
current folder). Started inside a repository, a process of ours would import the repository's
`httpx/`, `yaml.py` or `aider_mcp/` in place of the packages it was installed with: the
repository's code would run in our process, before any edit and without any question. So:

- a child of ours that runs Python gets `SAFE_PATH` (`-P`: no start folder on its path,
  PYTHONPATH still read) or `ISOLATED` (`-I`: nothing from the environment either) on its
  command line: the bundled Aider server, pip in `setup-aider`, the reaper;
- the process's own entry (`aider-lsp …`, `python -m aider_lsp …`) calls `leave_start_folder`:
  it drops the folder it was started in from `sys.path` and moves to a neutral folder of the
  user's own, so the children that inherit the current folder and start with `-c` (the
  index's worker processes, started by multiprocessing) do not start inside a workspace.

The user's test command is the exception: the user confirmed it, and it runs in the workspace.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

SAFE_PATH = "-P"  # Python 3.11+: the start folder is not put on sys.path
ISOLATED = "-I"  # -P, and no PYTHON* variables nor user site-packages


def neutral_folder() -> Path:
    """A folder of the user's own that holds no code: `$XDG_STATE_HOME/aider-lsp/run`
    (created; the user's home when it cannot be)."""
    base = Path(os.environ.get("XDG_STATE_HOME") or Path.home() / ".local" / "state")
    folder = base / "aider-lsp" / "run"
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError:
        return Path.home()
    return folder


def drop_start_folder_from_path() -> None:
    """Remove the start folder ('' or the current folder) that Python put on `sys.path`."""
    if sys.flags.safe_path:
        return
    start = os.getcwd()
    sys.path[:] = [entry for entry in sys.path if entry not in ("", ".", start)]


def leave_start_folder() -> None:
    """For the process's own entry only: nothing of the folder it started in is imported by
    it or by the Python children that inherit its current folder."""
    drop_start_folder_from_path()
    try:
        os.chdir(neutral_folder())
    except OSError:  # stay where we are: the children still get -P / -I
        pass
