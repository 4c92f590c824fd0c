"""The workspace memory: an embedded SQLite FTS5 index and associative matching.

The names below are loaded on first use, so that the indexer's worker processes, which
import only `memory.reader`, start without the application's models and settings.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .system import IndexStats, MemorySystem, apply_rerank, default_index_path, task_reranker

__all__ = ["IndexStats", "MemorySystem", "apply_rerank", "default_index_path", "task_reranker"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        from . import system

        return getattr(system, name)
    raise AttributeError(name)
