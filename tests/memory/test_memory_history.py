"""The workspace's git history as a ranking signal (memory/history.py), on real repositories
made in a temporary folder: a past commit like the query points at the files it changed;
no repository or no git means no history and no error; the history is bounded, follows HEAD
and renames, and never brings back a secret or an ignored file."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from aider_lsp.config.settings import Settings
from aider_lsp.guards.files import FileAccessManager
from aider_lsp.memory import MemorySystem
from aider_lsp.memory import history as history_module
from aider_lsp.memory.history import GitHistory, HistoryIndex
from aider_lsp.models import ContextGenerationInput

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")

GIT_ENV = {
    "GIT_AUTHOR_NAME": "t",
    "GIT_AUTHOR_EMAIL": "t@example.com",
    "GIT_COMMITTER_NAME": "t",
    "GIT_COMMITTER_EMAIL": "t@example.com",
    "GIT_CONFIG_GLOBAL": os.devnull,
    "GIT_CONFIG_NOSYSTEM": "1",
}

# No file's text says "retry" or "backoff": only the history can tie the question to a file.
FILES = {
    "app/retry.py": "def wait_longer(delay):\n    return delay * 2\n",
    "app/render.py": "def draw_page(page):\n    return str(page)\n",
    "app/parse.py": "def read_tokens(text):\n    return text.split()\n",
    "README.md": "# app\n\nA small application.\n",
}


def _git(root: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", "-C", str(root), *args],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, **GIT_ENV},
    )
    return done.stdout.strip()


def _write(root: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")


def _commit(root: Path, message: str, files: dict[str, str]) -> str:
    _write(root, files)
    _git(root, "add", "-A")
    _git(root, "commit", "-q", "-m", message)
    return _git(root, "rev-parse", "HEAD")


def _repo(root: Path) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    _git(root, "init", "-q")
    _commit(root, "initial layout", FILES)
    _commit(root, "Fix retry backoff", {"app/retry.py": FILES["app/retry.py"] + "\nLIMIT = 5\n"})
    _commit(root, "draw pages faster", {"app/render.py": FILES["app/render.py"] + "\nCACHE = {}\n"})
    return root


def _memory(root: Path) -> MemorySystem:
    memory = MemorySystem(FileAccessManager(root), Settings(), db_path=root.parent / "index.sqlite3")
    memory.index_all()
    return memory


def _paths(memory: MemorySystem, query: str) -> list[str]:
    result = memory.search(ContextGenerationInput(query=query, max_results=5))
    return [match.source_path or match.id for match in result.matches]


def _changed_by(memory: MemorySystem, query: str) -> list[str]:
    """The commits that lent to the query's matches."""
    result = memory.search(ContextGenerationInput(query=query, max_results=5))
    return [m.ranking.why.changed_by for m in result.matches if m.ranking and m.ranking.why.changed_by]


def test_a_past_commit_like_the_query_points_at_the_file_it_changed(tmp_path: Path) -> None:
    memory = _memory(_repo(tmp_path / "ws"))
    result = memory.search(ContextGenerationInput(query="retry backoff", max_results=5))
    top = result.matches[0]
    assert top.source_path == "app/retry.py"
    assert top.ranking is not None and top.ranking.why.changed_by is not None
    assert top.ranking.why.changed_by.endswith("Fix retry backoff")
    assert top.ranking.signals.changes == 1.0
    memory.close()


def test_without_a_repository_there_is_no_history_and_no_error(tmp_path: Path) -> None:
    root = tmp_path / "plain"
    _write(root, FILES)
    memory = _memory(root)
    assert memory.store.commit_count() == 0
    result = memory.search(ContextGenerationInput(query="retry backoff", max_results=5))
    for match in result.matches:  # its path still matches; no commit says anything
        assert match.ranking is not None
        assert match.ranking.signals.changes == 0.0
        assert match.ranking.signals.fresh == 0.0  # no HEAD: nothing is "new work"
        assert match.ranking.why.changed_by is None
    assert _paths(memory, "draw page")[0] == "app/render.py"
    memory.close()


def test_without_git_there_is_no_history_and_no_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = _repo(tmp_path / "ws")
    monkeypatch.setattr(history_module.shutil, "which", lambda _name: None)
    memory = _memory(root)
    assert memory.store.commit_count() == 0
    assert memory.update_paths_sync([".git/HEAD"]).skipped == []
    assert _paths(memory, "draw page")[0] == "app/render.py"
    memory.close()


