"""Workspace context for a model call: the seeds' MatchItem, AssociativeMatchResult,
DataContext, the request for context, how a call uses the session's history, and what one
pass of the workspace index did (IndexStats).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from pydantic import BaseModel, Field


class MatchItem(BaseModel):
    id: str
    content: str
    relevance_score: float = Field(ge=0.0, le=1.0)
    content_type: str = "file_content"
    source_path: str | None = None
    metadata: dict[str, Any] | None = None


class AssociativeMatchResult(BaseModel):
    context_summary: str
    matches: list[MatchItem] = Field(default_factory=list)
    error: str | None = None


class DataContext(BaseModel):
    retrieved_at: datetime = Field(default_factory=lambda: datetime.now(UTC))
    source_query: str | None = None
    items: list[MatchItem] = Field(default_factory=list)
    overall_summary: str | None = None


class ContextGenerationInput(BaseModel):
    """A request for relevant workspace context."""

    query: str | None = None
    template_description: str | None = None
    inputs: dict[str, Any] = Field(default_factory=dict)
    history: str | None = None
    target_files: list[str] = Field(default_factory=list)
    open_files: list[str] = Field(default_factory=list)
    max_results: int = Field(default=10, ge=1, le=200)
    # The query is a change to make (a workflow's goal), not a text to look up: a file the goal
    # calls by its module name counts more ("type hints for the contents module").
    edit_goal: bool = False

    @property
    def effective_query(self) -> str:
        """The text to search for: the query, else the description, else the inputs."""
        if self.query and self.query.strip():
            return self.query.strip()
        if self.template_description and self.template_description.strip():
            return self.template_description.strip()
        return " ".join(str(value) for value in self.inputs.values()).strip()


class HistoryConfigSettings(BaseModel):
    use_session_history: bool = True
    history_turns_to_include: int | None = Field(default=None, ge=0)
    record_in_session_history: bool = True


@dataclass
class IndexStats:
    """What one pass of the index did (memory/indexer.py); `read` counts files whose bytes were
    read (0 on a warm restart)."""

    scanned: int = 0
    unchanged: int = 0
    read: int = 0
    added: int = 0
    updated: int = 0
    touched: int = 0
    removed: int = 0
    skipped: list[str] = field(default_factory=list)
    seconds: float = 0.0
    bytes_indexed: int = 0
