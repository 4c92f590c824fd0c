"""IndexStore: the workspace index as one SQLite file with an FTS5 table.

Per file it keeps path, size, mtime, content hash, language, identifiers and a summary
(table `files`), and the searchable text (FTS5 table `fts`, rowid = files.id, columns
path / identifiers / summary / body, Porter-stemmed). One connection, guarded by a lock,
is shared by the background indexer thread and the query path; WAL keeps a second process
(another editor window on the same folder) able to read.

A file that is not a database, a malformed image, or a schema from another version is
moved aside and rebuilt with a log line; a database locked by another process beyond the
busy timeout is replaced by a private in-memory index. Neither ever reaches the user as
a crash.
"""

from __future__ import annotations

import hashlib
import logging
import os
import sqlite3
import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

log = logging.getLogger(__name__)

SCHEMA_VERSION = "1"
BUSY_TIMEOUT_MS = 2000
# bm25 column weights: path, identifiers, summary, body.
BM25_WEIGHTS = (1.0, 2.0, 6.0, 1.0)

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS files (
    id INTEGER PRIMARY KEY,
    path TEXT NOT NULL UNIQUE,
    size INTEGER NOT NULL,
    mtime REAL NOT NULL,
    hash TEXT NOT NULL,
    language TEXT NOT NULL,
    identifiers TEXT NOT NULL,
    summary TEXT NOT NULL,
    indexed_at REAL NOT NULL
);
CREATE VIRTUAL TABLE IF NOT EXISTS fts USING fts5(
    path, identifiers, summary, body,
    tokenize = 'porter unicode61 remove_diacritics 2'
);
"""


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
    identifiers: list[str]
    summary: str
    path_text: str
    identifier_text: str
    body: str


@dataclass(frozen=True)
class SearchRow:
    path: str
    language: str
    identifiers: list[str]
    summary: str
    size: int
    bm25: float  # FTS5 bm25(): lower is better, negative for matches


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
            conn.executescript(_SCHEMA)
            row = conn.execute("SELECT value FROM meta WHERE key = 'schema'").fetchone()
            if row is None:
                conn.execute("INSERT INTO meta(key, value) VALUES ('schema', ?)", (SCHEMA_VERSION,))
            elif row[0] != SCHEMA_VERSION:
                raise sqlite3.DatabaseError(f"index schema {row[0]} != {SCHEMA_VERSION}")
            conn.execute("SELECT count(*) FROM files").fetchone()
            conn.execute("SELECT rowid FROM fts WHERE fts MATCH 'probe' LIMIT 1").fetchall()
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

    def search(self, fts_query: str, limit: int) -> list[SearchRow]:
        """Top `limit` files for an FTS5 MATCH expression, best (lowest bm25) first."""
        weights = ", ".join(str(w) for w in BM25_WEIGHTS)
        sql = (
            "SELECT f.path, f.language, f.identifiers, f.summary, f.size, s.score FROM "
            f"(SELECT rowid, bm25(fts, {weights}) AS score FROM fts WHERE fts MATCH ? "
            "ORDER BY score LIMIT ?) AS s JOIN files AS f ON f.id = s.rowid ORDER BY s.score"
        )
        with self._lock:
            rows = self.open().execute(sql, (fts_query, limit)).fetchall()
        return [
            SearchRow(path, language, identifiers.split(), summary, size, score)
            for path, language, identifiers, summary, size, score in rows
        ]

    def lookup(self, paths: Iterable[str]) -> dict[str, SearchRow]:
        """Indexed rows for exact paths (target files that the text query did not find)."""
        found: dict[str, SearchRow] = {}
        with self._lock:
            conn = self.open()
            for path in paths:
                row = conn.execute(
                    "SELECT path, language, identifiers, summary, size FROM files WHERE path = ?",
                    (path,),
                ).fetchone()
                if row:
                    found[path] = SearchRow(row[0], row[1], row[2].split(), row[3], row[4], 0.0)
        return found

    # -- writes --------------------------------------------------------------------------
    def touch(self, path: str, size: int, mtime: float) -> None:
        """Same content, new stat (a save without changes, a `touch`)."""
        with self._lock:
            self.open().execute(
                "UPDATE files SET size = ?, mtime = ? WHERE path = ?", (size, mtime, path)
            )

    def upsert_many(self, records: list[FileRecord]) -> None:
        """Insert or replace files in one transaction (a batch of the indexer)."""
        if not records:
            return
        now = time.time()
        with self._lock:
            conn = self.open()
            conn.execute("BEGIN IMMEDIATE")
            try:
                for record in records:
                    row = conn.execute(
                        "SELECT id FROM files WHERE path = ?", (record.path,)
                    ).fetchone()
                    values = (
                        record.size,
                        record.mtime,
                        record.hash,
                        record.language,
                        " ".join(record.identifiers),
                        record.summary,
                        now,
                    )
                    if row is None:
                        cursor = conn.execute(
                            "INSERT INTO files(size, mtime, hash, language, identifiers, summary,"
                            " indexed_at, path) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                            (*values, record.path),
                        )
                        rowid = cursor.lastrowid
                    else:
                        rowid = row[0]
                        conn.execute("DELETE FROM fts WHERE rowid = ?", (rowid,))
                        conn.execute(
                            "UPDATE files SET size = ?, mtime = ?, hash = ?, language = ?,"
                            " identifiers = ?, summary = ?, indexed_at = ? WHERE id = ?",
                            (*values, rowid),
                        )
                    conn.execute(
                        "INSERT INTO fts(rowid, path, identifiers, summary, body)"
                        " VALUES (?, ?, ?, ?, ?)",
                        (rowid, record.path_text, record.identifier_text, record.summary, record.body),
                    )
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
                for path in paths:
                    prefix = path.rstrip("/") + "/"
                    rows = conn.execute(
                        "SELECT id, path FROM files WHERE path = ? OR substr(path, 1, ?) = ?",
                        (path, len(prefix), prefix),
                    ).fetchall()
                    for rowid, found in rows:
                        conn.execute("DELETE FROM fts WHERE rowid = ?", (rowid,))
                        conn.execute("DELETE FROM files WHERE id = ?", (rowid,))
                        removed.append(found)
                conn.execute("COMMIT")
            except BaseException:
                conn.execute("ROLLBACK")
                raise
        return removed
