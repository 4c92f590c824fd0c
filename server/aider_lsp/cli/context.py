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
from typing import Any

from ..config.settings import SettingsError, load_settings
from ..models import AssociativeMatchResult, ContextGenerationInput, IndexStats

MAX_LIMIT = 200


class _CannotAnswer(Exception):
    """What stops an answer (an empty query, bad settings, no index): stderr, exit code 2."""


def run_context(
    workspace: Path,
    query: str,
    *,
    as_json: bool = False,
    limit: int = 10,
    index_path: str | None = None,
) -> int:
    """Index (incrementally) and answer one query on stdout."""
    try:
        if not query.strip():
            raise _CannotAnswer("the query is empty")
        stats, result, location = asyncio.run(_index_and_ask(workspace, query, limit, index_path))
    except _CannotAnswer as exc:
        print(f"aider-lsp context: {exc}", file=sys.stderr)
        return 2
    if as_json:
        print(json.dumps(_as_json(query, result, stats, location), indent=2))
    else:
        _print_lines(result)
    if result.error:
        return 2
    return 0 if result.matches else 1


async def _index_and_ask(
    workspace: Path, query: str, limit: int, index_path: str | None
) -> tuple[IndexStats, AssociativeMatchResult, str]:
    """The workspace's Application (the user's settings, the index in this process): the index
    brought up to date, the query answered as the editor's would be, and where the index is."""
    from ..app import Application

    try:
        app = Application.for_lookup(workspace, load_settings(), index_path=index_path)
    except (SettingsError, OSError) as exc:
        raise _CannotAnswer(str(exc)) from exc
    try:
        stats = await app.index_workspace()
        request = ContextGenerationInput(query=query, max_results=max(1, min(limit, MAX_LIMIT)))
        return stats, await app.find_context(request), app.index_location()
    except (sqlite3.Error, OSError) as exc:
        raise _CannotAnswer(f"the index is unavailable: {exc}") from exc
    finally:
        await app.aclose()


def _as_json(query: str, result: AssociativeMatchResult, stats: IndexStats, location: str) -> dict[str, Any]:
    """`--json`: the answer with each match's why, and what indexing did."""
    return {
        "query": query,
        "context_summary": result.context_summary,
        "error": result.error,
        "matches": [
            {
                "path": match.source_path or match.id,
                "score": match.relevance_score,
                "summary": match.content,
                "why": match.ranking.why.as_metadata() if match.ranking else {},
            }
            for match in result.matches
        ],
        "index": {
            "location": location,
            "files": stats.scanned,
            "read": stats.read,
            "seconds": round(stats.seconds, 3),
        },
    }


def _print_lines(result: AssociativeMatchResult) -> None:
    """`score  path  (why)` per match on stdout (the why in the Application's words); the
    summary on stderr."""
    from ..app import Application  # loaded already: it answered the query

    for match in result.matches:
        why = Application.describe_why(match.ranking.why if match.ranking else None)
        print(f"{match.relevance_score:.3f}  {match.source_path or match.id}  ({why})")
    print(result.context_summary, file=sys.stderr)
