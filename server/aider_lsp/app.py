"""Application: builds the services once and dispatches task commands.

The LSP layer, the CLI and the workflow call its methods, never the services behind them:
`handle_task_command(identifier, params)` runs a direct tool (`system:read_files`,
`aider:automatic`, …) or a TaskSystem template (`user:…`); the other methods are the editor's
commands and what a workflow run needs (workflow/host.py names those). Services never import
this module's callers (the LSP layer, the workflow). Settings flow one way: the Application
holds them, and services read them through `current_settings` at each use.
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Callable, Collection, Sequence
from contextlib import AbstractContextManager
from functools import partial
from pathlib import Path
from typing import Any

from .aider import first_run
from .aider.bridge import AiderBridge
from .aider.launch import aider_model_for
from .aider.spawn import Spawned
from .budget import RunBudget
from .checkpoints import CheckpointStore
from .files import FileAccessManager, Refusal
from .llm import BaseHandler, TaskSystem
from .llm.interaction import extra_toolsets
from .memory import IndexStats, MemorySystem, template_reranker
from .models import (
    AiderAutomaticArgs,
    AiderEditOutcome,
    AiderInteractiveArgs,
    AssociativeMatchResult,
    CommandRun,
    ContextGenerationInput,
    ErrorReason,
    FixAndRetest,
    ProgressCallback,
    ReplyCallback,
    RequestContext,
    RunRecord,
    Selection,
    TaskError,
    TaskResult,
    ToolSpec,
    UnsavedFiles,
    WorkflowRequest,
    WorkflowUsage,
    failed_result,
)
from .run_history import RunHistory
from .settings import Settings
from .shell import CommandExecutor
from .suite.choose import ChosenTestCommand, confirm_test_command
from .suite.runner import TestRunner
from .tools import aider as aider_executors
from .tools import system
from .tools.aider import apply_selection
from .tools.context import GET_CONTEXT_SPEC, get_context
from .tools.registry import ToolRegistry
from .workflow import fix
from .workflow.runs import WorkflowRuns

log = logging.getLogger(__name__)


class Application:
    """Everything one workspace needs, wired once."""

    def __init__(
        self,
        workspace: str | os.PathLike[str],
        settings: Settings,
        unsaved_files: UnsavedFiles = tuple,
        *,
        index_in_child: bool = True,
    ) -> None:
        """`unsaved_files` tells which files the editor holds with unsaved changes (asked at
        each edit and undo, which refuse to overwrite them); without an editor there are none.
        `index_in_child`: the index's passes run in a child process, so that a server's
        requests never wait for them; a one-shot run (the CLI) passes False: a child's start
        (a new Python, seconds of CPU under load) would compete with Aider's own start."""
        self.settings = settings
        self.unsaved_files = unsaved_files
        self.files = FileAccessManager(workspace, settings=self.current_settings)
        self.workspace = self.files.root
        self.shell = CommandExecutor(self.workspace, settings=self.current_settings)
        self.tools = ToolRegistry()
        # LLM layer: cheap to build (pydantic-ai is imported on the first LLM call).
        self.handler = BaseHandler(
            settings=self.current_settings, tools=self.tools, files=self.files, shell=self.shell
        )
        self.tasks = TaskSystem(self.handler)
        # Workspace index: cheap to build; the database opens on first use / start_indexing.
        # Its optional re-ranking runs the TaskSystem's template (it never calls back into here).
        self.memory = MemorySystem(
            self.files,
            self.current_settings,
            reranker=template_reranker(self.tasks),
            index_in_child=index_in_child,
        )
        self._register_system_tools()
        # Aider: one persistent MCP session (started on first use), checkpoints for undo.
        self.checkpoints = CheckpointStore(
            self.files, settings.history.max_runs, settings.history.max_megabytes * 1024 * 1024
        )
        self.tests = TestRunner(self.workspace, self.shell, self.current_settings)
        self.aider = AiderBridge(self.files, self.current_settings, memory=self.memory)
        self.aider_tools = aider_executors.AiderExecutors(
            self.aider, self.files, self.checkpoints, unsaved_files
        )
        self.tools.register(aider_executors.AIDER_AUTOMATIC_SPEC, self.aider_tools.automatic)
        self.tools.register(aider_executors.AIDER_INTERACTIVE_SPEC, self.aider_tools.interactive)
        self.workflows = WorkflowRuns(self, self.pick_test_command)
        self.run_history = RunHistory(
            self.checkpoints, unsaved_files, busy=lambda: self.aider_tools.editing or self.workflows.running
        )
        self._warm_up: asyncio.Task[bool] | None = None

    def _register_system_tools(self) -> None:
        async def read_files(params: dict[str, Any]) -> TaskResult:
            return system.read_files(self.files, params)

        self.tools.register(system.READ_FILES_SPEC, read_files)
        self.tools.register(GET_CONTEXT_SPEC, partial(get_context, self.memory))

        async def execute_shell_command(params: dict[str, Any]) -> TaskResult:
            return await system.execute_shell_command(
                self.shell,
                params,
                default_timeout=self.settings.timeouts.shell,
                use_shell=self.settings.test_shell,
            )

        self.tools.register(system.EXECUTE_SHELL_SPEC, execute_shell_command)

    # -- settings ----------------------------------------------------------------------------
    def current_settings(self) -> Settings:
        """The settings in force: the provider every service reads at each use."""
        return self.settings

    def update_settings(self, settings: Settings) -> None:
        """Settings changed in the editor: services read the new ones at their next use. The
        index is told (nothing handed over) because new file rules mean a new indexing pass."""
        self.settings = settings
        self.memory.settings_changed()

    # -- the test command and the test runs (suite/runner.py) -------------------------------
    def test_command_choice(self, requested: str | None = None) -> ChosenTestCommand | None:
        """The test command a run uses and why (reads the workspace's files: off the loop)."""
        return self.tests.choice(requested)

    async def pick_test_command(
        self, requested: str | None, ctx: RequestContext
    ) -> ChosenTestCommand | TaskResult | None:
        """The test command for a request (`test_command_choice`), a detected one confirmed
        with the user first; a FAILED result when the user chose to change it; None when the
        workspace has no suite this server recognises."""
        choice = await asyncio.to_thread(self.test_command_choice, requested)
        return (
            None
            if choice is None
            else await confirm_test_command(self.workspace, choice, ctx, self.settings.name("testCommand"))
        )

    # -- what the editor, the CLI and a workflow run call ------------------------------------
    async def run_tests(self, command: str | None = None, fallback_files: Sequence[str] = ()) -> CommandRun:
        """Run the test command; a failing run carries its failures on file:line."""
        return await self.tests.run(command, fallback_files)

    def suite_seconds(self, command: str) -> float | None:
        """How long `command` took the last time it ran here (None: not yet)."""
        return self.tests.seconds(command)

    async def rerun_failing_tests(self) -> CommandRun | None:
        """The last failing run's failing tests again (what "Fix with Aider" runs after its
        edit); None when no run has failed."""
        return await self.tests.rerun_failing()

    async def find_context(self, request: ContextGenerationInput) -> AssociativeMatchResult:
        """The workspace files most relevant to a query (the index)."""
        return await self.memory.get_relevant_context_for(request)

    def unsaved(self) -> Collection[str]:
        """The files the editor holds with unsaved changes, now (an edit refuses them)."""
        return self.unsaved_files()

    def tool_specs(self) -> list[ToolSpec]:
        """Every registered tool (`aider-lsp.tools.list`)."""
        return self.tools.specs()

    async def prime_context(self, query: str | None, initial_files: Sequence[str] | None) -> TaskResult:
        """Fill the conversation's data context from files and/or a query."""
        return await self.handler.prime_data_context(query, initial_files)

    def reset_conversation(self) -> TaskResult:
        """Forget the conversation history and the data context."""
        return self.handler.reset()

    async def edit(
        self,
        prompt: str,
        files: Sequence[str] = (),
        *,
        readonly: Sequence[str] = (),
        selection: Selection | None = None,
        chat: bool = False,
        session_id: str | None = None,
        on_reply: ReplyCallback | None = None,
        retell: str = "",
    ) -> AiderEditOutcome:
        """One Aider edit, the one door for every caller (the editor's command, a workflow
        run): the checks, redaction, edit lock and checkpoint of `aider:automatic`; no files →
        the index picks them for the prompt. An editor `selection` is folded into the prompt
        and its file leads the files. `chat`: a turn of a kept Aider chat (`session_id` to
        continue one; the outcome names it), so a retry sees its earlier attempts as in Aider's
        own loop (a chat the server lost starts again, told `retell` first); `readonly` files
        are shown to Aider, not edited. `on_reply` reads Aider's
        reply as it is written (the outcome's reply holds it all the same). A problem is a
        FAILED outcome (its `error` says why)."""
        try:
            if selection is not None:
                prompt, paths = apply_selection(self.files, prompt, list(files) or None, selection)
                files = paths
            args = AiderAutomaticArgs(
                prompt=prompt, file_context=list(files) or None, readonly_files=list(readonly) or None
            )
        except ValueError as exc:  # a selection outside the workspace, a bad path
            error = TaskError(reason=ErrorReason.INPUT_VALIDATION_FAILURE, message=str(exc))
            return AiderEditOutcome(tool="aider_ai_code", error=error)
        outcome = await self.aider_tools.edit(
            args, chat=chat, session_id=session_id, on_reply=on_reply, retell=retell
        )
        if not chat:  # a workflow's turns are its run's; the run says what the history shows
            usage = outcome.usage
            spend = None if usage is None else f"{usage.total_tokens} tokens"
            status = "FAILED" if outcome.error is not None else "COMPLETE"
            self.checkpoints.annotate(outcome.checkpoint_id, kind="edit", status=status, spend=spend)
        return outcome

    async def fix_and_retest(
        self, prompt: str, files: Sequence[str], selection: Selection | None, ctx: RequestContext
    ) -> FixAndRetest:
        """Fix with Aider on a failing test, then the failing tests again (workflow/fix.py)."""
        return await fix.fix_and_retest(
            prompt,
            files,
            selection,
            ctx,
            edit=self.edit,
            code_under_test=self.memory.code_under_test,
            rerun_failing=self.tests.rerun_failing,
        )

    async def end_chat(self, session_id: str) -> None:
        """Forget a kept Aider chat (the end of a workflow run); a failure only logs. A stopped
        server forgot its chats: it is not started again for this."""
        if not self.aider.running:
            return
        result = await self.aider_tools.turn(AiderInteractiveArgs(session_id=session_id, end_session=True))
        if not result.ok:
            log.debug("ending the Aider chat %s: %s", session_id, result.content)

    async def chat(self, args: AiderInteractiveArgs, on_reply: ReplyCallback | None = None) -> TaskResult:
        """One turn of a kept Aider chat (`aider:interactive`), or its end; `on_reply` reads
        Aider's reply as it is written."""
        return await self.aider_tools.turn(args, on_reply)

    async def ask(
        self,
        question: str,
        files: Sequence[str] = (),
        *,
        session_id: str | None = None,
        on_reply: ReplyCallback | None = None,
    ) -> AiderEditOutcome:
        """Aider answers about the code and edits nothing (tools/aider.py: the files shown
        read-only under the rule for what a model sees, the question redacted, a lost chat
        started again; the outcome names the chat)."""
        return await self.aider_tools.ask(question, files, session_id=session_id, on_reply=on_reply)

    def model_safe_files(self, paths: Sequence[str]) -> tuple[list[str], list[Refusal]]:
        """The one rule for files a model sees (confined, not secret, not a folder): the kept
        workspace-relative paths and the refused ones with why."""
        return self.files.model_safe_files(paths)

    async def aider_models(self, substring: str = "") -> TaskResult:
        """The models the Aider server knows (optionally filtered)."""
        return await self.aider_tools.list_models(substring)

    def undo(
        self, run_id: str | None = None, *, force: bool = False, files: list[str] | None = None
    ) -> TaskResult:
        """Undo a run or edit of the history, keeping every other change (run_history.py)."""
        return self.run_history.undo(run_id, force=force, files=files)

    def history(self) -> list[RunRecord]:
        """The runs and edits undo can take back, newest first."""
        return self.run_history.runs()

    def run_diff(self, run_id: str, path: str | None = None) -> TaskResult:
        """What a run of the history changed, each file before and after (run_history.py)."""
        return self.run_history.diff(run_id, path)

    def spent(self) -> WorkflowUsage:
        """Tokens, requests and cost of the LLM calls so far in this session, Aider's own (as
        its server reported them) in `aider`."""
        return WorkflowUsage(planning=self.handler.usage_totals, aider=self.aider.spent)

    def set_budget(self, max_tokens: int | None, max_cost: float | None) -> RunBudget:
        """Cap the LLM calls that follow (one workflow run): once what they and Aider's edits
        spent from now on reaches the cap, a call is refused (FAILED, the budget's message)."""
        budget = RunBudget(max_tokens, max_cost, self.spent, lambda path: self.settings.name(path))
        self.handler.set_budget(budget)
        return budget

    def clear_budget(self) -> None:
        self.handler.clear_budget()

    def aider_model(self) -> str | None:
        """Aider's model as the settings name it (`aiderModel`, else derived from `model`)."""
        return aider_model_for(self.settings)

    def set_aider_model(self, name: str) -> None:
        """Use another model for Aider in this workspace from the next edit on (the Aider
        server restarts with it; an edit under way finishes on the old one)."""
        self.update_settings(self.settings.model_copy(update={"aider_model": name}))

    def provider_identifier(self) -> str:
        """The planning/analysis model as every call's result names it (`notes.model`):
        `provider:name`, `openai-compatible:name@url`, or `unconfigured`."""
        return self.handler.get_provider_identifier()

    def set_debug_mode(self, enabled: bool) -> None:
        """Log the LLM layer's prompts, tools and failures whatever the `debug` setting says."""
        self.handler.set_debug_mode(enabled)

    def aider_setup_needed(self) -> bool:
        """Whether Aider's environment must be made before Aider can run (aider/first_run.py)."""
        return first_run.needed(self.settings)

    async def set_up_aider(self, on_line: Callable[[str], None]) -> str | None:
        """Make Aider's environment, each line of the set-up told: None when it is ready, else
        why not and how to retry."""
        try:
            await first_run.set_up(on_line)
        except first_run.SetupFailed as exc:
            return str(exc)
        return None

    async def start_aider(self, early: Spawned | None = None) -> bool:
        """Start the Aider server now (ahead of the first edit; `early`: its process, spawned
        before this Application was built); whether it runs."""
        return await self.aider.warm_up(early)

    async def index_workspace(self, progress: ProgressCallback | None = None) -> IndexStats:
        """Index the workspace (one pass at a time; a call during a pass joins it)."""
        return await self.memory.start_indexing(progress)

    async def files_changed(self, updated: Sequence[str] = (), deleted: Sequence[str] = ()) -> None:
        """Workspace files saved, created or deleted (workspace-relative): the index follows."""
        if deleted:
            await self.memory.remove_paths(list(deleted))
        if updated:
            await self.memory.update_paths(list(updated))

    async def files_renamed(self, pairs: Sequence[tuple[str, str]]) -> None:
        """Files renamed in the editor (old, new): old names leave the index, new ones come."""
        await self.memory.rename_paths(list(pairs))

    def resolve_path(self, path: str | os.PathLike[str]) -> Path:
        """A path confined to the workspace (AccessDenied outside it)."""
        return self.files.resolve(path)

    def relative_path(self, path: str | os.PathLike[str]) -> str:
        """The workspace-relative form of a confined path or file URI (AccessDenied outside it)."""
        return self.files.relative(path)

    async def handle_task_command(self, identifier: str, params: dict[str, Any] | None = None) -> TaskResult:
        """Run a direct tool or a template by id; unknown ids → FAILED template_not_found."""
        params = {} if params is None else params
        if not isinstance(params, dict):
            return failed_result(ErrorReason.INPUT_VALIDATION_FAILURE, "task parameters must be an object")
        if identifier in self.tools:
            return await self.tools.execute(identifier, params)
        if self.tasks.has_template(identifier):
            return await self.tasks.execute_template(identifier, params)
        return failed_result(ErrorReason.TEMPLATE_NOT_FOUND, f"no tool or template named {identifier!r}")

    async def warm_up(self) -> bool:
        """Get ready for the first request, in the background once the editor is connected.

        The LLM layer and the MCP client are imported in a worker thread: imported on the event
        loop by the first call they would stall every other request for seconds. Then, when an
        Aider model is configured, the Aider server is started, so the first edit does not pay
        Aider's start-up. Failures are logged, never raised. Returns whether Aider is running."""
        aider_configured = aider_model_for(self.settings) is not None or bool(
            self.settings.aider_server.command
        )
        self._warm_up = asyncio.current_task()  # aclose stops a start still under way
        try:
            await asyncio.to_thread(self._preload_libraries, aider_configured)
            return aider_configured and await self.aider.warm_up()
        except Exception as exc:
            log.warning("warming up failed: %s", exc)
            return False
        finally:
            self._warm_up = None

    def _preload_libraries(self, aider_configured: bool) -> None:
        """Import what the first LLM call and the first Aider call need (a worker thread)."""
        self.handler.preload()
        if aider_configured:
            self.aider.preload()

    def model_toolsets(self, toolsets: Sequence[Any]) -> AbstractContextManager[None]:
        """The planning/analysis model's calls made inside this context (a run started in it)
        are also given these pydantic-ai toolsets: the MCP servers an ACP client passed to its
        session, beside the read-only tools. Scoped to the caller's context, so another front
        end's runs never see them."""
        return extra_toolsets(toolsets)

    async def run_workflow(self, request: WorkflowRequest, ctx: RequestContext) -> TaskResult:
        """Run the coding workflow (plan → edit → test → analyse) for a goal; one at a time
        (workflow/runs.py). Cancellation propagates after the run's checkpoint is settled."""
        return await self.workflows.run(request, ctx)

    async def aclose(self) -> None:
        """Stop child processes and close stores (server shutdown)."""
        warming = self._warm_up
        if warming is not None and warming is not asyncio.current_task():
            warming.cancel()
            await asyncio.wait([warming], timeout=10)  # its outcome is not ours to raise
        await self.aider.aclose()
        await self.memory.aclose()

    def kill_children(self) -> None:
        """The last resort when `aclose` did not end in time: kill the Aider server's process
        group now. A test command needs nothing here: its supervisor (reaper.py) ends the run
        when the server's end of its control pipe closes, at the latest when the server exits;
        the index's pass process stops on its own once the server is gone."""
        self.aider.kill()


