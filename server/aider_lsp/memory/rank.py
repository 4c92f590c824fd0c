"""Turning a question into FTS5 queries, and their hits into ranked files.

Two searches answer a query: whole files (`fts`: path, identifiers, summary, body) and
definitions (`unit_fts`: a function's or class's name, signature and docstring, a module's
docstring), so that a question about one function finds its file however long the module.
Each gives bm25 scores, made relative to its own best hit; per file

    content   = 0.65 × text + 0.35 × definition + 0.10 × path + 0.10 × identifier
    relevance = prior(kind) × (max(content, 0.8 × what a matching test of it says)
                               + 0.50 × changes + 0.10 × recent + 0.20 × churn
                               + 0.40 × fresh)
              + 0.20 × history + 1.0 if the caller named the file + 0.10 if it is open
              + 0.50 if the question names it (`run.py`, `src/flask/typing.py`), shared
                among the files of that name
              + 0.50 if a change goal calls it by its module name ("the contents module"
                → `contents.py`), shared among the modules of that name (goals only:
                prose that describes one module names others)

`changes`: past commits whose messages match the query changed the file (weighted by how
specific a change of it is: a file most commits touch says little); `recent`: the latest
commits changed it; `churn`: how often commits changed it, on a log scale; `fresh`: how few
commits ago it last changed, on a log scale, and 1 for a file not committed yet (history.py;
all four 0 outside a git repository, and for a file of a kind the query is not about: tests,
docs, changelogs and configuration change alongside the code a change is about).

The prior prefers the files a change would edit: code 1.0, configuration 0.8, tests 0.7,
docs 0.5, changelogs and generated files 0.3, licences 0.2; it is 1.0 for every kind when
the query is about that kind ("tests", "docs", "changelog", "license", …) or names the
file. Query words adjacent in the question are also searched as a phrase, so "flag value"
counts more where those words stand together.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from functools import cached_property, lru_cache
from pathlib import PurePosixPath

from .extract import LANGUAGES, split_identifier, subject_name
from .history import ChangedFile
from .index import SearchRow, UnitHit

TEXT_WEIGHT = 0.65
UNIT_WEIGHT = 0.35
PATH_WEIGHT = 0.10
IDENTIFIER_WEIGHT = 0.10
# The code a matching test tests counts for at least this share of the test's score: above
# the test itself (whose kind prior is 0.7) unless the query is about tests.
TESTED_CODE_SHARE = 0.8
MAX_TESTED_FILES = 3
LINKED_TESTS = 15  # the tests among this many best file matches lend to the code they test
TARGET_BOOST = 1.0
MENTION_BOOST = 0.5  # the question names the file (shared among the files of that name)
# A change goal names the module to change by its name ("type hints for the contents module"):
# shared among the modules of that name; only for goals (`ContextGenerationInput.edit_goal`).
MODULE_BOOST = 0.5
OPEN_BOOST = 0.10
HISTORY_WEIGHT = 0.20
# Past commits whose messages match the query lend to the files they changed (history.py).
CHANGES_WEIGHT = 0.5
RECENT_WEIGHT = 0.1
CHURN_WEIGHT = 0.2
FRESH_WEIGHT = 0.4
KIND_PRIOR: dict[str, float] = {
    "code": 1.0,
    "config": 0.8,
    "test": 0.7,
    "doc": 0.5,
    "changelog": 0.3,
    "generated": 0.3,
    "licence": 0.2,
}
TEST_WORDS = frozenset({"test", "tests", "testing", "spec", "specs", "pytest", "unittest"})
KIND_WORDS: dict[str, frozenset[str]] = {
    "test": TEST_WORDS | {"fixture", "fixtures", "conftest", "coverage"},
    "doc": frozenset(
        {
            "doc",
            "docs",
            "documentation",
            "document",
            "documented",
            "readme",
            "guide",
            "tutorial",
            "manual",
            "sphinx",
            "mkdocs",
            "example",
            "examples",
        }
    ),
    "changelog": frozenset(
        {"changelog", "changelogs", "changes", "history", "news", "towncrier", "release", "releases"}
    ),
    "licence": frozenset({"license", "licence", "licensing", "copyright", "notice"}),
    "generated": frozenset({"generated", "regenerate", "lock", "lockfile", "protobuf"}),
    "config": frozenset(
        {
            "config",
            "configuration",
            "ci",
            "workflow",
            "pyproject",
            "setup",
            "tox",
            "dependency",
            "dependencies",
            "packaging",
            "build",
            "version",
            "yaml",
            "toml",
            "json",
        }
    ),
}
# A query word in more than a quarter of the files, or in a large workspace in more than 5,000
# files (and 5% of them), is left out of the file and definition searches: bm25 weighs it at
# most a third of a rare word, while scoring every file that holds it is most of a query's
# time (at 100,000 files such words made a query score tens of thousands of rows: 0.1-0.7 s).
# Small workspaces keep every word (a word in at most 200 files is always searched).
FILE_TERM_MAX_SHARE = 0.25
FILE_TERM_MIN_SHARE = 0.05
FILE_TERM_MIN_FILES = 200
FILE_TERM_MAX_FILES = 5000
MAX_QUERY_TERMS = 48
MAX_PHRASES = 8
NEAR_WORDS = 2  # a phrase's words also count when at most this many words stand between them
FILE_CANDIDATES = 50
UNIT_CANDIDATES = 100

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
    """The words of a query: whole words as typed (for identifiers), their parts, phrases."""

    words: list[str] = field(default_factory=list)  # as typed, deduplicated, no stopwords
    parts: list[str] = field(default_factory=list)  # lowercase parts of compound words
    phrases: list[str] = field(default_factory=list)  # "flag value": adjacent in the query

    @property
    def empty(self) -> bool:
        return not self.words and not self.parts

    # Derived once per query: `score` consults them for every candidate file.
    @cached_property
    def normalized_parts(self) -> tuple[str, ...]:
        return tuple(_norm(part) for part in self.parts)

    @cached_property
    def lowered(self) -> frozenset[str]:
        """Every word and part, lowercase (for the kind words and file names)."""
        return frozenset(self.parts) | self.lowered_words

    @cached_property
    def lowered_words(self) -> frozenset[str]:
        return frozenset(word.lower() for word in self.words)

    @cached_property
    def name_probes(self) -> tuple[tuple[str, tuple[str, ...]], ...]:
        """Per word of 3+ letters, how it may stand among a file's defined names: as is,
        private (`_word`) or a dunder (`__version__` for "version")."""
        return tuple(
            (low, (f" {low} ", f" _{low} ", f" __{low}__ "))
            for low in (word.lower() for word in self.words if len(word) > 2)
        )


def _norm(word: str) -> str:
    """Cheap plural folding for path/identifier comparison (FTS does real stemming)."""
    word = word.lower()
    return word[:-1] if len(word) > 3 and word.endswith("s") and not word.endswith("ss") else word


def parse_query(text: str) -> QueryTerms:
    words: list[str] = []
    parts: list[str] = []
    phrases: list[str] = []
    seen_words: set[str] = set()
    seen_parts: set[str] = set()
    previous: str | None = None
    for word in _WORD.findall(text):
        lowered = word.lower()
        if lowered in STOPWORDS or (len(word) < 2 and not word.isdigit()):
            previous = None
            continue
        if previous is not None and previous != lowered and len(phrases) < MAX_PHRASES:
            phrase = f"{previous} {lowered}"
            if phrase not in phrases:
                phrases.append(phrase)
        previous = lowered
        if lowered not in seen_words:
            seen_words.add(lowered)
            words.append(word)
        for part in split_identifier(word) or [lowered]:
            if part not in STOPWORDS and len(part) > 1 and part not in seen_parts:
                seen_parts.add(part)
                parts.append(part)
    return QueryTerms(words[:MAX_QUERY_TERMS], parts[:MAX_QUERY_TERMS], phrases)


_MENTION = re.compile(r"(?<![\w./-])((?:[\w.-]+/)*[\w-]+(\.[A-Za-z]\w*))(?![\w/])")
MAX_MENTIONS = 4


def file_mentions(text: str) -> list[str]:
    """File names the question mentions with their extension, or paths (`run.py`,
    `src/flask/typing.py`); `e.g.` or `Settings.model_validate` are not file names."""
    found: list[str] = []
    for match in _MENTION.finditer(text):
        name, suffix = match.group(1).strip("./"), match.group(2)
        if suffix.lower() in LANGUAGES and name not in found:
            found.append(name)
    return found[:MAX_MENTIONS]


def mention_expression(name: str) -> str:
    """The FTS5 expression that finds files whose path holds the mentioned name."""
    return "path : " + quoted(" ".join(re.findall(r"[^\W_]+", name)))


def quoted(token: str) -> str:
    return '"' + token.replace('"', "") + '"'


def term_tokens(terms: QueryTerms) -> list[str]:
    """Every word and part once (case-insensitively), in query order."""
    tokens: list[str] = []
    seen: set[str] = set()
    for token in [*terms.words, *terms.parts]:
        key = token.replace('"', "").lower()
        if key and key not in seen:
            seen.add(key)
            tokens.append(token)
    return tokens


def fts_expression(
    terms: QueryTerms, skip: frozenset[str] = frozenset(), phrase_skip: frozenset[str] = frozenset()
) -> str:
    """`"w1" OR "w2" OR "w1 w2" OR NEAR("w1" "w2", 2) …`: words, parts and phrases quoted (no
    FTS5 syntax leaks in). Each phrase is also searched with its words near each other: a
    description missing some words ("return number items" for "return the number of the
    items") still finds where they stand together (word-dropped docstring queries on
    repositories other than the stdlib: recall@1 0.766 → 0.791, bench/context.py docstrings).

    Tokens in `skip` (see `frequent_tokens`) are left out, and the phrases made only of words
    in `phrase_skip` (at 100,000 files a phrase of two words in thousands of files each cost a
    query as much as the words themselves; smaller workspaces keep every phrase). A phrase
    with any word in `phrase_skip` keeps its exact form but not its NEAR: FTS5 scores a NEAR
    group as its words, reading each word's whole doclist for bm25 at every query, so a NEAR
    with a left-out word brought back the cost that leaving the word out saved (a third of a
    query at 100,000 files); the exact phrase, as rare as the pair, keeps the signal."""
    tokens = [token for token in term_tokens(terms) if token not in skip]
    left_out = {token.lower() for token in phrase_skip}  # phrases hold lowercase words
    phrases = [phrase for phrase in terms.phrases if not left_out.issuperset(phrase.split())]
    near = [
        f"NEAR({' '.join(quoted(word) for word in phrase.split())}, {NEAR_WORDS})"
        for phrase in phrases
        if left_out.isdisjoint(phrase.split())
    ]
    return " OR ".join([*(quoted(token) for token in [*tokens, *phrases]), *near])


def common_share(files: int) -> float:
    """The share of the workspace's files above which a query word is left out of the searches."""
    files = max(1, files)
    most = min(FILE_TERM_MAX_SHARE * files, max(FILE_TERM_MAX_FILES, FILE_TERM_MIN_SHARE * files))
    return max(FILE_TERM_MIN_FILES, most) / files


