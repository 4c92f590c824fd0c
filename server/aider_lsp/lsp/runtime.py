"""Running a workspace/executeCommand: decode the one argument, wait for the settings, show
progress for long commands, link cancellation, and turn every failure into a TaskResult.

A command is a `CommandSpec` (lsp/commands.py); `register_commands` makes each one a pygls
command. The unsaved-buffer guard is the Application's, asked at each edit (lsp/documents.py).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from pydantic import ValidationError
from pygls.exceptions import JsonRpcInvalidParams

from ..models import ErrorReason, TaskResult, failed_result
from . import cancellation
from .commands import COMMANDS, CommandParams, CommandSpec
from .language_server import AiderLanguageServer
from .progress import work_done_progress

log = logging.getLogger(__name__)

MAX_PROBLEMS_SHOWN = 5  # an invalid argument's problems named in the answer


def decode_argument(spec: CommandSpec, args: tuple[Any, ...]) -> CommandParams:
    """One object argument (or none) validated by the command's model, else InvalidParams.

    An empty array stands for the empty object: Lua (Neovim) encodes `{}` as `[]`."""
    if len(args) > 1:
        raise JsonRpcInvalidParams(f"{spec.id} takes one object argument, got {len(args)}")
    raw = args[0] if args else {}
    if raw is None or raw == []:
        raw = {}
    if not isinstance(raw, dict):
        raise JsonRpcInvalidParams(f"{spec.id} takes one object argument, got {type(raw).__name__}")
    try:
        return spec.params_model.model_validate(raw)
    except ValidationError as exc:
        errors = exc.errors()
        problems = "; ".join(
            f"{'.'.join(str(part) for part in error['loc']) or 'argument'}: {error['msg'][:200]}"
            for error in errors[:MAX_PROBLEMS_SHOWN]
        )
        if len(errors) > MAX_PROBLEMS_SHOWN:  # 300 bad entries of a list: the first few say it
            problems += f"; and {len(errors) - MAX_PROBLEMS_SHOWN} more"
        raise JsonRpcInvalidParams(f"{spec.id}: invalid argument: {problems}") from None


async def run_command(ls: AiderLanguageServer, spec: CommandSpec, params: CommandParams) -> TaskResult:
    """The command's run with progress when it is long; cancelled by the client either way."""
    app = ls.app
    assert app is not None
    token = ls.protocol.take_work_done_token()
    if not spec.long_running:
        return await spec.run(app, params, ls.request_context())
    async with work_done_progress(ls, spec.title, token=token, cancellable=True) as progress:
        report = progress.report if progress.shown else None
        result = await spec.run(app, params, ls.request_context(report))
        progress.outcome = result.status.value.lower()
        return result


CommandHandler = Callable[..., Awaitable[dict[str, Any]]]


def make_handler(spec: CommandSpec) -> CommandHandler:
    """The pygls command for `spec`: its answer is always a TaskResult (or InvalidParams)."""

    async def execute(ls: AiderLanguageServer, *args: Any) -> dict[str, Any]:
        params = decode_argument(spec, args)
        await ls.wait_configured()
        if ls.app is None:
            return failed_result(
                ErrorReason.CONFIGURATION_ERROR,
                ls.workspace_problem or "aider-lsp needs a workspace folder: open a folder in the editor",
            ).to_wire()
        task = asyncio.current_task()
        if task is not None:
            cancellation.cancel_task_with_request(ls.protocol, task)
        try:
            result = await run_command(ls, spec, params)
        except asyncio.CancelledError:
            if cancellation.request_cancelled(ls.protocol):
                raise  # pygls has already answered the request as cancelled
            # cancelled from the progress UI: answer the request with what happened
            result = failed_result(ErrorReason.CANCELLED, f"{spec.title}: cancelled by the user")
        except Exception as exc:  # never a traceback to the user, never a dead server
            log.exception("command %s failed", spec.id)
            result = failed_result(ErrorReason.UNEXPECTED_ERROR, f"{spec.id} failed: {exc}")
        return result.to_wire()

    execute.__name__ = "cmd_" + spec.id.replace(".", "_").replace("-", "_")
    return execute


def register_commands(server: AiderLanguageServer) -> None:
    """Every command of lsp/commands.py's COMMANDS; a new command is one CommandSpec there."""
    for spec in COMMANDS:
        server.command(spec.id)(make_handler(spec))