def test_the_setting_turns_the_history_off_and_on(tmp_path: Path) -> None:
    root = _repo(tmp_path / "ws")
    settings = [Settings(context_history_commits=0)]
    memory = MemorySystem(FileAccessManager(root), lambda: settings[0], db_path=tmp_path / "i.sqlite3")
    memory.index_all()
    assert memory.store.commit_count() == 0
    settings[0] = Settings(context_history_commits=2)
    memory.settings_changed()
    memory.update_paths_sync([".git/HEAD"])
    assert memory.store.commit_count() == 2
    assert _changed_by(memory, "retry backoff")
    settings[0] = Settings(context_history_commits=0)
    memory.settings_changed()
    assert not _changed_by(memory, "retry backoff")  # off at once, before the next update
    memory.update_paths_sync([".git/HEAD"])
    assert memory.store.commit_count() == 0
    memory.close()


def test_the_history_is_bounded(tmp_path: Path) -> None:
    root = _repo(tmp_path / "ws")
    for number in range(6):
        _commit(root, f"tune parser step {number}", {"app/parse.py": FILES["app/parse.py"] + f"# {number}\n"})
    memory = _memory(root)
    assert memory.store.commit_count() == 9
    bounded = HistoryIndex(GitHistory(root, max_commits=4))
    memory.store.set_meta(history_module.HEAD_META, "")  # read again, under the smaller bound
    assert bounded.refresh(memory.store) == 4
    assert memory.store.commit_count() == 4
    changed = memory.search(ContextGenerationInput(query="retry backoff", max_results=5)).matches
    assert all(m.ranking and m.ranking.why.changed_by is None for m in changed)  # too old
    memory.close()


def test_new_commits_are_read_when_head_moves(tmp_path: Path) -> None:
    root = _repo(tmp_path / "ws")
    memory = _memory(root)
    assert memory.store.commit_count() == 3
    _commit(root, "Handle unicode tokens", {"app/parse.py": FILES["app/parse.py"] + "\nUTF = 1\n"})
    memory.update_paths_sync(["app/parse.py", ".git/HEAD"])  # what a file watcher reports
    assert memory.store.commit_count() == 4
    assert _paths(memory, "unicode tokens")[0] == "app/parse.py"
    memory.update_paths_sync([".git/HEAD"])  # nothing moved: nothing read
    assert memory.store.commit_count() == 4
    memory.close()


def test_a_head_moved_back_forgets_the_commits_it_left(tmp_path: Path) -> None:
    root = _repo(tmp_path / "ws")
    before = _git(root, "rev-parse", "HEAD")
    _commit(root, "Handle unicode tokens", {"app/parse.py": FILES["app/parse.py"] + "\nUTF = 1\n"})
    memory = _memory(root)
    assert _paths(memory, "handle unicode") == ["app/parse.py"]  # no file's text says either
    _git(root, "reset", "-q", "--hard", before)
    memory.update_paths_sync(["app/parse.py", ".git/HEAD"])
    assert memory.store.commit_count() == 3
    assert _paths(memory, "handle unicode") == []
    memory.close()


def test_a_change_before_a_rename_counts_for_the_new_name(tmp_path: Path) -> None:
    root = _repo(tmp_path / "ws")
    _git(root, "mv", "app/retry.py", "app/waiting.py")
    _git(root, "commit", "-q", "-m", "move the waiting helpers")
    memory = _memory(root)
    assert _paths(memory, "retry backoff")[0] == "app/waiting.py"
    memory.close()


def test_secrets_and_ignored_files_never_come_back(tmp_path: Path) -> None:
    root = _repo(tmp_path / "ws")
    _commit(
        root,
        "rotate the retry backoff token",
        {".env": "TOKEN=abc\n", "build/retry_gen.py": "X = 1\n", "app/retry.py": FILES["app/retry.py"]},
    )
    _commit(root, "ignore build output", {".gitignore": "build/\n"})
    memory = _memory(root)
    found = _paths(memory, "rotate retry backoff")
    assert found[0] == "app/retry.py"
    assert ".env" not in found and "build/retry_gen.py" not in found
    memory.close()


