"""An Aider edit recorded on disk the way the executors record one (checkpoint, the bytes
before, the write, the record), without Aider: a history for the server to read."""

from __future__ import annotations

from pathlib import Path

from aider_lsp.guards.files import FileAccessManager
from aider_lsp.history.checkpoints import CheckpointStore, snapshot_files


def record_edit(root: Path, label: str, changes: dict[str, bytes | None]) -> str:
    """`changes` (path → new bytes, None: deleted) written in `root` as one recorded edit; its id."""
    store = CheckpointStore(FileAccessManager(root))
    checkpoint = store.create(list(changes), label=label)
    before = snapshot_files(store.files.resolve, list(changes))
    for rel, data in changes.items():
        if data is None:
            (root / rel).unlink()
        else:
            (root / rel).write_bytes(data)
    store.record_after(checkpoint)
    store.record_edit(checkpoint, before, created=[rel for rel in changes if before.get(rel) is None])
    return checkpoint.id
