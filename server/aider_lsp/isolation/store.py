"""Where isolated runs are kept: `$XDG_STATE_HOME/aider-lsp/workspaces/<key>/runs/<id>/`, one
folder per run holding `run.json` (IsolatedRunManifest), its tree (`tree/`), a copy of the
workspace's index (`index.sqlite3`) and, once it ended, its change as blobs (`change/`).

Why outside the workspace: a worktree inside the repository's tree would show in the user's
`git status`, their search and their test runs. Why on disk and not in memory: the CLI applies a
run the server made, and the next start after a crash finds the runs the crash left. The runs
that are over (applied, discarded, kept) are bounded like the history; a ready run's change is
the user's until they decide.
"""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
import time
import uuid
from pathlib import Path

from pydantic import ValidationError

from ..config.state import user_state_dir
from ..guards.files import FileAccessManager
from ..history.checkpoints import CheckpointStore, FileSides, alive_elsewhere, newest_first, run_record
from ..models import IsolatedRunManifest, RunRecord, RunState

log = logging.getLogger(__name__)

MANIFEST = "run.json"
OWNER = "owner.pid"  # the process making the run's tree, before its record exists
# path → (bytes at the run's start, bytes in the run's version); None: absent
OVER = frozenset({RunState.APPLIED, RunState.DISCARDED, RunState.KEPT, RunState.UNDONE})


def new_run_id() -> str:
    """Sortable by start like the history's ids, unique across processes."""
    return f"{time.time_ns():020d}-{uuid.uuid4().hex[:8]}"


class RunStore:
    """The isolated runs of one workspace, on disk."""

    def __init__(self, workspace: Path, max_kept: int) -> None:
        self.workspace = workspace
        self.max_kept = max_kept
        self.root = user_state_dir(workspace) / "runs"

    def folder(self, run_id: str) -> Path:
        return self.root / run_id

    def tree_path(self, run_id: str) -> Path:
        return self.folder(run_id) / tree_name(run_id)

    def index_path(self, run_id: str) -> Path:
        return self.folder(run_id) / "index.sqlite3"

    def save(self, manifest: IsolatedRunManifest) -> None:
        """Write the run's manifest whole (replace: never a half-written file)."""
        folder = self.folder(manifest.record.id)
        folder.mkdir(parents=True, exist_ok=True)
        tmp = folder / (MANIFEST + ".tmp")
        tmp.write_text(manifest.model_dump_json(indent=1))
        os.replace(tmp, folder / MANIFEST)

    def load(self, run_id: str) -> IsolatedRunManifest | None:
        """A run by id (None: no such run, or an id no run folder can have)."""
        if not run_id or "/" in run_id or run_id.startswith(".") or "\0" in run_id:
            return None
        try:
            return IsolatedRunManifest.model_validate_json((self.folder(run_id) / MANIFEST).read_text())
        except (OSError, ValueError, ValidationError):
            return None

    def all(self) -> list[IsolatedRunManifest]:
        """Every run kept, oldest first."""
        if not self.root.is_dir():
            return []
        found = [run for folder in self.root.iterdir() if (run := self.load(folder.name)) is not None]
        return sorted(found, key=lambda run: (run.record.created, run.record.id))

    def listed(self) -> list[RunRecord]:
        """The runs the history lists beside the runs in place: all but the applied ones (an
        applied run is listed there, as the checkpoint under the same id)."""
        return [run.record for run in self.all() if run.record.state is not RunState.APPLIED]

    def claim(self, run_id: str) -> None:
        """Mark the run's folder as this process's before its tree is made (another process's
        recovery leaves a folder whose maker lives alone)."""
        folder = self.folder(run_id)
        folder.mkdir(parents=True, exist_ok=True)
        (folder / OWNER).write_text(str(os.getpid()))

    def strays(self) -> list[Path]:
        """Run folders without a readable manifest whose maker is gone (a start a stopped server
        did not finish, a spare of one)."""
        if not self.root.is_dir():
            return []
        folders = [folder for folder in self.root.iterdir() if folder.is_dir()]
        return [folder for folder in folders if self.load(folder.name) is None and not _maker_alive(folder)]

    # -- the change ----------------------------------------------------------------------------
    def put_change(self, manifest: IsolatedRunManifest, sides: FileSides) -> None:
        """Keep the run's change: each file's bytes at the start and in the run's version."""
        folder = self.folder(manifest.record.id) / "change"
        folder.mkdir(parents=True, exist_ok=True)
        files: dict[str, tuple[str | None, str | None]] = {}
        for number, (rel, (base, final)) in enumerate(sorted(sides.items())):
            files[rel] = (_put(folder, f"{number:05d}.base", base), _put(folder, f"{number:05d}.run", final))
        manifest.files = files
        self.save(manifest)

    def change(self, manifest: IsolatedRunManifest) -> FileSides:
        """The run's change as kept: path → (bytes at the start, bytes in the run's version)."""
        folder = self.folder(manifest.record.id) / "change"
        files = manifest.files.items()
        return {rel: (_get(folder, base), _get(folder, final)) for rel, (base, final) in files}

    # -- cleaning up -----------------------------------------------------------------------------
    def forget_tree_files(self, run_id: str) -> None:
        """Drop what only a run under way needs (its index copy); the record stays."""
        with contextlib.suppress(OSError):
            self.index_path(run_id).unlink()

    def remove(self, run_id: str) -> None:
        shutil.rmtree(self.folder(run_id), ignore_errors=True)

    def prune(self) -> None:
        """Keep the newest `max_kept` runs that are over; running and ready runs always stay."""
        over = [run for run in self.all() if run.record.state in OVER]
        for old in over[: max(0, len(over) - self.max_kept)]:
            self.remove(old.record.id)


def tree_name(run_id: str) -> str:
    """A run's tree's folder name, unique per run: git names a worktree's admin folder after it,
    and two worktrees added at once under one name race for it."""
    return f"tree-{run_id.rsplit('-', 1)[-1]}"


def _maker_alive(folder: Path) -> bool:
    try:
        pid = int((folder / OWNER).read_text())
    except (OSError, ValueError):
        return False
    return pid == os.getpid() or alive_elsewhere(pid)


def _put(folder: Path, name: str, data: bytes | None) -> str | None:
    if data is None:
        return None
    (folder / name).write_bytes(data)
    return name


def _get(folder: Path, name: str | None) -> bytes | None:
    return None if name is None else (folder / name).read_bytes()


def stored_runs(workspace: Path) -> list[RunRecord]:
    """A folder's history as it is on disk, read without opening the folder (no index, no
    Aider server): how an editor lists the runs of every folder of its window without starting
    each one. Runs a dead process left are listed as their records say; their recovery waits
    for the folder's opening."""
    files = FileAccessManager(workspace)
    in_place = [run_record(checkpoint) for checkpoint in CheckpointStore(files).saved()]
    return newest_first([*in_place, *RunStore(files.root, 0).listed()])
