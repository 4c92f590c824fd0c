"""Indexer: the passes that write the workspace index.

The full pass walks the workspace (the ignore rules decide what is a candidate), reads only
files whose size or mtime changed, re-indexes only those whose hash changed, and drops files
that left. It runs blocking (`index_all`, the CLI and the benchmark) or in a background
thread (`start_indexing`, the server), which re-runs when the rules change under it. The
editor's saves, creations, deletions and renames are incremental updates; a `.gitignore`
among them reloads the rules and runs a full pass. Every write goes through
`IndexStore.recovering`, so a corrupt database is rebuilt rather than raised.
"""

from __future__ import annotations

import asyncio
import logging
import sqlite3
import threading
import time
from collections.abc import Callable, Iterable
from contextlib import closing, suppress
from dataclasses import dataclass
from pathlib import Path

from ..guards.files import AccessDenied, FileAccessManager
from ..models import IndexStats as IndexStats  # memory's name for it too (models/context.py)
from ..models import ProgressCallback
from . import pass_process, reader
from .history import MAX_COMMITS, GitHistory, HistoryIndex
from .ignore import Candidate, IgnoreRules
from .index import IndexStore

log = logging.getLogger(__name__)

STORE_BATCH_FILES = 256  # files per transaction: fewer commits and WAL checkpoints
PROGRESS_EVERY_S = 0.2


@dataclass
class IndexProgress:
    """Where the full pass is; the search reads it to say an answer may be incomplete."""

    running: bool = False
    done: int = 0
    total: int = 0
    completed_once: bool = False

    def note(self) -> str:
        """The sentence a query's summary ends with while a pass runs ('' otherwise)."""
        if not self.running:
            return ""
        return (
            f" Indexing in progress ({self.done} of {self.total or '?'} files checked);"
            " results may be incomplete."
        )


def _no_progress(message: str, percentage: int | None) -> None:
    """Default progress sink of a blocking pass: nobody is shown it."""


