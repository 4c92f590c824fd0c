"""The server's full pass in a child process, writing the same SQLite file (WAL).

Why: the pass is Python work (the walk and the ignore rules for every file, unpickling what
the readers hand back, building the rows); in a thread of the server it holds the GIL, and
every request the server answers meanwhile waits for it a switch interval at a time (p99 of
cheap requests 161 ms during the first index of 100,000 files). In a child process the
server only waits on a pipe. The child runs the same `Indexer.index_all` (the walk, the
restart shortcut, the readers, the corruption recovery) on its own connection; the server's
connection sees each committed batch, as WAL lets a reader do while another process writes.

The child stops between batches when asked (`stop`), and on its own when the server that
started it is gone. Progress arrives as messages: (message, percentage, done, total).

The stop request crosses the process boundary as a lock-free shared byte, never as a
`multiprocessing.Event`: setting such an event waits for every process sleeping on it to
wake, and a child whose thread died inside `wait()` (the process exiting) never does, so
the server's shutdown hung forever on a child that had already finished.
"""

from __future__ import annotations

import ctypes
import logging
import multiprocessing
import os
import threading
from collections.abc import Callable
from dataclasses import dataclass
from multiprocessing.connection import Connection
from typing import Any, Protocol

from ..guards.files import DEFAULT_SECRET_PATTERNS, FileAccessManager
from ..models import IndexStats
from .history import MAX_COMMITS
from .index import IndexStore

log = logging.getLogger(__name__)

POLL_S = 0.2  # how often the waiting thread looks at its stop event
PARENT_CHECK_S = 0.2  # how often the child looks at the stop flag and its server


@dataclass(frozen=True)
class PassSpec:
    """What the child needs to rebuild the server's view of the workspace: picklable."""

    root: str
    db_path: str
    excludes: tuple[str, ...]
    secret_patterns: tuple[str, ...]  # the user's, without the built-in ones
    max_file_bytes: int
    history_commits: int = MAX_COMMITS  # git commits read after the pass (history.py)

    @classmethod
    def of(
        cls,
        files: FileAccessManager,
        db_path: str,
        excludes: tuple[str, ...],
        max_file_bytes: int,
        history_commits: int = MAX_COMMITS,
    ) -> PassSpec:
        user_patterns = files.secret_patterns[len(DEFAULT_SECRET_PATTERNS) :]
        return cls(str(files.root), db_path, excludes, tuple(user_patterns), max_file_bytes, history_commits)


Progress = Callable[[str, int | None, int, int], None]


class PassCounts(Protocol):
    @property
    def done(self) -> int: ...

    @property
    def total(self) -> int: ...


class IndexPass(Protocol):
    """What the child runs: indexer.py's Indexer (built by the `make` it is given, so this
    module never imports indexer.py, which imports it)."""

    @property
    def progress(self) -> PassCounts: ...

    def index_all(self, report: Callable[[str, int | None], None]) -> IndexStats: ...


# (files, the store, excludes, max file bytes, stop, history commits) → the pass: a module-level
# function of indexer.py, picklable by name for the spawned child
MakePass = Callable[[FileAccessManager, IndexStore, tuple[str, ...], int, threading.Event, int], IndexPass]


def index_in_child(
    spec: PassSpec, stop: threading.Event, on_progress: Progress, make: MakePass
) -> IndexStats:
    """Run one full pass (`make`'s) in a child process and wait for it (blocking: call from a
    thread).

    Raises RuntimeError when the child could not start or died without an answer."""
    context = multiprocessing.get_context("spawn")
    receiving, sending = context.Pipe(duplex=False)
    child_stop = stop_flag(context)
    process = context.Process(
        target=_child_main, args=(spec, make, sending, child_stop, os.getpid()), name="aider-lsp-index"
    )
    try:
        process.start()
    except OSError as exc:
        raise RuntimeError(f"cannot start the indexing process: {exc}") from exc
    sending.close()  # the child holds the only writing end: its exit ends the pipe
    try:
        return _receive(receiving, stop, child_stop, on_progress)
    finally:
        receiving.close()
        process.join(5)
        if process.is_alive():
            process.terminate()
            process.join(5)


def stop_flag(context: Any) -> Any:
    """The shared stop request: a byte without a lock, so setting it never waits on the child."""
    return context.RawValue(ctypes.c_bool, False)


def _receive(
    receiving: Connection, stop: threading.Event, child_stop: Any, on_progress: Progress
) -> IndexStats:
    """Relay progress until the child's answer; forward a stop request to it."""
    while True:
        if stop.is_set():
            child_stop.value = True
        if not receiving.poll(POLL_S):
            continue
        try:
            message = receiving.recv()
        except EOFError:
            raise RuntimeError("the indexing process ended without an answer") from None
        kind = message[0]
        if kind == "progress":
            on_progress(*message[1:])
        elif kind == "done":
            stats: IndexStats = message[1]
            return stats
        else:
            raise RuntimeError(f"the indexing process failed: {message[1]}")


def _child_main(spec: PassSpec, make: MakePass, sending: Connection, requested: Any, parent: int) -> None:
    """The child: one `index_all` on its own connection; stops if the server goes away."""
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    stop = threading.Event()
    if requested.value:  # asked before the child was up: stop at the first batch
        stop.set()
    threading.Thread(target=_watch_parent, args=(parent, stop, requested), daemon=True).start()
    try:
        files = FileAccessManager(
            spec.root, max_file_bytes=spec.max_file_bytes, secret_patterns=spec.secret_patterns
        )
    except OSError as exc:  # the workspace went away before the pass began (a run's tree removed)
        sending.send(("failed", f"{type(exc).__name__}: {exc}"))
        sending.close()
        return
    store = IndexStore(spec.db_path)
    indexer = make(files, store, spec.excludes, spec.max_file_bytes, stop, spec.history_commits)

    def report(message: str, percentage: int | None) -> None:
        progress = indexer.progress
        sending.send(("progress", message, percentage, progress.done, progress.total))

    try:
        stats = indexer.index_all(report)
        sending.send(("done", stats))
    except Exception as exc:  # reported to the server, which indexes in its own process then
        sending.send(("failed", f"{type(exc).__name__}: {exc}"))
    finally:
        store.close()
        sending.close()


def _watch_parent(parent: int, stop: threading.Event, requested: Any = None) -> None:
    """Stop the pass when the server asks (`requested`, a shared flag) or has exited."""
    while not stop.wait(PARENT_CHECK_S):
        if os.getppid() != parent or (requested is not None and requested.value):
            stop.set()
