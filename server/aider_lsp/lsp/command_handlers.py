"""Every CommandId registered with pygls before initialize, run by runtime.py once called.

pygls lists the command ids in the initialize answer, so they are registered at start; what runs
them (argument models, the Application, pydantic) is imported once the client is initialized
(lifecycle.py) instead of before the first answer.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from .command_ids import CommandId
from .language_server import AiderLanguageServer  # at run time: pygls reads the handler's hints

CommandHandler = Callable[..., Awaitable[dict[str, Any]]]


def make_handler(command_id: CommandId) -> CommandHandler:
    """The pygls command for `command_id`."""

    async def execute(ls: AiderLanguageServer, *args: Any) -> dict[str, Any]:
        from .runtime import execute_command  # loaded after initialize; see the module's docstring

        return await execute_command(ls, command_id, args)

    execute.__name__ = "cmd_" + command_id.replace(".", "_").replace("-", "_")
    return execute


def register(server: AiderLanguageServer) -> None:
    """Every CommandId; a new command is a CommandId and one CommandSpec in commands.py."""
    for command_id in CommandId:
        server.command(command_id)(make_handler(command_id))
