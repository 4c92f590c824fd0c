"""Checkpoints restore files exactly: content and permission bits."""

from __future__ import annotations

from pathlib import Path

from aider_lsp.guards.files import FileAccessManager
from aider_lsp.history.checkpoints import CheckpointStore


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
    from aider_lsp.config.settings import Settings

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


def test_the_undo_advice_is_what_lets_the_undo_through(tmp_path: Path) -> None:
    """Saving a file the user changed after the edit does not let a plain undo through (it is
    their later work): the advice says so and names force; reverting lets it through."""
    from aider_lsp.models import TaskStatus
    from aider_lsp.results import undo_result

    a = tmp_path / "a.py"
    a.write_text("A = 0\n")
    store = CheckpointStore(FileAccessManager(tmp_path))
    checkpoint = store.create(["a.py"], label="edit")
    a.write_text("A = 1\n")  # Aider's edit
    store.record_after(checkpoint)

    # the user types into a.py without saving: kept, and the advice says how to undo
    refused = undo_result(store.restore(skip=[str(a)]))
    assert refused.status is TaskStatus.FAILED
    assert "revert them and undo again, or save them and undo with force" in refused.content
    # following it, first way: revert (the buffer is the edit's content again) and undo again
    assert undo_result(store.restore()).status is TaskStatus.COMPLETE and a.read_text() == "A = 0\n"

    # second way: the user saves their later work; a plain undo keeps it, force restores
    checkpoint = store.create(["a.py"], label="edit 2")
    a.write_text("A = 1\n")
    store.record_after(checkpoint)
    a.write_text("A = 1  # my own later work\n")
    kept = undo_result(store.restore())
    assert kept.status is TaskStatus.FAILED and a.read_text() == "A = 1  # my own later work\n"
    assert "Kept a.py as it is now: changed since the edit; undo with force" in kept.content
    assert "undo again" not in kept.content.split("Kept a.py")[1], kept.content
    assert undo_result(store.restore(force=True)).status is TaskStatus.COMPLETE
    assert a.read_text() == "A = 0\n"


def test_undo_leaves_an_edit_another_front_is_still_making(tmp_path: Path) -> None:
    """VS Code and an ACP editor on one folder: while one process's edit has made its
    checkpoint and not yet written, an undo in the other neither drops that checkpoint nor
    takes it for an interrupted one; once that process is gone, it is."""
    import os
    import subprocess
    import sys

    from aider_lsp.app import Application
    from aider_lsp.config.settings import Settings

    a = tmp_path / "a.py"
    a.write_text("A = 1\n")
    app = Application(tmp_path, Settings())
    done = app.checkpoints.create(["a.py"], label="first edit")
    a.write_text("A = 2\n")
    app.checkpoints.record_after(done)
    other_front = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys, time\n"
            "from aider_lsp.history.checkpoints import CheckpointStore\n"
            "from aider_lsp.guards.files import FileAccessManager\n"
            "CheckpointStore(FileAccessManager(sys.argv[1])).create(['a.py'], label='edit under way')\n"
            "print('made', flush=True)\n"
            "time.sleep(60)\n",
            str(tmp_path),
        ],
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
    )
    try:
        assert other_front.stdout is not None and other_front.stdout.readline().strip() == "made"
        app.checkpoints.drop_interrupted()
        latest = app.checkpoints.latest()
        assert latest is not None and latest.label == "edit under way"  # still there, its own
    finally:
        other_front.kill()
        other_front.wait()
    undo = app.undo()  # its maker is gone: an interrupted edit, skipped; the first edit is undone
    assert undo.ok and undo.notes["label"] == "first edit", undo.content
    assert a.read_text() == "A = 1\n"
