"""The workspace memory: an embedded SQLite FTS5 index and associative matching."""

from .system import IndexStats, MemorySystem, apply_rerank, default_index_path, task_reranker

__all__ = ["IndexStats", "MemorySystem", "apply_rerank", "default_index_path", "task_reranker"]
