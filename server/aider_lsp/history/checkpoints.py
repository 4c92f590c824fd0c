"""Checkpoints: what each Aider edit and workflow run changed, so undo can take it back.

A checkpoint (one per edit, or one per workflow run) records each file's bytes before the run
(`files`, or that it did not exist) and, per edit, the file before and after that edit
(`edits`). Undo is a revert (revert.py): each edit's own change is taken back from the file as
it is now, newest edit first, so what anyone else changed before, during or after the run
stays; where changes overlap nothing is written and the lines are named. Any past run can be
undone, not only the last (like `git revert`, never like `git reset`); an undone run stays in
the history, marked. `force` puts files back as they were before the run, whatever changed.
They live in `<workspace>/.aider-lsp/checkpoints/<id>/` (a folder that ignores itself in git),
oldest dropped first beyond the history bound (runs and megabytes). Works without git and never
touches the user's index or history.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import shutil
import time
import uuid
from collections.abc import Callable, Collection, Iterable, Iterator
from contextvars import ContextVar
from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path
from typing import Any

from pydantic import TypeAdapter, ValidationError

from aider_mcp.snapshots import unified_diff  # the edits' own diff format, for a run's diff

from ..config.state import STATE_DIR, ensure_state_dir
from ..guards.files import AccessDenied, FileAccessManager
from ..models import (
    Isolation,
    RestoreReport,
    RunChanges,
    RunFileDiff,
    RunRecord,
    RunState,
    RunStep,
    SkippedFile,
    SkipReason,
)
from .revert import Overlap, revert_change

log = logging.getLogger(__name__)

USER_CHANGED = "changed-by-the-user-during-the-edit"  # an `after` that no file content matches
MAX_CHECKPOINTS = 50
MAX_HISTORY_BYTES = 200 * 1024 * 1024
UNSURE_REASON = "another program changed it while Aider was writing it"
UNSAVED_REASON = "open in the editor with unsaved changes"
CHANGED_SINCE_REASON = "changed since the edit (undo would discard those changes)"


@dataclass
class Checkpoint:
    id: str
    label: str
    created: float
    files: dict[str, str | None] = field(default_factory=dict)  # rel path → blob name | None
    # rel path → sha256 of the file right after the edit (None: absent). A file that differs
    # from it at undo time was changed by the user since: undo leaves it alone unless forced.
    after: dict[str, str | None] = field(default_factory=dict)
    # each edit's own change, oldest first: rel path → [blob before | None, blob after | None]
    edits: list[dict[str, list[str | None]]] = field(default_factory=list)
    # files another program changed while Aider wrote them: the two changes cannot be told apart
    unsure: list[str] = field(default_factory=list)
    meta: dict[str, Any] = field(default_factory=dict)  # what the history shows (kind, status, …)
    undone: float | None = None  # when it was undone (it stays in the history)
    owner: int | None = None  # the process that made it (another front may share the folder)

    @property
    def paths(self) -> list[str]:
        return sorted(self.files)

    @property
    def edited(self) -> list[str]:
        """Files the edits changed, in the order first changed."""
        return list(dict.fromkeys(rel for edit in self.edits for rel in edit))


# each changed file's bytes before and after a run (None: absent)
FileSides = dict[str, tuple[bytes | None, bytes | None]]


class CheckpointStore:
    """Snapshots of workspace files under `.aider-lsp/checkpoints/`."""

    def __init__(
        self, files: FileAccessManager, max_kept: int = MAX_CHECKPOINTS, max_bytes: int = MAX_HISTORY_BYTES
    ) -> None:
        self.files = files
        self.max_kept = max_kept
        self.max_bytes = max_bytes
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
            "edits": checkpoint.edits,
            "unsure": checkpoint.unsure,
            "meta": checkpoint.meta,
            "undone": checkpoint.undone,
            "owner": checkpoint.owner,
        }
        path = self._dir(checkpoint.id) / "manifest.json"
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(manifest, indent=1))
        os.replace(tmp, path)

    def _load(self, directory: Path) -> Checkpoint | None:
        try:
            data = json.loads((directory / "manifest.json").read_text())
            undone = data.get("undone")
            return Checkpoint(
                data["id"],
                data.get("label", ""),
                float(data["created"]),
                dict(data["files"]),
                dict(data.get("after") or {}),
                [dict(edit) for edit in data.get("edits") or []],
                list(data.get("unsure") or []),
                dict(data.get("meta") or {}),
                None if undone is None else float(undone),
                _pid(data.get("owner")),
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
        """The newest checkpoint not undone yet (what "undo the last" takes back)."""
        items = [cp for cp in self.saved() if cp.undone is None]
        return items[-1] if items else None

    def find(self, checkpoint_id: str) -> Checkpoint | None:
        """A checkpoint by its id (a run id of the history), undone or not."""
        if not checkpoint_id or "/" in checkpoint_id or checkpoint_id.startswith("."):
            return None
        directory = self._dir(checkpoint_id)
        try:  # an id no folder can have (too long, a NUL byte) names no run
            return self._load(directory) if directory.is_dir() else None
        except (OSError, ValueError):
            return None

    def annotate(self, checkpoint_id: str | None, **meta: Any) -> None:
        """Add what the history shows of a run or edit (status, iterations, spend, …)."""
        checkpoint = self.find(checkpoint_id) if checkpoint_id else None
        if checkpoint is not None:
            checkpoint.meta.update(meta)
            self._save(checkpoint)

    # -- recording ---------------------------------------------------------------------------
    def create(self, paths: Iterable[str], label: str = "", checkpoint_id: str | None = None) -> Checkpoint:
        """Snapshot the files now (before an edit); missing files are recorded as absent.
        `checkpoint_id`: an id given elsewhere (an isolated run applied keeps its run id)."""
        self._ensure_root()
        run_id = checkpoint_id or f"{time.time_ns():020d}-{uuid.uuid4().hex[:8]}"
        checkpoint = Checkpoint(run_id, label[:200], time.time())
        checkpoint.owner = os.getpid()
        self._dir(checkpoint.id).mkdir(parents=True)
        self._record(checkpoint, paths)
        self._prune()
        return checkpoint

    def add(self, checkpoint: Checkpoint, paths: Iterable[str], *, absent: bool = False) -> None:
        """Add files not yet in the checkpoint: their current content, or absent=True for
        files an edit created (undo deletes them)."""
        self._record(checkpoint, paths, absent=absent)

    def add_known(self, checkpoint: Checkpoint, before: dict[str, bytes | None]) -> None:
        """Add files not yet in the checkpoint with the content they held before (None: absent),
        known from elsewhere: a file Aider edited outside its chat is written before this side
        can read it, so its Aider server tells what it held."""
        directory = self._dir(checkpoint.id)
        for path, data in before.items():
            rel = self.files.relative(path)
            if rel in checkpoint.files or rel.startswith(STATE_DIR + "/"):
                continue
            checkpoint.files[rel] = None if data is None else _put_blob(directory, data)
        self._save(checkpoint)

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
        (unless forced) whatever their content, as it does any file changed since the edit.
        The mark stays for the checkpoint's life: a later edit of a workflow run writes over the
        other program's change, but restoring the bytes before the run would still discard it."""
        for rel in checkpoint.files:
            if checkpoint.after.get(rel) == USER_CHANGED:
                continue
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

    def content_before(self, checkpoint: Checkpoint, rel: str) -> bytes | None:
        """A file's bytes as the checkpoint recorded them (None: it did not exist then); a
        workflow run's diff reads the files as they were before the run here."""
        blob = checkpoint.files.get(rel)
        return None if blob is None else (self._dir(checkpoint.id) / blob).read_bytes()

    def net_change(self, checkpoint: Checkpoint) -> dict[str, tuple[bytes | None, bytes | None]]:
        """Each file the run's edits changed: its bytes before the run's first edit of it and
        after its last (None: absent), for the diff editor's "before the run ↔ after the run".
        Read from the edit records, so what others changed between the edits is not the run's;
        a checkpoint without edit records (an older version's) has none."""
        sides: dict[str, tuple[bytes | None, bytes | None]] = {}
        directory = self._dir(checkpoint.id)
        for edit in checkpoint.edits:
            for rel, (before, after) in edit.items():
                first = sides[rel][0] if rel in sides else _get_blob(directory, before)
                sides[rel] = (first, _get_blob(directory, after))
        return sides

    def changed_since(self, checkpoint: Checkpoint) -> dict[str, tuple[bytes | None, bytes | None]]:
        """Each file the checkpoint covers that differs now: its bytes as recorded (before a
        workflow run first touched it) and now (None: absent), whoever changed it. What the
        run changed, for the judge and the run's diff (a file that cannot be read is left out)."""
        sides: dict[str, tuple[bytes | None, bytes | None]] = {}
        for rel in checkpoint.paths:
            try:
                before = self.content_before(checkpoint, rel)
                real = self.files.resolve(rel)
                after = real.read_bytes() if real.is_file() else None
            except (OSError, AccessDenied):
                continue
            if after != before:
                sides[rel] = (before, after)
        return sides

    def settled(self, checkpoint: Checkpoint) -> Checkpoint | None:
        """A workflow run's checkpoint at the run's end: dropped when nothing it covers changed
        (undo would do nothing: None), else kept; one that cannot be read is kept (logged)."""
        try:
            if not checkpoint.files:
                return None
            if self.unchanged(checkpoint):
                self.discard(checkpoint)
                return None
        except (OSError, AccessDenied):
            log.debug("could not settle the workflow checkpoint", exc_info=True)
        return checkpoint

    def run_changes(self, checkpoint: Checkpoint | None) -> RunChanges:
        """What a workflow run changed against the files before it, its diff in the edits'
        format (no checkpoint: the run changed nothing)."""
        if checkpoint is None:
            return RunChanges()
        sides = self.changed_since(checkpoint)
        return RunChanges(
            changed_files=tuple(rel for rel, (before, _) in sides.items() if before is not None),
            created_files=tuple(rel for rel, (before, _) in sides.items() if before is None),
            diff="".join(unified_diff(rel, before, after) for rel, (before, after) in sides.items()),
            checkpoint_id=checkpoint.id,
        )

    def discard(self, checkpoint: Checkpoint) -> None:
        """Forget a checkpoint (the edit changed nothing)."""
        shutil.rmtree(self._dir(checkpoint.id), ignore_errors=True)

    def _prune(self) -> None:
        """Keep the newest `max_kept` checkpoints within `max_bytes` (the newest always stays)."""
        items = self.saved()
        for old in items[: max(0, len(items) - self.max_kept)]:
            self.discard(old)
        items = items[max(0, len(items) - self.max_kept) :]
        sizes = [_folder_bytes(self._dir(cp.id)) for cp in items]
        while len(items) > 1 and sum(sizes) > self.max_bytes:
            self.discard(items.pop(0))
            sizes.pop(0)

    # -- each edit's own change ----------------------------------------------------------------
    def record_edit(
        self,
        checkpoint: Checkpoint,
        before: dict[str, bytes | None],
        created: Collection[str] = (),
        unsure: Collection[str] = (),
    ) -> None:
        """Record what one edit changed: each file of `before` (its bytes right before the edit)
        and each file it `created`, as it is now, where it differs. `unsure` files were changed
        by another program while Aider wrote them: named at undo, never reverted."""
        directory = self._dir(checkpoint.id)
        change: dict[str, list[str | None]] = {}
        known = {**dict.fromkeys(created), **before}
        for rel, old in known.items():
            if rel in unsure:
                continue
            try:
                real = self.files.resolve(rel)
                new = real.read_bytes() if real.is_file() else None
            except (OSError, AccessDenied):
                continue
            if new != old:
                change[rel] = [_put_blob(directory, old), _put_blob(directory, new)]
        if change:
            checkpoint.edits.append(change)
        checkpoint.unsure.extend(rel for rel in unsure if rel not in checkpoint.unsure)
        self._save(checkpoint)
        self._prune()

    # -- undo --------------------------------------------------------------------------------
    def drop_interrupted(self) -> None:
        """Drop the newest checkpoints of edits interrupted before they settled (server or editor
        killed): their files never changed, so undoing them would do nothing. One that another
        live process is still filling (VS Code and an ACP editor on one folder) is its edit in
        progress, not an interrupted one: it stays."""
        latest = self.latest()
        while latest is not None and latest.files and not latest.after:
            if alive_elsewhere(latest.owner):
                return
            try:
                if not self.unchanged(latest):
                    return
            except (OSError, AccessDenied):
                return
            self.discard(latest)
            latest = self.latest()

    def restore(
        self, checkpoint: Checkpoint | None = None, *, skip: Collection[str] = (), force: bool = False
    ) -> RestoreReport:
        """Put the files back as recorded (latest checkpoint by default) and drop the checkpoint.

        Files in `skip` (open with unsaved changes) are left alone and reported, and so are
        files changed since the edit (the user's later work) unless `force`; the checkpoint
        is kept when anything was skipped so the undo can be repeated.
        """
        checkpoint = checkpoint or self.latest()
        if checkpoint is None:
            return RestoreReport()
        files = checkpoint.files
        report = self._each_file(
            checkpoint,
            sorted(files),
            skip,
            lambda rel: self._restore_file(checkpoint, rel, files[rel], force=force),
        )
        if not report.skipped:
            self.discard(checkpoint)
        return report

    def revert(
        self,
        checkpoint: Checkpoint | None = None,
        *,
        skip: Collection[str] = (),
        force: bool = False,
        only: Collection[str] | None = None,
    ) -> RestoreReport:
        """Undo a checkpoint (the newest not undone by default) as a revert: each edit's own
        change taken back from the files as they are now. Files open with unsaved changes, and
        files whose later changes overlap the run's (the lines named), are left alone unless
        `force` (which puts them back as before the run); the checkpoint is marked undone once
        nothing was left. `only` takes back the run's change to those files alone (its tests,
        say): the run stays in the history, and undoing it whole later leaves them as they are.
        A checkpoint without edit records (made by an older version) is restored as before."""
        checkpoint = checkpoint or self.latest()
        if checkpoint is None:
            return RestoreReport()
        if not checkpoint.edits and only is None:
            return self.restore(checkpoint, skip=skip, force=force)
        paths = [*checkpoint.edited, *(p for p in checkpoint.unsure if p not in checkpoint.edited)]
        if only is not None:
            paths = [path for path in paths if path in only]
        report = self._each_file(checkpoint, paths, skip, _Reverter(self, checkpoint, force).file)
        if only is not None:
            return report
        if not report.skipped:
            checkpoint.undone = time.time()
            self._save(checkpoint)
        return report

    def _each_file(
        self,
        checkpoint: Checkpoint,
        paths: list[str],
        skip: Collection[str],
        undo_file: Callable[[str], _Restored | SkippedFile],
    ) -> RestoreReport:
        """Undo each file (`undo_file`) but those open with unsaved changes (`skip`): what was
        written, deleted and left alone, and why."""
        unsaved = self.relative_paths(skip)
        done: dict[_Restored, list[str]] = {outcome: [] for outcome in _Restored}
        skipped: list[SkippedFile] = []
        for rel in paths:
            if rel in unsaved:
                skipped.append(SkippedFile(path=rel, reason=UNSAVED_REASON, kind=SkipReason.UNSAVED))
                continue
            try:
                outcome = undo_file(rel)
            except (OSError, AccessDenied) as exc:
                outcome = SkippedFile(path=rel, reason=str(exc), kind=SkipReason.UNWRITABLE)
            if isinstance(outcome, SkippedFile):
                skipped.append(outcome)
            else:
                done[outcome].append(rel)
        return RestoreReport(
            checkpoint=checkpoint.id,
            label=checkpoint.label,
            restored=tuple(done[_Restored.WRITTEN]),
            deleted=tuple(done[_Restored.DELETED]),
            skipped=tuple(skipped),
        )

    def relative_paths(self, paths: Collection[str]) -> set[str]:
        """Workspace-relative forms of `paths` (those outside the workspace are not ours)."""
        relative = set()
        for path in paths:
            with contextlib.suppress(AccessDenied):
                relative.add(self.files.relative(path))
        return relative

    def _restore_file(
        self, checkpoint: Checkpoint, rel: str, blob: str | None, *, force: bool
    ) -> _Restored | SkippedFile:
        """One file back as recorded: written, deleted (the edit created it), already as
        recorded, or skipped because the user changed it since the edit (unless `force`)."""
        real = self.files.resolve(rel)
        recorded = None if blob is None else self._dir(checkpoint.id) / blob
        if not force and self._changed_since(checkpoint, rel, real, recorded):
            return SkippedFile(path=rel, reason=CHANGED_SINCE_REASON, kind=SkipReason.CHANGED_SINCE)
        if recorded is None:
            if not real.is_file():
                return _Restored.AS_RECORDED
            real.unlink()
            return _Restored.DELETED
        return _Restored.WRITTEN if _write_back(recorded, real) else _Restored.AS_RECORDED

    @staticmethod
    def _changed_since(checkpoint: Checkpoint, rel: str, real: Path, recorded: Path | None) -> bool:
        """The file is neither as the edit left it nor as recorded: later work of the user's."""
        if rel not in checkpoint.after:
            return False
        original = None if recorded is None else _fingerprint(recorded)
        return _fingerprint(real) not in (checkpoint.after[rel], original)