def test_a_workspace_inside_a_repository_sees_its_own_paths(tmp_path: Path) -> None:
    root = _repo(tmp_path / "ws")
    _commit(root, "outside change to the readme about backoff", {"README.md": "# app\n\nretry\n"})
    memory = _memory(root / "app")
    assert _paths(memory, "retry backoff")[0] == "retry.py"
    assert memory.store.commit_count() == 3  # the readme commit touched nothing under app/
    assert memory.store.not_in_head(["retry.py", "render.py", "new.py"]) == {"new.py"}
    memory.close()


def test_new_commits_are_not_added_twice_when_another_process_moved_the_history(tmp_path: Path) -> None:
    memory = _memory(_repo(tmp_path / "ws"))
    head = memory.store.get_meta(history_module.HEAD_META)
    assert head
    row = [("f" * 40, "later", "", "app/parse.py")]
    assert memory.store.add_commits(row, "f" * 40, after="0" * 40) is False  # read from a stale head
    assert memory.store.commit_count() == 3
    assert memory.store.add_commits(row, "f" * 40, after=head) is True
    assert memory.store.commit_count() == 4
    memory.close()


def test_a_file_every_commit_changes_lends_nothing_to_the_question(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    root.mkdir()
    _git(root, "init", "-q")
    _commit(root, "initial layout", {**FILES, "app/version.py": "V = 0\n"})
    for n, (message, rel) in enumerate(
        [("Fix retry backoff", "app/retry.py"), ("draw pages faster", "app/render.py")], start=1
    ):
        _commit(root, message, {rel: FILES[rel] + f"\nSTEP = {n}\n", "app/version.py": f"V = {n}\n"})
    memory = _memory(root)
    matches = memory.search(ContextGenerationInput(query="retry backoff", max_results=5)).matches
    signals = {m.source_path: m.ranking.signals for m in matches if m.ranking}
    assert matches[0].source_path == "app/retry.py"
    assert signals["app/retry.py"].changes == 1.0
    # the version file changed with the retry fix too, but so it did with every commit
    assert "app/version.py" not in signals or signals["app/version.py"].changes == 0.0
    memory.close()


def test_how_often_each_file_changed_follows_head(tmp_path: Path) -> None:
    root = _repo(tmp_path / "ws")
    before = _git(root, "rev-parse", "HEAD")
    memory = _memory(root)
    assert memory.store.change_counts(["app/retry.py", "app/parse.py", "nope.py"]) == {
        "app/retry.py": 2,
        "app/parse.py": 1,
    }
    _commit(root, "retry once more", {"app/retry.py": FILES["app/retry.py"] + "\nLIMIT = 6\n"})
    memory.update_paths_sync(["app/retry.py", ".git/HEAD"])
    assert memory.store.change_counts(["app/retry.py"]) == {"app/retry.py": 3}
    assert memory.store.commits_since_change(["app/retry.py", "app/render.py"]) == {
        "app/retry.py": 0,
        "app/render.py": 1,
    }
    _git(root, "reset", "-q", "--hard", before)
    memory.update_paths_sync(["app/retry.py", ".git/HEAD"])
    assert memory.store.change_counts(["app/retry.py"]) == {"app/retry.py": 2}
    assert memory.store.commits_since_change(
        ["app/retry.py", "app/render.py", "app/parse.py", "nope.py"]
    ) == {
        "app/retry.py": 1,
        "app/render.py": 0,
        "app/parse.py": 2,
    }
    memory.close()


def _commit_many(root: Path, rel: str, count: int) -> None:
    """`count` commits on top of HEAD, each changing `rel` (git fast-import: one process)."""
    branch = _git(root, "symbolic-ref", "HEAD")
    stream = []
    for n in range(count):
        message, text = f"note {n}\n", f"NOTE = {n}\n"
        stream.append(f"commit {branch}\ncommitter t <t@example.com> {1700000000 + n} +0000\n")
        stream.append(f"data {len(message)}\n{message}")
        if n == 0:
            stream.append(f"from {_git(root, 'rev-parse', 'HEAD')}\n")
        stream.append(f"M 100644 inline {rel}\ndata {len(text)}\n{text}\n")
    subprocess.run(
        ["git", "-C", str(root), "fast-import", "--quiet"],
        input="".join(stream),
        text=True,
        check=True,
        env={**os.environ, **GIT_ENV},
    )
    _git(root, "reset", "-q", "--hard")


def test_of_two_files_alike_the_one_changed_more_lately_ranks_first(tmp_path: Path) -> None:
    """Both changed twice and neither among the last 100 commits: only how long each has
    been left alone tells them apart (the path alone would put a_store.py first)."""
    root = tmp_path / "ws"
    root.mkdir()
    _git(root, "init", "-q")
    same = "def cache_lookup(key):\n    return key\n"
    _commit(root, "initial layout", {"app/a_store.py": same, "app/b_store.py": same, "notes.py": ""})
    _commit(root, "tidy a", {"app/a_store.py": same + "\n# tidy\n"})
    _commit_many(root, "notes.py", 150)
    _commit(root, "tidy b", {"app/b_store.py": same + "\n# tidy\n"})
    _commit_many(root, "notes.py", 110)
    memory = _memory(root)
    matches = memory.search(ContextGenerationInput(query="cache lookup", max_results=5)).matches
    assert [m.source_path for m in matches][:2] == ["app/b_store.py", "app/a_store.py"]
    signals = {m.source_path: m.ranking.signals for m in matches if m.ranking}
    assert signals["app/b_store.py"].recent == signals["app/a_store.py"].recent == 0.0
    assert signals["app/b_store.py"].churn == signals["app/a_store.py"].churn
    assert signals["app/b_store.py"].fresh > signals["app/a_store.py"].fresh > 0.0
    memory.close()


def test_a_file_not_committed_yet_is_fresh_work(tmp_path: Path) -> None:
    """Aider edits without committing: a file it (or the user) just made is where the work
    is, not code left alone since the beginning."""
    root = tmp_path / "ws"
    root.mkdir()
    _git(root, "init", "-q")
    same = "def cache_lookup(key):\n    return key\n"
    _commit(root, "initial layout", {"app/a_store.py": same, "notes.py": ""})
    _commit_many(root, "notes.py", 150)
    _write(root, {"app/b_store.py": same})  # untracked
    memory = _memory(root)
    matches = memory.search(ContextGenerationInput(query="cache lookup", max_results=5)).matches
    assert [m.source_path for m in matches][:2] == ["app/b_store.py", "app/a_store.py"]
    signals = {m.source_path: m.ranking.signals for m in matches if m.ranking}
    assert signals["app/b_store.py"].fresh == 1.0
    assert 0.0 < signals["app/a_store.py"].fresh < 0.5
    _git(root, "add", "app/b_store.py")  # staged is not committed: still new work
    memory.update_paths_sync(["app/b_store.py"])
    assert memory.store.not_in_head(["app/b_store.py", "app/a_store.py"]) == {"app/b_store.py"}
    _git(root, "commit", "-q", "-m", "add b")
    memory.update_paths_sync([".git/HEAD"])
    assert memory.store.not_in_head(["app/b_store.py", "app/a_store.py"]) == set()
    assert memory.store.commits_since_change(["app/b_store.py"]) == {"app/b_store.py": 0}
    memory.close()


def test_of_two_files_alike_the_one_changed_more_often_ranks_first(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    root.mkdir()
    _git(root, "init", "-q")
    same = "def cache_lookup(key):\n    return key\n"
    _commit(root, "initial layout", {"app/a_store.py": same, "app/b_store.py": same})
    for n in range(3):
        _commit(root, f"tidy {n}", {"app/b_store.py": same + f"\n# {n}\n"})
    memory = _memory(root)
    matches = memory.search(ContextGenerationInput(query="cache lookup", max_results=5)).matches
    assert [m.source_path for m in matches] == ["app/b_store.py", "app/a_store.py"]
    assert matches[0].ranking and matches[0].ranking.signals.churn == 1.0
    memory.close()


def test_a_test_gets_the_historys_credit_only_when_the_question_is_about_tests(tmp_path: Path) -> None:
    root = _repo(tmp_path / "ws")
    _commit(root, "add a check", {"tests/test_wait.py": "def test_wait():\n    assert True\n"})
    _commit(
        root,
        "Fix retry backoff again",
        {
            "app/retry.py": FILES["app/retry.py"] + "\nLIMIT = 7\n",
            "tests/test_wait.py": "def test_wait():\n    assert 1\n",
        },
    )
    memory = _memory(root)
    assert _paths(memory, "retry backoff") == ["app/retry.py"]  # the test's change is the code's
    assert "tests/test_wait.py" in _paths(memory, "retry backoff tests")
    memory.close()
