"""IndexStore: the workspace index as one SQLite file with two contentless FTS5 tables.

Per file it keeps path, size, mtime, content hash, language, kind, identifiers, a summary and
its definitions' names and lines (table `files`; the definitions as one compressed list: a
table row per definition took a sixth of the index). A file's definitions have consecutive
FTS rowids from `first_unit`, so a definition hit finds its file by that range. The
searchable text lives only in the FTS5 indexes (`fts`: path / identifiers / summary / body
of each file; `unit_fts`: name / signature and docstring of each definition), both
contentless (`content=''`): the text itself is never stored, the files on disk are the
content. (`detail=column` would be smaller, but a contentless table without positions
scores every bm25() as 0.) `unit_fts` keeps no column sizes (`columnsize=0`): bm25 then
does not normalise by length, which suits definitions (a few words to a docstring, and the
one that matches more of the question should win whatever its length), and scoring a
matching row no longer reads its size from a table: a third of the time. (SQLite then takes
every row's size as -1 per column; at an average of exactly 6 words per definition bm25
divides 0 by 0 and answers NULL: such scores count as 0, and the definitions signal rests.)

SQLite before 3.43 cannot delete a row from a contentless table without its old text, so
a changed file gets fresh FTS rowids and its old ones become dead: searches skip them (a
rowid no file or unit points to) and ask for as many extra rows as there are dead ones; when
the dead outgrow a quarter of the live rows, `needs_compaction` says so and the next full
pass rebuilds the index from disk.

One connection, guarded by a lock, is shared by the background indexer thread and the
query path; WAL keeps a second process (another editor window) able to read. A file that is
not a database, a malformed image, or a schema from another version is moved aside and
rebuilt with a log line; a database locked by another process beyond the busy timeout is
replaced by a private in-memory index. Neither ever reaches the user as a crash.
"""

from __future__ import annotations

import hashlib
import logging
import os
import sqlite3
import threading
import zlib
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any, TypeVar

from .extract import Definition

log = logging.getLogger(__name__)

T = TypeVar("T")

SCHEMA_VERSION = "7"
BUSY_TIMEOUT_MS = 2000
# bm25 column weights: fts (path, identifiers, summary, body), unit_fts (name, text).
BM25_WEIGHTS = (1.0, 2.0, 2.0, 1.0)
UNIT_BM25_WEIGHTS = (2.0, 1.0)
COMMIT_BM25_WEIGHTS = (2.0, 1.0)  # commit_fts (subject, body)
COMPACT_DEAD_RATIO = 0.25
SPARSE_ROWIDS = 200  # rowids this far apart on average are looked up one by one ("why")
MAX_CACHED_SHARES = 50_000  # term shares kept between queries
LOOKUP_CHUNK = 500  # paths per `IN (…)` lookup
STATS_STALE_FRACTION = 0.1  # recomputed once a tenth of the files changed since
COMPACT_MIN_DEAD = 200
_TOKENIZER = "tokenize = 'porter unicode61 remove_diacritics 2'"

_SCHEMA = f"""
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS files (
    id INTEGER PRIMARY KEY,
    path TEXT NOT NULL UNIQUE,
    size INTEGER NOT NULL,
    mtime REAL NOT NULL,
    hash TEXT NOT NULL,
    language TEXT NOT NULL,
    kind TEXT NOT NULL,
    identifiers TEXT NOT NULL,
    summary TEXT NOT NULL,
    doc INTEGER NOT NULL UNIQUE,
    first_unit INTEGER NOT NULL,
    unit_count INTEGER NOT NULL,
    units BLOB NOT NULL,
    subject TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS files_by_unit ON files(first_unit) WHERE unit_count > 0;
CREATE INDEX IF NOT EXISTS files_by_subject ON files(subject);
CREATE VIRTUAL TABLE IF NOT EXISTS fts USING fts5(
    path, identifiers, summary, body, content = '', {_TOKENIZER}
);
CREATE VIRTUAL TABLE IF NOT EXISTS unit_fts USING fts5(
    name, text, content = '', columnsize = 0, {_TOKENIZER}
);
CREATE TABLE IF NOT EXISTS commits (
    id INTEGER PRIMARY KEY, sha TEXT NOT NULL, subject TEXT NOT NULL, files TEXT NOT NULL
);
CREATE VIRTUAL TABLE IF NOT EXISTS commit_fts USING fts5(subject, body, content = '', {_TOKENIZER});
CREATE TABLE IF NOT EXISTS file_changes (
    path TEXT PRIMARY KEY, commits INTEGER NOT NULL, last INTEGER NOT NULL
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS head_files (path TEXT PRIMARY KEY) WITHOUT ROWID;
"""

