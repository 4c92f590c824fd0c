"""The server's workspace/executeCommand surface: command id → argument model → application call.

Each command takes ONE object argument, validated by its pydantic model (a mismatch becomes
JSON-RPC InvalidParams naming the field) and answers a TaskResult. Every command id the server
offers is a `CommandId` (command_ids.py) with one CommandSpec here.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from ..app import Application
from ..models import (
    AiderAutomaticArgs,
    AiderInteractiveArgs,
    DeclinedTestCommand,
    ErrorReason,
    GetContextArgs,
    ReadFilesArgs,
    RequestContext,
    Selection,
    TaskResult,
    WorkflowRequest,
    complete_result,
    failed_result,
)
from ..results import (
    declined_test_command_result,
    fix_result,
    history_result,
    run_action_result,
    run_tests_result,
    workflow_run_result,
)
from .command_ids import CommandId


class CommandParams(BaseModel):
    """Base of every command's argument: unknown fields are refused, not silently dropped."""

    model_config = ConfigDict(extra="forbid")


class NoParams(CommandParams):
    pass


# The commands that run a tool take the tool's own argument model (models/args.py), strict.
class ReadFilesParams(ReadFilesArgs, CommandParams):
    pass


class GetContextParams(GetContextArgs, CommandParams):
    pass


class AiderAutomaticParams(AiderAutomaticArgs, CommandParams):
    selection: Selection | None = None
    # "Fix with Aider" on a failing test's diagnostic: re-run the tests that failed afterwards
    rerun_failing_tests: bool = False


class AiderInteractiveParams(AiderInteractiveArgs, CommandParams):
    pass


class RunTestsParams(CommandParams):
    command: str | None = Field(default=None, description="Overrides the testCommand setting.")


class PrimeContextParams(CommandParams):
    query: str | None = None
    initial_files: list[str] | None = None


class UndoParams(CommandParams):
    run_id: str | None = Field(
        default=None, description="The run or edit to undo (aider-lsp.history.list); default the last one."
    )
    force: bool = Field(
        default=False,
        description="Put files back as before the run even where later changes overlap its own "
        "(discards them).",
    )
    files: list[str] | None = Field(
        default=None,
        description="Take back the run's change to these workspace-relative files only (its tests, say).",
    )


class HistoryDiffParams(CommandParams):
    run_id: str = Field(description="The run or edit (aider-lsp.history.list).")
    path: str | None = Field(
        default=None, description="One workspace-relative file of the run; default every file it changed."
    )


class RunIdParams(CommandParams):
    run_id: str = Field(min_length=1, description="An isolated run (aider-lsp.history.list).")


class ApplyRunParams(RunIdParams):
    force: bool = Field(
        default=False,
        description="Apply anyway: where the user changed the lines the run changed, the run's "
        "version wins (undo can take it back).",
    )


class ListModelsParams(CommandParams):
    substring: str | None = None


class SteerParams(CommandParams):
    run_id: str | None = Field(
        default=None,
        description="The run under way (an isolated run's or a group's id); default the run in place.",
    )
    note: str = Field(min_length=1, description="What the run's next edit should take into account.")


class WorkflowRunParams(WorkflowRequest, CommandParams):
    """{goal, context?, test_command?, max_retries?, file_context?, plan?, isolation?}: the run's
    request as is."""


CommandRunner = Callable[[Application, Any, RequestContext], Awaitable[TaskResult]]


@dataclass(frozen=True)
class CommandSpec:
    id: CommandId
    params_model: type[CommandParams]
    run: CommandRunner
    title: str
    long_running: bool = False
    any_folder: bool = False  # about no folder in particular: any folder's Application answers
    # how it answers for a folder not open, without opening it (None: the folder is opened)
    unopened: Callable[[Path], TaskResult] | None = None


def task_command(identifier: str) -> CommandRunner:
    """A command that passes its validated argument straight to a task/tool id."""

    async def run(app: Application, params: CommandParams, ctx: RequestContext) -> TaskResult:
        return await app.handle_task_command(identifier, params.model_dump(exclude_none=True))

    return run