def definition_common_share(files: int) -> float:
    """The same for the definition search, which keeps every word but those in more than
    5,000 files (and 5% of them): its short texts need each word (leaving out the words in a
    quarter of the files lost 1-2 points of recall on the stdlib bench)."""
    files = max(1, files)
    return max(FILE_TERM_MAX_FILES, FILE_TERM_MIN_SHARE * files) / files


def frequent_tokens(
    tokens: list[str],
    stems: dict[str, tuple[str, ...]],
    frequent: dict[str, float],
    max_share: float,
) -> frozenset[str]:
    """The one-term tokens found in more than `max_share` of the files; the rarest kept."""
    common = {
        token
        for token in tokens
        if len(stems.get(token, ())) == 1 and frequent.get(stems[token][0], 0.0) > max_share
    }
    if common and common.issuperset(tokens):  # keep the least frequent one to search for
        rarest = min(tokens, key=lambda token: frequent.get(stems[token][0], 0.0))
        common.discard(rarest)
    return frozenset(common)


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


@dataclass
class Scored:
    row: SearchRow
    text: float = 0.0
    unit: float = 0.0
    path: float = 0.0
    identifier: float = 0.0
    history: float = 0.0
    changes: float = 0.0  # past commits matching the query changed this file (history.py)
    changed_in: str = ""  # the best of those commits, `sha subject`
    recent: float = 0.0
    churn: float = 0.0  # how often past commits changed this file (0..1, log scale)
    fresh: float = 0.0  # how lately a commit changed it (0..1, log scale of commits since)
    target: bool = False
    mentioned: float = 0.0  # the share of a mention by name in the question (`mentions`)
    module: float = 0.0  # the share of a goal word that is this module's name (`module_name`)
    open: bool = False
    prior: float = 1.0  # below 1 for tests, docs, changelogs, … unless the query is about them
    units: list[UnitHit] = field(default_factory=list)  # the definitions that matched, best first
    tested_by: str | None = None  # the matching test that tests this file (`link_tests_to_code`)
    test_content: float = 0.0  # what that test lends: its text, path and names score

    @property
    def demoted(self) -> bool:
        return self.prior < 1.0

    @property
    def content(self) -> float:
        """What the file's own text, definitions, path and names say (before the kind prior)."""
        return (
            TEXT_WEIGHT * self.text
            + UNIT_WEIGHT * self.unit
            + PATH_WEIGHT * self.path
            + IDENTIFIER_WEIGHT * self.identifier
        )

    @property
    def past(self) -> float:
        """What the project's history says (history.py). Nothing for a file of a kind the query
        is not about (a test, a doc, a changelog, configuration): such files change alongside
        the code a change is about, so what past commits say of them is said of that code,
        which gets it."""
        if self.demoted:
            return 0.0
        return (
            CHANGES_WEIGHT * self.changes
            + RECENT_WEIGHT * self.recent
            + CHURN_WEIGHT * self.churn
            + FRESH_WEIGHT * self.fresh
        )

    @property
    def total(self) -> float:
        content = max(self.content, TESTED_CODE_SHARE * self.test_content)
        return (
            self.prior * (content + self.past)
            + HISTORY_WEIGHT * self.history
            + (TARGET_BOOST if self.target else 0.0)
            + MENTION_BOOST * self.mentioned
            + MODULE_BOOST * self.module
            + (OPEN_BOOST if self.open else 0.0)
        )

    @property
    def relevance(self) -> float:
        return round(min(1.0, max(0.0, self.total)), 4)


