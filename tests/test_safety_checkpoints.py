"""Checkpoints restore files exactly: content and permission bits."""

from __future__ import annotations

from pathlib import Path

from aider_lsp.checkpoints import CheckpointStore
from aider_lsp.files import FileAccessManager


def test_undo_keeps_a_script_executable_and_a_file_read_only(tmp_path: Path) -> None:
    script, frozen = tmp_path / "run.sh", tmp_path / "frozen.txt"
    script.write_text("#!/bin/sh\necho 1\n")
    script.chmod(0o755)
    frozen.write_text("keep\n")
    frozen.chmod(0o444)
    store = CheckpointStore(FileAccessManager(tmp_path))
    store.create(["run.sh", "frozen.txt"], label="edit")
    script.unlink()  # an editor or tool that rewrites by replacing the file
    script.write_text("#!/bin/sh\necho 2\n")
    frozen.chmod(0o644)
    frozen.write_text("changed\n")
    report = store.restore()
    assert sorted(report.restored) == ["frozen.txt", "run.sh"] and not report.skipped
    assert script.read_text() == "#!/bin/sh\necho 1\n" and script.stat().st_mode & 0o777 == 0o755
    assert frozen.read_text() == "keep\n" and frozen.stat().st_mode & 0o777 == 0o444


def test_undo_skips_a_checkpoint_left_by_an_interrupted_edit(tmp_path: Path) -> None:
    from aider_lsp.app import Application
    from aider_lsp.settings import Settings

    a = tmp_path / "a.py"
    a.write_text("A = 1\n")
    app = Application(tmp_path, Settings())
    store = app.checkpoints
    done = store.create(["a.py"], label="first edit")
    a.write_text("A = 2\n")
    store.record_after(done)
    store.create(["a.py"], label="edit killed before it wrote")  # never settled, nothing changed
    undo = app.undo()
    assert undo.ok and undo.notes["label"] == "first edit", undo.content
    assert a.read_text() == "A = 1\n"
    assert app.undo().content == "Nothing to undo."