async def _list_tools(app: Application, params: NoParams, ctx: RequestContext) -> TaskResult:
    tools: list[dict[str, Any]] = [
        {
            "name": spec.name,
            "alias": spec.provider_name,
            "description": spec.description,
            "input_schema": spec.input_schema,
            "read_only": spec.read_only,
        }
        for spec in app.tool_specs()
    ]
    names = ", ".join(tool["name"] for tool in tools)
    return complete_result(names, notes={"tools": tools}, parsed=tools)


async def _run_tests(app: Application, params: RunTestsParams, ctx: RequestContext) -> TaskResult:
    """The given command, else the configured, confirmed or detected one (asked once)."""
    choice = await app.pick_test_command(params.command, ctx)
    if isinstance(choice, DeclinedTestCommand):
        return declined_test_command_result(choice)
    ctx.report_progress(f"running {choice.command if choice else 'tests'}", None)
    return run_tests_result(await app.run_tests(choice.command if choice else None))


async def _get_context(app: Application, params: GetContextParams, ctx: RequestContext) -> TaskResult:
    """system:get_context, with the editor's open files as a ranking hint."""
    args = params.model_dump(exclude_none=True)
    args["open_files"] = ctx.open_files
    return await app.handle_task_command("system:get_context", args)


async def _prime_context(app: Application, params: PrimeContextParams, ctx: RequestContext) -> TaskResult:
    return await app.prime_context(params.query, params.initial_files)


async def _handler_reset(app: Application, params: NoParams, ctx: RequestContext) -> TaskResult:
    """Forget the conversation history and the data context."""
    return app.reset_conversation()


async def _aider_automatic(app: Application, params: AiderAutomaticParams, ctx: RequestContext) -> TaskResult:
    ctx.report_progress("Aider is editing…", None)
    files = params.file_context or []
    if params.rerun_failing_tests:
        return fix_result(await app.fix_and_retest(params.prompt, files, params.selection, ctx))
    readonly = params.readonly_files or []
    outcome = await app.edit(
        params.prompt, files, readonly=readonly, selection=params.selection, on_reply=ctx.report_reply
    )
    return outcome.to_task_result()


async def _aider_interactive(
    app: Application, params: AiderInteractiveParams, ctx: RequestContext
) -> TaskResult:
    """A turn of a kept chat: its progress shows Aider's reply as it is written, as an edit's does."""
    return await app.chat(params, on_reply=ctx.report_reply)


async def _aider_list_models(app: Application, params: ListModelsParams, ctx: RequestContext) -> TaskResult:
    return await app.aider_models(params.substring or "")


async def _workflow_run(app: Application, params: WorkflowRunParams, ctx: RequestContext) -> TaskResult:
    """The plan → edit → test → analyse loop; findings reach the editor through `ctx`."""
    return workflow_run_result(await app.run_workflow(params, ctx))


async def _workflow_steer(app: Application, params: SteerParams, ctx: RequestContext) -> TaskResult:
    """A note for a run under way, without cancelling it: its next edit's message carries it."""
    refused = app.steer(params.run_id, params.note)
    if refused is not None:
        return failed_result(refused.reason, refused.message)
    return complete_result("The note reaches the run's next edit (its history keeps it).")


async def _workflow_undo(app: Application, params: UndoParams, ctx: RequestContext) -> TaskResult:
    return app.undo(params.run_id, force=params.force, files=params.files)


async def _apply_run(app: Application, params: ApplyRunParams, ctx: RequestContext) -> TaskResult:
    """A ready isolated run's change laid on the user's files (all or nothing unless forced)."""
    return run_action_result(app.apply_run(params.run_id, force=params.force))


async def _discard_run(app: Application, params: RunIdParams, ctx: RequestContext) -> TaskResult:
    return run_action_result(app.discard_run(params.run_id))


async def _keep_run(app: Application, params: RunIdParams, ctx: RequestContext) -> TaskResult:
    """A ready isolated run committed to its branch; the user's files untouched."""
    return run_action_result(app.keep_run(params.run_id))