def path_score(terms: QueryTerms, path: str) -> float:
    if not terms.parts:
        return 0.0
    all_words, stem_words = path_tokens(path)
    hits = 0.0
    for norm in terms.normalized_parts:
        if norm in stem_words:
            hits += 2.0
        elif norm in all_words:
            hits += 1.0
    return min(1.0, hits / (2.0 * min(len(terms.parts), 3)))


def module_name(path: str) -> str:
    """The name a goal calls a code file by: its stem without leading underscores, a
    package's folder for its `__init__.py` (`pkg/_compat.py` → compat, `pkg/rate/__init__.py`
    → rate), plural-folded like the path words."""
    pure = PurePosixPath(path)
    stem = pure.parent.name if pure.stem == "__init__" else pure.stem
    return _norm(stem.lstrip("_"))


def module_words(terms: QueryTerms) -> list[str]:
    """The goal's words that may name a module: whole words of 3+ letters as typed."""
    return [word.lower() for word in terms.words if len(word) > 2 and word.isidentifier()]


@lru_cache(maxsize=65536)
def _file_names(path: str) -> tuple[str, str]:
    pure = PurePosixPath(path)
    return pure.stem.lower(), pure.name.lower()


def names_file(terms: QueryTerms, path: str) -> bool:
    """The query names the file itself (`update CHANGES`, `fix conftest`, `test_options.py`)."""
    stem, name = _file_names(path)
    return stem in terms.lowered_words or name in terms.lowered_words


