"""IndexStore: the workspace index as one SQLite file with two contentless FTS5 tables.

Per file it keeps path, size, mtime, content hash, language, kind, identifiers and a summary
(table `files`); per definition its qualified name and line (table `units`; a file's units
have consecutive ids, so they are dropped by id range without an index). The
searchable text lives only in the FTS5 indexes (`fts`: path / identifiers / summary / body
of each file; `unit_fts`: name / signature and docstring of each definition), both
contentless (`content=''`): the text itself is never stored, the files on disk are the
content. (`detail=column` would be smaller, but a contentless table without positions
scores every bm25() as 0.)

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
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .extract import Definition

log = logging.getLogger(__name__)

SCHEMA_VERSION = "3"
BUSY_TIMEOUT_MS = 2000
# bm25 column weights: fts (path, identifiers, summary, body), unit_fts (name, text).
BM25_WEIGHTS = (1.0, 2.0, 2.0, 1.0)
UNIT_BM25_WEIGHTS = (2.0, 1.0)
COMPACT_DEAD_RATIO = 0.25
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
    indexed_at REAL NOT NULL,
    doc INTEGER NOT NULL UNIQUE,
    first_unit INTEGER NOT NULL,
    unit_count INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS units (
    id INTEGER PRIMARY KEY,
    file_id INTEGER NOT NULL,
    name TEXT NOT NULL,
    line INTEGER NOT NULL
);
CREATE VIRTUAL TABLE IF NOT EXISTS fts USING fts5(
    path, identifiers, summary, body, content = '', {_TOKENIZER}
);
CREATE VIRTUAL TABLE IF NOT EXISTS unit_fts USING fts5(
    name, text, content = '', {_TOKENIZER}
);
"""

# Ranked searches: the best `?` rows by bm25 (lower is better), joined to what they index.
_FILE_SEARCH = (
    "SELECT f.path, f.language, f.identifiers, f.summary, f.size, s.score, f.kind, f.doc FROM"
    f" (SELECT rowid, bm25(fts, {', '.join(map(str, BM25_WEIGHTS))}) AS score FROM fts"
    " WHERE fts MATCH ? ORDER BY score LIMIT ?) AS s JOIN files AS f ON f.doc = s.rowid"
    " ORDER BY s.score"
)
_UNIT_SEARCH = (
    "SELECT f.path, u.name, u.line, s.score FROM"
    f" (SELECT rowid, bm25(unit_fts, {', '.join(map(str, UNIT_BM25_WEIGHTS))}) AS score"
    " FROM unit_fts WHERE unit_fts MATCH ? ORDER BY score LIMIT ?) AS s"
    " JOIN units AS u ON u.id = s.rowid JOIN files AS f ON f.id = u.file_id ORDER BY s.score"
)


class IndexUnavailable(RuntimeError):
    """The index could not be opened or rebuilt (reported as context_retrieval_failure)."""


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
    definitions: list[Definition] = field(default_factory=list)


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


@dataclass(frozen=True)
class UnitHit:
    """A definition that matched, with its file."""

    path: str
    name: str
    line: int
    bm25: float


def content_hash(data: bytes) -> str:
    return hashlib.blake2b(data, digest_size=16).hexdigest()


