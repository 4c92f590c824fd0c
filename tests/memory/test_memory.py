"""MemorySystem: the workspace index, its ranking, updates, ignore rules and recovery."""

from __future__ import annotations

import asyncio
import json
import logging
import sqlite3
import threading
import time
from pathlib import Path

import pytest

from aider_lsp.app import Application
from aider_lsp.config.settings import Settings
from aider_lsp.guards.files import FileAccessManager
from aider_lsp.memory import MemorySystem, apply_rerank
from aider_lsp.memory import index as index_module
from aider_lsp.memory import reader as reader_module
from aider_lsp.models import ContextGenerationInput, MatchItem, TaskStatus
from aider_lsp_testing.waiting import eventually


def _write(root: Path, rel: str, text: str | bytes) -> Path:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text, encoding="utf-8")
    return path


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "proj"
    _write(
        root,
        "app/retry.py",
        '"""Retry a failing test command with exponential backoff."""\n\n'
        "def run_with_retries(command, attempts=3):\n    return command\n\n"
        "class BackoffPolicy:\n    pass\n",
    )
    _write(
        root,
        "app/http_client.py",
        '"""A small HTTP client with connection pooling and timeouts."""\n\n'
        "class HttpClient:\n    def get(self, url):\n        return url\n",
    )
    _write(
        root,
        "web/src/parseConfig.ts",
        "// Parse the YAML configuration file into typed settings\n"
        "export function parseConfig(text: string) { return text }\n"
        "export interface AppSettings { port: number }\n",
    )
    _write(root, "docs/guide.md", "# User guide\n\nHow to install and configure the tool.\n")
    return root


def _memory(root: Path, **settings: object) -> MemorySystem:
    return MemorySystem(FileAccessManager(root), Settings(**settings))


def _query(memory: MemorySystem, query: str, **kw: object) -> list[tuple[str, float]]:
    result = memory.search(ContextGenerationInput(query=query, **kw))
    return [(m.source_path or m.id, m.relevance_score) for m in result.matches]


def _paths(memory: MemorySystem, query: str, **kw: object) -> list[str]:
    return [path for path, _ in _query(memory, query, **kw)]


def test_index_then_query_finds_the_right_file(project: Path) -> None:
    memory = _memory(project)
    stats = memory.index_all()
    assert stats.scanned == 4 and stats.added == 4

    assert _paths(memory, "retry with backoff")[0] == "app/retry.py"
    assert _paths(memory, "http connection pooling")[0] == "app/http_client.py"
    assert _paths(memory, "parseConfig")[0] == "web/src/parseConfig.ts"  # camelCase identifier
    assert _paths(memory, "parse config yaml")[0] == "web/src/parseConfig.ts"
    assert _paths(memory, "install guide")[0] == "docs/guide.md"
    scores = [score for _, score in _query(memory, "retry http config guide")]
    assert scores and all(0.0 <= s <= 1.0 for s in scores)
    assert scores == sorted(scores, reverse=True)
    # The index lives in the workspace's own folder, invisible to git.
    assert (project / ".aider-lsp" / "index.sqlite3").is_file()
    assert (project / ".aider-lsp" / ".gitignore").read_text().strip() == "*"
    memory.close()


def test_match_items_carry_summary_language_and_signals(project: Path) -> None:
    memory = _memory(project)
    memory.index_all()
    result = memory.search(ContextGenerationInput(query="run_with_retries"))
    top = result.matches[0]
    assert top.source_path == "app/retry.py" and top.id == "app/retry.py"
    assert top.content.startswith("Retry a failing test command")
    assert top.ranking and top.ranking.language == "python"
    assert top.ranking.signals.identifier > 0
    # on the wire (LSP, MCP, `system:get_context`) the ranking is the seeds' metadata keys
    wire = top.model_dump(mode="json")
    assert "ranking" not in wire and wire["metadata"]["language"] == "python"
    assert wire["metadata"]["signals"]["identifier"] == top.ranking.signals.identifier
    assert wire["metadata"]["score"] == top.ranking.score and wire["metadata"]["size"] == top.ranking.size
    assert wire["metadata"]["why"]["kind"] == "code"
    assert "ranking: index bm25" in result.context_summary
    memory.close()


