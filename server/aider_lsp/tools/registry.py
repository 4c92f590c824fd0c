"""The one tool registry: canonical ids (`aider:automatic`) and provider-safe aliases.

The same registry serves `Application.handle_task_command` and the LLM agent; a model sees
the provider-safe alias (`aider_automatic`), programmatic callers may use either spelling.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from ..models import ErrorReason, TaskResult, ToolSpec, failed_result, provider_safe_name

log = logging.getLogger(__name__)

ToolExecutor = Callable[[dict[str, Any]], Awaitable[TaskResult]]


@dataclass(frozen=True)
class RegisteredTool:
    spec: ToolSpec
    execute: ToolExecutor


class ToolRegistry:
    def __init__(self) -> None:
        self._tools: dict[str, RegisteredTool] = {}
        self._aliases: dict[str, str] = {}

    def register(self, spec: ToolSpec, executor: ToolExecutor) -> bool:
        """Add a tool; False (and nothing changed) when the name or its alias is taken."""
        alias = spec.provider_name
        if spec.name in self._tools or alias in self._aliases:
            return False
        self._tools[spec.name] = RegisteredTool(spec, executor)
        self._aliases[alias] = spec.name
        return True

    def get(self, name: str) -> RegisteredTool | None:
        canonical = name if name in self._tools else self._aliases.get(provider_safe_name(name))
        return self._tools.get(canonical) if canonical else None

    def __contains__(self, name: str) -> bool:
        return self.get(name) is not None

    def specs(self) -> list[ToolSpec]:
        return [tool.spec for tool in self._tools.values()]

    async def execute(self, name: str, params: dict[str, Any]) -> TaskResult:
        """Run a tool by either spelling; every failure comes back as a FAILED TaskResult."""
        tool = self.get(name)
        if tool is None:
            return failed_result(ErrorReason.TEMPLATE_NOT_FOUND, f"unknown tool: {name}")
        if not isinstance(params, dict):
            return failed_result(
                ErrorReason.INPUT_VALIDATION_FAILURE,
                f"{tool.spec.name} takes one object argument, got {type(params).__name__}",
            )
        try:
            return await tool.execute(params)
        except Exception as exc:  # a tool bug reaches its caller (a model, a command) as FAILED
            log.exception("tool %s failed", tool.spec.name)
            return failed_result(ErrorReason.TOOL_EXECUTION_ERROR, f"{tool.spec.name} failed: {exc}")
