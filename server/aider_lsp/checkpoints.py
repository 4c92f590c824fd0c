"""Checkpoints: the files as they were before an edit, so `aider-lsp.workflow.undo` can restore them.

A checkpoint records each file's bytes, or that it did not exist (undo then deletes it).
They live in `<workspace>/.aider-lsp/checkpoints/<id>/` (a folder that ignores itself in git),
newest last; undo restores the newest one and removes it, so repeated undos walk back.
Works without git and never touches the user's index or history.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import time
import uuid
from collections.abc import Collection, Iterable, Iterator
from contextvars import ContextVar
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .files import AccessDenied, FileAccessManager
from .state import STATE_DIR, ensure_state_dir

USER_CHANGED = "changed-by-the-user-during-the-edit"  # an `after` that no file content matches
MAX_CHECKPOINTS = 20


@dataclass
class Checkpoint:
    id: str
    label: str
    created: float
    files: dict[str, str | None] = field(default_factory=dict)  # rel path → blob name | None
    # rel path → sha256 of the file right after the edit (None: absent). A file that differs
    # from it at undo time was changed by the user since: undo leaves it alone unless forced.
    after: dict[str, str | None] = field(default_factory=dict)

    @property
    def paths(self) -> list[str]:
        return sorted(self.files)


class CheckpointStore:
    """Snapshots of workspace files under `.aider-lsp/checkpoints/`."""

    def __init__(self, files: FileAccessManager, max_kept: int = MAX_CHECKPOINTS) -> None:
        self.files = files
        self.max_kept = max_kept
        self.root = files.root / STATE_DIR / "checkpoints"

    # -- storage -----------------------------------------------------------------------------
    def _ensure_root(self) -> None:
        ensure_state_dir(self.files.root)
        self.root.mkdir(exist_ok=True)

    def _dir(self, checkpoint_id: str) -> Path:
        return self.root / checkpoint_id

    def _save(self, checkpoint: Checkpoint) -> None:
        manifest = {
            "id": checkpoint.id,
            "label": checkpoint.label,
            "created": checkpoint.created,
            "files": checkpoint.files,
            "after": checkpoint.after,
        }
        path = self._dir(checkpoint.id) / "manifest.json"
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(manifest, indent=1))
        os.replace(tmp, path)

    def _load(self, directory: Path) -> Checkpoint | None:
        try:
            data = json.loads((directory / "manifest.json").read_text())
            return Checkpoint(
                data["id"],
                data.get("label", ""),
                float(data["created"]),
                dict(data["files"]),
                dict(data.get("after") or {}),
            )
        except (OSError, ValueError, KeyError, TypeError):
            return None

    def saved(self) -> list[Checkpoint]:
        """All checkpoints, oldest first."""
        if not self.root.is_dir():
            return []
        found = [cp for d in self.root.iterdir() if d.is_dir() and (cp := self._load(d)) is not None]
        return sorted(found, key=lambda cp: (cp.created, cp.id))

    def latest(self) -> Checkpoint | None:
        items = self.saved()
        return items[-1] if items else None

    # -- recording ---------------------------------------------------------------------------
    def create(self, paths: Iterable[str], label: str = "") -> Checkpoint:
        """Snapshot the files now (before an edit); missing files are recorded as absent."""
        self._ensure_root()
        checkpoint = Checkpoint(f"{time.time_ns():020d}-{uuid.uuid4().hex[:8]}", label[:200], time.time())
        self._dir(checkpoint.id).mkdir(parents=True)
        self._record(checkpoint, paths)
        self._prune()
        return checkpoint

    def add(self, checkpoint: Checkpoint, paths: Iterable[str], *, absent: bool = False) -> None:
        """Add files not yet in the checkpoint: their current content, or absent=True for
        files an edit created (undo deletes them)."""
        self._record(checkpoint, paths, absent=absent)

    def _record(self, checkpoint: Checkpoint, paths: Iterable[str], *, absent: bool = False) -> None:
        directory = self._dir(checkpoint.id)
        for path in paths:
            rel = self.files.relative(path)
            if rel in checkpoint.files or rel.startswith(STATE_DIR + "/"):
                continue
            real = self.files.resolve(rel)
            if absent or not real.is_file():
                checkpoint.files[rel] = None
                continue
            blob = f"{len(checkpoint.files):05d}.blob"
            shutil.copy(real, directory / blob)  # content and permission bits (scripts stay executable)
            checkpoint.files[rel] = blob
        self._save(checkpoint)

    def record_after(self, checkpoint: Checkpoint, user_changed: Collection[str] = ()) -> None:
        """Fingerprint the checkpoint's files as the edit left them (call after each edit).

        `user_changed` files were saved by the user during the edit: undo leaves them alone
        (unless forced) whatever their content, as it does any file changed since the edit."""
        for rel in checkpoint.files:
            with contextlib.suppress(OSError, AccessDenied):
                checkpoint.after[rel] = _fingerprint(self.files.resolve(rel))
        for rel in user_changed:
            if rel in checkpoint.files:
                checkpoint.after[rel] = USER_CHANGED
        self._save(checkpoint)

    def forget(self, checkpoint: Checkpoint, paths: Iterable[str]) -> None:
        """Drop files from a checkpoint (the edit did not change them: nothing to undo)."""
        for rel in paths:
            checkpoint.files.pop(rel, None)
            checkpoint.after.pop(rel, None)
        self._save(checkpoint)

    def unchanged(self, checkpoint: Checkpoint) -> bool:
        """True when every recorded file is still as recorded (undo would do nothing)."""
        directory = self._dir(checkpoint.id)
        for rel, blob in checkpoint.files.items():
            real = self.files.resolve(rel)
            if blob is None:
                if real.exists():
                    return False
            elif not real.is_file() or real.read_bytes() != (directory / blob).read_bytes():
                return False
        return True

    def discard(self, checkpoint: Checkpoint) -> None:
        """Forget a checkpoint (the edit changed nothing)."""
        shutil.rmtree(self._dir(checkpoint.id), ignore_errors=True)

    def _prune(self) -> None:
        items = self.saved()
        for old in items[: max(0, len(items) - self.max_kept)]:
            self.discard(old)

    # -- undo --------------------------------------------------------------------------------
    def restore(
        self, checkpoint: Checkpoint | None = None, *, skip: Collection[str] = (), force: bool = False
    ) -> dict[str, Any]:
        """Put the files back as recorded (latest checkpoint by default) and drop the checkpoint.

        Files in `skip` (open with unsaved changes) are left alone and reported, and so are
        files changed since the edit (the user's later work) unless `force`; the checkpoint
        is kept when anything was skipped so the undo can be repeated.
        """
        checkpoint = checkpoint or self.latest()
        if checkpoint is None:
            return {"checkpoint": None, "restored": [], "deleted": [], "skipped": []}
        skip_rel = self._relative_paths(skip)
        restored: list[str] = []
        deleted: list[str] = []
        skipped: list[dict[str, str]] = []
        for rel, blob in sorted(checkpoint.files.items()):
            try:
                why = self._why_not_restore(checkpoint, rel, skip_rel, force)
                if why is not None:
                    skipped.append({"path": rel, "reason": why})
                    continue
                done = self._restore_file(checkpoint, rel, blob)
            except (OSError, AccessDenied) as exc:
                skipped.append({"path": rel, "reason": str(exc)})
                continue
            if done:
                (restored if blob is not None else deleted).append(rel)
        if not skipped:
            self.discard(checkpoint)
        return {
            "checkpoint": checkpoint.id,
            "label": checkpoint.label,
            "restored": restored,
            "deleted": deleted,
            "skipped": skipped,
        }

    def _relative_paths(self, paths: Collection[str]) -> set[str]:
        """Workspace-relative forms of `paths` (those outside the workspace dropped)."""
        relative = set()
        for path in paths:
            with contextlib.suppress(AccessDenied):
                relative.add(self.files.relative(path))
        return relative

    def _why_not_restore(
        self, checkpoint: Checkpoint, rel: str, skip_rel: set[str], force: bool
    ) -> str | None:
        """Why undo must leave this file alone (None: restore it): unsaved in the editor, or
        changed since the edit (neither as the edit left it nor as it was before), unless forced."""
        if rel in skip_rel:
            return "open in the editor with unsaved changes"
        if force or rel not in checkpoint.after:
            return None
        blob = checkpoint.files[rel]
        now = _fingerprint(self.files.resolve(rel))
        original = None if blob is None else _fingerprint(self._dir(checkpoint.id) / blob)
        if now in (checkpoint.after[rel], original):
            return None
        return "changed since the edit (undo would discard those changes)"

    def _restore_file(self, checkpoint: Checkpoint, rel: str, blob: str | None) -> bool:
        """Put one file back (delete it when it did not exist); True when something was done."""
        real = self.files.resolve(rel)
        if blob is None:
            if not real.is_file():
                return False
            real.unlink()
            return True
        source = self._dir(checkpoint.id) / blob
        real.parent.mkdir(parents=True, exist_ok=True)
        data = source.read_bytes()
        if real.is_file() and real.read_bytes() == data:
            return False
        tmp = real.with_name(f".{real.name}.aider-lsp-restore")
        tmp.write_bytes(data)
        shutil.copymode(source, tmp)  # the file's mode when recorded
        os.replace(tmp, real)
        return True


def snapshot_files(files: FileAccessManager, paths: Iterable[str]) -> dict[str, bytes | None]:
    """Each file's bytes now, before an edit (None: it does not exist), to compare with after.

    The one in-memory snapshot (the bridge's per call, the workflow's per run; checkpoints keep
    theirs on disk). A path outside the workspace or unreadable is left out: nothing to compare."""
    contents: dict[str, bytes | None] = {}
    for rel in paths:
        try:
            real = files.resolve(rel)
            contents[rel] = real.read_bytes() if real.is_file() else None
        except (OSError, AccessDenied):
            continue
    return contents


def _fingerprint(path: Path) -> str | None:
    """sha256 of a file's bytes, None when it is not a file."""
    if not path.is_file():
        return None
    return hashlib.sha256(path.read_bytes()).hexdigest()


ACTIVE_CHECKPOINT: ContextVar[Checkpoint | None] = ContextVar("aider_lsp_active_checkpoint", default=None)


@contextlib.contextmanager
def run_checkpoint(store: CheckpointStore, label: str) -> Iterator[Checkpoint]:
    """One checkpoint for a whole workflow run: every Aider edit inside the block adds its files
    to it (their content before the run), so one undo restores the state before the run.
    An empty checkpoint (nothing edited) is dropped at the end."""
    checkpoint = store.create([], label=label)
    token = ACTIVE_CHECKPOINT.set(checkpoint)
    try:
        yield checkpoint
    finally:
        ACTIVE_CHECKPOINT.reset(token)
        if not checkpoint.files:
            store.discard(checkpoint)