class _Reverter:
    """Undo one checkpoint as a revert (see the module docstring): per file, every edit's change
    taken back from the file as it is now, newest edit first."""

    def __init__(self, store: CheckpointStore, checkpoint: Checkpoint, force: bool) -> None:
        self.store = store
        self.checkpoint = checkpoint
        self.force = force
        self.directory = store._dir(checkpoint.id)

    def file(self, rel: str) -> _Restored | SkippedFile:
        """Revert one file: written, deleted, already as before, or skipped (the lines named)."""
        if rel in self.checkpoint.unsure and not self.force:
            return SkippedFile(path=rel, reason=UNSURE_REASON, kind=SkipReason.CHANGED_SINCE)
        real = self.store.files.resolve(rel)
        now = real.read_bytes() if real.is_file() else None
        content = now
        for edit in reversed(self.checkpoint.edits):
            if rel not in edit:
                continue
            before, after = (_get_blob(self.directory, name) for name in edit[rel])
            outcome = revert_change(content, before, after)
            if isinstance(outcome, Overlap):
                if not self.force:
                    return SkippedFile(
                        path=rel, reason=outcome.why, kind=SkipReason.CHANGED_SINCE, lines=outcome.lines
                    )
                content = self._before_run(rel)
                break
            content = outcome.content
        return _write(real, now, content)

    def _before_run(self, rel: str) -> bytes | None:
        """The file before the run's first edit of it (what force puts back)."""
        first = next(edit[rel] for edit in self.checkpoint.edits if rel in edit)
        return _get_blob(self.directory, first[0])


