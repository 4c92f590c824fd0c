"""Reading workspace files into index records, here or in worker processes.

Reading, hashing and extracting definitions is most of a full pass; writing to SQLite is
the rest. On a large first index the reading runs in worker processes (one per core, at
most two) while this process writes what they hand back, so both cores work. Small passes
and single-file updates stay in this process: starting a worker costs more than they do.
This module imports only the standard library and its siblings, so a worker starts fast.
"""

from __future__ import annotations

import logging
import multiprocessing
import os
from collections import deque
from collections.abc import Generator
from concurrent.futures import Executor, Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from pathlib import Path

from .extract import extract, file_kind, identifier_text, path_text, subject_name
from .index import FileRecord, content_hash

log = logging.getLogger(__name__)

POOL_MIN_FILES = 400  # below this a pass is faster without workers
CHUNK_FILES = 48
MAX_WORKERS = 2
IN_FLIGHT_PER_WORKER = 4  # chunks submitted ahead per worker: enough to keep it busy


@dataclass(frozen=True)
class ReadResult:
    """One file's outcome: a record to store, unchanged (`touched`), or an error."""

    path: str
    record: FileRecord | None = None
    touched: bool = False
    size: int = 0
    mtime: float = 0.0
    error: str | None = None
    bytes_read: int = 0


def read_file(root: str, path: str, old_hash: str | None, max_bytes: int) -> ReadResult:
    """Read, hash and extract one file; `touched` when its content did not change."""
    real = os.path.join(root, path)
    try:
        with open(real, "rb") as handle:
            data = handle.read(max_bytes + 1)
            stat = os.fstat(handle.fileno())
    except OSError as exc:
        return ReadResult(path, error=f"{path}: {exc.strerror or exc}")
    digest = content_hash(data)
    if digest == old_hash:
        return ReadResult(path, touched=True, size=stat.st_size, mtime=stat.st_mtime)
    text = data.decode("utf-8", errors="replace")
    info = extract(path, text)
    kind = file_kind(path, info.language, text[:300])
    record = FileRecord.with_definitions(
        info.definitions,
        path=path,
        size=stat.st_size,
        mtime=stat.st_mtime,
        hash=digest,
        language=info.language,
        kind=kind,
        identifiers=info.identifiers,
        summary=info.summary,
        path_text=path_text(path),
        identifier_text=identifier_text(info.identifiers),
        body=text,
        subject=subject_name(path),
    )
    return ReadResult(path, record=record, size=stat.st_size, mtime=stat.st_mtime, bytes_read=len(data))


def read_chunk(root: str, items: list[tuple[str, str | None]], max_bytes: int) -> list[ReadResult]:
    """A worker's unit of work: several files, so that pickling costs little per file."""
    return [read_file(root, path, old_hash, max_bytes) for path, old_hash in items]


def worker_count() -> int:
    """Worker processes for a large pass: one per core, at most MAX_WORKERS; 1 = none."""
    return min(MAX_WORKERS, os.cpu_count() or 1)


def _pool(workers: int) -> Executor:
    return ProcessPoolExecutor(max_workers=workers, mp_context=multiprocessing.get_context("spawn"))


def read_all(
    root: Path, items: list[tuple[str, str | None]], max_bytes: int
) -> Generator[list[ReadResult], None, None]:
    """Chunks of results in order; in worker processes when there are many files."""
    chunks = [items[start : start + CHUNK_FILES] for start in range(0, len(items), CHUNK_FILES)]
    workers = worker_count()
    if len(items) < POOL_MIN_FILES or workers < 2:
        for chunk in chunks:
            yield read_chunk(str(root), chunk, max_bytes)
        return
    try:
        executor = _pool(workers)
    except (OSError, RuntimeError) as exc:  # no processes to be had: read here
        log.warning("indexing without worker processes: %s", exc)
        for chunk in chunks:
            yield read_chunk(str(root), chunk, max_bytes)
        return
    # a few chunks in flight, not all of them: a finished chunk's texts are dropped once
    # stored (a future keeps its result, and 100,000 files' texts would stay in memory)
    in_flight: deque[Future[list[ReadResult]]] = deque()
    try:
        for position in range(len(chunks)):
            while len(in_flight) < IN_FLIGHT_PER_WORKER * workers and position + len(in_flight) < len(chunks):
                chunk = chunks[position + len(in_flight)]
                in_flight.append(executor.submit(read_chunk, str(root), chunk, max_bytes))
            try:
                results = in_flight.popleft().result()
            except BrokenProcessPool as exc:  # e.g. a host script without a __main__ guard
                log.warning("worker processes failed (%s); reading in this process", exc)
                for chunk in chunks[position:]:
                    yield read_chunk(str(root), chunk, max_bytes)
                return
            yield results
    finally:
        executor.shutdown(wait=False, cancel_futures=True)
