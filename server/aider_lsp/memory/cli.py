"""`aider-lsp context --workspace DIR "query"`: the relevant files, from the terminal.

Brings the workspace index up to date (incrementally: a warm index re-reads nothing), then
prints `score  path  (why)` lines (or `--json`): why = the definitions that matched, the
query words the file contains, the test that lifted it, and whether its kind (test, doc,
changelog, …) demoted it. Exit 0 with matches, 1 without, 2 on bad input.
"""

from __future__ import annotations

import asyncio
import json
import sqlite3
import sys
from pathlib import Path

from ..files import FileAccessManager
from ..models import ContextGenerationInput
from ..settings import SettingsError, load_settings
from .system import MemorySystem, describe_why


def run_context(
    workspace: Path,
    query: str,
    *,
    as_json: bool = False,
    limit: int = 10,
    index_path: str | None = None,
) -> int:
    """Index (incrementally) and answer one query on stdout."""
    if not query.strip():
        print("aider-lsp context: the query is empty", file=sys.stderr)
        return 2
    try:
        settings = load_settings()
        files = FileAccessManager(
            workspace,
            max_file_bytes=settings.max_file_bytes,
            secret_patterns=settings.secret_patterns,
        )
    except (SettingsError, OSError) as exc:
        print(f"aider-lsp context: {exc}", file=sys.stderr)
        return 2
    memory = MemorySystem(files, settings, db_path=index_path)
    try:
        stats = memory.index_all()
        request = ContextGenerationInput(query=query, max_results=max(1, min(limit, 200)))
        result = asyncio.run(memory.get_relevant_context_for(request))
    except (sqlite3.Error, OSError) as exc:
        print(f"aider-lsp context: the index is unavailable: {exc}", file=sys.stderr)
        return 2
    finally:
        memory.close()
    if as_json:
        payload = {
            "query": query,
            "context_summary": result.context_summary,
            "error": result.error,
            "matches": [
                {
                    "path": match.source_path or match.id,
                    "score": match.relevance_score,
                    "summary": match.content,
                    "why": (match.metadata or {}).get("why", {}),
                }
                for match in result.matches
            ],
            "index": {
                "location": str(memory.store.location),
                "files": stats.scanned,
                "read": stats.read,
                "seconds": round(stats.seconds, 3),
            },
        }
        print(json.dumps(payload, indent=2))
    else:
        for match in result.matches:
            why = describe_why((match.metadata or {}).get("why", {}))
            print(f"{match.relevance_score:.3f}  {match.source_path or match.id}  ({why})")
        print(result.context_summary, file=sys.stderr)
    if result.error:
        return 2
    return 0 if result.matches else 1
