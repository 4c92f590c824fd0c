"""`system:get_context`: the workspace files relevant to a query, from the MemorySystem.

Its argument is `GetContextArgs` (models/args.py). Answer: content = JSON list of paths,
notes.file_paths, notes.context_summary; also notes.matches (MatchItem dicts with relevance_score,
for callers that weigh them).
"""

from __future__ import annotations

import json
from typing import Any

from ..memory import MemorySystem
from ..models import (
    ContextGenerationInput,
    ErrorReason,
    GetContextArgs,
    TaskResult,
    ToolSpec,
    complete_result,
    failed_result,
    parse_args,
)

GET_CONTEXT_SPEC = ToolSpec.for_args(
    "system:get_context",
    "Find the workspace files most relevant to a query (full-text index over paths, "
    "definitions, summaries and contents). Returns a JSON list of workspace-relative paths.",
    GetContextArgs,
)


async def get_context(memory: MemorySystem, params: dict[str, Any]) -> TaskResult:
    """Validate, ask the MemorySystem, and answer with the paths, best first."""
    args = parse_args(GetContextArgs, params)
    if isinstance(args, TaskResult):
        return args
    if not args.query.strip():
        return failed_result(ErrorReason.INPUT_VALIDATION_FAILURE, "query must be a non-empty string")
    request = ContextGenerationInput(
        query=args.query,
        history=args.history_text,
        target_files=args.target_files,
        open_files=args.open_files,
        max_results=args.max_results or 10,
    )
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