def _write(real: Path, now: bytes | None, content: bytes | None) -> _Restored:
    """Make the file hold `content` (None: absent), atomically, keeping its mode."""
    if content == now:
        return _Restored.AS_RECORDED
    if content is None:
        real.unlink()
        return _Restored.DELETED
    real.parent.mkdir(parents=True, exist_ok=True)
    tmp = real.with_name(f".{real.name}.aider-lsp-restore")
    tmp.write_bytes(content)
    if real.exists():
        shutil.copymode(real, tmp)
    os.replace(tmp, real)
    return _Restored.WRITTEN


def _put_blob(directory: Path, data: bytes | None) -> str | None:
    """Store bytes under their hash (the same content once per checkpoint); None: absent."""
    if data is None:
        return None
    name = hashlib.sha256(data).hexdigest()[:40] + ".bin"
    path = directory / name
    if not path.exists():
        path.write_bytes(data)
    return name


def _get_blob(directory: Path, name: str | None) -> bytes | None:
    return None if name is None else (directory / name).read_bytes()


def _folder_bytes(directory: Path) -> int:
    try:
        return sum(entry.stat().st_size for entry in directory.iterdir() if entry.is_file())
    except OSError:
        return 0


class _Restored(Enum):
    """What restoring one file did."""

    WRITTEN = "written"
    DELETED = "deleted"
    AS_RECORDED = "as recorded"  # nothing to do


