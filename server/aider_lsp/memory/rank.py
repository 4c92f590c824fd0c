"""Turning a question into an FTS5 query, and FTS5 hits into scored matches.

Score = 0.80 × text (bm25 relative to the best hit) + 0.10 × path (query words in the
file's path, the file name counting double) + 0.10 × identifier (a query word is a name
the file defines) + 1.0 if the caller named the file (target_files rank first) + 0.10 if
it is open in the editor − 0.05 for a test file when the query is not about tests;
clamped to 0..1 for `relevance_score`, sorted by the unclamped value.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import PurePosixPath

from .extract import split_identifier
from .index import SearchRow

# Tuned on bench/context.py (known-item queries over the stdlib); see its output.
TEXT_WEIGHT = 0.80
PATH_WEIGHT = 0.10
IDENTIFIER_WEIGHT = 0.10
TARGET_BOOST = 1.0
OPEN_BOOST = 0.10
HISTORY_WEIGHT = 0.20
TEST_PENALTY = 0.05  # tests mention everything they test; prefer the code unless asked
TEST_WORDS = frozenset({"test", "tests", "testing", "spec", "specs", "pytest", "unittest"})
_TEST_DIRS = frozenset({"test", "tests", "testing", "__tests__", "spec", "specs"})
_TEST_NAME = re.compile(r"^test_|_test\.|\.test\.|\.spec\.|^conftest\.py$|Test\.\w+$")
MAX_QUERY_TERMS = 48

STOPWORDS: frozenset[str] = frozenset(
    """a about above after again against all am an and any are as at be because been before
    being below between both but by can could did do does doing down during each few for from
    further had has have having he her here hers him his how i if in into is it its itself just
    me more most my no nor not now of off on once only or other our ours out over own same she
    should so some such than that the their theirs them then there these they this those through
    to too under until up very was we were what when where which while who whom why will with
    would you your yours please file files code find show me want need make use using used
    where's what's let lets""".split()
)
_WORD = re.compile(r"(?:[^\W\d]|\$)[\w$]*|\d+")


@dataclass(frozen=True)
class QueryTerms:
    """The words of a query: whole words as typed (for identifiers), and their parts."""

    words: list[str] = field(default_factory=list)  # as typed, deduplicated, no stopwords
    parts: list[str] = field(default_factory=list)  # lowercase parts of compound words

    @property
    def empty(self) -> bool:
        return not self.words and not self.parts


def _norm(word: str) -> str:
    """Cheap plural folding for path/identifier comparison (FTS does real stemming)."""
    word = word.lower()
    return word[:-1] if len(word) > 3 and word.endswith("s") and not word.endswith("ss") else word


def parse_query(text: str) -> QueryTerms:
    words: list[str] = []
    parts: list[str] = []
    seen_words: set[str] = set()
    seen_parts: set[str] = set()
    for word in _WORD.findall(text):
        lowered = word.lower()
        if lowered in STOPWORDS or (len(word) < 2 and not word.isdigit()):
            continue
        if lowered not in seen_words:
            seen_words.add(lowered)
            words.append(word)
        for part in split_identifier(word) or [lowered]:
            if part not in STOPWORDS and len(part) > 1 and part not in seen_parts:
                seen_parts.add(part)
                parts.append(part)
    return QueryTerms(words[:MAX_QUERY_TERMS], parts[:MAX_QUERY_TERMS])


def fts_expression(terms: QueryTerms) -> str:
    """`"w1" OR "w2" …`: every word and part quoted (FTS5 syntax cannot leak in)."""
    tokens: list[str] = []
    seen: set[str] = set()
    for token in [*terms.words, *terms.parts]:
        cleaned = token.replace('"', "")
        key = cleaned.lower()
        if cleaned and key not in seen:
            seen.add(key)
            tokens.append(f'"{cleaned}"')
    return " OR ".join(tokens)


@lru_cache(maxsize=65536)
def path_tokens(path: str) -> tuple[frozenset[str], frozenset[str]]:
    """(all path words, file-name words), normalised: `src/HttpClient.py` → {src, http, client}."""
    pure = PurePosixPath(path)
    stem_words = {_norm(p) for p in split_identifier(pure.stem)} | {pure.stem.lower()}
    all_words = set(stem_words)
    for segment in pure.parts[:-1]:
        all_words.update(_norm(p) for p in split_identifier(segment))
        all_words.add(segment.lower())
    return frozenset(all_words), frozenset(stem_words)


def path_text(path: str) -> str:
    """What the FTS `path` column holds: the path plus the camelCase parts of its segments."""
    pure = PurePosixPath(path)
    words = [path]
    for segment in [*pure.parts[:-1], pure.stem]:
        parts = split_identifier(segment)
        if len(parts) > 1:
            words.extend(parts)
    return " ".join(words)


@dataclass
class Scored:
    row: SearchRow
    text: float = 0.0
    path: float = 0.0
    identifier: float = 0.0
    history: float = 0.0
    target: bool = False
    open: bool = False
    demoted: bool = False  # a test file, and the query is not about tests

    @property
    def total(self) -> float:
        return (
            TEXT_WEIGHT * self.text
            + PATH_WEIGHT * self.path
            + IDENTIFIER_WEIGHT * self.identifier
            + HISTORY_WEIGHT * self.history
            + (TARGET_BOOST if self.target else 0.0)
            + (OPEN_BOOST if self.open else 0.0)
            - (TEST_PENALTY if self.demoted else 0.0)
        )

    @property
    def relevance(self) -> float:
        return round(min(1.0, max(0.0, self.total)), 4)


@lru_cache(maxsize=65536)
def is_test_path(path: str) -> bool:
    """tests/…, test/…, test_x.py, x_test.go, x.test.ts, x.spec.js, FooTest.java."""
    pure = PurePosixPath(path)
    return bool(_TEST_NAME.search(pure.name)) or any(
        part.lower() in _TEST_DIRS for part in pure.parts[:-1]
    )


def path_score(terms: QueryTerms, path: str) -> float:
    if not terms.parts:
        return 0.0
    all_words, stem_words = path_tokens(path)
    hits = 0.0
    for part in terms.parts:
        norm = _norm(part)
        if norm in stem_words:
            hits += 2.0
        elif norm in all_words:
            hits += 1.0
    return min(1.0, hits / (2.0 * min(len(terms.parts), 3)))


def identifier_score(terms: QueryTerms, identifiers: Iterable[str]) -> float:
    defined = " " + " ".join(identifiers).lower() + " "  # one lower() per file: hot path
    exact = sum(1 for word in terms.words if len(word) > 2 and f" {word.lower()} " in defined)
    return min(1.0, 0.5 * exact)


def relative_text_scores(rows: list[SearchRow]) -> dict[str, float]:
    """bm25 (negative, lower is better) → 0..1 relative to the best row."""
    if not rows:
        return {}
    best = min(row.bm25 for row in rows)
    if best >= 0:
        return {row.path: 0.0 for row in rows}
    return {row.path: max(0.0, row.bm25 / best) for row in rows}


def score(
    terms: QueryTerms,
    rows: list[SearchRow],
    *,
    history_rows: list[SearchRow] | None = None,
    target_rows: dict[str, SearchRow] | None = None,
    open_files: Iterable[str] = (),
) -> list[Scored]:
    """Combine text, path, identifier, history and editor signals; best first."""
    text = relative_text_scores(rows)
    history = relative_text_scores(history_rows or [])
    targets = target_rows or {}
    opened = set(open_files)
    about_tests = any(part in TEST_WORDS for part in terms.parts)
    by_path: dict[str, Scored] = {}
    for row in [*rows, *(history_rows or []), *targets.values()]:
        if row.path in by_path:
            continue
        by_path[row.path] = Scored(
            row=row,
            text=text.get(row.path, 0.0),
            path=path_score(terms, row.path),
            identifier=identifier_score(terms, row.identifiers),
            history=history.get(row.path, 0.0),
            target=row.path in targets,
            open=row.path in opened,
            demoted=not about_tests and is_test_path(row.path),
        )
    return sorted(by_path.values(), key=lambda s: (-s.total, s.row.path))
