"""MemorySystem: answers "which files matter for this?" from the workspace index.

Cheap to construct (the SQLite file opens on first use). The first full index runs in a
background thread (`start_indexing`), reporting progress; a restart re-reads only files
whose size or mtime changed, and re-indexes only those whose hash changed. The editor keeps
it fresh through `update_paths` / `remove_paths` / `rename_paths`. Queries during indexing
answer from what is indexed and say so in `context_summary`.

Ranking is the index's (bm25 over files and over definitions, kind priors and boosts, see
rank.py); each match says why it ranked (`metadata["why"]`: the query words it contains, the
definitions that matched). An optional re-ranking of the top N
by an LLM (template `internal:associative_matching`) runs only when a model is configured
and `contextRerank` is on; the summary says which ranking answered.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import os
import sqlite3
import threading
import time
from collections.abc import Awaitable, Callable, Iterable
from contextlib import closing, suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from ..files import AccessDenied, FileAccessManager
from ..models import (
    AssociativeMatchResult,
    ContextGenerationInput,
    MatchItem,
    ProgressCallback,
    TaskResult,
)
from ..settings import Settings
from ..state import ensure_state_dir
from . import rank, reader
from .extract import detect_language, file_kind, subject_name
from .ignore import Candidate, IgnoreRules
from .index import IndexStore, is_corruption

log = logging.getLogger(__name__)

INDEX_DIR = ".aider-lsp"
INDEX_FILE = "index.sqlite3"
FIRST_QUERY_WAIT_S = 10.0
RERANK_TEMPLATE = "internal:associative_matching"
INDEX_RANKING = "(ranking: index bm25 over files and definitions + kind/path/identifier/editor boosts)"
WHY_TERMS = 16
STORE_BATCH_FILES = 256  # files per transaction: fewer commits and WAL checkpoints

T = TypeVar("T")

Reranker = Callable[[str, list[MatchItem]], Awaitable[Any]]


@dataclass
class IndexStats:
    """What one pass did; `read` counts files whose bytes were read (0 on a warm restart)."""

    scanned: int = 0
    unchanged: int = 0
    read: int = 0
    added: int = 0
    updated: int = 0
    touched: int = 0
    removed: int = 0
    skipped: list[str] = field(default_factory=list)
    seconds: float = 0.0
    bytes_indexed: int = 0


@dataclass
class _Progress:
    running: bool = False
    done: int = 0
    total: int = 0
    completed_once: bool = False


def default_index_path(root: Path) -> Path:
    """`<workspace>/.aider-lsp/index.sqlite3`, or a per-user cache file if that is unwritable."""
    folder = root / INDEX_DIR
    try:
        ensure_state_dir(root)
        ignore = folder / ".gitignore"
        if not ignore.exists():
            ignore.write_text("*\n", encoding="utf-8")
        if os.access(folder, os.W_OK):
            return folder / INDEX_FILE
    except OSError:
        pass
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "aider-lsp"
    key = hashlib.sha1(str(root).encode("utf-8")).hexdigest()[:16]
    return cache / key / INDEX_FILE


class MemorySystem:
    """The workspace index plus associative matching for one workspace."""

    def __init__(
        self,
        files: FileAccessManager,
        settings: Settings,
        *,
        db_path: str | os.PathLike[str] | None = None,
        reranker: Reranker | None = None,
        extra_excludes: Iterable[str] = (),
    ) -> None:
        self.files = files
        self.settings = settings
        self.reranker = reranker
        self._explicit_db_path = Path(db_path) if db_path is not None else None
        self._extra_excludes = tuple(extra_excludes)
        self._store: IndexStore | None = None
        self._rules: IgnoreRules | None = None
        self._init_lock = threading.Lock()
        self._pass_lock = threading.Lock()
        self._stop = threading.Event()
        self._progress = _Progress()
        self._task: asyncio.Task[IndexStats] | None = None
        self._rescan = False
        self.last_stats: IndexStats | None = None
        self.first_query_wait = FIRST_QUERY_WAIT_S

    # -- lazily built parts ----------------------------------------------------------------
    @property
    def db_path(self) -> Path:
        """The explicit path, else `contextIndexPath` (relative = to the workspace), else default."""
        if self._explicit_db_path is not None:
            return self._explicit_db_path
        if self.settings.context_index_path:
            return self.files.root / Path(self.settings.context_index_path).expanduser()
        return default_index_path(self.files.root)

    @property
    def store(self) -> IndexStore:
        with self._init_lock:
            if self._store is None:
                store = IndexStore(self.db_path)
                store.open()
                self._store = store
            return self._store

    @property
    def rules(self) -> IgnoreRules:
        with self._init_lock:
            if self._rules is None:
                self._rules = IgnoreRules(
                    self.files,
                    excludes=[*self.settings.context_excludes, *self._extra_excludes],
                    max_file_bytes=self.settings.max_file_bytes,
                )
            return self._rules

    @property
    def indexing(self) -> bool:
        return self._progress.running

    def update_settings(self, settings: Settings) -> None:
        """New excludes, secret patterns or size cap: new rules, and a pass to apply them."""
        changed = (
            settings.context_excludes != self.settings.context_excludes
            or settings.secret_patterns != self.settings.secret_patterns
            or settings.max_file_bytes != self.settings.max_file_bytes
        )
        self.settings = settings
        if not changed:
            return
        with self._init_lock:
            self._rules = None
        self._rescan = True  # a pass running now re-runs with the new rules
        if self._task is None:
            return  # never indexed yet: the first pass uses the new rules anyway
        try:
            self.start_indexing()
        except RuntimeError:  # no running loop: the next index_all applies them
            pass

    # -- the one place a corrupt database is recovered from --------------------------------
    def _recovering(
        self,
        action: Callable[[], T],
        *,
        after_rebuild: Callable[[sqlite3.DatabaseError], T],
        when_busy: Callable[[sqlite3.DatabaseError], T] | None = None,
    ) -> T:
        """Run `action`; a corrupt index is rebuilt empty and `after_rebuild` answers instead.

        A busy or locked database is not corrupt: `when_busy` answers (or the error is
        raised when there is none); nothing is thrown away.
        """
        try:
            return action()
        except sqlite3.DatabaseError as exc:
            if not is_corruption(exc):
                if when_busy is None:
                    raise
                log.warning("workspace index unavailable (%s); the next pass catches up", exc)
                return when_busy(exc)
            self.store.rebuild(str(exc))
            return after_rebuild(exc)

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
        batches = reader.read_all(self.files.root, items, self.settings.max_file_bytes)
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
        self.store.touch_many(touched)
        self.store.upsert_many(records)

    # -- full pass ---------------------------------------------------------------------------
    def index_all(self, progress: ProgressCallback | None = None) -> IndexStats:
        """Bring the whole index up to date (blocking); safe against a corrupt database."""
        with self._pass_lock:
            try:
                return self._recovering(
                    lambda: self._index_all(progress),
                    after_rebuild=lambda _exc: self._index_all(progress),
                )
            finally:
                self._progress.running = False

    def _index_all(self, progress: ProgressCallback | None) -> IndexStats:
        started = time.perf_counter()
        stats = IndexStats()
        self._progress = _Progress(running=True, completed_once=self._progress.completed_once)
        report = progress or (lambda message, percentage: None)
        report("Indexing workspace: scanning files", 0)
        store, rules = self.store, self.rules
        if store.needs_compaction():  # updates left too many dead rows: rebuild from disk
            log.info("workspace index: compacting (re-reading every file)")
            store.clear()
        known = store.known_files()
        candidates = list(rules.walk())
        seen = {candidate.path for candidate in candidates}
        # the restart shortcut: same size and mtime = not even read
        pending = [c for c in candidates if known.get(c.path, (None, None, None))[:2] != (c.size, c.mtime)]
        stats.scanned = len(candidates)
        stats.unchanged = len(candidates) - len(pending)
        self._progress.total = len(candidates)
        self._progress.done = stats.unchanged
        last_report = [0.0]

        def on_batch(count: int) -> None:
            self._progress.done += count
            now = time.monotonic()
            if now - last_report[0] >= 0.2:
                last_report[0] = now
                total = max(1, self._progress.total)
                report(
                    f"Indexing workspace: {self._progress.done}/{self._progress.total} files",
                    int(100 * self._progress.done / total),
                )

        hashes = {path: value[2] for path, value in known.items()}
        self._index_candidates(pending, hashes, stats, on_batch)
        stale = [path for path in known if path not in seen and rules.check(path) is None]
        stats.removed = len(store.remove_many(stale)) if stale else 0
        stats.seconds = time.perf_counter() - started
        if not self._stop.is_set():
            self._progress.completed_once = True
            store.set_meta("last_full_index", str(time.time()))
        self.last_stats = stats
        report(f"Indexed {stats.scanned} files ({stats.read} read)", 100)
        log.info(
            "workspace index: %d files, %d read, %d added, %d updated, %d removed, %d skipped in %.2fs (%s)",
            stats.scanned,
            stats.read,
            stats.added,
            stats.updated,
            stats.removed,
            len(stats.skipped),
            stats.seconds,
            store.location,
        )
        if stats.skipped:
            log.info("skipped while indexing: %s", "; ".join(stats.skipped[:20]))
        return stats

    def start_indexing(self, progress: ProgressCallback | None = None) -> asyncio.Task[IndexStats]:
        """Run `index_all` in a thread; progress is delivered on the caller's event loop."""
        if self._task is not None and not self._task.done():
            return self._task
        loop = asyncio.get_running_loop()

        def threadsafe(message: str, percentage: int | None) -> None:
            if progress is not None and not loop.is_closed():
                loop.call_soon_threadsafe(progress, message, percentage)

        self._stop.clear()
        self._progress.running = True
        self._task = loop.create_task(self._run_index(threadsafe))
        return self._task

    async def _run_index(self, progress: ProgressCallback) -> IndexStats:
        if self.files.root == Path(self.files.root.anchor):
            # a workspace at "/" would walk the whole machine (/proc, /sys, other users' files)
            log.warning("the workspace is the filesystem root: not indexing it")
            self._progress.running = False
            return IndexStats(skipped=["the workspace is the filesystem root: not indexed"])
        try:
            while True:
                self._rescan = False
                stats = await asyncio.to_thread(self.index_all, progress)
                if not self._rescan or self._stop.is_set():
                    return stats
        except Exception as exc:  # never let the background task die silently
            log.exception("workspace indexing failed: %s", exc)
            self._progress.running = False
            return IndexStats(skipped=[f"indexing failed: {exc}"])

    async def wait_until_indexed(self, timeout: float | None = None) -> bool:
        """True once the running (or a started) full pass has finished within `timeout`."""
        task = self._task
        if task is None:
            return self._progress.completed_once
        done, _ = await asyncio.wait({task}, timeout=timeout)
        return bool(done)

    # -- incremental updates --------------------------------------------------------------
    def _relative(self, path: str) -> str | None:
        try:
            return self.files.relative(path)
        except AccessDenied:
            return None

    def update_paths_sync(self, paths: Iterable[str]) -> IndexStats:
        """Saved/created/changed files or folders: re-index by hash; ignored ones leave."""
        stats = IndexStats()
        started = time.perf_counter()
        gitignore_changed = False
        pending: list[Candidate] = []
        gone: list[str] = []
        for raw in paths:
            rel = self._relative(raw)
            if rel is None or rel == ".":
                continue
            if rel.rsplit("/", 1)[-1] == ".gitignore":
                gitignore_changed = True
                continue
            real = self.files.root / rel
            if real.is_dir():
                pending.extend(self.rules.walk(rel))
                continue
            candidate = self.rules.check(rel)
            if candidate is None:
                gone.append(rel)
            else:
                pending.append(candidate)

        def apply() -> IndexStats | None:
            hashes = {c.path: digest for c in pending if (digest := self.store.stored_hash(c.path))}
            self._index_candidates(pending, hashes, stats)
            if gone:
                stats.removed = len(self.store.remove_many(gone))
            return None

        def busy(exc: sqlite3.DatabaseError) -> IndexStats:
            stats.skipped.append(f"index busy: {exc}")
            return stats

        answer = self._recovering(apply, after_rebuild=lambda _exc: self.index_all(), when_busy=busy)
        if answer is not None:
            return answer
        stats.scanned = len(pending)
        stats.seconds = time.perf_counter() - started
        if gitignore_changed:
            self.rules.reload()
            full = self.index_all()
            full.seconds += stats.seconds
            return full
        return stats

    def remove_paths_sync(self, paths: Iterable[str]) -> IndexStats:
        """Deleted files or folders leave the index."""
        rels = [rel for raw in paths if (rel := self._relative(raw)) and rel != "."]
        if any(rel.rsplit("/", 1)[-1] == ".gitignore" for rel in rels):
            return self.update_paths_sync(rels)
        return self._recovering(
            lambda: IndexStats(removed=len(self.store.remove_many(rels))),
            after_rebuild=lambda _exc: self.index_all(),
            when_busy=lambda exc: IndexStats(skipped=[f"index busy: {exc}"]),
        )

    async def update_paths(self, paths: list[str]) -> IndexStats:
        """didSave / created / changed (paths, file URIs or folders)."""
        return await asyncio.to_thread(self.update_paths_sync, list(paths))

    async def remove_paths(self, paths: list[str]) -> IndexStats:
        """Deleted files or folders."""
        return await asyncio.to_thread(self.remove_paths_sync, list(paths))

    async def rename_paths(self, pairs: list[tuple[str, str]]) -> IndexStats:
        """workspace/didRenameFiles: the old names leave, the new ones are indexed."""
        removed = await self.remove_paths([old for old, _ in pairs])
        stats = await self.update_paths([new for _, new in pairs])
        stats.removed += removed.removed
        return stats

    # -- queries ---------------------------------------------------------------------------
    def _indexing_note(self) -> str:
        progress = self._progress
        if progress.running:
            return (
                f" Indexing in progress ({progress.done} of {progress.total or '?'} files checked);"
                " results may be incomplete."
            )
        return ""

    def _target_rows(self, targets: list[str]) -> dict[str, rank.SearchRow]:
        """Named files: their index rows, or a stub when they exist but are not indexed."""
        rels = [rel for raw in targets if (rel := self._relative(raw))]
        rows = self.store.lookup(rels)
        for rel in rels:
            if rel in rows or self.files.is_secret(rel):
                continue
            try:
                info = self.files.info(rel)
            except (AccessDenied, OSError):
                continue
            if info.is_binary or info.is_secret:
                continue
            language = detect_language(rel)
            rows[rel] = rank.SearchRow(rel, language, [], "", info.size, 0.0, file_kind(rel, language))
        return rows

    def search(self, request: ContextGenerationInput) -> AssociativeMatchResult:
        """The index's answer (blocking; milliseconds). Never raises."""
        query = request.effective_query
        if not query:
            return AssociativeMatchResult(context_summary="No query given.", error="empty query")
        return self._recovering(
            lambda: self._search(request, query),
            after_rebuild=lambda exc: AssociativeMatchResult(
                context_summary="The workspace index was corrupt and has been reset; "
                "it is being rebuilt. Ask again in a moment.",
                error=f"index rebuilt: {exc}",
            ),
            when_busy=lambda exc: AssociativeMatchResult(
                context_summary="The workspace index is busy; ask again in a moment.",
                error=f"index unavailable: {exc}",
            ),
        )

    def _search(self, request: ContextGenerationInput, query: str) -> AssociativeMatchResult:
        terms = rank.parse_query(query)
        limit = max(rank.FILE_CANDIDATES, 5 * request.max_results)
        rows: list[rank.SearchRow] = []
        unit_hits: list[rank.UnitHit] = []
        common: frozenset[str] = frozenset()
        if not terms.empty:
            common = self._common_words(terms)
            rows = self.store.search(rank.fts_expression(terms, common), limit)
            unit_hits = self.store.search_units(
                rank.fts_expression(terms), max(rank.UNIT_CANDIDATES, 2 * limit)
            )
        found = {row.path for row in rows}
        unit_rows = self.store.lookup({hit.path for hit in unit_hits if hit.path not in found})
        tested = self.store.tested_code(
            subject_name(path) for path in self._leading_tests(rows, unit_hits, unit_rows)
        )
        history_rows: list[rank.SearchRow] = []
        if request.history and request.history.strip():
            history_terms = rank.parse_query(request.history[-2000:])
            if not history_terms.empty:
                history_rows = self.store.search(rank.fts_expression(history_terms), limit)
        targets = self._target_rows(request.target_files)
        opened = [rel for raw in request.open_files if (rel := self._relative(raw))]
        scored = rank.score(
            terms,
            rows,
            unit_hits=unit_hits,
            unit_rows=unit_rows,
            tested_rows=tested,
            history_rows=history_rows,
            target_rows=targets,
            open_files=opened,
        )
        chosen: list[rank.Scored] = []
        vanished: list[str] = []
        for item in scored:
            if len(chosen) >= request.max_results:
                break
            if item.total <= 0:
                continue
            if self.files.is_secret(item.row.path):  # e.g. a secret pattern added since
                continue
            if not (self.files.root / item.row.path).is_file():
                vanished.append(item.row.path)
                continue
            chosen.append(item)
        words = self._matched_words(terms, chosen, common)
        matches = [
            _match_item(item, words.get(item.row.doc, []), self.store.unit_names(item.units[:3]))
            for item in chosen
        ]
        if vanished:
            self.store.remove_many(vanished)
        total = self.store.count()
        summary = f"{len(matches)} of {total} indexed files match {query[:80]!r} {INDEX_RANKING}."
        if not matches:
            summary = f"No indexed file matches {query[:80]!r} ({total} files indexed)."
        if vanished:
            summary += f" Skipped {len(vanished)} file(s) that no longer exist: {', '.join(vanished[:5])}."
        summary += self._indexing_note()
        return AssociativeMatchResult(context_summary=summary, matches=matches)

    @staticmethod
    def _leading_tests(
        rows: list[rank.SearchRow], unit_hits: list[rank.UnitHit], unit_rows: dict[str, rank.SearchRow]
    ) -> set[str]:
        """The tests among the best text and definition matches: the code they test joins the
        candidates (a test far down the list cannot lift anything into the answer)."""
        kinds = {row.path: row.kind for row in [*rows, *unit_rows.values()]}
        leading = [row.path for row in rows[: rank.LINKED_TESTS]]
        leading += [hit.path for hit in unit_hits[: 2 * rank.LINKED_TESTS]]
        return {path for path in leading if kinds.get(path) == "test"}

    def _common_words(self, terms: rank.QueryTerms) -> frozenset[str]:
        """The query's words found in most files: left out of the file search and of "why"."""
        tokens = rank.term_tokens(terms)
        frequent = self.store.frequent_terms()
        if not frequent:
            return frozenset()
        share = max(rank.FILE_TERM_MAX_SHARE, rank.FILE_TERM_MIN_FILES / max(1, self.store.count()))
        return rank.frequent_tokens(tokens, self.store.stems(tokens), frequent, share)

    def _matched_words(
        self, terms: rank.QueryTerms, chosen: list[rank.Scored], common: frozenset[str]
    ) -> dict[int, list[str]]:
        """file rowid → the query words its text contains, but those in most files."""
        docs = [item.row.doc for item in chosen if item.row.doc]
        words: dict[int, list[str]] = {}
        if not docs or terms.empty:
            return words
        tokens = [token for token in rank.term_tokens(terms) if token not in common]
        for token in tokens[:WHY_TERMS]:
            for doc in self.store.matching(rank.quoted(token), docs):
                words.setdefault(doc, []).append(token.lower())
        return words

    async def get_relevant_context_for(self, request: ContextGenerationInput) -> AssociativeMatchResult:
        """Relevant files for a request; starts (and briefly awaits) the first index if needed."""
        if not request.effective_query:
            return AssociativeMatchResult(context_summary="No query given.", error="empty query")
        if not self._progress.completed_once:
            # a never-indexed workspace: start the first pass (or join the one `initialized`
            # started) and give it a moment, rather than answer from an empty index
            try:
                if self._task is None:
                    self.start_indexing()
                    await self.wait_until_indexed(self.first_query_wait)
                elif await asyncio.to_thread(self.store.count) == 0:
                    await self.wait_until_indexed(self.first_query_wait)
            except Exception as exc:  # the index cannot be opened at all
                return AssociativeMatchResult(
                    context_summary="The workspace index is unavailable.", error=str(exc)
                )
        result = await asyncio.to_thread(self.search, request)
        if result.error or not result.matches:
            return result
        return await self._maybe_rerank(request.effective_query, result)

    @property
    def rerank_enabled(self) -> bool:
        return bool(self.reranker is not None and self.settings.context_rerank and self.settings.model)

    async def _maybe_rerank(self, query: str, result: AssociativeMatchResult) -> AssociativeMatchResult:
        if not self.rerank_enabled:
            return result
        assert self.reranker is not None
        top_n = self.settings.context_rerank_top_n
        head, tail = result.matches[:top_n], result.matches[top_n:]
        try:
            answer = await self.reranker(query, head)
            reordered = apply_rerank(head, answer)
        except Exception as exc:  # the LLM is optional: fall back to the index ranking
            log.warning("LLM re-ranking failed, keeping the index ranking: %s", exc)
            summary = result.context_summary + f" LLM re-ranking failed ({exc}); index ranking used."
            return result.model_copy(update={"context_summary": summary})
        summary = result.context_summary.replace(
            INDEX_RANKING, f"(ranking: LLM re-ranking of the index's top {len(head)})"
        )
        return AssociativeMatchResult(context_summary=summary, matches=reordered + tail)

    # -- the handler's data context ------------------------------------------------------
    # -- lifecycle -------------------------------------------------------------------------
    async def aclose(self) -> None:
        """Stop the background pass (between batches) and close the database."""
        self._stop.set()
        if self._task is not None and not self._task.done():
            with suppress(Exception):  # timed out, or the pass failed: close anyway
                await asyncio.wait_for(asyncio.shield(self._task), timeout=5)
        self.close()

    def close(self) -> None:
        self._stop.set()
        if self._store is not None:
            self._store.close()