def _write_back(recorded: Path, real: Path) -> bool:
    """Write the recorded bytes (and mode) over the file atomically; False when already equal."""
    real.parent.mkdir(parents=True, exist_ok=True)
    data = recorded.read_bytes()
    if real.is_file() and real.read_bytes() == data:
        return False
    tmp = real.with_name(f".{real.name}.aider-lsp-restore")
    tmp.write_bytes(data)
    shutil.copymode(recorded, tmp)  # the file's mode when recorded
    os.replace(tmp, real)
    return True


def snapshot_files(resolve: Callable[[str], Path], paths: Iterable[str]) -> dict[str, bytes | None]:
    """Each file's bytes now, before an edit (None: it does not exist), to compare with after.

    The one in-memory snapshot (the bridge's, per call; checkpoints, and so a workflow run, keep
    theirs on disk). A path outside the workspace or unreadable is left out: nothing to compare."""
    contents: dict[str, bytes | None] = {}
    for rel in paths:
        try:
            real = resolve(rel)
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


def run_record(checkpoint: Checkpoint) -> RunRecord:
    """The history's view of a checkpoint (what its meta says, and the files it changed)."""
    meta = checkpoint.meta
    kind = str(meta.get("kind") or ("workflow" if checkpoint.label.startswith("workflow:") else "edit"))
    label = checkpoint.label.removeprefix("workflow: ") if kind == "workflow" else checkpoint.label
    iterations, duration, goal = meta.get("iterations"), meta.get("duration_s"), meta.get("goal")
    return RunRecord(
        id=checkpoint.id,
        created=checkpoint.created,
        kind=kind,
        label=label,
        goal=goal if isinstance(goal, str) else None,
        status=meta.get("status"),
        iterations=iterations if isinstance(iterations, int) else None,
        files=tuple(checkpoint.edited or checkpoint.paths),
        spend=meta.get("spend"),
        duration_s=float(duration) if isinstance(duration, (int, float)) else None,
        undone=checkpoint.undone,
        steps=_steps(meta.get("steps")),
        note=meta.get("note") if isinstance(meta.get("note"), str) else None,
        state=RunState.UNDONE if checkpoint.undone is not None else RunState.APPLIED,
        isolation=Isolation.WORKTREE if meta.get("isolation") == Isolation.WORKTREE else Isolation.NONE,
        branch=meta.get("branch") if isinstance(meta.get("branch"), str) else None,
    )


