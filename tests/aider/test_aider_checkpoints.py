"""Checkpoints (undo) and the bundled server's snapshot diffs: pure file logic, real files."""

from __future__ import annotations

from pathlib import Path

from aider_lsp.app import Application
from aider_lsp.config.settings import Settings
from aider_lsp.guards.files import FileAccessManager
from aider_lsp.history.checkpoints import CheckpointStore
from aider_lsp.models import Selection
from aider_lsp.tools.aider import apply_selection
from aider_mcp.snapshots import Snapshot, unified_diff


def aider_writes(snapshot: Snapshot, root: Path, rel: str, text: str) -> None:
    """What the bundled server's IO does around each of Aider's writes."""
    snapshot.remember(rel)
    (root / rel).write_text(text)
    snapshot.mark_written(rel)


def test_snapshot_diff_is_per_edit_and_shows_new_and_outside_files(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text("x = 1\n")
    (tmp_path / "other.py").write_text("y = 1\n")
    first = Snapshot(tmp_path, ["a.py", "new.py"], [])
    aider_writes(first, tmp_path, "a.py", "x = 2\n")
    aider_writes(first, tmp_path, "new.py", "z = 3\n")
    aider_writes(first, tmp_path, "stray.py", "created outside\n")
    outcome = first.compare()
    assert outcome.success
    assert outcome.changed_editable == ["a.py", "new.py"]
    assert outcome.outside == ["stray.py"]
    assert sorted(outcome.created) == ["new.py", "stray.py"]
    assert "-x = 1\n+x = 2\n" in outcome.diff and "+++ b/new.py" in outcome.diff
    # a second edit's diff is not cumulative
    second = Snapshot(tmp_path, ["a.py"], [])
    aider_writes(second, tmp_path, "a.py", "x = 3\n")
    diff = second.compare().diff
    assert "-x = 2\n+x = 3\n" in diff and "x = 1" not in diff


def test_snapshot_ignores_files_another_program_wrote_during_the_edit(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text("x = 1\n")
    (tmp_path / "other.py").write_text("y = 1\n")
    snap = Snapshot(tmp_path, ["a.py", "b.py"], [])
    aider_writes(snap, tmp_path, "a.py", "x = 2\n")
    (tmp_path / "server.log").write_text("a log line\n")  # created by someone else
    (tmp_path / "other.py").write_text("y = 2\n")  # changed by someone else
    (tmp_path / "b.py").write_text("editable, but Aider did not write it\n")
    outcome = snap.compare()
    assert outcome.changed_editable == ["a.py"]
    assert outcome.outside == [] and outcome.created == []
    assert "server.log" not in outcome.diff and "other.py" not in outcome.diff
    assert "b.py" not in outcome.diff


def test_snapshot_names_a_file_another_program_changed_after_aiders_write(tmp_path: Path) -> None:
    # the other program's change lands after Aider wrote the file but before the edit ended:
    # the file holds both changes, and the edit must say so (undo would otherwise lose theirs)
    (tmp_path / "a.py").write_text("x = 1\n")
    (tmp_path / "b.py").write_text("y = 1\n")
    snap = Snapshot(tmp_path, ["a.py", "b.py", "new.py"], [])
    aider_writes(snap, tmp_path, "a.py", "x = 2\n")
    aider_writes(snap, tmp_path, "b.py", "y = 2\n")
    aider_writes(snap, tmp_path, "new.py", "")  # touched into existence, nothing written
    with (tmp_path / "a.py").open("a") as handle:
        handle.write("# theirs\n")
    assert snap.changed_after_write() == ["a.py"]
    assert snap.drop_empty_created() == ["new.py"]
    assert snap.changed_after_write() == ["a.py"]  # its own clean-up is not another's change


def test_snapshot_without_change_is_not_a_success_and_drops_touched_files(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text("x = 1\n")
    snap = Snapshot(tmp_path, ["a.py", "empty.py"], [])
    (tmp_path / "empty.py").write_text("")  # Aider touches editable files into existence
    assert snap.drop_empty_created() == ["empty.py"]
    outcome = snap.compare()
    assert not outcome.success and outcome.diff == ""
    assert not (tmp_path / "empty.py").exists()


def test_unified_diff_marks_missing_newline_and_deletion() -> None:
    assert "\\ No newline at end of file" in unified_diff("f", b"a\n", b"a\nb")
    assert "+++ /dev/null" in unified_diff("f", b"a\n", None)
    assert unified_diff("f", b"same", b"same") == ""


def test_checkpoint_restores_contents_and_deletes_created_files(workspace: Path) -> None:
    files = FileAccessManager(workspace)
    store = CheckpointStore(files)
    calc = workspace / "pkg" / "calc.py"
    original = calc.read_text()
    checkpoint = store.create(["pkg/calc.py", "pkg/new.py"], label="first")
    calc.write_text("broken\n")
    (workspace / "pkg" / "new.py").write_text("new\n")
    (workspace / "made.txt").write_text("outside\n")
    store.add(checkpoint, ["made.txt"], absent=True)

    second = store.create(["pkg/calc.py"], label="second")
    calc.write_text("more broken\n")

    report = store.restore()
    assert report.checkpoint == second.id and calc.read_text() == "broken\n"
    report = store.restore()
    assert report.checkpoint == checkpoint.id
    assert calc.read_text() == original
    assert not (workspace / "pkg" / "new.py").exists() and not (workspace / "made.txt").exists()
    assert sorted(report.deleted) == ["made.txt", "pkg/new.py"]
    assert store.restore().checkpoint is None
    # the state folder ignores itself in git
    assert (workspace / ".aider-lsp" / ".gitignore").read_text().strip().endswith("*")


def test_undo_skips_unsaved_files_and_keeps_the_checkpoint(workspace: Path) -> None:
    unsaved = ["pkg/calc.py"]
    app = Application(workspace, Settings(), unsaved_files=lambda: unsaved)
    app.checkpoints.create(["pkg/calc.py", "README.md"], label="edit")
    (workspace / "pkg" / "calc.py").write_text("changed\n")
    (workspace / "README.md").write_text("changed\n")
    result = app.undo()
    assert result.status.value == "FAILED" and "pkg/calc.py" in result.content
    assert (workspace / "README.md").read_text() == "# demo\n"
    assert (workspace / "pkg" / "calc.py").read_text() == "changed\n"  # the editor's buffer wins
    unsaved.clear()  # the user saved or reverted: asked again at the next undo
    again = app.undo()
    assert again.status.value == "COMPLETE"
    assert (workspace / "pkg" / "calc.py").read_text() == "def add(a, b):\n    return a + b\n"


def test_checkpoints_are_pruned(workspace: Path) -> None:
    store = CheckpointStore(FileAccessManager(workspace), max_kept=3)
    for index in range(5):
        store.create(["README.md"], label=str(index))
    assert [cp.label for cp in store.saved()] == ["2", "3", "4"]


def test_selection_becomes_file_context_and_prompt(workspace: Path) -> None:
    files = FileAccessManager(workspace)
    selection = Selection.model_validate(
        {
            "uri": (workspace / "pkg" / "calc.py").as_uri(),
            "range": {"start": {"line": 0, "character": 0}, "end": {"line": 1, "character": 0}},
            "text": "def add",
        }
    )
    prompt, context = apply_selection(files, "rename it", ["README.md"], selection)
    assert context == ["pkg/calc.py", "README.md"]
    assert "selected code in pkg/calc.py (lines 1-2)" in prompt and "def add" in prompt