def test_target_and_open_files_are_boosted(project: Path) -> None:
    memory = _memory(project)
    memory.index_all()
    plain = _paths(memory, "settings configuration")
    assert plain[0] == "web/src/parseConfig.ts"
    boosted = _paths(memory, "settings configuration", target_files=["docs/guide.md"])
    assert boosted[0] == "docs/guide.md"
    # a named file is included even when the text does not match it at all
    named = _paths(memory, "settings configuration", target_files=["app/http_client.py"])
    assert named[0] == "app/http_client.py"
    closed = dict(_query(memory, "configure"))
    opened = dict(_query(memory, "configure", open_files=[str(project / "docs/guide.md")]))
    assert opened["docs/guide.md"] == pytest.approx(closed["docs/guide.md"] + 0.10, abs=1e-3)
    assert opened["web/src/parseConfig.ts"] == closed["web/src/parseConfig.ts"]
    memory.close()


def test_tests_yield_to_code_unless_the_query_is_about_tests(tmp_path: Path) -> None:
    root = tmp_path / "p"
    _write(root, "src/parser.py", '"""Parse the config file."""\ndef parse_config(): pass\n')
    _write(
        root,
        "tests/test_parser.py",
        '"""Tests: parse the config file."""\ndef test_parse_config(): parse_config()\n',
    )
    memory = _memory(root)
    memory.index_all()
    assert _paths(memory, "parse the config file")[0] == "src/parser.py"
    assert _paths(memory, "tests that parse the config file")[0] == "tests/test_parser.py"
    memory.close()


def test_editing_a_file_changes_the_ranking(project: Path) -> None:
    memory = _memory(project)
    memory.index_all()
    assert _paths(memory, "exponential backoff")[0] == "app/retry.py"
    _write(
        project,
        "app/http_client.py",
        '"""Exponential backoff for HTTP requests: backoff, backoff, backoff."""\n'
        "def exponential_backoff(): pass\n",
    )
    stats = asyncio.run(memory.update_paths(["app/http_client.py"]))
    assert stats.updated == 1 and stats.read == 1
    assert _paths(memory, "exponential backoff")[0] == "app/http_client.py"
    memory.close()


def test_deleted_file_is_gone(project: Path) -> None:
    memory = _memory(project)
    memory.index_all()
    (project / "app/retry.py").unlink()
    asyncio.run(memory.remove_paths([str(project / "app/retry.py")]))
    assert "app/retry.py" not in _paths(memory, "retry backoff")
    assert "app/retry.py" not in memory.store.known_files()
    # a whole folder deleted (one watcher event for the folder)
    for path in (project / "web/src").iterdir():
        path.unlink()
    asyncio.run(memory.remove_paths([(project / "web").as_uri()]))
    assert not [p for p in memory.store.known_files() if p.startswith("web/")]
    memory.close()


def test_file_that_vanished_without_notice_is_skipped_and_reported(project: Path) -> None:
    memory = _memory(project)
    memory.index_all()
    (project / "app/retry.py").unlink()
    result = memory.search(ContextGenerationInput(query="retry backoff"))
    assert "app/retry.py" not in [m.source_path for m in result.matches]
    assert "no longer exist" in result.context_summary and "app/retry.py" in result.context_summary
    assert "app/retry.py" not in memory.store.known_files()
    memory.close()


def test_created_and_renamed_files(project: Path) -> None:
    memory = _memory(project)
    memory.index_all()
    _write(project, "lib/quantum.py", '"""Quantum flux capacitor."""\n')
    asyncio.run(memory.update_paths([(project / "lib").as_uri()]))  # a new folder
    assert _paths(memory, "flux capacitor")[0] == "lib/quantum.py"
    (project / "lib/quantum.py").rename(project / "lib/flux.py")
    asyncio.run(memory.rename_paths([("lib/quantum.py", "lib/flux.py")]))
    assert _paths(memory, "flux capacitor") == ["lib/flux.py"]
    memory.close()