def why_ranked(item: rank.Scored, words: list[str], definitions: list[tuple[str, int]]) -> dict[str, Any]:
    """What a user needs to trust or correct a match: words, definitions, kind, editor."""
    why: dict[str, Any] = {"kind": item.row.kind}
    if words:
        why["terms"] = words
    if definitions:
        why["definitions"] = [f"{name} (line {line})" for name, line in definitions]
    if item.tested_by and rank.TESTED_CODE_SHARE * item.test_content > item.content:
        why["tested_by"] = item.tested_by
    if item.prior < 1.0:
        why["demoted"] = f"{item.row.kind} file (x{item.prior:g}); the query is not about it"
    if item.target:
        why["named"] = True
    if item.open:
        why["open"] = True
    return why


def describe_why(why: dict[str, Any]) -> str:
    """One line for the terminal: `defines X (line 3); matches a, b; demoted: test file`."""
    parts: list[str] = []
    if why.get("named"):
        parts.append("named by you")
    if why.get("definitions"):
        parts.append("defines " + ", ".join(why["definitions"]))
    if why.get("terms"):
        parts.append("matches " + ", ".join(why["terms"]))
    if why.get("tested_by"):
        parts.append(f"its test {why['tested_by']} matches")
    if why.get("open"):
        parts.append("open in the editor")
    if why.get("demoted"):
        parts.append("demoted: " + why["demoted"])
    return "; ".join(parts) or f"{why.get('kind', 'file')}"