def _is_locked(exc: sqlite3.Error) -> bool:
    text = str(exc).lower()
    return "locked" in text or "busy" in text


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
                raise sqlite3.DatabaseError(f"index schema {row[0]} != {SCHEMA_VERSION}")
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

    def _discard_file(self) -> None:
        assert self.db_path is not None
        for suffix in ("", "-wal", "-shm", "-journal"):
            candidate = Path(f"{self.db_path}{suffix}")
            try:
                if suffix == "" and candidate.exists():
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
            except sqlite3.Error as exc:
                if _is_locked(exc):
                    return self._fall_back_to_memory(f"index file is locked ({exc})")
                log.warning("workspace index %s is unusable (%s); rebuilding it", self.db_path, exc)
                self.rebuilt_reason = str(exc)
            except OSError as exc:
                return self._fall_back_to_memory(f"cannot create the index file ({exc})")
            self._discard_file()
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

    def clear(self) -> None:
        """Empty every table (compaction: the next pass re-reads all files)."""
        with self._lock:
            conn = self.open()
            conn.execute("BEGIN IMMEDIATE")
            try:
                for table in ("files", "units"):
                    conn.execute(f"DELETE FROM {table}")
                for table in ("fts", "unit_fts"):
                    conn.execute(f"INSERT INTO {table}({table}) VALUES ('delete-all')")
                conn.execute("DELETE FROM meta WHERE key IN ('dead_docs', 'dead_units')")
                conn.execute("COMMIT")
            except BaseException:
                conn.execute("ROLLBACK")
                raise
            conn.execute("VACUUM")

    def close(self) -> None:
        with self._lock:
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
        with self._lock:
            return int(self.open().execute("SELECT count(*) FROM files").fetchone()[0])

    def get_meta(self, key: str) -> str | None:
        with self._lock:
            row = self.open().execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return row[0] if row else None

    def set_meta(self, key: str, value: str) -> None:
        with self._lock:
            self.open().execute(
                "INSERT INTO meta(key, value) VALUES (?, ?) "
                "ON CONFLICT(key) DO UPDATE SET value = excluded.value",
                (key, value),
            )

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

    def matching(self, fts_query: str, docs: Iterable[int]) -> set[int]:
        """Which of the file rowids `docs` match an FTS5 expression (for "why it ranked")."""
        wanted = list(docs)
        if not wanted:
            return set()
        marks = ", ".join("?" for _ in wanted)
        sql = f"SELECT rowid FROM fts WHERE fts MATCH ? AND rowid IN ({marks})"
        with self._lock:
            rows = self.open().execute(sql, (fts_query, *wanted)).fetchall()
        return {row[0] for row in rows}

    def lookup(self, paths: Iterable[str]) -> dict[str, SearchRow]:
        """Indexed rows for exact paths (files found only by a definition, named files)."""
        wanted = list(paths)
        found: dict[str, SearchRow] = {}
        with self._lock:
            conn = self.open()
            for start in range(0, len(wanted), 500):
                chunk = wanted[start : start + 500]
                marks = ", ".join("?" for _ in chunk)
                rows = conn.execute(
                    "SELECT path, language, identifiers, summary, size, kind, doc FROM files"
                    f" WHERE path IN ({marks})",
                    chunk,
                ).fetchall()
                for path, language, identifiers, summary, size, kind, doc in rows:
                    found[path] = SearchRow(
                        path, language, identifiers.split(), summary, size, 0.0, kind, doc
                    )
        return found

    # -- writes --------------------------------------------------------------------------
    def touch(self, path: str, size: int, mtime: float) -> None:
        """Same content, new stat (a save without changes, a `touch`)."""
        with self._lock:
            self.open().execute(
                "UPDATE files SET size = ?, mtime = ? WHERE path = ?", (size, mtime, path)
            )

    def touch_many(self, stats: list[tuple[str, int, float]]) -> None:
        """Several `touch`es in one transaction (a checkout that rewrote identical files)."""
        if not stats:
            return
        with self._lock:
            conn = self.open()
            conn.execute("BEGIN IMMEDIATE")
            try:
                conn.executemany(
                    "UPDATE files SET size = ?, mtime = ? WHERE path = ?",
                    [(size, mtime, path) for path, size, mtime in stats],
                )
                conn.execute("COMMIT")
            except BaseException:
                conn.execute("ROLLBACK")
                raise

    def _next_ids(self, conn: sqlite3.Connection, key: str, count: int) -> int:
        """Reserve `count` never-used FTS rowids (dead ones must not come back to life)."""
        row = conn.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        first = int(row[0]) if row else 1
        conn.execute(
            "INSERT INTO meta(key, value) VALUES (?, ?) "
            "ON CONFLICT(key) DO UPDATE SET value = excluded.value",
            (key, str(first + count)),
        )
        return first

    def _add_dead(self, conn: sqlite3.Connection, docs: int, units: int) -> None:
        for key, count in (("dead_docs", docs), ("dead_units", units)):
            if count:
                conn.execute(
                    "INSERT INTO meta(key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE"
                    " SET value = CAST(value AS INTEGER) + CAST(excluded.value AS INTEGER)",
                    (key, str(count)),
                )

    def _forget_units(self, conn: sqlite3.Connection, file_id: int) -> int:
        """Drop a file's units (a range of ids); their FTS rows become dead."""
        first, count = conn.execute(
            "SELECT first_unit, unit_count FROM files WHERE id = ?", (file_id,)
        ).fetchone()
        if count:
            conn.execute("DELETE FROM units WHERE id >= ? AND id < ?", (first, first + count))
        return int(count)

    def upsert_many(self, records: list[FileRecord]) -> None:
        """Insert or replace files in one transaction (a batch of the indexer)."""
        if not records:
            return
        now = time.time()
        with self._lock:
            conn = self.open()
            conn.execute("BEGIN IMMEDIATE")
            try:
                doc = self._next_ids(conn, "next_doc", len(records))
                unit = self._next_ids(
                    conn, "next_unit", sum(len(record.definitions) for record in records)
                )
                dead_docs = dead_units = 0
                fts_rows: list[tuple[object, ...]] = []
                unit_rows: list[tuple[object, ...]] = []
                unit_fts_rows: list[tuple[object, ...]] = []
                for record in records:
                    row = conn.execute(
                        "SELECT id FROM files WHERE path = ?", (record.path,)
                    ).fetchone()
                    values = (
                        record.size, record.mtime, record.hash, record.language, record.kind,
                        " ".join(record.identifiers), record.summary, now, doc,
                        unit, len(record.definitions),
                    )
                    if row is None:
                        file_id = conn.execute(
                            "INSERT INTO files(size, mtime, hash, language, kind, identifiers, summary,"
                            " indexed_at, doc, first_unit, unit_count, path)"
                            " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                            (*values, record.path),
                        ).lastrowid
                    else:
                        file_id = row[0]
                        dead_docs += 1
                        dead_units += self._forget_units(conn, file_id)
                        conn.execute(
                            "UPDATE files SET size = ?, mtime = ?, hash = ?, language = ?, kind = ?,"
                            " identifiers = ?, summary = ?, indexed_at = ?, doc = ?, first_unit = ?,"
                            " unit_count = ? WHERE id = ?",
                            (*values, file_id),
                        )
                    fts_rows.append(
                        (doc, record.path_text, record.identifier_text, record.summary, record.body)
                    )
                    for definition in record.definitions:
                        unit_rows.append((unit, file_id, definition.name, definition.line))
                        unit_fts_rows.append((unit, definition.search_name, definition.text))
                        unit += 1
                    doc += 1
                conn.executemany(
                    "INSERT INTO fts(rowid, path, identifiers, summary, body) VALUES (?, ?, ?, ?, ?)",
                    fts_rows,
                )
                conn.executemany(
                    "INSERT INTO units(id, file_id, name, line) VALUES (?, ?, ?, ?)",
                    unit_rows,
                )
                conn.executemany("INSERT INTO unit_fts(rowid, name, text) VALUES (?, ?, ?)", unit_fts_rows)
                self._add_dead(conn, dead_docs, dead_units)
                conn.execute("COMMIT")
            except BaseException:
                conn.execute("ROLLBACK")
                raise

    def remove_many(self, paths: Iterable[str]) -> list[str]:
        """Drop files (and anything below them, for a deleted folder); returns what went."""
        removed: list[str] = []
        with self._lock:
            conn = self.open()
            conn.execute("BEGIN IMMEDIATE")
            try:
                dead_units = 0
                for path in paths:
                    prefix = path.rstrip("/") + "/"
                    rows = conn.execute(
                        "SELECT id, path FROM files WHERE path = ? OR substr(path, 1, ?) = ?",
                        (path, len(prefix), prefix),
                    ).fetchall()
                    for file_id, found in rows:
                        dead_units += self._forget_units(conn, file_id)
                        conn.execute("DELETE FROM files WHERE id = ?", (file_id,))
                        removed.append(found)
                self._add_dead(conn, len(removed), dead_units)
                conn.execute("COMMIT")
            except BaseException:
                conn.execute("ROLLBACK")
                raise
        return removed