def kind_prior(terms: QueryTerms, kind: str, path: str) -> float:
    """How much a file of this kind counts for this query (1.0 when asked about it)."""
    prior = KIND_PRIOR.get(kind, 1.0)
    if prior >= 1.0:
        return 1.0
    if not terms.lowered.isdisjoint(KIND_WORDS.get(kind, ())) or names_file(terms, path):
        return 1.0
    return prior


def identifier_score(terms: QueryTerms, row: SearchRow) -> float:
    """0.5 for each query word that is a name the file defines (at most 1)."""
    defined = row.defined_names
    found = sum(
        1
        for word, forms in terms.name_probes
        if word in defined and any(form in defined for form in forms)  # most fail the first test
    )
    return min(1.0, 0.5 * found)


def relative_text_scores(rows: list[SearchRow]) -> dict[str, float]:
    """bm25 (negative, lower is better) → 0..1 relative to the best row."""
    if not rows:
        return {}
    best = min(row.bm25 for row in rows)
    if best >= 0:
        return {row.path: 0.0 for row in rows}
    return {row.path: max(0.0, row.bm25 / best) for row in rows}


def unit_scores(hits: list[UnitHit]) -> tuple[dict[str, float], dict[str, list[UnitHit]]]:
    """Per file: its best definition's bm25 relative to the best overall, and its hits."""
    if not hits:
        return {}, {}
    best = min(hit.bm25 for hit in hits)
    scores: dict[str, float] = {}
    by_file: dict[str, list[UnitHit]] = {}
    for hit in hits:
        by_file.setdefault(hit.path, []).append(hit)
        if best < 0 and hit.path not in scores:
            scores[hit.path] = max(0.0, hit.bm25 / best)
    return scores, by_file