# Ranked searches: the best `?` rows by bm25 (lower is better), joined to what they index.
_FILE_SEARCH = (
    "SELECT f.path, f.language, f.identifiers, f.summary, f.size, s.score, f.kind, f.doc FROM"
    f" (SELECT rowid, bm25(fts, {', '.join(map(str, BM25_WEIGHTS))}) AS score FROM fts"
    " WHERE fts MATCH ? ORDER BY score LIMIT ?) AS s JOIN files AS f ON f.doc = s.rowid"
    " ORDER BY s.score"
)
# A definition's file: the one whose unit range holds the rowid (dead rowids match none).
_UNIT_SEARCH = (
    "SELECT f.path, s.rowid - f.first_unit, s.score FROM"
    f" (SELECT rowid, coalesce(bm25(unit_fts, {', '.join(map(str, UNIT_BM25_WEIGHTS))}), 0.0)"
    " AS score"
    " FROM unit_fts WHERE unit_fts MATCH ? ORDER BY score LIMIT ?) AS s"
    " JOIN files AS f ON f.id = (SELECT id FROM files WHERE unit_count > 0 AND"
    " first_unit <= s.rowid ORDER BY first_unit DESC LIMIT 1)"
    " WHERE s.rowid < f.first_unit + f.unit_count ORDER BY s.score"
)


def pack_units(definitions: list[Definition]) -> bytes:
    """A file's definitions as stored: `name<TAB>line` lines, compressed."""
    return zlib.compress("\n".join(f"{d.name}\t{d.line}" for d in definitions).encode("utf-8"))


def unpack_units(blob: bytes) -> list[str]:
    """A file's definitions, in rowid order, as `name<TAB>line` entries (see `unit_entry`)."""
    return zlib.decompress(blob).decode("utf-8").split("\n") if blob else []


def unit_entry(entry: str) -> tuple[str, int]:
    """`Client.send<TAB>12` → ("Client.send", 12)."""
    name, _, line = entry.rpartition("\t")
    return name, int(line)


@dataclass(frozen=True)
class FileRecord:
    """What the indexer hands to the store for one file."""

    path: str
    size: int
    mtime: float
    hash: str
    language: str
    kind: str
    identifiers: list[str]
    summary: str
    path_text: str
    identifier_text: str
    body: str
    subject: str = ""  # ties tests to the code they test (`extract.subject_name`)
    units: list[tuple[str, str]] = field(default_factory=list)  # (search name, text) per definition
    packed_units: bytes = b""  # their names and lines (`pack_units`), stored in `files`

    @classmethod
    def with_definitions(cls, definitions: list[Definition], **fields: Any) -> FileRecord:
        """A record whose definitions are searchable units (packed where it is built: a worker)."""
        return cls(
            units=[(d.search_name, d.text) for d in definitions],
            packed_units=pack_units(definitions) if definitions else b"",
            **fields,
        )


@dataclass(frozen=True)
class SearchRow:
    path: str
    language: str
    identifiers: list[str]
    summary: str
    size: int
    bm25: float  # FTS5 bm25(): lower is better, negative for matches
    kind: str = "code"
    doc: int = 0  # the file's rowid in `fts`

    @cached_property
    def defined_names(self) -> str:
        """` name1 name2 … `, lowercase: the identifier signal looks query words up in it."""
        return " " + " ".join(self.identifiers).lower() + " "


@dataclass(frozen=True)
class UnitHit:
    """A definition that matched: its file and its place among the file's definitions."""

    path: str
    position: int
    bm25: float


def content_hash(data: bytes) -> str:
    return hashlib.blake2b(data, digest_size=16).hexdigest()


def _is_locked(exc: sqlite3.Error) -> bool:
    text = str(exc).lower()
    return "locked" in text or "busy" in text


class SchemaChanged(sqlite3.DatabaseError):
    """The file was made by another version of the index: rebuilt, not kept as corrupt."""


def is_corruption(exc: sqlite3.Error) -> bool:
    """A damaged file (rebuild it), as opposed to a busy or locked one (leave it alone)."""
    text = str(exc).lower()
    if _is_locked(exc):
        return False
    return type(exc) is sqlite3.DatabaseError or any(
        word in text for word in ("malformed", "not a database", "corrupt", "no such table")
    )