def _match_item(item: rank.Scored, words: list[str], definitions: list[tuple[str, int]]) -> MatchItem:
    row = item.row
    if row.summary:
        content = row.summary
    elif row.identifiers:
        content = f"{row.language} file defining " + ", ".join(row.identifiers[:12])
    else:
        content = f"{row.language} file"
    return MatchItem(
        id=row.path,
        content=content,
        relevance_score=item.relevance,
        content_type="file_summary",
        source_path=row.path,
        metadata={
            "language": row.language,
            "size": row.size,
            "kind": row.kind,
            "why": why_ranked(item, words, definitions),
            "signals": {
                "text": round(item.text, 4),
                "definition": round(item.unit, 4),
                "tested": round(item.test_content, 4),
                "prior": item.prior,
                "path": round(item.path, 4),
                "identifier": round(item.identifier, 4),
                "history": round(item.history, 4),
                "target": item.target,
                "open": item.open,
            },
        },
    )


# -- optional LLM re-ranking ----------------------------------------------------------------
def _ranked_paths(answer: Any) -> list[tuple[str, float | None]]:
    """Accept the shapes a template may answer with: paths, {path, score} items, wrappers."""
    if isinstance(answer, TaskResult):
        if not answer.ok:
            raise RuntimeError(answer.content or "re-ranking template failed")
        answer = answer.parsed_content if answer.parsed_content is not None else answer.content
    if hasattr(answer, "model_dump"):
        answer = answer.model_dump()
    if isinstance(answer, str):
        answer = json.loads(answer)
    if isinstance(answer, dict):
        for key in ("matches", "file_paths", "paths", "ranking", "files"):
            if key in answer:
                answer = answer[key]
                break
    if not isinstance(answer, list):
        raise ValueError(f"unexpected re-ranking answer: {type(answer).__name__}")
    ranked: list[tuple[str, float | None]] = []
    for entry in answer:
        if isinstance(entry, str):
            ranked.append((entry, None))
        elif isinstance(entry, dict):
            path = entry.get("path") or entry.get("source_path") or entry.get("id")
            score = entry.get("relevance_score", entry.get("score"))
            if isinstance(path, str):
                ranked.append((path, float(score) if isinstance(score, (int, float)) else None))
    return ranked


