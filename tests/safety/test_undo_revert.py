"""Undo as a revert: a run's own change is taken back from the files as they are now, so every
other change stays; any past run can be undone, not only the last. Real files in temp dirs;
each "edit" here writes the files the way an Aider edit does, through the checkpoint store."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from aider_lsp.app import Application
from aider_lsp.config.settings import Settings
from aider_lsp.guards.files import FileAccessManager
from aider_lsp.history.checkpoints import CheckpointStore, snapshot_files
from aider_lsp.history.revert import Overlap, Reverted, revert_change
from aider_lsp.models import TaskStatus

LINES = "".join(f"line {n}\n" for n in range(1, 11))


def edit(store: CheckpointStore, label: str, changes: dict[str, bytes | None]) -> str:
    """One edit as the executors record it: checkpoint, the bytes before, the write, the record."""
    checkpoint = store.create(list(changes), label=label)
    before = snapshot_files(store.files.resolve, list(changes))
    for rel, data in changes.items():
        path = store.files.root / rel
        if data is None:
            path.unlink()
        else:
            path.write_bytes(data)
    store.record_after(checkpoint)
    created = [rel for rel in changes if before.get(rel) is None]
    store.record_edit(checkpoint, before, created=created)
    return checkpoint.id


@pytest.fixture
def app(tmp_path: Path) -> Application:
    root = tmp_path / "ws"
    root.mkdir()
    (root / "a.py").write_text(LINES)
    return Application(root, Settings())


def test_a_change_in_other_lines_stays_when_the_run_is_undone(app: Application) -> None:
    a = app.workspace / "a.py"
    edit(app.checkpoints, "run", {"a.py": LINES.replace("line 2\n", "LINE 2\n").encode()})
    a.write_text(a.read_text().replace("line 9\n", "mine 9\n"))  # the user's later work
    result = app.undo()
    assert result.status is TaskStatus.COMPLETE, result.content
    assert a.read_text() == LINES.replace("line 9\n", "mine 9\n")
    assert result.notes["restored"] == ["a.py"]


def test_undoing_an_older_run_keeps_the_newer_one(app: Application) -> None:
    a = app.workspace / "a.py"
    older = edit(app.checkpoints, "older", {"a.py": LINES.replace("line 1\n", "ONE\n").encode()})
    edit(app.checkpoints, "newer", {"a.py": a.read_text().replace("line 8\n", "EIGHT\n").encode()})
    result = app.undo(older)
    assert result.ok, result.content
    assert a.read_text() == LINES.replace("line 8\n", "EIGHT\n")  # like git revert, not reset
    assert [run.label for run in app.history() if run.undone is None] == ["newer"]


def test_an_overlapping_later_change_writes_nothing_and_names_the_lines(app: Application) -> None:
    a = app.workspace / "a.py"
    run = edit(app.checkpoints, "run", {"a.py": LINES.replace("line 3\n", "THREE\n").encode()})
    theirs = LINES.replace("line 3\n", "three, mine\n")
    a.write_text(theirs)
    result = app.undo(run)
    assert result.status is TaskStatus.FAILED
    assert a.read_text() == theirs
    skipped = result.notes["skipped"][0]
    assert skipped["path"] == "a.py" and skipped["kind"] == "changed_since"
    assert skipped["lines"] == [[3, 3]] and "line 3" in skipped["reason"]
    assert "a.py" in result.content
    forced = app.undo(run, force=True)  # the user's choice: take the run's before
    assert forced.ok and a.read_text() == LINES


def test_two_undos_of_one_run_the_second_says_it_was_already_undone(app: Application) -> None:
    run = edit(app.checkpoints, "run", {"a.py": b"changed\n"})
    assert app.undo(run).ok
    again = app.undo(run)
    assert again.ok and "already undone" in again.content
    assert (app.workspace / "a.py").read_text() == LINES
    assert app.undo("no-such-run").status is TaskStatus.FAILED


def test_a_created_file_the_user_edited_is_kept_and_named(app: Application) -> None:
    new = app.workspace / "new.py"
    run = edit(app.checkpoints, "run", {"new.py": b"x = 1\n"})
    new.write_text("x = 1\ny = 2  # mine\n")
    result = app.undo(run)
    assert new.read_text() == "x = 1\ny = 2  # mine\n"
    assert result.notes["skipped"][0]["path"] == "new.py" and "created" in result.content


def test_a_created_file_untouched_is_deleted_and_a_deleted_file_comes_back(app: Application) -> None:
    (app.workspace / "gone.py").write_text("keep me\n")
    run = edit(app.checkpoints, "run", {"new.py": b"x = 1\n", "gone.py": None})
    result = app.undo(run)
    assert result.ok, result.content
    assert not (app.workspace / "new.py").exists()
    assert (app.workspace / "gone.py").read_text() == "keep me\n"


@pytest.mark.parametrize(
    "before",
    [
        b"\xef\xbb\xbfa = 1\r\nb = 2\r\nc = 3\r\n",  # BOM and CRLF
        "caf\xe9 = 1\nb = 2\nc = 3\n".encode("latin-1"),  # not UTF-8
    ],
)
def test_crlf_bom_and_latin1_round_trip_byte_for_byte(app: Application, before: bytes) -> None:
    f = app.workspace / "f.py"
    f.write_bytes(before)
    run = edit(app.checkpoints, "run", {"f.py": before.replace(b"b = 2", b"b = 20")})
    f.write_bytes(f.read_bytes() + b"d = 4" + (b"\r\n" if b"\r\n" in before else b"\n"))
    assert app.undo(run).ok
    assert f.read_bytes() == before + b"d = 4" + (b"\r\n" if b"\r\n" in before else b"\n")


def test_binary_files_round_trip_or_are_refused_by_name() -> None:
    before, after = b"\x00\x01bin", b"\x00\x02bin"
    assert revert_change(after, before, after) == Reverted(before)
    refused = revert_change(b"\x00\x03bin", before, after)
    assert isinstance(refused, Overlap) and "binary" in refused.why


def test_history_and_undo_from_the_command_line(app: Application) -> None:
    run = edit(app.checkpoints, "make it shout", {"a.py": LINES.upper().encode()})
    command = [sys.executable, "-m", "aider_lsp"]
    listed = subprocess.run(
        [*command, "history", "--workspace", str(app.workspace), "--json"], capture_output=True, text=True
    )
    assert listed.returncode == 0, listed.stderr
    runs = json.loads(listed.stdout)["notes"]["runs"]
    assert [(r["id"], r["label"], r["files"]) for r in runs] == [(run, "make it shout", ["a.py"])]
    undone = subprocess.run(
        [*command, "undo", run, "--workspace", str(app.workspace)], capture_output=True, text=True
    )
    assert undone.returncode == 0, undone.stdout + undone.stderr
    assert (app.workspace / "a.py").read_text() == LINES
    shown = subprocess.run(
        [*command, "history", "--workspace", str(app.workspace)], capture_output=True, text=True
    )
    assert "(undone)" in shown.stdout and "make it shout" in shown.stdout


def test_the_history_keeps_the_newest_runs_within_its_bounds(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text("0\n")
    store = CheckpointStore(FileAccessManager(tmp_path), max_kept=3, max_bytes=10_000)
    ids = [edit(store, f"run {n}", {"a.py": f"{n}\n".encode()}) for n in range(5)]
    assert [cp.id for cp in store.saved()] == ids[-3:]
    edit(store, "big", {"a.py": b"x" * 20_000})  # over the megabytes bound: older ones go first
    assert [cp.label for cp in store.saved()] == ["big"]