async def close_within(app: Application, seconds: float) -> None:
    """Close an Application within `seconds`, for real (both front ends, at their end).

    Why not `asyncio.wait_for(app.aclose(), seconds)`: after its timeout it cancels the close
    and then waits, without bound, for the close to end, which a close busy in a shielded stop
    does not do at once. Here the close is waited for up to the bound, then cancelled and the
    children killed without waiting. Logged, never raised: the caller is exiting."""
    closing = asyncio.ensure_future(app.aclose())
    try:
        await asyncio.wait({closing}, timeout=seconds)
    except asyncio.CancelledError:
        closing.cancel()
        app.kill_children()
        raise
    if not closing.done():
        log.warning("closing %s took over %.0f s: its children are killed", app.workspace, seconds)
        closing.cancel()
        app.kill_children()
    elif not closing.cancelled() and (error := closing.exception()) is not None:
        log.warning("closing %s: %s", app.workspace, error)
        app.kill_children()


async def settle(tasks: Collection[asyncio.Task[Any]], seconds: float) -> None:
    """Wait up to `seconds` for cancelled requests to end (a workflow records its run as it
    does); those that do not are named in the log and left to the exit."""
    if not tasks:
        return
    _, pending = await asyncio.wait(set(tasks), timeout=seconds)
    for task in pending:
        log.warning("closing: %s did not end in time", task.get_name())
