"""Running a workspace/executeCommand: decode the one argument, wait for the settings, show
progress for long commands, link cancellation, and turn every failure into a TaskResult.

A command is a `CommandSpec` (lsp/commands.py); command_handlers.py registers each id with
pygls and calls `execute_command` here. The unsaved-buffer guard is the Application's, asked
at each edit (lsp/documents.py).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any

from pydantic import ValidationError
from pygls.exceptions import JsonRpcInvalidParams

from ..app import Application
from ..models import ErrorReason, TaskResult, WorkflowRun, failed_result
from ..results import workflow_run_result
from . import cancellation, routing, workspace
from .commands import COMMANDS, CommandParams, CommandSpec
from .language_server import AiderLanguageServer
from .progress import work_done_progress

log = logging.getLogger(__name__)

MAX_PROBLEMS_SHOWN = 5  # an invalid argument's problems named in the answer


def raw_argument(spec: CommandSpec, args: tuple[Any, ...]) -> dict[str, Any]:
    """The one object argument (or none), else InvalidParams.

    An empty array stands for the empty object: Lua (Neovim) encodes `{}` as `[]`."""
    if len(args) > 1:
        raise JsonRpcInvalidParams(f"{spec.id} takes one object argument, got {len(args)}")
    raw = args[0] if args else {}
    if raw is None or raw == []:
        raw = {}
    if not isinstance(raw, dict):
        raise JsonRpcInvalidParams(f"{spec.id} takes one object argument, got {type(raw).__name__}")
    return raw


def decode_argument(spec: CommandSpec, raw: dict[str, Any]) -> CommandParams:
    """The argument (its `folder` taken out) validated by the command's model, else InvalidParams."""
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


async def run_command(
    ls: AiderLanguageServer,
    app: Application,
    spec: CommandSpec,
    params: CommandParams,
    answer_cancelled: Callable[[WorkflowRun], None] | None = None,
) -> TaskResult:
    """The command's run with progress when it is long; cancelled by the client either way.
    `answer_cancelled` receives what the command did before a cancel, when it says."""
    token = ls.protocol.take_work_done_token()
    if not spec.long_running:
        return await spec.run(app, params, ls.request_context(app, answer_cancelled=answer_cancelled))
    async with work_done_progress(ls, spec.title, token=token, cancellable=True) as progress:
        report = progress.report if progress.shown else None
        result = await spec.run(app, params, ls.request_context(app, report, answer_cancelled))
        progress.outcome = result.status.value.lower()
        return result


SPECS: dict[str, CommandSpec] = {spec.id: spec for spec in COMMANDS}


async def execute_command(ls: AiderLanguageServer, command_id: str, args: tuple[Any, ...]) -> dict[str, Any]:
    """One workspace/executeCommand: its answer is always a TaskResult (or InvalidParams)."""
    spec = SPECS[command_id]
    raw, folder = routing.take_folder(raw_argument(spec, args))
    params = decode_argument(spec, raw)
    await ls.wait_configured()
    root = routing.route(ls.folders, raw, folder, any_folder=spec.any_folder)
    if isinstance(root, routing.Refusal):
        return failed_result(ErrorReason.CONFIGURATION_ERROR, root.message).to_wire()
    if spec.unopened is not None and ls.folders.apps.alive(root) is None:
        return spec.unopened(root).to_wire()  # read without opening the folder
    app = await workspace.application(ls, root)
    if app is None:
        return failed_result(
            ErrorReason.CONFIGURATION_ERROR, ls.workspace_problem or f"cannot open {root}"
        ).to_wire()
    with ls.folders.apps.in_use(root):
        return await _execute(ls, app, spec, params)


async def _execute(
    ls: AiderLanguageServer, app: Application, spec: CommandSpec, params: CommandParams
) -> dict[str, Any]:
    """The command in its folder's Application: cancellation linked, failures → TaskResult."""
    task = asyncio.current_task()
    if task is not None:
        cancellation.cancel_task_with_request(ls.protocol, task)
        ls.running_commands.add(task)
    said: list[WorkflowRun] = []  # what a workflow run did before a cancel
    try:
        result = await run_command(ls, app, spec, params, said.append)
    except asyncio.CancelledError:
        if cancellation.request_cancelled(ls.protocol):
            raise  # pygls has already answered the request as cancelled
        # cancelled from the progress UI: answer the request with what happened
        result = (
            workflow_run_result(said[-1])
            if said
            else failed_result(ErrorReason.CANCELLED, f"{spec.title}: cancelled by the user")
        )
    except Exception as exc:  # never a traceback to the user, never a dead server
        log.exception("command %s failed", spec.id)
        result = failed_result(ErrorReason.UNEXPECTED_ERROR, f"{spec.id} failed: {exc}")
    finally:
        if task is not None:
            ls.running_commands.discard(task)
    return result.to_wire()
