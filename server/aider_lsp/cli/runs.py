"""`aider-lsp apply | discard | keep RUN_ID`: the user's decision on a ready isolated run.

Why here and not in the run's own process: an isolated run ends ready, its change kept on disk
(isolation/store.py), so the decision may come later, from another terminal or after the editor
made the run. Each acts on the workspace of the current folder unless `--workspace` says, like
`aider-lsp undo` (history.py), and prints the TaskResult the editor gets (`--json`: all of it).
Exit codes: 0 done, 1 refused, or nothing applied because a file cannot take the change (the
text names each file with its lines, and how to apply anyway), 2 a usage error.
"""

from __future__ import annotations

from pathlib import Path

from .history import open_application, print_result
from .run import EXIT_USAGE


def decide_command(
    decision: str, workspace: Path, run_id: str, *, force: bool = False, as_json: bool = False
) -> int:
    """Apply (`force`: the run's version wins where the user changed the same lines), discard or
    keep (`decision`) the run `run_id` of `workspace`."""
    from ..models import SkipReason
    from ..results import run_action_result

    app = open_application(decision, workspace)
    if app is None:
        return EXIT_USAGE
    if decision == "apply":
        action = app.apply_run(run_id, force=force)
    elif decision == "discard":
        action = app.discard_run(run_id)
    else:
        action = app.keep_run(run_id)
    code = print_result(run_action_result(action), as_json)
    if not as_json and any(item.kind is SkipReason.CHANGED_SINCE for item in action.skipped):
        print(f"  aider-lsp apply {run_id} --force --workspace {app.workspace}")
    return code