class IndexStore:
    """The SQLite file; every method is safe to call from any thread."""

    def __init__(self, db_path: str | os.PathLike[str] | None) -> None:
        self.db_path = Path(db_path) if db_path is not None else None
        self._lock = threading.RLock()
        self._conn: sqlite3.Connection | None = None
        self.in_memory = db_path is None
        self.rebuilt_reason: str | None = None  # set when the file had to be recreated
        self._shares: dict[str, float] = {}  # term → share of the files holding it
        self._generation = 0  # this connection's own commits (data_version counts others')
        self._counted: tuple[tuple[int, int], int] | None = None  # (versions, file count)
        self._writes_since_stats = 0

    # -- opening -------------------------------------------------------------------------
    def _connect(self, target: str) -> sqlite3.Connection:
        conn = sqlite3.connect(
            target, timeout=BUSY_TIMEOUT_MS / 1000, check_same_thread=False, isolation_level=None
        )
        try:
            conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
            if target != ":memory:":
                conn.execute("PRAGMA journal_mode = WAL")
                conn.execute("PRAGMA synchronous = NORMAL")
            row = None
            if conn.execute("SELECT name FROM sqlite_master WHERE name = 'meta'").fetchone():
                row = conn.execute("SELECT value FROM meta WHERE key = 'schema'").fetchone()
            if row is not None and row[0] != SCHEMA_VERSION:
                raise SchemaChanged(f"made with index schema {row[0]}, this version uses {SCHEMA_VERSION}")
            conn.executescript(_SCHEMA)
            if row is None:
                conn.execute("INSERT INTO meta(key, value) VALUES ('schema', ?)", (SCHEMA_VERSION,))
            conn.execute("SELECT count(*) FROM files").fetchone()
            conn.execute("SELECT rowid FROM fts WHERE fts MATCH 'probe' LIMIT 1").fetchall()
            conn.execute("SELECT rowid FROM unit_fts WHERE unit_fts MATCH 'probe' LIMIT 1").fetchall()
        except BaseException:
            conn.close()
            raise
        return conn

    def _discard_file(self, *, keep: bool = True) -> None:
        """Remove the file and its journals; a damaged file is `keep`t as `.corrupt` to look at."""
        assert self.db_path is not None
        for suffix in ("", "-wal", "-shm", "-journal"):
            candidate = Path(f"{self.db_path}{suffix}")
            try:
                if keep and suffix == "" and candidate.exists():
                    candidate.replace(Path(f"{self.db_path}.corrupt"))
                else:
                    candidate.unlink(missing_ok=True)
            except OSError as exc:
                log.warning("could not remove %s: %s", candidate, exc)

    def open(self) -> sqlite3.Connection:
        """Open (once), rebuilding a corrupt file; falls back to memory when locked/unwritable."""
        with self._lock:
            if self._conn is not None:
                return self._conn
            if self.db_path is None:
                self._conn = self._connect(":memory:")
                return self._conn
            try:
                self.db_path.parent.mkdir(parents=True, exist_ok=True)
                self._conn = self._connect(str(self.db_path))
                return self._conn
            except SchemaChanged as exc:
                log.info("workspace index %s was %s; building it anew", self.db_path, exc)
                self.rebuilt_reason = str(exc)
                self._discard_file(keep=False)
            except sqlite3.Error as exc:
                if _is_locked(exc):
                    return self._fall_back_to_memory(f"index file is locked ({exc})")
                log.warning("workspace index %s is unusable (%s); rebuilding it", self.db_path, exc)
                self.rebuilt_reason = str(exc)
                self._discard_file()
            except OSError as exc:
                return self._fall_back_to_memory(f"cannot create the index file ({exc})")
            try:
                self._conn = self._connect(str(self.db_path))
            except (sqlite3.Error, OSError) as exc:
                return self._fall_back_to_memory(f"rebuilding the index file failed ({exc})")
            return self._conn

    def _fall_back_to_memory(self, why: str) -> sqlite3.Connection:
        log.warning("workspace index %s: %s; using a private in-memory index", self.db_path, why)
        self.in_memory = True
        self.rebuilt_reason = why
        self._conn = self._connect(":memory:")
        return self._conn

    def rebuild(self, why: str) -> None:
        """Throw the database away and start empty (a malformed image found mid-use)."""
        with self._lock:
            log.warning("workspace index %s is corrupt (%s); rebuilding it", self.db_path, why)
            self.rebuilt_reason = why
            self.close()
            if self.db_path is not None and not self.in_memory:
                self._discard_file()
            self.open()

    def recovering(
        self,
        action: Callable[[], T],
        *,
        after_rebuild: Callable[[sqlite3.DatabaseError], T],
        when_busy: Callable[[sqlite3.DatabaseError], T] | None = None,
    ) -> T:
        """Run `action`; a corrupt index is rebuilt empty and `after_rebuild` answers instead.

        The one place a corrupt database found mid-use is recovered from (full pass, update,
        removal, query). A busy or locked database is not corrupt: `when_busy` answers (or
        the error is raised when there is none); nothing is thrown away.
        """
        try:
            return action()
        except sqlite3.DatabaseError as exc:
            if not is_corruption(exc):
                if when_busy is None:
                    raise
                log.warning("workspace index unavailable (%s); the next pass catches up", exc)
                return when_busy(exc)
            self.rebuild(str(exc))
            return after_rebuild(exc)

    @contextmanager
    def _writing(self) -> Iterator[sqlite3.Connection]:
        """One write transaction under the store's lock: committed, or rolled back on error."""
        with self._lock:
            conn = self.open()
            conn.execute("BEGIN IMMEDIATE")
            try:
                yield conn
                conn.execute("COMMIT")
            except BaseException:
                conn.execute("ROLLBACK")
                raise
            finally:
                self._generation += 1

    def clear(self) -> None:
        """Empty every table (compaction: the next pass re-reads all files)."""
        with self._lock:
            with self._writing() as conn:
                conn.execute("DELETE FROM files")
                for table in ("fts", "unit_fts"):
                    conn.execute(f"INSERT INTO {table}({table}) VALUES ('delete-all')")
                conn.execute("DELETE FROM meta WHERE key IN ('dead_docs', 'dead_units')")
            self._shares.clear()
            conn.execute("VACUUM")

    def reopen(self) -> None:
        """Another process wrote the file (or replaced it): reconnect at the next use, and
        recount the term statistics."""
        with self._lock:
            self.close()
            self._writes_since_stats = 0

    def close(self) -> None:
        with self._lock:
            self._shares.clear()
            self._counted = None
            if self._conn is not None:
                try:
                    self._conn.close()
                finally:
                    self._conn = None

    @property
    def location(self) -> str:
        return ":memory:" if self.in_memory or self.db_path is None else str(self.db_path)

    # -- reads ---------------------------------------------------------------------------
    def known_files(self) -> dict[str, tuple[int, float, str]]:
        """path → (size, mtime, hash) of every indexed file (the restart shortcut)."""
        with self._lock:
            rows = self.open().execute("SELECT path, size, mtime, hash FROM files").fetchall()
        return {path: (size, mtime, digest) for path, size, mtime, digest in rows}

    def stored_hash(self, path: str) -> str | None:
        with self._lock:
            row = self.open().execute("SELECT hash FROM files WHERE path = ?", (path,)).fetchone()
        return row[0] if row else None

    def count(self) -> int:
        """Indexed files; counted again only after a write (here or by another process):
        a query asks several times, and counting 100,000 rows takes milliseconds."""
        with self._lock:
            conn = self.open()
            version = (conn.execute("PRAGMA data_version").fetchone()[0], self._generation)
            if self._counted is None or self._counted[0] != version:
                self._counted = (version, int(conn.execute("SELECT count(*) FROM files").fetchone()[0]))
            return self._counted[1]

    def get_meta(self, key: str) -> str | None:
        with self._lock:
            row = self.open().execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return row[0] if row else None

    def set_meta(self, key: str, value: str) -> None:
        with self._lock:
            _put_meta(self.open(), key, value)

    def _dead(self, key: str) -> int:
        value = self.get_meta(key)
        return int(value) if value else 0

    def needs_compaction(self) -> bool:
        """Dead FTS rows (left by updates) outgrew a quarter of the live ones."""
        with self._lock:
            live = self.count()
            dead = self._dead("dead_docs")
        return dead >= COMPACT_MIN_DEAD and dead > COMPACT_DEAD_RATIO * max(1, live)

    def _top(self, sql: str, fts_query: str, limit: int, dead_key: str) -> list[tuple[Any, ...]]:
        """The first `limit` live rows of a ranked query (dead rowids join to nothing)."""
        with self._lock:
            rows = self.open().execute(sql, (fts_query, limit + self._dead(dead_key))).fetchall()
        return rows[:limit]

    def search(self, fts_query: str, limit: int) -> list[SearchRow]:
        """Top `limit` files for an FTS5 MATCH expression, best (lowest bm25) first."""
        return [
            SearchRow(path, language, identifiers.split(), summary, size, score, kind, doc)
            for path, language, identifiers, summary, size, score, kind, doc in self._top(
                _FILE_SEARCH, fts_query, limit, "dead_docs"
            )
        ]

    def search_units(self, fts_query: str, limit: int) -> list[UnitHit]:
        """Top `limit` definitions for an FTS5 MATCH expression, best first."""
        return [UnitHit(*row) for row in self._top(_UNIT_SEARCH, fts_query, limit, "dead_units")]

    def unit_names(self, hits: list[UnitHit]) -> list[tuple[str, int]]:
        """(qualified name, line) of definitions found by `search_units` (one file's, say)."""
        names: list[tuple[str, int]] = []
        unpacked: dict[str, list[str]] = {}
        with self._lock:
            conn = self.open()
            for hit in hits:
                if hit.path not in unpacked:
                    row = conn.execute("SELECT units FROM files WHERE path = ?", (hit.path,)).fetchone()
                    unpacked[hit.path] = unpack_units(row[0]) if row else []
                entries = unpacked[hit.path]
                if 0 <= hit.position < len(entries):
                    names.append(unit_entry(entries[hit.position]))
        return names

    def matching(self, fts_query: str, docs: Iterable[int]) -> set[int]:
        """Which of the file rowids `docs` match an FTS5 expression (for "why it ranked")."""
        wanted = set(docs)
        if not wanted:
            return set()
        low, high = min(wanted), max(wanted)
        with self._lock:
            if high - low <= SPARSE_ROWIDS * len(wanted):
                # one scan of a short rowid range: half the time of a lookup per rowid
                sql = "SELECT rowid FROM fts WHERE fts MATCH ? AND rowid >= ? AND rowid <= ?"
                rows = self.open().execute(sql, (fts_query, low, high)).fetchall()
            else:  # far apart in a large index: the range would be most of the term's doclist
                marks = ", ".join("?" for _ in wanted)
                sql = f"SELECT rowid FROM fts WHERE fts MATCH ? AND rowid IN ({marks})"
                rows = self.open().execute(sql, (fts_query, *sorted(wanted))).fetchall()
        return {row[0] for row in rows} & wanted

    def tested_code(self, subjects: Iterable[str]) -> dict[str, SearchRow]:
        """Code files whose subject name is one of `subjects` (what those tests test)."""
        wanted = sorted(set(subjects) - {""})[:500]
        if not wanted:
            return {}
        marks = ", ".join("?" for _ in wanted)
        with self._lock:
            rows = (
                self.open()
                .execute(
                    "SELECT path, language, identifiers, summary, size, kind, doc FROM files"
                    f" WHERE subject IN ({marks}) AND kind = 'code'",
                    wanted,
                )
                .fetchall()
            )
        return {
            path: SearchRow(path, language, identifiers.split(), summary, size, 0.0, kind, doc)
            for path, language, identifiers, summary, size, kind, doc in rows
        }

    def lookup(self, paths: Iterable[str]) -> dict[str, SearchRow]:
        """Indexed rows for exact paths (files found only by a definition, named files)."""
        rows = self._rows_for_paths(
            "SELECT path, language, identifiers, summary, size, kind, doc FROM files", paths
        )
        return {
            path: SearchRow(path, language, identifiers.split(), summary, size, 0.0, kind, doc)
            for path, language, identifiers, summary, size, kind, doc in rows
        }

    def _rows_for_paths(self, select: str, paths: Iterable[str]) -> list[tuple[Any, ...]]:
        """`select` (fixed SQL, never user input) `WHERE path IN (…)` over `paths`, in chunks
        of LOOKUP_CHUNK (SQLite bounds the parameters of one statement)."""
        wanted = list(dict.fromkeys(paths))
        found: list[tuple[Any, ...]] = []
        with self._lock:
            conn = self.open()
            for start in range(0, len(wanted), LOOKUP_CHUNK):
                chunk = wanted[start : start + LOOKUP_CHUNK]
                marks = ",".join("?" * len(chunk))
                found += conn.execute(f"{select} WHERE path IN ({marks})", chunk).fetchall()
        return found

    # -- term statistics -------------------------------------------------------------------
    def stems(self, tokens: list[str]) -> dict[str, tuple[str, ...]]:
        """token → the terms the index's tokenizer makes of it (`Bytes` → ("byte",)).

        The tokenizer is SQLite's: a scratch FTS5 table in the connection's temp schema runs
        it, so the terms always agree with what the index holds."""
        if not tokens:
            return {}
        with self._lock:
            conn = self.open()
            conn.execute(
                "CREATE VIRTUAL TABLE IF NOT EXISTS temp.stem_probe"
                f" USING fts5(x, content = '', {_TOKENIZER})"
            )
            conn.execute(
                "CREATE VIRTUAL TABLE IF NOT EXISTS temp.stem_terms"
                " USING fts5vocab(temp, stem_probe, 'instance')"
            )
            conn.executemany("INSERT INTO temp.stem_probe(rowid, x) VALUES (?, ?)", list(enumerate(tokens)))
            rows = conn.execute("SELECT doc, term FROM temp.stem_terms ORDER BY doc, offset").fetchall()
            conn.execute("INSERT INTO temp.stem_probe(stem_probe) VALUES ('delete-all')")
        found: dict[int, list[str]] = {}
        for doc, term in rows:
            found.setdefault(doc, []).append(term)
        return {token: tuple(found.get(position, ())) for position, token in enumerate(tokens)}

    def term_shares(self, terms: Iterable[str]) -> dict[str, float]:
        """The share of the files holding each term (as the index stems it).

        Read from the FTS index's own vocabulary for the asked terms only (their doclists,
        not the whole vocabulary: that scan took seconds on 100,000 files, under the lock
        every query waits for), and kept until a tenth of the files changed: frequencies
        move slowly."""
        wanted = set(terms)
        with self._lock:
            if self._writes_since_stats > STATS_STALE_FRACTION * max(1, self.count()):
                self._shares.clear()
                self._writes_since_stats = 0
            missing = sorted(wanted - self._shares.keys())
            if missing:
                if len(self._shares) > MAX_CACHED_SHARES:
                    self._shares.clear()
                self._shares.update(self._count_shares(missing))
            return {term: self._shares[term] for term in wanted}

    def _count_shares(self, terms: list[str]) -> dict[str, float]:
        conn = self.open()
        rows_indexed = self.count() + self._dead("dead_docs")  # dead rows are in the vocabulary
        conn.execute("CREATE VIRTUAL TABLE IF NOT EXISTS temp.fts_terms USING fts5vocab(main, fts, 'row')")
        docs: dict[str, int] = {}
        for start in range(0, len(terms), 500):
            chunk = terms[start : start + 500]
            marks = ", ".join("?" for _ in chunk)
            docs.update(conn.execute(f"SELECT term, doc FROM temp.fts_terms WHERE term IN ({marks})", chunk))
        return {term: min(1.0, docs.get(term, 0) / max(1, rows_indexed)) for term in terms}

    # -- writes --------------------------------------------------------------------------
    def touch_many(self, stats: list[tuple[str, int, float]]) -> None:
        """Several `touch`es in one transaction (a checkout that rewrote identical files)."""
        if not stats:
            return
        with self._writing() as conn:
            conn.executemany(
                "UPDATE files SET size = ?, mtime = ? WHERE path = ?",
                [(size, mtime, path) for path, size, mtime in stats],
            )

    def _next_ids(self, conn: sqlite3.Connection, key: str, count: int) -> int:
        """Reserve `count` never-used FTS rowids (dead ones must not come back to life)."""
        row = conn.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        first = int(row[0]) if row else 1
        _put_meta(conn, key, str(first + count))
        return first

    def _add_dead(self, conn: sqlite3.Connection, docs: int, units: int) -> None:
        for key, count in (("dead_docs", docs), ("dead_units", units)):
            if count:
                conn.execute(
                    "INSERT INTO meta(key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE"
                    " SET value = CAST(value AS INTEGER) + CAST(excluded.value AS INTEGER)",
                    (key, str(count)),
                )

    def upsert_many(self, records: list[FileRecord]) -> None:
        """Insert or replace files in one transaction (a batch of the indexer).

        A replaced file gets fresh FTS rowids; its old ones become dead (see the module doc).
        """
        if not records:
            return
        with self._writing() as conn:
            existing = self._ids_of(conn, [record.path for record in records])
            doc = self._next_ids(conn, "next_doc", len(records))
            unit = self._next_ids(conn, "next_unit", sum(len(r.units) for r in records))
            rows = _UpsertRows.of(records, existing, doc, unit)
            rows.write(conn)
            self._add_dead(conn, len(rows.updates), rows.dead_units)
            self._writes_since_stats += len(records)

    @staticmethod
    def _ids_of(conn: sqlite3.Connection, paths: list[str]) -> dict[str, tuple[int, int]]:
        """path → (file id, unit count) of the paths already indexed."""
        found: dict[str, tuple[int, int]] = {}
        for start in range(0, len(paths), 500):
            chunk = paths[start : start + 500]
            marks = ", ".join("?" for _ in chunk)
            for path, file_id, units in conn.execute(
                f"SELECT path, id, unit_count FROM files WHERE path IN ({marks})", chunk
            ):
                found[path] = (file_id, units)
        return found

    def remove_many(self, paths: Iterable[str]) -> list[str]:
        """Drop files (and anything below them, for a deleted folder); returns what went."""
        removed: list[str] = []
        with self._writing() as conn:
            dead_units = 0
            for path in paths:
                prefix = path.rstrip("/") + "/"
                rows = conn.execute(
                    "SELECT id, path, unit_count FROM files WHERE path = ? OR substr(path, 1, ?) = ?",
                    (path, len(prefix), prefix),
                ).fetchall()
                for file_id, found, units in rows:
                    dead_units += units
                    conn.execute("DELETE FROM files WHERE id = ?", (file_id,))
                    removed.append(found)
            self._add_dead(conn, len(removed), dead_units)
            self._writes_since_stats += len(removed)
        return removed

    # -- past commits (history.py reads them from git) ---------------------------------------
    def commit_count(self) -> int:
        with self._lock:
            return int(self.open().execute("SELECT count(*) FROM commits").fetchone()[0])

    def add_commits(
        self,
        rows: list[tuple[str, str, str, str]],
        head: str,
        *,
        after: str | None = None,
        tracked: Iterable[str] = (),
    ) -> bool:
        """Store (sha, subject, body, files joined by newlines) rows, oldest first, the HEAD
        they were read up to, and the files HEAD's tree holds (`tracked`): in place of the
        stored commits, or `after` them when the stored history still ends at `after` (False,
        nothing written, when another process moved it meanwhile)."""
        with self._writing() as conn:
            if after is not None:
                stored = conn.execute("SELECT value FROM meta WHERE key = 'history_head'").fetchone()
                if stored is None or stored[0] != after:
                    return False
            conn.execute("DELETE FROM head_files")
            conn.executemany(
                "INSERT OR IGNORE INTO head_files(path) VALUES (?)", ((path,) for path in tracked)
            )
            if after is None:
                conn.execute("DELETE FROM commits")
                conn.execute("INSERT INTO commit_fts(commit_fts) VALUES ('delete-all')")
                conn.execute("DELETE FROM file_changes")
            first = int(conn.execute("SELECT coalesce(max(id), 0) + 1 FROM commits").fetchone()[0])
            numbered = [(first + i, *row) for i, row in enumerate(rows)]
            conn.executemany(
                "INSERT INTO commits(id, sha, subject, files) VALUES (?, ?, ?, ?)",
                [(rowid, sha, subject, files) for rowid, sha, subject, _body, files in numbered],
            )
            conn.executemany(
                "INSERT INTO commit_fts(rowid, subject, body) VALUES (?, ?, ?)",
                [(rowid, subject, body) for rowid, _sha, subject, body, _files in numbered],
            )
            counts: Counter[str] = Counter()
            last: dict[str, int] = {}  # path → the newest commit (id) that changed it
            for rowid, _sha, _subject, _body, files in numbered:
                for path in filter(None, files.split("\n")):
                    counts[path] += 1
                    last[path] = rowid
            conn.executemany(
                "INSERT INTO file_changes(path, commits, last) VALUES (?, ?, ?)"
                " ON CONFLICT(path) DO UPDATE SET commits = commits + excluded.commits,"
                " last = max(last, excluded.last)",
                sorted((path, count, last[path]) for path, count in counts.items()),
            )
            _put_meta(conn, "history_head", head)
        return True

    def change_counts(self, paths: Iterable[str]) -> dict[str, int]:
        """How many of the stored commits changed each of `paths` (absent: none did)."""
        return self._file_changes("commits", paths)

    def commits_since_change(self, paths: Iterable[str]) -> dict[str, int]:
        """How many stored commits came after the newest one that changed each of `paths`
        (0: the newest commit changed it; absent: no stored commit did)."""
        return self._file_changes("(SELECT max(id) FROM commits) - last", paths)

    def not_in_head(self, paths: Iterable[str]) -> set[str]:
        """Those of `paths` that HEAD's tree does not hold (new work, not committed yet); none
        when no tree is stored (not a repository, history off)."""
        wanted = set(paths)
        with self._lock:  # one view: a refresh replaces the table between two reads
            if self.open().execute("SELECT 1 FROM head_files LIMIT 1").fetchone() is None:
                return set()
            return wanted - {path for (path,) in self._rows_for_paths("SELECT path FROM head_files", wanted)}

    def _file_changes(self, column: str, paths: Iterable[str]) -> dict[str, int]:
        """`column` (a fixed expression over `file_changes`, never user input) per path."""
        return dict(self._rows_for_paths(f"SELECT path, {column} FROM file_changes", paths))

    def recent_commits(self, count: int) -> list[str]:
        """The files of the newest `count` commits (newline-joined), newest first."""
        with self._lock:
            rows = self.open().execute("SELECT files FROM commits ORDER BY id DESC LIMIT ?", (count,))
            return [files for (files,) in rows.fetchall()]

    def search_commits(self, fts_query: str, limit: int) -> list[tuple[str, str, str, float]]:
        """The best `limit` commits for an FTS5 expression: (sha, subject, files, bm25), the
        newest first among equals."""
        weights = ", ".join(map(str, COMMIT_BM25_WEIGHTS))
        with self._lock:
            return (
                self.open()
                .execute(
                    "SELECT c.sha, c.subject, c.files, s.score FROM"
                    f" (SELECT rowid, bm25(commit_fts, {weights}) AS score FROM commit_fts"
                    " WHERE commit_fts MATCH ? ORDER BY score, rowid DESC LIMIT ?) AS s"
                    " JOIN commits AS c ON c.id = s.rowid ORDER BY s.score, s.rowid DESC",
                    (fts_query, limit),
                )
                .fetchall()
            )


