"""The tools every workspace offers, registered once: read files, find context, run a shell
command, and Aider's two executors. The registry serves `handle_task_command` and the model."""

from __future__ import annotations

from functools import partial
from typing import Any

from ..config.settings import SettingsProvider
from ..guards.files import FileAccessManager
from ..memory import MemorySystem
from ..models import TaskResult
from ..processes.shell import CommandExecutor
from . import aider, system
from .context import GET_CONTEXT_SPEC, get_context
from .registry import ToolRegistry


def register_builtin_tools(
    tools: ToolRegistry,
    files: FileAccessManager,
    shell: CommandExecutor,
    memory: MemorySystem,
    settings: SettingsProvider,
    aider_tools: aider.AiderExecutors,
) -> None:
    """Register the built-in tools; the shell's timeout and shell choice are read at each call."""

    async def read_files(params: dict[str, Any]) -> TaskResult:
        return system.read_files(files, params)

    async def execute_shell_command(params: dict[str, Any]) -> TaskResult:
        current = settings()
        return await system.execute_shell_command(
            shell, params, default_timeout=current.timeouts.shell, use_shell=current.test_shell
        )

    tools.register(system.READ_FILES_SPEC, read_files)
    tools.register(GET_CONTEXT_SPEC, partial(get_context, memory))
    tools.register(system.EXECUTE_SHELL_SPEC, execute_shell_command)
    tools.register(aider.AIDER_AUTOMATIC_SPEC, aider_tools.automatic)
    tools.register(aider.AIDER_INTERACTIVE_SPEC, aider_tools.interactive)
