"""The workspace memory: an embedded SQLite FTS5 index and associative matching.

`MemorySystem` (system.py) is the façade; indexer.py writes the index, search.py answers
queries, explain.py says why a file ranked, rerank.py re-ranks with an LLM (see
docs/memory.md). The names below are loaded on first use, so that the indexer's worker
processes, which import only `memory.reader`, start without the application's models and
settings.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..models import IndexStats
    from .rerank import apply_rerank, template_reranker
    from .system import MemorySystem, default_index_path

_MODULE_OF = {
    "IndexStats": ".indexer",  # models.IndexStats, named here too
    "MemorySystem": ".system",
    "apply_rerank": ".rerank",
    "default_index_path": ".system",
    "template_reranker": ".rerank",
}
__all__ = ["IndexStats", "MemorySystem", "apply_rerank", "default_index_path", "template_reranker"]


def __getattr__(name: str) -> Any:
    if name in _MODULE_OF:
        return getattr(import_module(_MODULE_OF[name], __name__), name)
    raise AttributeError(name)
