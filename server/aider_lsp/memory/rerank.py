"""Optional LLM re-ranking of the index's top N.

The index is handed a `Reranker`: an async `rerank(query, candidates)` answering a ranking
(a TaskResult of the template, an AssociativeMatchResult, a list of paths or of
{path, score} items, or their JSON). The application builds it with `template_reranker`
from the TaskSystem, so the index never reaches up into the application. A failed call
leaves the index's ranking in place, and the summary says which ranking answered.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Awaitable, Callable
from typing import Any, Protocol

from ..models import AssociativeMatchResult, MatchItem, TaskResult
from .search import INDEX_RANKING

log = logging.getLogger(__name__)

RERANK_TEMPLATE = "internal:associative_matching"

Reranker = Callable[[str, list[MatchItem]], Awaitable[Any]]


class TemplateRunner(Protocol):
    """The one thing re-ranking needs of the TaskSystem: run a template by name."""

    async def execute_template(self, name: str, params: dict[str, Any] | None = None) -> TaskResult: ...


def template_reranker(tasks: TemplateRunner) -> Reranker:
    """A Reranker that asks the TaskSystem template `internal:associative_matching`.

    The template receives {query, candidates: [MatchItem fields without metadata or ranking],
    max_results} and answers an AssociativeMatchResult (or a list of paths) best first.
    """

    async def rerank(query: str, items: list[MatchItem]) -> Any:
        candidates = [item.model_dump(mode="json", exclude={"metadata"}) for item in items]
        return await tasks.execute_template(
            RERANK_TEMPLATE,
            {"query": query, "candidates": candidates, "max_results": len(candidates)},
        )

    return rerank


async def rerank_top(
    reranker: Reranker, query: str, result: AssociativeMatchResult, top_n: int
) -> AssociativeMatchResult:
    """The index's answer with its first `top_n` reordered by `reranker` (or kept, if it fails)."""
    head, tail = result.matches[:top_n], result.matches[top_n:]
    try:
        answer = await reranker(query, head)
        reordered = apply_rerank(head, answer)
    except Exception as exc:  # the LLM is optional: fall back to the index ranking
        log.warning("LLM re-ranking failed, keeping the index ranking: %s", exc)
        summary = result.context_summary + f" LLM re-ranking failed ({exc}); index ranking used."
        return result.model_copy(update={"context_summary": summary})
    summary = result.context_summary.replace(
        INDEX_RANKING, f"(ranking: LLM re-ranking of the index's top {len(head)})"
    )
    return AssociativeMatchResult(context_summary=summary, matches=reordered + tail)


def _ranked_paths(answer: Any) -> list[tuple[str, float | None]]:
    """Accept the shapes a template may answer with: paths, {path, score} items, wrappers."""
    if isinstance(answer, TaskResult):
        if not answer.ok:
            raise RuntimeError(answer.content or "re-ranking template failed")
        answer = answer.parsed_content if answer.parsed_content is not None else answer.content
    if hasattr(answer, "model_dump"):
        answer = answer.model_dump()
    if isinstance(answer, str):
        answer = json.loads(answer)
    if isinstance(answer, dict):
        for key in ("matches", "file_paths", "paths", "ranking", "files"):
            if key in answer:
                answer = answer[key]
                break
    if not isinstance(answer, list):
        raise ValueError(f"unexpected re-ranking answer: {type(answer).__name__}")
    ranked: list[tuple[str, float | None]] = []
    for entry in answer:
        if isinstance(entry, str):
            ranked.append((entry, None))
        elif isinstance(entry, dict):
            path = entry.get("path") or entry.get("source_path") or entry.get("id")
            score = entry.get("relevance_score", entry.get("score"))
            if isinstance(path, str):
                ranked.append((path, float(score) if isinstance(score, (int, float)) else None))
    return ranked


def apply_rerank(items: list[MatchItem], answer: Any) -> list[MatchItem]:
    """Reorder `items` as the LLM ranked them; unknown paths ignored, unranked ones last."""
    by_path = {item.source_path or item.id: item for item in items}
    ranked = [(path, score) for path, score in _ranked_paths(answer) if path in by_path]
    if not ranked:
        raise ValueError("the re-ranking named none of the candidates")
    ordered: list[MatchItem] = []
    count = len(items)
    for position, (path, score) in enumerate(ranked):
        if path not in by_path:
            continue
        item = by_path.pop(path)
        value = score if score is not None else 1.0 - position / max(1, count)
        ordered.append(_rescored(item, max(0.0, min(1.0, value))))
    for position, item in enumerate(by_path.values(), start=len(ordered)):
        value = min(item.relevance_score, 1.0 - position / max(1, count))
        ordered.append(_rescored(item, max(0.0, value)))
    return ordered


def _rescored(item: MatchItem, value: float) -> MatchItem:
    """The item with the re-ranking's score, also as its uncapped `ranking.score`: the
    index's would no longer follow the order (the first edit's share is of the first's). A
    match without the index's ranking says the score in its `metadata` on the wire, as ever."""
    if item.ranking is not None:
        ranking = item.ranking.model_copy(update={"score": value})
        return item.model_copy(update={"relevance_score": value, "ranking": ranking})
    return item.model_copy(
        update={"relevance_score": value, "metadata": {**(item.metadata or {}), "score": value}}
    )