def apply_rerank(items: list[MatchItem], answer: Any) -> list[MatchItem]:
    """Reorder `items` as the LLM ranked them; unknown paths ignored, unranked ones last."""
    by_path = {item.source_path or item.id: item for item in items}
    ranked = [(path, score) for path, score in _ranked_paths(answer) if path in by_path]
    if not ranked:
        raise ValueError("the re-ranking named none of the candidates")
    ordered: list[MatchItem] = []
    count = len(items)
    for position, (path, score) in enumerate(ranked):
        if path not in by_path:
            continue
        item = by_path.pop(path)
        value = score if score is not None else 1.0 - position / max(1, count)
        ordered.append(item.model_copy(update={"relevance_score": max(0.0, min(1.0, value))}))
    for position, item in enumerate(by_path.values(), start=len(ordered)):
        value = min(item.relevance_score, 1.0 - position / max(1, count))
        ordered.append(item.model_copy(update={"relevance_score": max(0.0, value)}))
    return ordered


def task_reranker(
    handle_task_command: Callable[[str, dict[str, Any]], Awaitable[TaskResult]],
) -> Reranker:
    """A Reranker that asks the TaskSystem template `internal:associative_matching`.

    The template receives {query, candidates: [MatchItem fields without metadata],
    max_results} and answers an AssociativeMatchResult (or a list of paths) best first.
    """

    async def rerank(query: str, items: list[MatchItem]) -> Any:
        candidates = [item.model_dump(mode="json", exclude={"metadata"}) for item in items]
        return await handle_task_command(
            RERANK_TEMPLATE,
            {"query": query, "candidates": candidates, "max_results": len(candidates)},
        )

    return rerank
