"""`aider-lsp history` and `aider-lsp undo [RUN_ID]`: the runs undo can take back, and taking
one back (the last by default) as a revert that keeps every other change (checkpoints.py).

Why one module: both read the same history of a workspace's `.aider-lsp/checkpoints/`, and
print the same TaskResult the editor gets (`--json`: the TaskResult on stdout).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from ..config.settings import Settings, SettingsError, load_settings
from ..models import TaskResult
from .run import EXIT_FAILURE, EXIT_SUCCESS, EXIT_USAGE

if TYPE_CHECKING:
    from ..app import Application


def history_command(workspace: Path, *, as_json: bool = False) -> int:
    """List the runs and edits of a workspace, newest first (id, when, status, files, spend);
    an isolated run's line says where it stands, and a ready one's how to apply it."""
    from ..results import history_result

    app = open_application("history", workspace)
    if app is None:
        return EXIT_USAGE
    return print_result(history_result(app.history(), apply_command="aider-lsp apply"), as_json)


def undo_command(
    workspace: Path,
    run_id: str | None = None,
    *,
    force: bool = False,
    as_json: bool = False,
    files: list[str] | None = None,
) -> int:
    """Undo one run or edit (the last by default) as a revert; `force` (`--force`, what the
    refusal's "undo with force" means here) puts overlapping files back as before the run;
    `files` (`--files`) takes back its change to those files only."""
    app = open_application("undo", workspace)
    if app is None:
        return EXIT_USAGE
    return print_result(app.undo(run_id, force=force, files=files), as_json)


def open_application(command: str, workspace: Path) -> Application | None:
    """The workspace's Application (nothing started: undo, history and the decisions on an
    isolated run read and write files only), or None once the problem is printed."""
    from ..app import Application

    try:
        settings: Settings = load_settings()
    except SettingsError as exc:
        print(f"aider-lsp {command}: {exc}", file=sys.stderr)
        return None
    if not workspace.is_dir():
        print(f"aider-lsp {command}: the workspace is not a directory: {workspace}", file=sys.stderr)
        return None
    return Application.for_lookup(workspace.resolve(), settings)


def print_result(result: TaskResult, as_json: bool) -> int:
    """The TaskResult's content (`--json`: the whole TaskResult); the exit code its status says."""
    print(json.dumps(result.to_wire(), indent=1) if as_json else result.content)
    return EXIT_SUCCESS if result.ok else EXIT_FAILURE
