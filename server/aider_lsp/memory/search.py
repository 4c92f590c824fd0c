"""Searcher: a query against the workspace index, answered in milliseconds.

Two FTS5 searches (whole files, and definitions) give the candidates; the code that the best
matching tests test joins them; the files that past commits like the query changed join them
too, and how often past commits changed each counts (history.py, in a git repository); the
optional history text, the named files, the files the question mentions by name and the
files open in the editor add their boosts; `rank.score` orders them (see rank.py). A file
that is now a secret or has vanished is left out (a vanished one also leaves the index), and
each answer says why it ranked (explain.py). Blocking, read-only but for dropping vanished
files.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

from ..guards.files import AccessDenied, FileAccessManager
from ..models import AssociativeMatchResult, ContextGenerationInput, MatchItem
from . import history, rank
from .explain import match_item
from .extract import detect_language, file_kind, subject_name
from .index import IndexStore
from .indexer import IndexProgress, relative_path

INDEX_RANKING = "(ranking: index bm25 over files and definitions + kind/path/identifier/editor boosts)"
WHY_TERMS = 16
HISTORY_CHARS = 2000  # the end of the history text is what the conversation is about now
MENTION_CANDIDATES = 20  # files searched for a name the question mentions


@dataclass
class _Candidates:
    """What the index found for a query's words, before scoring."""

    rows: list[rank.SearchRow]  # file matches
    unit_hits: list[rank.UnitHit]  # definition matches
    unit_rows: dict[str, rank.SearchRow]  # the files of definition matches not among `rows`
    tested: dict[str, rank.SearchRow]  # the code the leading tests test
    common: frozenset[str]  # query words in most files: not searched, no reason in "why"

    def paths(self, *others: Iterable[str | rank.SearchRow]) -> set[str]:
        """Every file that will be scored: these and the `others` (paths or rows)."""
        paths = {row.path for row in self.rows} | set(self.unit_rows) | set(self.tested)
        for other in others:
            paths.update(item if isinstance(item, str) else item.path for item in other)
        return paths


