"""MemorySystem: answers "which files matter for this?" from the workspace index.

Cheap to construct (the SQLite file opens on first use). The first full index runs in a
background thread (`start_indexing`), reporting progress; a restart re-reads only files
whose size or mtime changed, and re-indexes only those whose hash changed. The editor keeps
it fresh through `update_paths` / `remove_paths` / `rename_paths`. Queries during indexing
answer from what is indexed and say so in `context_summary`.

Ranking is the index's (bm25 + boosts, see rank.py). An optional re-ranking of the top N
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
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..files import AccessDenied, FileAccessManager
from ..models import (
    AssociativeMatchResult,
    ContextGenerationInput,
    MatchItem,
    ProgressCallback,
    TaskResult,
)
from ..settings import Settings
from . import rank
from .extract import extract, identifier_text
from ..state import ensure_state_dir
from .ignore import Candidate, IgnoreRules
from .index import FileRecord, IndexStore, content_hash, is_corruption

log = logging.getLogger(__name__)

INDEX_DIR = ".aider-lsp"
INDEX_FILE = "index.sqlite3"
BATCH_SIZE = 64
FIRST_QUERY_WAIT_S = 10.0
RERANK_TEMPLATE = "internal:associative_matching"

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

    # -- reading one file into a record ---------------------------------------------------
    def _record_for(
        self, candidate: Candidate, old_hash: str | None, stats: IndexStats
    ) -> FileRecord | None:
        """Read, hash and extract one file; None when unchanged (touched) or vanished."""
        real = self.files.root / candidate.path
        try:
            with real.open("rb") as handle:
                data = handle.read(self.settings.max_file_bytes + 1)
            stat = real.stat()
        except OSError as exc:
            stats.skipped.append(f"{candidate.path}: {exc.strerror or exc}")
            return None
        stats.read += 1
        digest = content_hash(data)
        if digest == old_hash:
            self.store.touch(candidate.path, stat.st_size, stat.st_mtime)
            stats.touched += 1
            return None
        text = data.decode("utf-8", errors="replace")
        info = extract(candidate.path, text)
        stats.bytes_indexed += len(data)
        if old_hash is None:
            stats.added += 1
        else:
            stats.updated += 1
        return FileRecord(
            path=candidate.path,
            size=stat.st_size,
            mtime=stat.st_mtime,
            hash=digest,
            language=info.language,
            identifiers=info.identifiers,
            summary=info.summary,
            path_text=rank.path_text(candidate.path),
            identifier_text=identifier_text(info.identifiers),
            body=text,
        )

    def _index_candidates(
        self,
        pending: list[Candidate],
        hashes: dict[str, str],
        stats: IndexStats,
        on_batch: Callable[[int], None] | None = None,
    ) -> None:
        for start in range(0, len(pending), BATCH_SIZE):
            if self._stop.is_set():
                return
            batch = pending[start : start + BATCH_SIZE]
            records = [
                record
                for candidate in batch
                if (record := self._record_for(candidate, hashes.get(candidate.path), stats))
            ]
            self.store.upsert_many(records)
            if on_batch:
                on_batch(len(batch))

    # -- full pass ---------------------------------------------------------------------------
    def index_all(self, progress: ProgressCallback | None = None) -> IndexStats:
        """Bring the whole index up to date (blocking); safe against a corrupt database."""
        with self._pass_lock:
            try:
                return self._index_all(progress)
            except sqlite3.DatabaseError as exc:
                if not is_corruption(exc):
                    raise
                self.store.rebuild(str(exc))
                return self._index_all(progress)
            finally:
                self._progress.running = False

    def _index_all(self, progress: ProgressCallback | None) -> IndexStats:
        started = time.perf_counter()
        stats = IndexStats()
        self._progress = _Progress(running=True, completed_once=self._progress.completed_once)
        report = progress or (lambda message, percentage: None)
        report("Indexing workspace: scanning files", 0)
        store, rules = self.store, self.rules
        known = store.known_files()
        candidates = list(rules.walk())
        seen = {candidate.path for candidate in candidates}
        # the restart shortcut: same size and mtime = not even read
        pending = [
            c for c in candidates if known.get(c.path, (None, None, None))[:2] != (c.size, c.mtime)
        ]
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
            "workspace index: %d files, %d read, %d added, %d updated, %d removed, %d skipped"
            " in %.2fs (%s)",
            stats.scanned, stats.read, stats.added, stats.updated, stats.removed,
            len(stats.skipped), stats.seconds, store.location,
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
        try:
            hashes = {
                c.path: digest for c in pending if (digest := self.store.stored_hash(c.path))
            }
            self._index_candidates(pending, hashes, stats)
            if gone:
                stats.removed = len(self.store.remove_many(gone))
        except sqlite3.DatabaseError as exc:
            if not is_corruption(exc):
                log.warning("index update failed (%s); the next pass catches up", exc)
                stats.skipped.append(f"index busy: {exc}")
                return stats
            self.store.rebuild(str(exc))
            gitignore_changed = True
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
        try:
            return IndexStats(removed=len(self.store.remove_many(rels)))
        except sqlite3.DatabaseError as exc:
            if not is_corruption(exc):
                log.warning("index update failed (%s); the next pass catches up", exc)
                return IndexStats(skipped=[f"index busy: {exc}"])
            self.store.rebuild(str(exc))
            return self.index_all()

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
            language = extract(rel, "").language
            rows[rel] = rank.SearchRow(rel, language, [], "", info.size, 0.0)
        return rows

    def search(self, request: ContextGenerationInput) -> AssociativeMatchResult:
        """The index's answer (blocking; milliseconds). Never raises."""
        query = request.effective_query
        if not query:
            return AssociativeMatchResult(context_summary="No query given.", error="empty query")
        try:
            return self._search(request, query)
        except sqlite3.DatabaseError as exc:
            if not is_corruption(exc):
                return AssociativeMatchResult(
                    context_summary="The workspace index is busy; ask again in a moment.",
                    error=f"index unavailable: {exc}",
                )
            self.store.rebuild(str(exc))
            return AssociativeMatchResult(
                context_summary="The workspace index was corrupt and has been reset; "
                "it is being rebuilt. Ask again in a moment.",
                error=f"index rebuilt: {exc}",
            )

    def _search(self, request: ContextGenerationInput, query: str) -> AssociativeMatchResult:
        terms = rank.parse_query(query)
        limit = max(50, 5 * request.max_results)
        rows = self.store.search(rank.fts_expression(terms), limit) if not terms.empty else []
        history_rows: list[rank.SearchRow] = []
        if request.history and request.history.strip():
            history_terms = rank.parse_query(request.history[-2000:])
            if not history_terms.empty:
                history_rows = self.store.search(rank.fts_expression(history_terms), limit)
        targets = self._target_rows(request.target_files)
        opened = [rel for raw in request.open_files if (rel := self._relative(raw))]
        scored = rank.score(
            terms, rows, history_rows=history_rows, target_rows=targets, open_files=opened
        )
        matches: list[MatchItem] = []
        vanished: list[str] = []
        for item in scored:
            if len(matches) >= request.max_results:
                break
            if item.total <= 0:
                continue
            if self.files.is_secret(item.row.path):  # e.g. a secret pattern added since
                continue
            if not (self.files.root / item.row.path).is_file():
                vanished.append(item.row.path)
                continue
            matches.append(_match_item(item))
        if vanished:
            self.store.remove_many(vanished)
        total = self.store.count()
        summary = (
            f"{len(matches)} of {total} indexed files match {query[:80]!r} "
            "(ranking: index bm25 + path/identifier/editor boosts)."
        )
        if not matches:
            summary = f"No indexed file matches {query[:80]!r} ({total} files indexed)."
        if vanished:
            summary += f" Skipped {len(vanished)} file(s) that no longer exist: {', '.join(vanished[:5])}."
        summary += self._indexing_note()
        return AssociativeMatchResult(context_summary=summary, matches=matches)

    async def get_relevant_context_for(
        self, request: ContextGenerationInput
    ) -> AssociativeMatchResult:
        """Relevant files for a request; starts (and briefly awaits) the first index if needed."""
        if not request.effective_query:
            return AssociativeMatchResult(context_summary="No query given.", error="empty query")
        if self._task is None and not self._progress.completed_once:
            try:
                self.start_indexing()
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

    async def _maybe_rerank(
        self, query: str, result: AssociativeMatchResult
    ) -> AssociativeMatchResult:
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
            "(ranking: index bm25 + path/identifier/editor boosts)",
            f"(ranking: LLM re-ranking of the index's top {len(head)})",
        )
        return AssociativeMatchResult(context_summary=summary, matches=reordered + tail)

    # -- the handler's data context ------------------------------------------------------
    # -- lifecycle -------------------------------------------------------------------------
    async def aclose(self) -> None:
        """Stop the background pass (between batches) and close the database."""
        self._stop.set()
        if self._task is not None and not self._task.done():
            try:
                await asyncio.wait_for(asyncio.shield(self._task), timeout=5)
            except (asyncio.TimeoutError, Exception):
                pass
        self.close()

    def close(self) -> None:
        self._stop.set()
        if self._store is not None:
            self._store.close()


def _match_item(item: rank.Scored) -> MatchItem:
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
            "signals": {
                "text": round(item.text, 4),
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
