"""The server's background pass in a child process (pass_process.py): same index, no GIL shared."""

from __future__ import annotations

import asyncio
import multiprocessing
import os
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from aider_lsp.config.settings import Settings
from aider_lsp.guards.files import FileAccessManager
from aider_lsp.memory import MemorySystem
from aider_lsp.memory import pass_process as pass_module
from aider_lsp.memory import reader as reader_module
from aider_lsp.memory.indexer import child_pass
from aider_lsp.models import ContextGenerationInput


def _project(root: Path, files: int = 4) -> Path:
    for i in range(files):
        path = root / "pkg" / f"mod_{i}.py"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f'"""Module {i} of the package."""\n\ndef helper_{i}():\n    return {i}\n')
    (root / "app").mkdir()
    (root / "app" / "retry.py").write_text(
        '"""Retry a failing test command with exponential backoff."""\n\ndef run_with_retries(command):\n'
        "    return command\n"
    )
    (root / "secrets.txt").write_text("the retry password\n")
    return root


def _memory(root: Path, **settings: object) -> MemorySystem:
    return MemorySystem(FileAccessManager(root), Settings(**settings), index_in_child=True)


async def test_the_background_pass_runs_in_a_child_and_the_server_sees_its_index(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = _project(tmp_path / "proj")
    children: list[int] = []
    original = pass_module.index_in_child

    def spy(*args, **kwargs):  # type: ignore[no-untyped-def]
        children.append(threading.get_ident())
        return original(*args, **kwargs)

    monkeypatch.setattr(pass_module, "index_in_child", spy)
    # reading in this process would be seen here: the child must not use it
    monkeypatch.setattr(reader_module, "read_file", lambda *a: pytest.fail("read in the server process"))
    memory = _memory(root, secret_patterns=["secrets.txt"], context_excludes=["pkg/mod_3.py"])
    messages: list[tuple[str, int | None]] = []
    stats = await memory.start_indexing(lambda message, pct: messages.append((message, pct)))
    await asyncio.sleep(0)  # progress callbacks are delivered on the loop
    try:
        assert children and stats.scanned == 4 and stats.added == 4
        known = set(memory.store.known_files())
        assert "app/retry.py" in known and "secrets.txt" not in known and "pkg/mod_3.py" not in known
        assert messages[0][1] == 0 and messages[-1][1] == 100
        result = await memory.get_relevant_context_for(ContextGenerationInput(query="retry backoff"))
        assert result.matches[0].source_path == "app/retry.py"
        assert "Indexing in progress" not in result.context_summary
    finally:
        await memory.aclose()


async def test_a_child_that_cannot_run_leaves_the_pass_to_the_server_process(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = _project(tmp_path / "proj")

    def broken(*args, **kwargs):  # type: ignore[no-untyped-def]
        raise RuntimeError("the indexing process ended without an answer")

    monkeypatch.setattr(pass_module, "index_in_child", broken)
    memory = _memory(root)
    try:
        stats = await memory.start_indexing()
        assert stats.added == 5
        assert await memory.wait_until_indexed(1)
    finally:
        await memory.aclose()


async def test_an_in_memory_index_is_passed_in_the_server_process(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = _project(tmp_path / "proj")
    monkeypatch.setattr(pass_module, "index_in_child", lambda *a: pytest.fail("no child for :memory:"))
    memory = _memory(root)
    memory.store.close()
    memory.store.in_memory = True  # what a locked or unwritable index file falls back to
    try:
        assert (await memory.start_indexing()).added == 5
    finally:
        await memory.aclose()


def test_a_stop_request_reaches_the_child_between_batches(tmp_path: Path) -> None:
    """A stop set before the pass: the child stops at its first batch and says so."""
    root = _project(tmp_path / "proj", files=40)
    db = tmp_path / "index.sqlite3"
    spec = pass_module.PassSpec.of(FileAccessManager(root), str(db), (), 1_000_000)
    stop = threading.Event()
    stop.set()
    stats = pass_module.index_in_child(spec, stop, lambda *progress: None, child_pass)
    assert stats.scanned == 41 and stats.read < 41


def test_the_child_stops_when_its_server_is_gone() -> None:
    stop = threading.Event()
    watcher = threading.Thread(target=pass_module._watch_parent, args=(os.getpid() + 1, stop), daemon=True)
    watcher.start()
    watcher.join(5)
    assert stop.is_set()


def test_the_server_sees_counts_and_term_shares_written_by_another_process(tmp_path: Path) -> None:
    """The server's connection keeps a file count and term shares between queries: a write by
    the child (another connection) must show in the count."""
    root = _project(tmp_path / "proj")
    db = tmp_path / "index.sqlite3"
    server = MemorySystem(FileAccessManager(root), Settings(), db_path=db)
    child = MemorySystem(FileAccessManager(root), Settings(), db_path=db)
    try:
        assert server.store.count() == 0
        child.index_all()
        assert server.store.count() == 5
        shares = server.store.term_shares(["helper", "retri", "absent"])
        assert shares == {"helper": pytest.approx(4 / 5), "retri": pytest.approx(1 / 5), "absent": 0.0}
        assert server.store.term_shares(["modul"]) == {"modul": pytest.approx(4 / 5)}
        (root / "pkg" / "mod_0.py").unlink()
        child.remove_paths_sync(["pkg/mod_0.py"])
        assert server.store.count() == 4
    finally:
        server.close()
        child.close()


def test_the_child_stops_when_its_server_asks() -> None:
    flag = pass_module.stop_flag(multiprocessing.get_context("spawn"))
    stop = threading.Event()
    watcher = threading.Thread(target=pass_module._watch_parent, args=(os.getppid(), stop, flag), daemon=True)
    watcher.start()
    flag.value = True
    watcher.join(5)
    assert stop.is_set()


def _sleep_on(flag: Any) -> None:
    """A child watching the stop flag, as the pass's child does, until it is killed."""
    pass_module._watch_parent(os.getppid(), threading.Event(), flag)


def test_a_stop_request_never_waits_for_a_child_that_died_watching_it() -> None:
    """The server's shutdown hung forever: a multiprocessing Event's set() waits for every
    process sleeping on it, and a child killed inside wait() never wakes."""
    context = multiprocessing.get_context("spawn")
    flag = pass_module.stop_flag(context)
    child = context.Process(target=_sleep_on, args=(flag,))
    child.start()
    time.sleep(1.0)  # the child is inside its wait
    assert child.is_alive()
    child.kill()
    child.join(5)
    receiving, sending = context.Pipe(duplex=False)
    sending.close()
    stop = threading.Event()
    stop.set()
    outcome: list[BaseException] = []

    def relay() -> None:
        try:
            pass_module._receive(receiving, stop, flag, lambda *progress: None)
        except RuntimeError as exc:
            outcome.append(exc)

    waiter = threading.Thread(target=relay, daemon=True)
    waiter.start()
    waiter.join(10)
    assert not waiter.is_alive(), "asking a dead child to stop hung"
    assert outcome and "without an answer" in str(outcome[0])
    assert flag.value
