"""Application: builds the services once and dispatches task commands.

The LSP layer, the CLI and the workflow call its methods, never the services behind them:
`handle_task_command(identifier, params)` runs a direct tool (`system:read_files`,
`aider:automatic`, …) or a TaskSystem template (`user:…`); the other methods are the editor's
commands and what a workflow run needs (workflow/host.py names those). Services never import
this module's callers (the LSP layer, the workflow). Settings flow one way: the Application
holds them, and services read them through `current_settings` at each use.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Collection, Sequence
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

from .aider import first_run
from .aider.bridge import AiderBridge
from .aider.launch import aider_model_for
from .aider.spawn import Spawned
from .budget import RunBudget
from .checkpoints import CheckpointStore
from .files import FileAccessManager
from .isolation.prepare import TreePreparer
from .isolation.runs import IsolatedRuns
from .isolation.store import RunStore
from .llm import BaseHandler, TaskSystem
from .llm.interaction import extra_toolsets
from .memory import IndexStats, MemorySystem, template_reranker
from .memory.ignore import IgnoreRules
from .models import (
    FixAndRetest,
    Isolation,
    ProgressCallback,
    RequestContext,
    Selection,
    TaskResult,
    UnsavedFiles,
    WorkflowRequest,
    WorkflowRun,
    WorkflowUsage,
)
from .run_history import RunHistory, stored_runs
from .settings import Settings
from .shell import CommandExecutor
from .suite.runner import TestRunner
from .tools import aider as aider_executors
from .tools.builtin import register_builtin_tools
from .tools.dispatch import run_task_command
from .tools.registry import ToolRegistry
from .warm_up import WarmUp
from .workflow import fix
from .workflow.runs import WorkflowRuns
from .workspaces import close_within

log = logging.getLogger(__name__)


class Application:
    """Everything one workspace needs, wired once."""

    # a folder's history read from disk without opening it (no index, no Aider server)
    stored_history = staticmethod(stored_runs)

    def __init__(
        self,
        workspace: str | os.PathLike[str],
        settings: Settings,
        unsaved_files: UnsavedFiles = tuple,
        *,
        index_in_child: bool = True,
        index_path: str | None = None,
        spare_trees: bool = True,
    ) -> None:
        """`unsaved_files` tells which files the editor holds with unsaved changes (asked at
        each edit and undo, which refuse to overwrite them); without an editor there are none.
        `index_in_child`: the index's passes run in a child process, so that a server's
        requests never wait for them; a one-shot run (the CLI) passes False: a child's start
        (a new Python, seconds of CPU under load) would compete with Aider's own start.
        `index_path`: the index's database elsewhere than the user's state folder.
        `spare_trees`: keep a spare tree for the next isolated run (isolation/prepare.py); a
        one-shot run passes False."""
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
            db_path=index_path,
        )
        # Aider: one persistent MCP session (started on first use), checkpoints for undo.
        self.checkpoints = CheckpointStore(
            self.files, settings.history.max_runs, settings.history.max_megabytes * 1024 * 1024
        )
        self.tests = TestRunner(self.workspace, self.shell, self.current_settings)
        self.aider = AiderBridge(self.files, self.current_settings, memory=self.memory)
        self.aider_tools = aider_executors.AiderExecutors(
            self.aider, self.files, self.checkpoints, unsaved_files
        )
        register_builtin_tools(
            self.tools, self.files, self.shell, self.memory, self.current_settings, self.aider_tools
        )
        self.workflows = WorkflowRuns(self, self.tests.pick)
        trees = TreePreparer(
            self.workspace,
            RunStore(self.workspace, settings.history.max_runs),
            self.current_settings,
            open_tree=self._open_tree,
            close=close_within,
            index_path=lambda: self.memory.db_path,
            ignored=IgnoreRules(self.files, excludes=settings.context_excludes).left_out,
        )
        self.isolated_runs = IsolatedRuns(
            self.workspace,
            self.current_settings,
            self.checkpoints,
            unsaved_files,
            trees=trees,
            busy=self._editing_in_place,
            pick_test_command=self.tests.pick,
            spares=spare_trees,
        )
        self.run_history = RunHistory(
            self.checkpoints, unsaved_files, self._editing_in_place, self.isolated_runs
        )
        self.warming = WarmUp(self.aider, self.handler.preload, self.current_settings)
        self._offer_operations()

    def _offer_operations(self) -> None:
        """What the front ends and a workflow run call, each answered by the room that owns it
        (its docstring is there): the Application adds no logic of its own to these."""
        # the tests (suite/runner.py)
        self.test_command_choice = self.tests.choice
        self.pick_test_command = self.tests.pick
        self.run_tests = self.tests.run
        self.suite_seconds = self.tests.seconds
        # context, the conversation, the tools (memory/, llm/, tools/)
        self.find_context = self.memory.get_relevant_context_for
        self.prime_context = self.handler.prime_data_context
        self.reset_conversation = self.handler.reset
        self.provider_identifier = self.handler.get_provider_identifier
        self.set_debug_mode = self.handler.set_debug_mode
        self.tool_specs = self.tools.specs
        # Aider (tools/aider.py, aider/): one door for every edit, the chats, the set-up
        self.edit = self.aider_tools.edit_for
        self.ask = self.aider_tools.ask
        self.chat = self.aider_tools.turn
        self.end_chat = self.aider_tools.end_chat
        self.aider_models = self.aider_tools.list_models
        self.set_up_aider = first_run.set_up_or_reason
        self.start_aider = self.aider.warm_up
        self.kill_children = self.aider.kill  # when `aclose` did not end in time
        # the history undo takes back (run_history.py) and the workflow (workflow/)
        self.undo = self.run_history.undo
        self.history = self.run_history.runs  # stored_history: a folder not opened, from disk
        self.run_diff = self.run_history.diff
        # the runs in worktrees (isolation/): the user's decision on a ready one
        self.apply_run = self.isolated_runs.apply
        self.discard_run = self.isolated_runs.discard
        self.keep_run = self.isolated_runs.keep
        self.prepare_isolated = self.isolated_runs.prepare  # a spare tree for the next one
        # the workspace's files (files.py, the index)
        self.resolve_path = self.files.resolve
        self.relative_path = self.files.relative
        self.model_safe_files = self.files.model_safe_files
        self.files_changed = self.memory.files_changed
        self.files_renamed = self.memory.rename_paths

    # -- workflow runs -----------------------------------------------------------------------
    async def run_workflow(self, request: WorkflowRequest, ctx: RequestContext) -> WorkflowRun:
        """A workflow run in place (workflow/runs.py), or in a worktree of its own when the
        request (else the `isolation` setting) says so (isolation/runs.py)."""
        if self.settings.isolation_for(request.isolation) == Isolation.WORKTREE:
            return await self.isolated_runs.run(request, ctx)
        return await self.workflows.run(request, ctx)

    async def warm_up(self, early: Spawned | None = None, *, aider_first: bool = False) -> bool:
        """Get ready for the first request (warm_up.py); with the `isolation` setting at
        `worktree`, a spare tree too, so the first isolated run starts as quickly as the next."""
        running = await self.warming.run(early, aider_first=aider_first)
        if self.settings.isolation == Isolation.WORKTREE:
            await self.isolated_runs.prepare()
        return running

    def _editing_in_place(self) -> bool:
        """An edit or a run in place is under way (undo and apply would write under it)."""
        return self.aider_tools.editing or self.workflows.running

    def _open_tree(self, tree: Path, seeded_index: Path | None) -> Application:
        """The workspace an isolated run works in: its tree, its own Aider server and index
        (seeded from this workspace's: the first query answers from it while it refreshes, in a
        thread: a child process's start would cost more than the pass, beside Aider's start)."""
        app = Application(
            tree,
            self.settings,
            index_in_child=False,  # a pass over a copied index is light: no new Python for it
            index_path=None if seeded_index is None else str(seeded_index),
            spare_trees=False,
        )
        if seeded_index is not None:
            app.memory.first_query_wait = 0.0
        return app

    # -- settings ------------------------------------------------------------------------------
    def current_settings(self) -> Settings:
        """The settings in force: the provider every service reads at each use."""
        return self.settings

    def update_settings(self, settings: Settings) -> None:
        """Settings changed in the editor: services read them at their next use; the index is
        told, since new file rules mean a new pass."""
        self.settings = settings
        self.memory.settings_changed()

    def aider_model(self) -> str | None:
        """Aider's model as the settings name it (`aiderModel`, else derived from `model`)."""
        return aider_model_for(self.settings)

    def set_aider_model(self, name: str) -> None:
        """Another model for Aider from the next edit on (its server restarts with it)."""
        self.update_settings(self.settings.model_copy(update={"aider_model": name}))

    def aider_setup_needed(self) -> bool:
        """Whether Aider's environment must be made before Aider can run (aider/first_run.py)."""
        return first_run.needed(self.settings)

    def unsaved(self) -> Collection[str]:
        """The files the editor holds with unsaved changes, now (an edit refuses them)."""
        return self.unsaved_files()

    async def index_workspace(self, progress: ProgressCallback | None = None) -> IndexStats:
        """Index the workspace (one pass at a time; a call during a pass joins it)."""
        return await self.memory.start_indexing(progress)

    def index_location(self) -> str:
        """Where the workspace's index is kept (the CLI's `context --json` says it)."""
        return self.memory.store.location

    async def handle_task_command(self, identifier: str, params: dict[str, Any] | None = None) -> TaskResult:
        """Run a direct tool or a template by id (tools/dispatch.py)."""
        return await run_task_command(self.tools, self.tasks, identifier, params)

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

    # -- what is spent ---------------------------------------------------------------------------
    def spent(self) -> WorkflowUsage:
        """Tokens, requests and cost of the LLM calls so far in this session, Aider's in `aider`."""
        return WorkflowUsage(planning=self.handler.usage_totals, aider=self.aider.spent)

    def set_budget(self, max_tokens: int | None, max_cost: float | None) -> RunBudget:
        """Cap the LLM calls that follow (one workflow run): once what they and Aider's edits
        spent from now on reaches the cap, a call is refused (FAILED, the budget's message)."""
        budget = RunBudget(max_tokens, max_cost, self.spent, lambda path: self.settings.name(path))
        self.handler.set_budget(budget)
        return budget

    def clear_budget(self) -> None:
        self.handler.clear_budget()

    def model_toolsets(self, toolsets: Sequence[Any]) -> AbstractContextManager[None]:
        """The planning model's calls inside this context also get these pydantic-ai toolsets
        (an ACP session's MCP servers); scoped to the caller's context, not other front ends'."""
        return extra_toolsets(toolsets)

    async def aclose(self) -> None:
        """Stop child processes and close stores (server shutdown)."""
        await self.warming.stop()
        await self.isolated_runs.aclose()
        await self.aider.aclose()
        await self.memory.aclose()
