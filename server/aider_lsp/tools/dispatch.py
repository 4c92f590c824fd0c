"""A task command by id (the LSP commands named after tools, the seeds' `handle_task_command`): a direct tool
of the registry, else a TaskSystem template, else FAILED template_not_found."""

from __future__ import annotations

from typing import Any, Protocol

from ..models import ErrorReason, TaskResult, failed_result
from .registry import ToolRegistry


class Templates(Protocol):
    """The TaskSystem's side of a task command (llm/tasks.py)."""

    def has_template(self, name: str) -> bool: ...

    async def execute_template(self, name: str, params: dict[str, Any] | None = None) -> TaskResult: ...


async def run_task_command(
    tools: ToolRegistry, templates: Templates, identifier: str, params: dict[str, Any] | None
) -> TaskResult:
    """Run a direct tool or a template by id; a bad parameter object or an unknown id is FAILED."""
    params = {} if params is None else params
    if not isinstance(params, dict):
        return failed_result(ErrorReason.INPUT_VALIDATION_FAILURE, "task parameters must be an object")
    if identifier in tools:
        return await tools.execute(identifier, params)
    if templates.has_template(identifier):
        return await templates.execute_template(identifier, params)
    return failed_result(ErrorReason.TEMPLATE_NOT_FOUND, f"no tool or template named {identifier!r}")