def test_ignore_rules_secrets_binary_and_huge_files_are_not_indexed(project: Path) -> None:
    _write(project, ".gitignore", "build/\n*.log\n!keep.log\n")
    _write(project, "build/generated.py", "secret_sauce = 1\n")
    _write(project, "debug.log", "secret_sauce in a log\n")
    _write(project, "keep.log", "secret_sauce kept on purpose\n")
    _write(project, "sub/.gitignore", "local_only.py\n")
    _write(project, "sub/local_only.py", "secret_sauce = 2\n")
    _write(project, "sub/shared.py", "secret_sauce = 3\n")
    _write(project, "vendor/lib.py", "secret_sauce = 4\n")  # excluded by setting
    _write(project, ".env", "OPENAI_API_KEY=sk-secret_sauce\n")
    _write(project, "config/credentials.json", '{"secret_sauce": 1}')
    _write(project, "certs/server.pem", "-----BEGIN secret_sauce-----\n")
    _write(project, ".ssh/config", "Host secret_sauce\n")
    _write(project, "node_modules/pkg/index.js", "var secret_sauce = 5;\n")
    _write(project, "image.png", b"\x89PNG\r\n\x1a\n\x00\x00secret_sauce")
    _write(project, "big.txt", "secret_sauce " * 100_000)
    memory = _memory(project, context_excludes=["vendor/"], max_file_bytes=200_000)
    memory.index_all()
    known = set(memory.store.known_files())
    assert {"keep.log", "sub/shared.py", ".gitignore", "sub/.gitignore"} <= known
    for absent in (
        "build/generated.py",
        "debug.log",
        "sub/local_only.py",
        "vendor/lib.py",
        ".env",
        "config/credentials.json",
        "certs/server.pem",
        ".ssh/config",
        "node_modules/pkg/index.js",
        "image.png",
        "big.txt",
    ):
        assert absent not in known, absent
    assert sorted(_paths(memory, "secret_sauce")) == ["keep.log", "sub/shared.py"]
    # saving a secret file never brings it in either
    asyncio.run(memory.update_paths([".env", "certs/server.pem"]))
    assert ".env" not in memory.store.known_files()
    memory.close()


def test_virtualenvs_are_skipped_by_marker_not_by_name(project: Path) -> None:
    _write(project, "env3/pyvenv.cfg", "home = /usr/bin\n")
    _write(project, "env3/lib/site.py", "secret_sauce = 1\n")
    _write(project, "tools/venv/__init__.py", '"""A package named venv."""\nsecret_sauce = 2\n')
    memory = _memory(project)
    memory.index_all()
    assert _paths(memory, "secret_sauce") == ["tools/venv/__init__.py"]
    memory.close()


def test_gitignore_change_reapplies_the_rules(project: Path) -> None:
    memory = _memory(project)
    memory.index_all()
    assert "docs/guide.md" in memory.store.known_files()
    _write(project, ".gitignore", "docs/\n")
    asyncio.run(memory.update_paths([".gitignore"]))
    assert "docs/guide.md" not in memory.store.known_files()
    _write(project, ".gitignore", "")
    asyncio.run(memory.update_paths([".gitignore"]))
    assert "docs/guide.md" in memory.store.known_files()
    memory.close()


def test_excludes_setting_change_reindexes(project: Path) -> None:
    current = [Settings()]
    memory = MemorySystem(FileAccessManager(project), lambda: current[-1])
    memory.index_all()
    current.append(Settings(context_excludes=["*.md"]))
    memory.settings_changed()  # no loop: applied next pass
    memory.index_all()
    assert "docs/guide.md" not in memory.store.known_files()
    memory.close()


async def test_editor_settings_change_reapplies_the_rules_in_the_background(project: Path) -> None:
    app = Application(project, Settings())
    try:
        await app.memory.start_indexing()
        assert {"docs/guide.md", "web/src/parseConfig.ts"} <= set(app.memory.store.known_files())
        app.update_settings(Settings(secret_patterns=["guide.md"], context_excludes=["web/"]))
        assert await app.memory.wait_until_indexed(10)
        known = set(app.memory.store.known_files())
        assert "docs/guide.md" not in known and "web/src/parseConfig.ts" not in known
        assert "app/retry.py" in known
    finally:
        await app.aclose()