class Searcher:
    """Answers queries from the index that `store` opens; `progress` says if it is complete."""

    def __init__(
        self,
        files: FileAccessManager,
        store: Callable[[], IndexStore],
        progress: IndexProgress,
        history_on: Callable[[], bool] = lambda: True,
    ) -> None:
        """`history_on`: whether past commits count now (the setting; the stored commits are
        dropped only at the index's next look, so turning it off must not wait for that)."""
        self.files = files
        self._store = store
        self._progress = progress
        self._history_on = history_on

    def search(self, request: ContextGenerationInput, query: str) -> AssociativeMatchResult:
        """The ranked files for a non-empty `query` (may raise sqlite3 errors: see the façade)."""
        store = self._store()
        terms = rank.parse_query(query)
        limit = max(rank.FILE_CANDIDATES, 5 * request.max_results)
        found = self._candidates(store, terms, limit)
        history_rows = self._history_rows(store, request.history, limit)
        target_rows = self._target_rows(store, request.target_files)
        mentioned_rows = self._mentioned_rows(store, query)
        module_rows = self._module_rows(store, terms) if request.edit_goal else {}
        history_on = self._history_on()
        changed = self._changed(store, terms) if history_on else {}
        candidates = found.paths(history_rows, target_rows, mentioned_rows, changed) if history_on else set()
        scored = rank.score(
            terms,
            found.rows,
            unit_hits=found.unit_hits,
            unit_rows=found.unit_rows,
            tested_rows=found.tested,
            history_rows=history_rows,
            target_rows=target_rows,
            mentioned_rows=mentioned_rows,
            module_rows=module_rows,
            open_files=[rel for raw in request.open_files if (rel := relative_path(self.files, raw))],
            changed=changed,
            recent=history.recent_files(store) if history_on else {},
            churn=history.churn(store, candidates),
            fresh=history.freshness(store, candidates),
        )
        chosen, vanished = self._choose(scored, request.max_results)
        matches = self._explain(store, terms, chosen, found.common)
        if vanished:
            store.remove_many(vanished)
        return AssociativeMatchResult(
            context_summary=self._summary(store, query, matches, vanished), matches=matches
        )

    # -- the steps of a search ---------------------------------------------------------------
    def _candidates(self, store: IndexStore, terms: rank.QueryTerms, limit: int) -> _Candidates:
        """The file and definition matches, their files, and the code their tests test."""
        rows: list[rank.SearchRow] = []
        unit_hits: list[rank.UnitHit] = []
        common: frozenset[str] = frozenset()
        if not terms.empty:
            files = store.count()
            common = self._common_words(store, terms, rank.common_share(files))
            rare_enough = self._common_words(store, terms, rank.definition_common_share(files))
            rows = store.search(rank.fts_expression(terms, common, rare_enough), limit)
            unit_hits = store.search_units(
                rank.fts_expression(terms, rare_enough, rare_enough), max(rank.UNIT_CANDIDATES, 2 * limit)
            )
        found = {row.path for row in rows}
        unit_rows = store.lookup({hit.path for hit in unit_hits if hit.path not in found})
        tested = store.tested_code(subject_name(path) for path in _leading_tests(rows, unit_hits, unit_rows))
        return _Candidates(rows, unit_hits, unit_rows, tested, common)

    def _history_rows(self, store: IndexStore, history: str | None, limit: int) -> list[rank.SearchRow]:
        """The files the conversation so far is about (the optional `history` text).

        Its words in more than 5,000 files (and 5% of them) are left out as in the definition
        search: at 100,000 files a few sentences of history holding them scored most of the
        files (170 ms a query); smaller workspaces keep every word."""
        if not history or not history.strip():
            return []
        history_terms = rank.parse_query(history[-HISTORY_CHARS:])
        if history_terms.empty:
            return []
        share = rank.definition_common_share(store.count())  # 1 or more: no word is left out
        frequent = self._common_words(store, history_terms, share) if share < 1 else frozenset()
        return store.search(rank.fts_expression(history_terms, frequent, frequent), limit)

    @staticmethod
    def _changed(store: IndexStore, terms: rank.QueryTerms) -> dict[str, history.ChangedFile]:
        """The indexed files that past commits like this query changed (history.py)."""
        if terms.empty:
            return {}
        return history.changed_files(store, rank.fts_expression(terms))

    @staticmethod
    def _mentioned_rows(store: IndexStore, query: str) -> dict[str, tuple[rank.SearchRow, float]]:
        """The files the question mentions by name (`run.py`, `src/app/run.py`), each with its
        share of the mention: a name that several files have is shared among them."""
        mentioned: dict[str, tuple[rank.SearchRow, float]] = {}
        for name in rank.file_mentions(query):
            lowered = name.lower()
            rows = list(store.lookup([name]).values()) or [  # a workspace path: one index lookup
                row
                for row in store.search(rank.mention_expression(name), MENTION_CANDIDATES)
                if (path := row.path.lower()) == lowered or path.endswith("/" + lowered)
            ]
            for row in rows:
                share = 1 / len(rows)
                if row.path not in mentioned or mentioned[row.path][1] < share:
                    mentioned[row.path] = (row, share)
        return mentioned

    @staticmethod
    def _module_rows(store: IndexStore, terms: rank.QueryTerms) -> dict[str, tuple[rank.SearchRow, float]]:
        """The code files a goal names by their module name ("the contents module" →
        `contents.py`), each with its share of the word: a name several modules have is
        shared among them."""
        named: dict[str, tuple[rank.SearchRow, float]] = {}
        for word in rank.module_words(terms):
            wanted = rank.module_name(word)
            rows = [
                row
                for row in store.search(rank.mention_expression(word), MENTION_CANDIDATES)
                if row.kind == "code" and rank.module_name(row.path) == wanted
            ]
            for row in rows:
                share = 1 / len(rows)
                if row.path not in named or named[row.path][1] < share:
                    named[row.path] = (row, share)
        return named

    def _target_rows(self, store: IndexStore, targets: list[str]) -> dict[str, rank.SearchRow]:
        """Named files: their index rows, or a stub when they exist but are not indexed."""
        rels = [rel for raw in targets if (rel := relative_path(self.files, raw))]
        rows = store.lookup(rels)
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

    def _choose(self, scored: list[rank.Scored], max_results: int) -> tuple[list[rank.Scored], list[str]]:
        """The best `max_results` that still may be shown, and the indexed files now gone."""
        chosen: list[rank.Scored] = []
        vanished: list[str] = []
        for item in scored:
            if len(chosen) >= max_results:
                break
            if item.total <= 0:
                continue
            if self.files.is_secret(item.row.path):  # e.g. a secret pattern added since
                continue
            if not (self.files.root / item.row.path).is_file():
                vanished.append(item.row.path)
                continue
            chosen.append(item)
        return chosen, vanished

    def _explain(
        self, store: IndexStore, terms: rank.QueryTerms, chosen: list[rank.Scored], common: frozenset[str]
    ) -> list[MatchItem]:
        """The chosen files as MatchItems saying why each ranked."""
        words = self._matched_words(store, terms, chosen, common)
        return [
            match_item(item, words.get(item.row.doc, []), store.unit_names(item.units[:3])) for item in chosen
        ]

    def _summary(self, store: IndexStore, query: str, matches: list[MatchItem], vanished: list[str]) -> str:
        """How many files matched of how many, which ranking, what was skipped, what is missing."""
        total = store.count()
        summary = f"{len(matches)} of {total} indexed files match {query[:80]!r} {INDEX_RANKING}."
        if not matches:
            summary = f"No indexed file matches {query[:80]!r} ({total} files indexed)."
        if vanished:
            summary += f" Skipped {len(vanished)} file(s) that no longer exist: {', '.join(vanished[:5])}."
        return summary + self._progress.note()

    # -- helpers -----------------------------------------------------------------------------
    @staticmethod
    def _common_words(store: IndexStore, terms: rank.QueryTerms, share: float) -> frozenset[str]:
        """The query's words found in more than `share` of the files: left out of a search (and,
        for the file search's, of "why")."""
        tokens = rank.term_tokens(terms)
        stems = store.stems(tokens)
        shares = store.term_shares(stem for found in stems.values() for stem in found)
        return rank.frequent_tokens(tokens, stems, shares, share)

    @staticmethod
    def _matched_words(
        store: IndexStore, terms: rank.QueryTerms, chosen: list[rank.Scored], common: frozenset[str]
    ) -> dict[int, list[str]]:
        """file rowid → the query words its text contains, but those in most files."""
        docs = [item.row.doc for item in chosen if item.row.doc]
        words: dict[int, list[str]] = {}
        if not docs or terms.empty:
            return words
        tokens = [token for token in rank.term_tokens(terms) if token not in common]
        for token in tokens[:WHY_TERMS]:
            for doc in store.matching(rank.quoted(token), docs):
                words.setdefault(doc, []).append(token.lower())
        return words


def _leading_tests(
    rows: list[rank.SearchRow], unit_hits: list[rank.UnitHit], unit_rows: dict[str, rank.SearchRow]
) -> set[str]:
    """The tests among the best text and definition matches: the code they test joins the
    candidates (a test far down the list cannot lift anything into the answer)."""
    kinds = {row.path: row.kind for row in [*rows, *unit_rows.values()]}
    leading = [row.path for row in rows[: rank.LINKED_TESTS]]
    leading += [hit.path for hit in unit_hits[: 2 * rank.LINKED_TESTS]]
    return {path for path in leading if kinds.get(path) == "test"}