class Indexer:
    """Keeps one workspace's index up to date: full passes, background thread, updates."""

    def __init__(
        self,
        files: FileAccessManager,
        store: Callable[[], IndexStore],
        *,
        excludes: Iterable[str],
        max_file_bytes: int,
        in_child: bool = False,
        stop: threading.Event | None = None,
        history_commits: int = MAX_COMMITS,
    ) -> None:
        """`store` opens the index on first use (the façade decides where it lives).
        `in_child`: the background pass runs in a child process (pass_process.py: the
        server's requests then never wait for its Python work); `stop` is the event a pass
        checks between batches (a process-shared one in that child). `history_commits`: how many
        of the latest git commits are read (history.py; 0: none)."""
        self.files = files
        self._store = store
        self._excludes = tuple(excludes)
        self._max_file_bytes = max_file_bytes
        self._rules: IgnoreRules | None = None
        self._rules_lock = threading.Lock()
        self._pass_lock = threading.Lock()
        self._stop = stop if stop is not None else threading.Event()
        self._in_child = in_child
        self._task: asyncio.Task[IndexStats] | None = None
        self._rescan = False
        self.progress = IndexProgress()
        self.history = HistoryIndex(GitHistory(files.root, history_commits))

    # -- the ignore rules --------------------------------------------------------------------
    @property
    def rules(self) -> IgnoreRules:
        with self._rules_lock:
            if self._rules is None:
                self._rules = IgnoreRules(
                    self.files, excludes=self._excludes, max_file_bytes=self._max_file_bytes
                )
            return self._rules

    def change_rules(self, excludes: Iterable[str], max_file_bytes: int) -> None:
        """New excludes, secret patterns or size cap: new rules, and a pass to apply them."""
        with self._rules_lock:
            self._excludes = tuple(excludes)
            self._max_file_bytes = max_file_bytes
            self._rules = None
        self._rescan = True  # a pass running now re-runs with the new rules
        if self._task is None:
            return  # never indexed yet: the first pass uses the new rules anyway
        try:
            self.start_indexing()
        except RuntimeError:  # no running loop: the next index_all applies them
            pass

    # -- reading files into the index -------------------------------------------------------
    def _index_candidates(
        self,
        pending: list[Candidate],
        hashes: dict[str, str],
        stats: IndexStats,
        on_batch: Callable[[int], None] | None = None,
    ) -> None:
        """Read (in worker processes for a large pass), then store in a few large transactions."""
        items = [(candidate.path, hashes.get(candidate.path)) for candidate in pending]
        batches = reader.read_all(self.files.root, items, self._max_file_bytes)
        waiting: list[reader.ReadResult] = []
        # a large pass commits in large transactions; a small one file chunk by file chunk,
        # so that a query during it already sees what was read
        store_every = STORE_BATCH_FILES if len(items) >= reader.POOL_MIN_FILES else 1
        with closing(batches):
            for results in batches:
                if self._stop.is_set():
                    break
                waiting.extend(results)
                if len(waiting) >= store_every:
                    self._store_results(waiting, hashes, stats)
                    waiting = []
                if on_batch:
                    on_batch(len(results))
        self._store_results(waiting, hashes, stats)

    def _store_results(
        self, results: list[reader.ReadResult], hashes: dict[str, str], stats: IndexStats
    ) -> None:
        """Write one batch: changed files upserted, same-hash ones only re-stamped."""
        records = []
        touched: list[tuple[str, int, float]] = []
        for result in results:
            if result.error:
                stats.skipped.append(result.error)
                continue
            stats.read += 1
            if result.record is None:
                touched.append((result.path, result.size, result.mtime))
                continue
            stats.bytes_indexed += result.bytes_read
            if result.path in hashes:
                stats.updated += 1
            else:
                stats.added += 1
            records.append(result.record)
        stats.touched += len(touched)
        store = self._store()
        store.touch_many(touched)
        store.upsert_many(records)

    # -- full pass ---------------------------------------------------------------------------
    def index_all(self, progress: ProgressCallback | None = None) -> IndexStats:
        """Bring the whole index up to date (blocking); safe against a corrupt database."""
        report = progress or _no_progress
        with self._pass_lock:
            try:
                return self._store().recovering(
                    lambda: self._index_all(report), after_rebuild=lambda _exc: self._index_all(report)
                )
            finally:
                self.progress.running = False

    def _index_all(self, report: ProgressCallback) -> IndexStats:
        """One pass: walk, read what changed, drop what left (under the pass lock)."""
        started = time.perf_counter()
        self.progress.running, self.progress.done, self.progress.total = True, 0, 0
        report("Indexing workspace: scanning files", 0)
        store, rules = self._store(), self.rules
        if store.needs_compaction():  # updates left too many dead rows: rebuild from disk
            log.info("workspace index: compacting (re-reading every file)")
            store.clear()
        known = store.known_files()
        candidates = list(rules.walk())
        # the restart shortcut: same size and mtime = not even read
        pending = [c for c in candidates if known.get(c.path, (None, None, None))[:2] != (c.size, c.mtime)]
        stats = IndexStats(scanned=len(candidates), unchanged=len(candidates) - len(pending))
        self.progress.total, self.progress.done = len(candidates), stats.unchanged
        hashes = {path: value[2] for path, value in known.items()}
        self._index_candidates(pending, hashes, stats, self._batch_reporter(report))
        seen = {candidate.path for candidate in candidates}
        stale = [path for path in known if path not in seen and rules.check(path) is None]
        stats.removed = len(store.remove_many(stale)) if stale else 0
        stats.seconds = time.perf_counter() - started
        if not self._stop.is_set():
            self.progress.completed_once = True
            store.set_meta("last_full_index", str(time.time()))
            self.history.refresh(store)
        report(f"Indexed {stats.scanned} files ({stats.read} read)", 100)
        _log_pass(stats, store.location)
        return stats

    def _batch_reporter(self, report: ProgressCallback) -> Callable[[int], None]:
        """Count read files into the progress; report at most every PROGRESS_EVERY_S."""
        last_report = [0.0]
        progress = self.progress

        def on_batch(count: int) -> None:
            progress.done += count
            now = time.monotonic()
            if now - last_report[0] >= PROGRESS_EVERY_S:
                last_report[0] = now
                report(
                    f"Indexing workspace: {progress.done}/{progress.total} files",
                    int(100 * progress.done / max(1, progress.total)),
                )

        return on_batch

    # -- the background pass -----------------------------------------------------------------
    def start_indexing(self, progress: ProgressCallback | None = None) -> asyncio.Task[IndexStats]:
        """Run `index_all` in a thread; progress is delivered on the caller's event loop."""
        if self._task is not None and not self._task.done():
            return self._task
        loop = asyncio.get_running_loop()

        def threadsafe(message: str, percentage: int | None) -> None:
            if progress is not None and not loop.is_closed():
                loop.call_soon_threadsafe(progress, message, percentage)

        self._stop.clear()
        self.progress.running = True
        self._task = loop.create_task(self._run_index(threadsafe))
        return self._task

    async def _run_index(self, progress: ProgressCallback) -> IndexStats:
        """The background task: passes until one ran without a rule change under it."""
        if self.files.root == Path(self.files.root.anchor):
            # a workspace at "/" would walk the whole machine (/proc, /sys, other users' files)
            log.warning("the workspace is the filesystem root: not indexing it")
            self.progress.running = False
            return IndexStats(skipped=["the workspace is the filesystem root: not indexed"])
        try:
            while True:
                self._rescan = False
                stats = await asyncio.to_thread(self._background_pass, progress)
                if not self._rescan or self._stop.is_set():
                    return stats
        except Exception as exc:  # never let the background task die silently
            log.exception("workspace indexing failed: %s", exc)
            self.progress.running = False
            return IndexStats(skipped=[f"indexing failed: {exc}"])

    def _background_pass(self, report: ProgressCallback) -> IndexStats:
        """One background pass: in a child process when asked and the index is a file."""
        spec = self._child_spec() if self._in_child else None
        if spec is None:
            return self.index_all(report)
        with self._pass_lock:
            self.progress.running, self.progress.done, self.progress.total = True, 0, 0
            try:
                stats = pass_process.index_in_child(spec, self._stop, self._relay(report), child_pass)
            except RuntimeError as exc:
                log.warning("%s; indexing in the server process", exc)
                stats = None
            finally:
                self.progress.running = False
            if stats is not None:
                self._store().reopen()  # the child may have rebuilt the file; fresh statistics
                if not self._stop.is_set():
                    self.progress.completed_once = True
        return stats if stats is not None else self.index_all(report)

    def _child_spec(self) -> pass_process.PassSpec | None:
        """What a child process needs for the pass; None for an in-memory index."""
        store = self._store()
        if store.in_memory or store.db_path is None:
            return None
        with self._rules_lock:
            excludes, max_file_bytes = self._excludes, self._max_file_bytes
        return pass_process.PassSpec.of(
            self.files, str(store.db_path), excludes, max_file_bytes, self.history.git.max_commits
        )

    def _relay(self, report: ProgressCallback) -> pass_process.Progress:
        """The child's progress into this process's IndexProgress and the caller's callback."""

        def relay(message: str, percentage: int | None, done: int, total: int) -> None:
            self.progress.done, self.progress.total = done, total
            report(message, percentage)

        return relay

    @property
    def started(self) -> bool:
        """Whether a background pass was ever started."""
        return self._task is not None

    async def wait_until_indexed(self, timeout: float | None = None) -> bool:
        """True once the running (or a started) full pass has finished within `timeout`."""
        task = self._task
        if task is None:
            return self.progress.completed_once
        done, _ = await asyncio.wait({task}, timeout=timeout)
        return bool(done)

    async def stop(self, timeout: float) -> None:
        """Stop the background pass between batches; wait up to `timeout` for it."""
        self._stop.set()
        if self._task is not None and not self._task.done():
            with suppress(Exception):  # timed out, or the pass failed: the caller closes anyway
                await asyncio.wait_for(asyncio.shield(self._task), timeout=timeout)

    def stop_now(self) -> None:
        """Ask a running pass to stop at its next batch (no waiting)."""
        self._stop.set()

    # -- incremental updates --------------------------------------------------------------
    def _sort_changes(self, paths: Iterable[str]) -> tuple[list[Candidate], list[str], bool]:
        """Changed paths → (candidates to index, paths to drop, whether a .gitignore changed)."""
        pending: list[Candidate] = []
        gone: list[str] = []
        gitignore_changed = False
        for raw in paths:
            rel = relative_path(self.files, raw)
            if rel is None or rel == ".":
                continue
            if _is_gitignore(rel):
                gitignore_changed = True
                continue
            if (self.files.root / rel).is_dir():
                pending.extend(self.rules.walk(rel))
                continue
            candidate = self.rules.check(rel)
            if candidate is None:
                gone.append(rel)
            else:
                pending.append(candidate)
        return pending, gone, gitignore_changed

    def update_paths(self, paths: Iterable[str]) -> IndexStats:
        """Saved/created/changed files or folders: re-index by hash; ignored ones leave."""
        stats = IndexStats()
        started = time.perf_counter()
        pending, gone, gitignore_changed = self._sort_changes(paths)
        store = self._store()

        def apply() -> IndexStats | None:
            hashes = {c.path: digest for c in pending if (digest := store.stored_hash(c.path))}
            self._index_candidates(pending, hashes, stats)
            if gone:
                stats.removed = len(store.remove_many(gone))
            return None

        def busy(exc: sqlite3.DatabaseError) -> IndexStats:
            stats.skipped.append(f"index busy: {exc}")
            return stats

        answer = store.recovering(apply, after_rebuild=lambda _exc: self.index_all(), when_busy=busy)
        if answer is not None:
            return answer
        self._follow_head(store)
        stats.scanned = len(pending)
        stats.seconds = time.perf_counter() - started
        if gitignore_changed:
            self.rules.reload()
            full = self.index_all()
            full.seconds += stats.seconds
            return full
        return stats

    def remove_paths(self, paths: Iterable[str]) -> IndexStats:
        """Deleted files or folders leave the index."""
        rels = [rel for raw in paths if (rel := relative_path(self.files, raw)) and rel != "."]
        if any(_is_gitignore(rel) for rel in rels):
            return self.update_paths(rels)
        store = self._store()
        stats = store.recovering(
            lambda: IndexStats(removed=len(store.remove_many(rels))),
            after_rebuild=lambda _exc: self.index_all(),
            when_busy=lambda exc: IndexStats(skipped=[f"index busy: {exc}"]),
        )
        self._follow_head(store)
        return stats

    def _follow_head(self, store: IndexStore) -> None:
        """Read the new commits when HEAD moved (a commit, checkout or pull shows up as
        changed files, `.git/HEAD` among them); a stat or two when it did not."""
        store.recovering(
            lambda: self.history.refresh_if_moved(store),
            after_rebuild=lambda _exc: 0,
            when_busy=lambda _exc: 0,
        )


def relative_path(files: FileAccessManager, path: str) -> str | None:
    """The workspace-relative form of a path or file URI; None for one outside it (or denied)."""
    try:
        return files.relative(path)
    except AccessDenied:
        return None


def _is_gitignore(rel: str) -> bool:
    return rel.rsplit("/", 1)[-1] == ".gitignore"


def _log_pass(stats: IndexStats, location: str) -> None:
    log.info(
        "workspace index: %d files, %d read, %d added, %d updated, %d removed, %d skipped in %.2fs (%s)",
        stats.scanned,
        stats.read,
        stats.added,
        stats.updated,
        stats.removed,
        len(stats.skipped),
        stats.seconds,
        location,
    )
    if stats.skipped:
        log.info("skipped while indexing: %s", "; ".join(stats.skipped[:20]))


def child_pass(
    files: FileAccessManager,
    store: IndexStore,
    excludes: tuple[str, ...],
    max_file_bytes: int,
    stop: threading.Event,
    history_commits: int,
) -> Indexer:
    """The indexer a child process runs one pass with (pass_process.py's `MakePass`)."""
    return Indexer(
        files,
        lambda: store,
        excludes=excludes,
        max_file_bytes=max_file_bytes,
        stop=stop,
        history_commits=history_commits,
    )
