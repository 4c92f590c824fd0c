"""The answer every command, tool and template gives: a TaskResult (the seeds' envelope).

Errors are reported in it (`notes.error = {type, reason, message}`), never raised to the user;
`failed_result` and `complete_result` build the two common shapes.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator


class TaskStatus(StrEnum):
    COMPLETE = "COMPLETE"
    CONTINUATION = "CONTINUATION"
    FAILED = "FAILED"


class ErrorReason(StrEnum):
    """Why a task failed; `notes.error.reason` holds one of these values."""

    INPUT_VALIDATION_FAILURE = "input_validation_failure"
    CONFIGURATION_ERROR = "configuration_error"
    CONNECTION_ERROR = "connection_error"
    EXECUTION_TIMEOUT = "execution_timeout"
    TOOL_EXECUTION_ERROR = "tool_execution_error"
    LLM_ERROR = "llm_error"
    OUTPUT_FORMAT_FAILURE = "output_format_failure"
    CONTEXT_RETRIEVAL_FAILURE = "context_retrieval_failure"
    PROTOCOL_ERROR = "protocol_error"
    TEMPLATE_NOT_FOUND = "template_not_found"
    ACCESS_DENIED = "access_denied"
    CANCELLED = "cancelled"
    UNEXPECTED_ERROR = "unexpected_error"
    # a workflow run's own endings
    BUDGET_EXCEEDED = "budget_exceeded"
    MAX_RETRIES_REACHED = "max_retries_reached"
    GOAL_NOT_REACHED = "goal_not_reached"


class TaskError(BaseModel):
    type: str = "TASK_FAILURE"
    reason: ErrorReason
    message: str


class TaskResult(BaseModel):
    """The answer of every command, tool and template.

    `error` is the typed error; on the wire it is `notes.error` (the seeds' shape). The two are
    made one at construction (either may be given), so reading `error` validates nothing."""

    model_config = ConfigDict(populate_by_name=True)

    status: TaskStatus
    content: str = ""
    notes: dict[str, Any] = Field(default_factory=dict)
    parsed_content: Any | None = Field(default=None, alias="parsedContent")
    error: TaskError | None = Field(default=None, exclude=True)

    @model_validator(mode="after")
    def _one_error(self) -> TaskResult:
        """`error` and `notes.error` say the same thing from the start."""
        if self.error is not None:
            self.notes["error"] = self.error.model_dump(mode="json")
        elif self.notes.get("error"):
            self.error = TaskError.model_validate(self.notes["error"])
        return self

    @property
    def ok(self) -> bool:
        return self.status is not TaskStatus.FAILED

    def to_wire(self) -> dict[str, Any]:
        """JSON-ready dict with the wire's camelCase `parsedContent`."""
        return self.model_dump(mode="json", by_alias=True)


def failed_result(
    reason: ErrorReason | str,
    message: str,
    *,
    content: str | None = None,
    notes: dict[str, Any] | None = None,
    error_type: str = "TASK_FAILURE",
) -> TaskResult:
    """Build the one FAILED TaskResult shape: `notes.error = {type, reason, message}`."""
    return TaskResult(
        status=TaskStatus.FAILED,
        content=message if content is None else content,
        notes=dict(notes or {}),
        error=TaskError(type=error_type, reason=ErrorReason(reason), message=message),
    )


def complete_result(
    content: str = "", *, notes: dict[str, Any] | None = None, parsed: Any | None = None
) -> TaskResult:
    return TaskResult(
        status=TaskStatus.COMPLETE, content=content, notes=dict(notes or {}), parsedContent=parsed
    )