def _found(
    rows: list[SearchRow],
    unit_rows: dict[str, SearchRow],
    tested_rows: dict[str, SearchRow],
    history_rows: list[SearchRow],
    targets: dict[str, SearchRow],
    mentioned: dict[str, tuple[SearchRow, float]],
    modules: dict[str, tuple[SearchRow, float]],
    changes: dict[str, ChangedFile],
) -> Iterator[SearchRow]:
    """Every file a signal found, in this order: the text's, a definition's alone, the code a
    matching test tests, past queries', the targets, mentions, modules, past commits' changes."""
    yield from rows
    yield from unit_rows.values()
    yield from tested_rows.values()
    yield from history_rows
    yield from targets.values()
    yield from (row for row, _share in mentioned.values())
    yield from (row for row, _share in modules.values())
    yield from (change.row for change in changes.values())


def score(
    terms: QueryTerms,
    rows: list[SearchRow],
    *,
    unit_hits: list[UnitHit] | None = None,
    unit_rows: dict[str, SearchRow] | None = None,
    tested_rows: dict[str, SearchRow] | None = None,
    history_rows: list[SearchRow] | None = None,
    target_rows: dict[str, SearchRow] | None = None,
    mentioned_rows: dict[str, tuple[SearchRow, float]] | None = None,
    module_rows: dict[str, tuple[SearchRow, float]] | None = None,
    open_files: Iterable[str] = (),
    changed: dict[str, ChangedFile] | None = None,
    recent: dict[str, float] | None = None,
    churn: dict[str, float] | None = None,
    fresh: dict[str, float] | None = None,
) -> list[Scored]:
    """Combine text, definition, path, identifier, history, past-commit and editor signals;
    best first."""
    text = relative_text_scores(rows)
    units, units_by_file = unit_scores(unit_hits or [])
    history = relative_text_scores(history_rows or [])
    targets = target_rows or {}
    mentioned = mentioned_rows or {}
    modules = module_rows or {}
    opened = set(open_files)
    changes = changed or {}
    by_path: dict[str, Scored] = {}
    found = _found(
        rows, unit_rows or {}, tested_rows or {}, history_rows or [], targets, mentioned, modules, changes
    )
    for row in found:  # a file's row: the first signal's
        if row.path in by_path:
            continue
        by_path[row.path] = Scored(
            row=row,
            text=text.get(row.path, 0.0),
            unit=units.get(row.path, 0.0),
            path=path_score(terms, row.path),
            identifier=identifier_score(terms, row),
            history=history.get(row.path, 0.0),
            changes=changes[row.path].score if row.path in changes else 0.0,
            changed_in=changes[row.path].commit if row.path in changes else "",
            recent=(recent or {}).get(row.path, 0.0),
            churn=(churn or {}).get(row.path, 0.0),
            fresh=(fresh or {}).get(row.path, 0.0),
            target=row.path in targets,
            mentioned=mentioned[row.path][1] if row.path in mentioned else 0.0,
            module=modules[row.path][1] if row.path in modules else 0.0,
            open=row.path in opened,
            prior=kind_prior(terms, row.kind, row.path),
            units=units_by_file.get(row.path, []),
        )
    link_tests_to_code(by_path.values())
    return sorted(by_path.values(), key=lambda s: (-s.total, s.row.path))


def link_tests_to_code(candidates: Iterable[Scored]) -> None:
    """A test that matches lends its score to the code it tests (same subject name and
    language, `tests/test_log_levels.py` → `src/pkg/_log_levels.py`): what its text, path
    and names say, not the definitions that matched in it (a query that finds a test
    function's own docstring is about that test). Ambiguous names (more than
    MAX_TESTED_FILES code files) lend nothing."""
    lent: dict[tuple[str, str], tuple[float, str]] = {}  # subject → (best loan, its test)
    code: dict[tuple[str, str], list[Scored]] = {}
    for item in candidates:
        key = (subject_name(item.row.path), item.row.language)
        if item.row.kind == "test":
            loan = item.content - UNIT_WEIGHT * item.unit  # its own definitions stay its own
            if loan > lent.get(key, (0.0, ""))[0]:
                lent[key] = (loan, item.row.path)
        elif item.row.kind == "code":
            code.setdefault(key, []).append(item)
    for key, (loan, test) in lent.items():
        subjects = code.get(key, [])
        if len(subjects) <= MAX_TESTED_FILES:
            for subject in subjects:
                subject.test_content, subject.tested_by = loan, test