async def _history_list(app: Application, params: NoParams, ctx: RequestContext) -> TaskResult:
    """The runs and edits undo can take back, newest first."""
    return history_result(app.history())


async def _prepare_runs(app: Application, params: NoParams, ctx: RequestContext) -> TaskResult:
    """A worktree made ready now for the isolated run the user is about to start (the editor
    sends it when it asks for the goal): that run then starts as quickly as the next ones."""
    return complete_result(await app.prepare_isolated())


def _stored_history(root: Path) -> TaskResult:
    """The history of a folder not open in this server, read from disk: a window of several
    folders lists every folder's runs without opening each (its index, its Aider server)."""
    try:
        return history_result(Application.stored_history(root))
    except OSError as exc:
        return failed_result(ErrorReason.UNEXPECTED_ERROR, f"cannot read the runs of {root}: {exc}")


async def _history_diff(app: Application, params: HistoryDiffParams, ctx: RequestContext) -> TaskResult:
    """A run's files before the run and after its last edit, for the editor's diff view."""
    return app.run_diff(params.run_id, params.path)


async def _clear_diagnostics(app: Application, params: NoParams, ctx: RequestContext) -> TaskResult:
    """Remove every aider-lsp diagnostic, whichever producer (a workflow run, …) published it."""
    count = ctx.clear_findings()
    return complete_result(f"cleared aider-lsp diagnostics on {count} document(s)")


COMMANDS: list[CommandSpec] = [
    CommandSpec(
        CommandId.READ_FILES,
        ReadFilesParams,
        task_command("system:read_files"),
        "Read workspace files",
    ),
    CommandSpec(CommandId.LIST_TOOLS, NoParams, _list_tools, "List registered tools", any_folder=True),
    CommandSpec(CommandId.GET_CONTEXT, GetContextParams, _get_context, "Find relevant files"),
    CommandSpec(CommandId.PRIME_CONTEXT, PrimeContextParams, _prime_context, "Prime the context"),
    CommandSpec(CommandId.RESET, NoParams, _handler_reset, "Reset the conversation"),
    CommandSpec(
        CommandId.AIDER_AUTOMATIC,
        AiderAutomaticParams,
        _aider_automatic,
        "Aider is editing",
        long_running=True,
    ),
    CommandSpec(
        CommandId.AIDER_INTERACTIVE,
        AiderInteractiveParams,
        _aider_interactive,
        "Aider chat",
        long_running=True,
    ),
    CommandSpec(
        CommandId.AIDER_LIST_MODELS,
        ListModelsParams,
        _aider_list_models,
        "List Aider models",
        any_folder=True,
    ),
    CommandSpec(
        CommandId.WORKFLOW_RUN,
        WorkflowRunParams,
        _workflow_run,
        "Aider workflow",
        long_running=True,
    ),
    CommandSpec(CommandId.WORKFLOW_STEER, SteerParams, _workflow_steer, "Add a note to a run"),
    CommandSpec(CommandId.WORKFLOW_UNDO, UndoParams, _workflow_undo, "Undo an Aider run"),
    CommandSpec(CommandId.RUNS_APPLY, ApplyRunParams, _apply_run, "Apply an isolated run"),
    CommandSpec(CommandId.RUNS_DISCARD, RunIdParams, _discard_run, "Discard an isolated run"),
    CommandSpec(CommandId.RUNS_KEEP_BRANCH, RunIdParams, _keep_run, "Keep an isolated run as a branch"),
    CommandSpec(CommandId.RUNS_PREPARE, NoParams, _prepare_runs, "Prepare a worktree for an isolated run"),
    CommandSpec(
        CommandId.HISTORY_LIST, NoParams, _history_list, "List the Aider runs", unopened=_stored_history
    ),
    CommandSpec(CommandId.HISTORY_DIFF, HistoryDiffParams, _history_diff, "Show an Aider run's diff"),
    CommandSpec(CommandId.RUN_TESTS, RunTestsParams, _run_tests, "Running tests", long_running=True),
    CommandSpec(
        CommandId.CLEAR_DIAGNOSTICS, NoParams, _clear_diagnostics, "Clear diagnostics", any_folder=True
    ),
]