_STEPS = TypeAdapter(tuple[RunStep, ...])


def _steps(recorded: Any) -> tuple[RunStep, ...]:
    """A run's steps as its meta keeps them; none for an edit, a run recorded before steps
    were, or a manifest edited by hand (the rest of the record still shows)."""
    try:
        return _STEPS.validate_python(recorded or ())
    except ValidationError:
        return ()


def file_diff(rel: str, before: bytes | None, after: bytes | None) -> RunFileDiff:
    """One file's two sides as the diff editor shows them: text, or only `binary` when either
    side is not UTF-8 text (the editor cannot show it faithfully; its name is still listed)."""
    texts = [_text(data) for data in (before, after)]
    binary = any(text is None and data is not None for text, data in zip(texts, (before, after), strict=True))
    return RunFileDiff(
        path=rel,
        before=None if binary else texts[0],
        after=None if binary else texts[1],
        existed_before=before is not None,
        exists_after=after is not None,
        binary=binary,
    )


def _text(data: bytes | None) -> str | None:
    """The bytes as UTF-8 text, None when absent or not text (a NUL byte, or not UTF-8)."""
    if data is None or b"\0" in data:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


def _pid(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None


def alive_elsewhere(pid: int | None) -> bool:
    """Whether `pid` is another process that is still running (a checkpoint's maker)."""
    if pid is None or pid == os.getpid():
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # it exists but is not ours to signal
        return True
    return True


def newest_first(records: list[RunRecord]) -> list[RunRecord]:
    return sorted(records, key=lambda run: (run.created, run.id), reverse=True)
