"""`system:get_context`: the workspace files relevant to a query, from the MemorySystem.

Answer (seed contract): content = JSON list of paths, notes.file_paths, notes.context_summary;
also notes.matches (MatchItem dicts with relevance_score, for callers that weigh them).
"""

from __future__ import annotations

import json
from typing import Any

from ..memory import MemorySystem
from ..models import (
    ContextGenerationInput,
    ErrorReason,
    TaskResult,
    ToolSpec,
    complete_result,
    failed_result,
)
from .system import parse_path_list

GET_CONTEXT_SPEC = ToolSpec(
    name="system:get_context",
    description=(
        "Find the workspace files most relevant to a query (full-text index over paths, "
        "definitions, summaries and contents). Returns a JSON list of workspace-relative paths."
    ),
    input_schema={
        "type": "object",
        "properties": {
            "query": {"type": "string", "description": "What the files should be about."},
            "history": {
                "type": "string",
                "description": "Recent conversation, used as a weaker hint.",
            },
            "target_files": {
                "type": "array",
                "items": {"type": "string"},
                "description": "Files already known to matter; they rank first.",
            },
        },
        "required": ["query"],
    },
)


def _history_text(value: Any) -> str | None:
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, list):
        return "\n".join(str(entry) for entry in value)
    raise ValueError("history must be a string or a list of strings")


async def get_context(memory: MemorySystem, params: dict[str, Any]) -> TaskResult:
    """Validate, ask the MemorySystem, and answer in the seed's shape."""
    query = params.get("query")
    if not isinstance(query, str) or not query.strip():
        return failed_result(ErrorReason.INPUT_VALIDATION_FAILURE, "query must be a non-empty string")
    try:
        target_files = parse_path_list(params.get("target_files") or [], "target_files")
        open_files = parse_path_list(params.get("open_files") or [], "open_files")
        history = _history_text(params.get("history"))
        max_results = params.get("max_results", 10)
        request = ContextGenerationInput(
            query=query,
            history=history,
            target_files=target_files,
            open_files=open_files,
            max_results=max_results,
        )
    except ValueError as exc:  # pydantic's ValidationError is a ValueError
        return failed_result(ErrorReason.INPUT_VALIDATION_FAILURE, str(exc))
    result = await memory.get_relevant_context_for(request)
    if result.error and not result.matches:
        return failed_result(
            ErrorReason.CONTEXT_RETRIEVAL_FAILURE,
            result.error,
            notes={"context_summary": result.context_summary, "file_paths": []},
        )
    paths = [match.source_path or match.id for match in result.matches]
    return complete_result(
        json.dumps(paths),
        notes={
            "file_paths": paths,
            "context_summary": result.context_summary,
            "matches": [match.model_dump(mode="json") for match in result.matches],
        },
        parsed=paths,
    )
