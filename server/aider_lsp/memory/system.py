"""MemorySystem: answers "which files matter for this?" from the workspace index.

The façade the rest of the server uses; the work is done by its parts:

- `indexer.Indexer`: the first full pass (in a background thread, with progress), restarts
  that re-read only changed files, the editor's incremental updates, ignore-rule changes;
- `search.Searcher`: a query's ranked files, each saying why it ranked (explain.py);
- `rerank`: the optional LLM re-ranking of the top N, through the `Reranker` it is given
  (runs only when a model is configured and `contextRerank` is on).

Cheap to construct: the SQLite file opens on first use. A query on a never-indexed
workspace starts the first pass and gives it a moment; queries during a pass answer from
what is indexed and say so in `context_summary`.
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import threading
from collections.abc import Iterable, Sequence
from pathlib import Path

from ..config.settings import Settings, SettingsProvider
from ..config.state import ensure_state_dir
from ..guards.files import FileAccessManager
from ..models import AssociativeMatchResult, ContextGenerationInput, ProgressCallback
from .index import IndexStore
from .indexer import Indexer, IndexStats
from .rerank import Reranker, rerank_top
from .search import Searcher

INDEX_FILE = "index.sqlite3"
FIRST_QUERY_WAIT_S = 10.0
CLOSE_WAIT_S = 5.0


def default_index_path(root: Path) -> Path:
    """`<workspace>/.aider-lsp/index.sqlite3`, or a per-user cache file if that is unwritable."""
    try:
        folder = ensure_state_dir(root)
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
        settings: Settings | SettingsProvider,
        *,
        db_path: str | os.PathLike[str] | None = None,
        reranker: Reranker | None = None,
        extra_excludes: Iterable[str] = (),
        index_in_child: bool = False,
    ) -> None:
        """`settings`: the provider of the settings in force, read at each use (the server's;
        `settings_changed` says when they change), or fixed settings (the CLI, a test).
        `reranker` re-ranks the top N when `contextRerank` is on (see rerank.py).
        `index_in_child`: the background pass runs in a child process (the server: its
        requests never wait for the pass; see pass_process.py)."""
        self.files = files
        self._settings: SettingsProvider = settings if callable(settings) else (lambda: settings)
        self.reranker = reranker
        self.first_query_wait = FIRST_QUERY_WAIT_S
        self._explicit_db_path = Path(db_path) if db_path is not None else None
        self._extra_excludes = tuple(extra_excludes)
        self._store: IndexStore | None = None
        self._store_lock = threading.Lock()
        self._rules = self._rules_of(self.settings)  # the rules the index was built with
        self._indexer = Indexer(
            files,
            self._open_store,
            excludes=self._excludes(),
            max_file_bytes=self.settings.max_file_bytes,
            in_child=index_in_child,
            history_commits=self.settings.context_history_commits,
        )
        self._searcher = Searcher(
            files,
            self._open_store,
            self._indexer.progress,
            history_on=lambda: self.settings.context_history_commits > 0,
        )

    # -- the database ----------------------------------------------------------------------
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
        """The index, opened on first use."""
        return self._open_store()

    def _open_store(self) -> IndexStore:
        with self._store_lock:
            if self._store is None:
                store = IndexStore(self.db_path)
                store.open()
                self._store = store
            return self._store

    # -- settings ----------------------------------------------------------------------------
    @property
    def settings(self) -> Settings:
        """The settings in force (read from the provider at each use)."""
        return self._settings()

    def _excludes(self) -> tuple[str, ...]:
        return (*self.settings.context_excludes, *self._extra_excludes)

    @staticmethod
    def _rules_of(settings: Settings) -> tuple[object, ...]:
        """What decides which files are indexed: excludes, secret patterns, size cap."""
        return (tuple(settings.context_excludes), tuple(settings.secret_patterns), settings.max_file_bytes)

    def settings_changed(self) -> None:
        """The settings changed: new excludes, secret patterns or size cap mean new rules,
        and a pass to apply them (the rest is read at its next use)."""
        self._indexer.history.change_limit(self.settings.context_history_commits)  # read at next look
        rules = self._rules_of(self.settings)
        if rules != self._rules:
            self._rules = rules
            self._indexer.change_rules(self._excludes(), self.settings.max_file_bytes)

    # -- indexing (indexer.py) ---------------------------------------------------------------
    @property
    def indexing(self) -> bool:
        return self._indexer.progress.running

    def index_all(self, progress: ProgressCallback | None = None) -> IndexStats:
        """Bring the whole index up to date (blocking); safe against a corrupt database."""
        return self._indexer.index_all(progress)

    def start_indexing(self, progress: ProgressCallback | None = None) -> asyncio.Task[IndexStats]:
        """Run `index_all` in a thread; progress is delivered on the caller's event loop."""
        return self._indexer.start_indexing(progress)

    async def wait_until_indexed(self, timeout: float | None = None) -> bool:
        """True once the running (or a started) full pass has finished within `timeout`."""
        return await self._indexer.wait_until_indexed(timeout)

    def update_paths_sync(self, paths: Iterable[str]) -> IndexStats:
        """Saved/created/changed files or folders: re-index by hash; ignored ones leave."""
        return self._indexer.update_paths(paths)

    def remove_paths_sync(self, paths: Iterable[str]) -> IndexStats:
        """Deleted files or folders leave the index."""
        return self._indexer.remove_paths(paths)

    async def update_paths(self, paths: list[str]) -> IndexStats:
        """didSave / created / changed (paths, file URIs or folders)."""
        return await asyncio.to_thread(self._indexer.update_paths, list(paths))

    async def remove_paths(self, paths: list[str]) -> IndexStats:
        """Deleted files or folders."""
        return await asyncio.to_thread(self._indexer.remove_paths, list(paths))

    async def files_changed(self, updated: Sequence[str] = (), deleted: Sequence[str] = ()) -> None:
        """Files saved, created or deleted (the editor's events): the deleted leave, the rest come."""
        if deleted:
            await self.remove_paths(list(deleted))
        if updated:
            await self.update_paths(list(updated))

    async def rename_paths(self, pairs: list[tuple[str, str]]) -> IndexStats:
        """workspace/didRenameFiles: the old names leave, the new ones are indexed."""
        removed = await self.remove_paths([old for old, _ in pairs])
        stats = await self.update_paths([new for _, new in pairs])
        stats.removed += removed.removed
        return stats

    # -- queries (search.py, rerank.py) ------------------------------------------------------
    def search(self, request: ContextGenerationInput) -> AssociativeMatchResult:
        """The index's answer (blocking; milliseconds). Never raises."""
        query = request.effective_query
        if not query:
            return AssociativeMatchResult(context_summary="No query given.", error="empty query")
        return self.store.recovering(
            lambda: self._searcher.search(request, query),
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

    async def get_relevant_context_for(self, request: ContextGenerationInput) -> AssociativeMatchResult:
        """Relevant files for a request; starts (and briefly awaits) the first index if needed."""
        if not request.effective_query:
            return AssociativeMatchResult(context_summary="No query given.", error="empty query")
        try:
            await self._first_index()
        except Exception as exc:  # the index cannot be opened at all
            return AssociativeMatchResult(
                context_summary="The workspace index is unavailable.", error=str(exc)
            )
        result = await asyncio.to_thread(self.search, request)
        if result.error or not result.matches or not self.rerank_enabled:
            return result
        assert self.reranker is not None
        return await rerank_top(
            self.reranker, request.effective_query, result, self.settings.context_rerank_top_n
        )

    async def code_under_test(self, query: str, files: Sequence[str], limit: int) -> list[str]:
        """The index's best code files for a test failure, beside `files` (a test lends its
        match to the code it tests): what a fix of the failure usually edits."""
        request = ContextGenerationInput(query=query, target_files=list(files), max_results=5)
        found = await self.get_relevant_context_for(request)
        code = [
            match.source_path
            for match in found.matches
            if match.source_path
            and match.source_path not in files
            and match.ranking is not None
            and match.ranking.why.kind == "code"
        ]
        return code[:limit]

    async def _first_index(self) -> None:
        """A never-indexed workspace: start the first pass (or join the one `initialized`
        started, while it has stored nothing yet) and give it a moment, rather than answer
        from an empty index."""
        if self._indexer.progress.completed_once:
            return
        if not self._indexer.started:
            self.start_indexing()
            await self.wait_until_indexed(self.first_query_wait)
        elif await asyncio.to_thread(self.store.count) == 0:
            await self.wait_until_indexed(self.first_query_wait)

    @property
    def rerank_enabled(self) -> bool:
        return bool(self.reranker is not None and self.settings.context_rerank and self.settings.model)

    # -- lifecycle -------------------------------------------------------------------------
    async def aclose(self) -> None:
        """Stop the background pass (between batches) and close the database."""
        await self._indexer.stop(CLOSE_WAIT_S)
        self.close()

    def close(self) -> None:
        self._indexer.stop_now()
        if self._store is not None:
            self._store.close()
