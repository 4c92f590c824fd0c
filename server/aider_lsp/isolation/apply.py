"""Applying a ready isolated run: its change laid on the user's files as they are now.

Each file is merged three ways (revert.apply_change: base = the file at the run's start,
theirs = the user's file now, ours = the run's version), so what the user changed meanwhile
stays. All or nothing: when one file cannot take the change (the user changed the same lines,
or holds it unsaved in the editor) nothing is written and each such file is named with its
lines, unless forced ("apply anyway": the run's version of those files wins). What is written
is checkpointed first, under the run's own id, as an ordinary workflow run of the history:
undo takes it back with the same revert that undoes a run in place, keeping later work.
"""

from __future__ import annotations

import contextlib
from collections.abc import Collection
from dataclasses import dataclass, field

from ..config.state import STATE_DIR
from ..guards.files import AccessDenied
from ..history.checkpoints import CheckpointStore
from ..history.revert import Overlap, apply_change
from ..models import IsolatedRunManifest, SkippedFile, SkipReason

UNSAVED_REASON = "open in the editor with unsaved changes (save or revert it, then apply)"


@dataclass
class Merged:
    """What applying would write (path → bytes, None: delete) and the files it cannot."""

    contents: dict[str, bytes | None] = field(default_factory=dict)
    before: dict[str, bytes | None] = field(default_factory=dict)
    skipped: list[SkippedFile] = field(default_factory=list)


def merge_onto_user_files(
    store: CheckpointStore,
    change: dict[str, tuple[bytes | None, bytes | None]],
    unsaved: Collection[str],
    *,
    force: bool,
) -> Merged:
    """Each file of the run's change merged with the user's file now (nothing written here)."""
    merged = Merged()
    for rel, (base, final) in sorted(change.items()):
        if rel in unsaved:
            merged.skipped.append(SkippedFile(path=rel, reason=UNSAVED_REASON, kind=SkipReason.UNSAVED))
            continue
        try:
            real = store.files.resolve(rel)
            now = real.read_bytes() if real.is_file() else None
        except (OSError, AccessDenied) as exc:
            merged.skipped.append(SkippedFile(path=rel, reason=str(exc), kind=SkipReason.UNWRITABLE))
            continue
        result = apply_change(now, base, final)
        if isinstance(result, Overlap) and not force:
            merged.skipped.append(
                SkippedFile(path=rel, reason=result.why, kind=SkipReason.CHANGED_SINCE, lines=result.lines)
            )
            continue
        merged.before[rel] = now
        merged.contents[rel] = final if isinstance(result, Overlap) else result.content
    return merged


def write_as_history_run(
    store: CheckpointStore, run: IsolatedRunManifest, merged: Merged
) -> tuple[list[str], list[str]]:
    """Checkpoint the user's files under the run's id, write the merged contents, and record
    the change as one edit of a workflow run; (written, deleted)."""
    record = run.record
    checkpoint = store.create([], label=f"workflow: {record.label}", checkpoint_id=record.id)
    store.add_known(checkpoint, merged.before)
    written, deleted = [], []
    for rel, content in merged.contents.items():
        if rel.startswith(STATE_DIR + "/"):
            continue
        real = store.files.resolve(rel)
        if content is None:
            with contextlib.suppress(FileNotFoundError):
                real.unlink()
            deleted.append(rel)
            continue
        real.parent.mkdir(parents=True, exist_ok=True)
        real.write_bytes(content)
        written.append(rel)
    store.record_edit(checkpoint, merged.before)
    store.record_after(checkpoint)
    store.annotate(
        checkpoint.id,
        kind="workflow",
        goal=record.goal,
        status=record.status,
        iterations=record.iterations,
        steps=[step.model_dump(mode="json") for step in record.steps],
        spend=record.spend,
        duration_s=record.duration_s,
        note=record.note,
        isolation="worktree",
    )
    return written, deleted