def test_restart_reuses_the_index_without_reading_files(project: Path) -> None:
    first = _memory(project)
    assert first.index_all().read == 4
    first.close()

    second = _memory(project)
    stats = second.index_all()
    assert (stats.scanned, stats.unchanged, stats.read, stats.added) == (4, 4, 0, 0)
    assert _paths(second, "retry backoff")[0] == "app/retry.py"  # answers before any pass
    second.close()

    # touched but unchanged: read and hashed, not re-indexed; changed: re-indexed
    path = project / "app/retry.py"
    later = time.time() + 5
    import os

    os.utime(path, (later, later))
    _write(project, "docs/guide.md", "# Guide\n\nNew text about deployment.\n")
    third = _memory(project)
    stats = third.index_all()
    assert (stats.read, stats.touched, stats.updated, stats.added) == (2, 1, 1, 0)
    assert third.index_all().read == 0
    third.close()


def test_files_deleted_while_the_server_was_down_are_dropped(project: Path) -> None:
    memory = _memory(project)
    memory.index_all()
    memory.close()
    (project / "docs/guide.md").unlink()
    again = _memory(project)
    assert again.index_all().removed == 1
    assert "docs/guide.md" not in again.store.known_files()
    again.close()


def test_corrupt_index_is_rebuilt_with_a_log_line(project: Path, caplog: pytest.LogCaptureFixture) -> None:
    memory = _memory(project)
    memory.index_all()
    memory.close()
    db = project / ".aider-lsp" / "index.sqlite3"
    for suffix in ("-wal", "-shm"):
        Path(f"{db}{suffix}").unlink(missing_ok=True)
    db.write_bytes(b"this is not a database" * 100)
    caplog.set_level(logging.WARNING)
    again = _memory(project)
    stats = again.index_all()
    assert stats.added == 4
    assert _paths(again, "retry backoff")[0] == "app/retry.py"
    assert any("rebuilding" in record.getMessage() for record in caplog.records)
    assert again.store.location == str(db)
    again.close()


def test_an_index_made_by_another_version_is_built_anew_not_kept_as_corrupt(
    project: Path, caplog: pytest.LogCaptureFixture
) -> None:
    memory = _memory(project)
    memory.index_all()
    memory.store.open().execute("UPDATE meta SET value = '0' WHERE key = 'schema'")
    memory.close()
    db = project / ".aider-lsp" / "index.sqlite3"
    caplog.set_level(logging.INFO)
    again = _memory(project)
    assert again.index_all().added == 4
    assert _paths(again, "retry backoff")[0] == "app/retry.py"
    assert not Path(f"{db}.corrupt").exists()
    assert any("building it anew" in record.getMessage() for record in caplog.records)
    assert not any(record.levelno >= logging.WARNING for record in caplog.records)
    again.close()