def _put_meta(conn: sqlite3.Connection, key: str, value: str) -> None:
    conn.execute(
        "INSERT INTO meta(key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value",
        (key, value),
    )


@dataclass
class _UpsertRows:
    """The rows one `upsert_many` writes: new files, replaced files, and their FTS rows."""

    inserts: list[tuple[object, ...]] = field(default_factory=list)
    updates: list[tuple[object, ...]] = field(default_factory=list)
    fts: list[tuple[object, ...]] = field(default_factory=list)
    unit_fts: list[tuple[object, ...]] = field(default_factory=list)
    dead_units: int = 0  # the definitions of the replaced files

    @classmethod
    def of(
        cls, records: list[FileRecord], existing: dict[str, tuple[int, int]], doc: int, unit: int
    ) -> _UpsertRows:
        """Rows for `records`, numbered from the reserved rowids `doc` and `unit` on."""
        rows = cls()
        for record in records:
            values = (
                record.size,
                record.mtime,
                record.hash,
                record.language,
                record.kind,
                " ".join(record.identifiers),
                record.summary,
                doc,
                unit,
                len(record.units),
                record.packed_units,
                record.subject,
            )
            if record.path in existing:
                file_id, old_units = existing[record.path]
                rows.dead_units += old_units
                rows.updates.append((*values, file_id))
            else:
                rows.inserts.append((*values, record.path))
            rows.fts.append((doc, record.path_text, record.identifier_text, record.summary, record.body))
            for search_name, text in record.units:
                rows.unit_fts.append((unit, search_name, text))
                unit += 1
            doc += 1
        return rows

    def write(self, conn: sqlite3.Connection) -> None:
        conn.executemany(
            "INSERT INTO files(size, mtime, hash, language, kind, identifiers, summary,"
            " doc, first_unit, unit_count, units, subject, path)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            self.inserts,
        )
        conn.executemany(
            "UPDATE files SET size = ?, mtime = ?, hash = ?, language = ?, kind = ?,"
            " identifiers = ?, summary = ?, doc = ?, first_unit = ?, unit_count = ?,"
            " units = ?, subject = ? WHERE id = ?",
            self.updates,
        )
        conn.executemany(
            "INSERT INTO fts(rowid, path, identifiers, summary, body) VALUES (?, ?, ?, ?, ?)",
            self.fts,
        )
        conn.executemany("INSERT INTO unit_fts(rowid, name, text) VALUES (?, ?, ?)", self.unit_fts)
