"""Workspace context for a model call: the seeds' MatchItem (with the index's typed Ranking),
AssociativeMatchResult, DataContext, the request for context, how a call uses the session's
history, and what one pass of the workspace index did (IndexStats).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Self

from pydantic import BaseModel, Field, field_serializer, model_validator
from pydantic.json_schema import SkipJsonSchema


class Definition(BaseModel):
    """A definition in the file that matched the query: its name and line."""

    name: str
    line: int

    def __str__(self) -> str:
        return f"{self.name} (line {self.line})"


class Why(BaseModel):
    """What a user needs to trust or correct a match (memory/explain.py `why_ranked`): the
    file's kind, the words and definitions that matched, the past commit like the query that
    changed it, its matching test, a demotion, and whether the user or the editor named it."""

    kind: str = ""
    terms: list[str] = Field(default_factory=list)
    definitions: list[Definition] = Field(default_factory=list)
    changed_by: str | None = None
    tested_by: str | None = None
    demoted: str | None = None
    named: bool = False
    mentioned: bool = False
    module: bool = False
    open: bool = False

    def as_metadata(self) -> dict[str, Any]:
        """The wire form (`metadata["why"]`): what is not set is left out, a definition is
        `name (line N)`."""
        why: dict[str, Any] = {"kind": self.kind}
        if self.terms:
            why["terms"] = list(self.terms)
        if self.definitions:
            why["definitions"] = [str(definition) for definition in self.definitions]
        for key in ("changed_by", "tested_by", "demoted"):
            if getattr(self, key):
                why[key] = getattr(self, key)
        for key in ("named", "mentioned", "module", "open"):
            if getattr(self, key):
                why[key] = True
        return why


class Signals(BaseModel):
    """The numbers behind a file's score (memory/rank.py's `Scored`, rounded): `definition` a
    matched definition, `mentioned` the question names the file, `target` the user named it,
    `prior` below 1 for a kind of file (test, doc, …) the query is not about."""

    text: float = 0.0
    definition: float = 0.0
    tested: float = 0.0
    prior: float = 1.0
    path: float = 0.0
    identifier: float = 0.0
    history: float = 0.0
    changes: float = 0.0
    recent: float = 0.0
    churn: float = 0.0
    fresh: float = 0.0
    target: bool = False
    mentioned: float = 0.0
    module: float = 0.0
    open: bool = False


class Ranking(BaseModel):
    """Why and how high the workspace index ranked a file. `score` is uncapped (the best files
    of most questions exceed 1.0, and the first edit's choice by a share of the best needs the
    real ratios; an LLM re-ranking's score replaces it); `size` the file's size in bytes as
    indexed."""

    score: float
    size: int = 0
    language: str = ""
    kind: str = ""
    why: Why = Field(default_factory=Why)
    signals: Signals = Field(default_factory=Signals)

    def as_metadata(self) -> dict[str, Any]:
        """The wire form: the keys `metadata` has carried (language, size, kind, score, why,
        signals)."""
        return {
            "language": self.language,
            "size": self.size,
            "kind": self.kind,
            "score": self.score,
            "why": self.why.as_metadata(),
            "signals": self.signals.model_dump(),
        }

    @classmethod
    def from_metadata(cls, metadata: dict[str, Any] | None) -> Ranking | None:
        """The ranking back from its wire form (a dump the bench reloads); None where the
        metadata is not the index's."""
        if not metadata or not isinstance(metadata.get("score"), int | float):
            return None
        why = metadata.get("why")
        why = dict(why) if isinstance(why, dict) else {}
        definitions = []
        for text in why.pop("definitions", None) or []:
            name, _, line = str(text).rpartition(" (line ")
            definitions.append(Definition(name=name, line=int(line.rstrip(")") or 0)))
        return cls(
            score=metadata["score"],
            size=int(metadata.get("size") or 0),
            language=str(metadata.get("language") or ""),
            kind=str(metadata.get("kind") or ""),
            why=Why(**why, definitions=definitions),
            signals=Signals.model_validate(metadata.get("signals") or {}),
        )


# One match of a context look-up (no docstring: the class's JSON schema, which a model reads
# as the re-ranking's output, stays the seeds'). `ranking` is the index's (None for another
# source's match); it never goes on the wire itself and no model is shown it (the schema leaves
# it out): a dump's `metadata` carries it in the seeds' string keys (`Ranking.as_metadata`)
# over whatever `metadata` holds.
class MatchItem(BaseModel):
    id: str
    content: str
    relevance_score: float = Field(ge=0.0, le=1.0)
    content_type: str = "file_content"
    source_path: str | None = None
    metadata: dict[str, Any] | None = None
    ranking: SkipJsonSchema[Ranking | None] = Field(default=None, exclude=True)

    @model_validator(mode="after")
    def _metadata_for_the_ranking(self) -> Self:
        """A ranked match has metadata to carry its ranking on the wire (a dump that leaves out
        None values keeps it)."""
        if self.ranking is not None and self.metadata is None:
            self.metadata = {}
        return self

    @field_serializer("metadata")
    def _metadata_on_the_wire(self, metadata: dict[str, Any] | None) -> dict[str, Any] | None:
        """The ranking in the seeds' string keys, over whatever `metadata` holds."""
        if self.ranking is None:
            return metadata
        return {**(metadata or {}), **self.ranking.as_metadata()}


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