def test_locked_index_falls_back_to_a_private_index(
    project: Path, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(index_module, "BUSY_TIMEOUT_MS", 100)
    db = project / ".aider-lsp" / "index.sqlite3"
    db.parent.mkdir()
    holder = sqlite3.connect(db, isolation_level=None)
    holder.execute("PRAGMA locking_mode = EXCLUSIVE")
    holder.execute("CREATE TABLE t(x)")
    holder.execute("BEGIN EXCLUSIVE")
    caplog.set_level(logging.WARNING)
    try:
        memory = _memory(project)
        memory.index_all()
        assert memory.store.location == ":memory:"
        assert _paths(memory, "retry backoff")[0] == "app/retry.py"
        assert any("locked" in record.getMessage() for record in caplog.records)
        memory.close()
    finally:
        holder.execute("ROLLBACK")
        holder.close()


def test_malformed_database_found_mid_use_is_rebuilt(project: Path) -> None:
    memory = _memory(project)
    memory.index_all()
    original_search = memory.store.search
    calls = {"n": 0}

    def broken(query: str, limit: int) -> list:
        calls["n"] += 1
        if calls["n"] == 1:
            raise sqlite3.DatabaseError("database disk image is malformed")
        return original_search(query, limit)

    memory.store.search = broken  # type: ignore[method-assign]
    result = memory.search(ContextGenerationInput(query="retry"))
    assert result.error and "rebuilt" in result.context_summary
    memory.index_all()
    assert _paths(memory, "retry backoff")[0] == "app/retry.py"
    memory.close()


def test_empty_query_is_an_error(project: Path) -> None:
    memory = _memory(project)
    result = asyncio.run(memory.get_relevant_context_for(ContextGenerationInput(query="  ")))
    assert result.error and not result.matches
    memory.close()


async def test_background_indexing_reports_progress_and_answers_partially(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(reader_module, "CHUNK_FILES", 1)
    memory = _memory(project)
    gate = threading.Event()
    original = reader_module.read_file

    def slow_read(root, path, old_hash, max_bytes):  # type: ignore[no-untyped-def]
        if path == "web/src/parseConfig.ts":
            gate.wait(120)  # held until the test has asked (a cap past the test's own)
        return original(root, path, old_hash, max_bytes)

    monkeypatch.setattr(reader_module, "read_file", slow_read)
    messages: list[tuple[str, int | None]] = []
    task = memory.start_indexing(lambda message, pct: messages.append((message, pct)))
    assert await eventually(lambda: "app/retry.py" in memory.store.known_files())
    result = await memory.get_relevant_context_for(ContextGenerationInput(query="retry backoff"))
    assert result.matches[0].source_path == "app/retry.py"
    assert "Indexing in progress" in result.context_summary
    gate.set()
    stats = await task
    assert stats.scanned == 4
    await asyncio.sleep(0)  # progress callbacks are delivered on the loop
    assert messages[0][1] == 0 and messages[-1][1] == 100
    done = await memory.get_relevant_context_for(ContextGenerationInput(query="retry backoff"))
    assert "Indexing in progress" not in done.context_summary
    await memory.aclose()


async def test_first_query_starts_the_index_itself(project: Path) -> None:
    memory = _memory(project)
    result = await memory.get_relevant_context_for(ContextGenerationInput(query="http client"))
    assert result.matches[0].source_path == "app/http_client.py"
    await memory.aclose()


async def test_a_query_right_after_start_up_waits_for_the_first_pass(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`initialized` starts the first pass; a query that arrives before it stored anything
    waits for it instead of answering "no indexed file matches"."""
    original = reader_module.read_file

    def slow_read(root, path, old_hash, max_bytes):  # type: ignore[no-untyped-def]
        time.sleep(0.1)
        return original(root, path, old_hash, max_bytes)

    monkeypatch.setattr(reader_module, "read_file", slow_read)
    memory = _memory(project)
    memory.start_indexing()
    result = await memory.get_relevant_context_for(ContextGenerationInput(query="http client"))
    assert result.matches and result.matches[0].source_path == "app/http_client.py"
    await memory.aclose()


async def test_llm_rerank_is_used_only_when_enabled(project: Path) -> None:
    calls: list[list[str]] = []

    async def reverse(query: str, items: list[MatchItem]) -> list[str]:
        calls.append([item.id for item in items])
        return [item.id for item in reversed(items)]

    files = FileAccessManager(project)
    off = MemorySystem(files, Settings(model="test"), reranker=reverse)
    result = await off.get_relevant_context_for(ContextGenerationInput(query="retry http config"))
    assert not calls and "index bm25" in result.context_summary
    await off.aclose()

    on = MemorySystem(files, Settings(model="test", context_rerank=True), reranker=reverse)
    base = on.search(ContextGenerationInput(query="retry http config"))
    result = await on.get_relevant_context_for(ContextGenerationInput(query="retry http config"))
    assert calls and "LLM re-ranking" in result.context_summary
    assert [m.id for m in result.matches] == [m.id for m in reversed(base.matches)]

    async def broken(query: str, items: list[MatchItem]) -> list[str]:
        raise RuntimeError("model unreachable")

    on.reranker = broken
    fallback = await on.get_relevant_context_for(ContextGenerationInput(query="retry http config"))
    assert "re-ranking failed" in fallback.context_summary
    assert [m.id for m in fallback.matches] == [m.id for m in base.matches]
    await on.aclose()


def test_apply_rerank_accepts_the_template_answer_shapes() -> None:
    items = [MatchItem(id=p, content="", relevance_score=0.5, source_path=p) for p in ("a", "b", "c")]
    answer = {
        "context_summary": "x",
        "matches": [{"source_path": "c", "relevance_score": 0.9}, {"id": "zzz", "source_path": "zzz"}],
    }
    ranked = apply_rerank(items, answer)
    assert [m.id for m in ranked] == ["c", "a", "b"] and ranked[0].relevance_score == 0.9
    assert [m.id for m in apply_rerank(items, json.dumps(["b", "a"]))][:2] == ["b", "a"]
    with pytest.raises(ValueError):
        apply_rerank(items, ["nothing-known"])


async def test_get_context_tool_contract(project: Path) -> None:
    _write(project, ".env", "OPENAI_API_KEY=sk-retry-backoff\n")
    app = Application(project, Settings())
    try:
        empty = await app.handle_task_command("system:get_context", {"query": ""})
        assert empty.status is TaskStatus.FAILED
        assert empty.error and empty.error.reason.value == "input_validation_failure"
        bad = await app.handle_task_command("system:get_context", {"query": "x", "target_files": 3})
        assert bad.error and bad.error.reason.value == "input_validation_failure"

        result = await app.handle_task_command(
            "system:get_context", {"query": "retry backoff", "history": "we talked about http"}
        )
        assert result.status is TaskStatus.COMPLETE
        paths = json.loads(result.content)
        assert paths[0] == "app/retry.py" and ".env" not in paths
        assert result.notes["file_paths"] == paths
        assert "match" in result.notes["context_summary"]
        assert result.notes["matches"][0]["source_path"] == "app/retry.py"
        # the provider-safe alias and a JSON-string target list work too
        aliased = await app.handle_task_command(
            "system_get_context", {"query": "settings", "target_files": '["docs/guide.md"]'}
        )
        assert json.loads(aliased.content)[0] == "docs/guide.md"
    finally:
        await app.aclose()


def test_busy_database_is_not_mistaken_for_a_corrupt_one(project: Path) -> None:
    memory = _memory(project)
    memory.index_all()

    def busy(query: str, limit: int) -> list:
        raise sqlite3.OperationalError("database is locked")

    memory.store.search = busy  # type: ignore[method-assign]
    result = memory.search(ContextGenerationInput(query="retry"))
    assert result.error and "busy" in result.context_summary
    assert memory.store.rebuilt_reason is None and memory.store.count() == 4
    memory.close()


def test_non_ascii_queries_and_files(project: Path) -> None:
    _write(project, "docs/größe.md", "# Größenberechnung\n\nÜber die Größe von Dateien.\n")
    memory = _memory(project)
    memory.index_all()
    assert _paths(memory, "Größe der Dateien")[0] == "docs/größe.md"
    # FTS5 syntax in a query is just text (every term is quoted): no error, no match
    result = memory.search(ContextGenerationInput(query='"x" NEAR(a b) * ( ) : ^ {col}:y'))
    assert result.error is None and result.matches == []
    memory.close()


def test_any_query_text_answers_without_error(tmp_path: Path) -> None:
    """Property: whatever the text (FTS5 syntax, unicode, control characters), a query
    answers with scores in 0..1, best first, and never a secret."""
    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st

    root = tmp_path / "p"
    _write(root, "a.py", '"""Parse AND tokenize NEAR the input."""\ndef tokenize(): pass\n')
    _write(root, "b.md", '# Notes\n\nSome * notes: (with) ^syntax "quotes".\n')
    _write(root, ".env", "TOKEN=tokenize-notes-parse\n")
    memory = _memory(root)
    memory.index_all()

    @settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
    @given(st.text(max_size=80))
    def check(text: str) -> None:
        result = memory.search(ContextGenerationInput(query=text))
        if not text.strip():
            assert result.error
            return
        assert result.error is None
        scores = [m.relevance_score for m in result.matches]
        assert all(0.0 <= s <= 1.0 for s in scores) and scores == sorted(scores, reverse=True)
        assert ".env" not in [m.source_path for m in result.matches]

    check()
    memory.close()


async def test_a_workspace_at_the_filesystem_root_is_not_indexed(tmp_path: Path) -> None:
    """Opening "/" must not walk the whole machine (/proc, /sys, other projects)."""
    memory = MemorySystem(
        FileAccessManager("/"),
        Settings(context_index_path=str(tmp_path / "index.sqlite3")),
    )
    stats = await asyncio.wait_for(memory.start_indexing(), 60)
    assert stats.skipped == ["the workspace is the filesystem root: not indexed"]
    await memory.aclose()
