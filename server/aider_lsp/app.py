"""Application: builds the services once (one named way per use: `for_server`, `for_one_run`,
`for_run_tree`, `for_lookup`) and offers their operations to the front ends and a workflow run
(host.py and the hosts declare the calls), which never reach the services behind it; services
never import this module. Settings flow one way: it holds them; services read them through
`current_settings` at each use. `handle_task_command(id, params)`: a tool or template by id."""

from __future__ import annotations

import os
from functools import partial
from pathlib import Path
from typing import Any

from .aider import first_run
from .aider.bridge import AiderBridge
from .aider.launch import aider_model_for
from .config.settings import Settings
from .guards.budget import RunBudget
from .guards.files import FileAccessManager
from .history.checkpoints import CheckpointStore
from .history.runs import RunHistory
from .isolation.attempts import apply_attempt
from .isolation.placement import RunPlacement
from .isolation.runs import IsolatedRuns
from .isolation.store import stored_runs
from .llm import BaseHandler, ModelAsks, TaskSystem
from .llm.interaction import extra_toolsets
from .memory import MemorySystem, template_reranker
from .memory.explain import describe_why
from .memory.ignore import IgnoreRules
from .models import (
    IndexStats,
    ProgressCallback,
    TaskResult,
    UnsavedFiles,
    WorkflowUsage,
)
from .processes.shell import CommandExecutor
from .suite.runner import TestRunner
from .tools.aider import AiderExecutors
from .tools.builtin import register_builtin_tools
from .tools.dispatch import run_task_command
from .tools.registry import ToolRegistry
from .warm_up import WarmUp
from .workflow import fix
from .workflow.runs import WorkflowRuns
from .workspaces import close_within

Folder = str | os.PathLike[str]


class Application:
    """Everything one workspace needs, wired once."""

    stored_history = staticmethod(stored_runs)  # a folder's history from disk, nothing opened
    describe_why = staticmethod(describe_why)  # a match's why in words (memory/explain.py)
    model_toolsets = staticmethod(extra_toolsets)  # an ACP session's MCP servers, for its run's model

    # -- one way to build it per use -----------------------------------------------------------
    @classmethod
    def for_server(cls, folder: Folder, settings: Settings, unsaved: UnsavedFiles = tuple) -> Application:
        """A server's folder (LSP, ACP): the index's passes in a child process (no request waits
        for them), a spare tree kept for the next isolated run; `unsaved`: the files the editor
        holds unsaved, asked at each edit and undo (which refuse to overwrite them)."""
        return cls(folder, settings, unsaved)

    @classmethod
    def for_one_run(cls, folder: Folder, settings: Settings, *, index_path: str | None = None) -> Application:
        """A one-shot run (`aider-lsp run`, the benches): the index's passes in this process, no
        spare tree (a child's start, seconds of CPU under load, or a spare's Aider would compete
        with the run's Aider start); `index_path`: the index elsewhere than the state folder."""
        return cls(folder, settings, index_in_child=False, index_path=index_path, spare_trees=False)

    @classmethod
    def for_run_tree(cls, tree: Path, settings: Settings, seeded_index: Path | None) -> Application:
        """An isolated run's tree: its own Aider server and index, seeded from its workspace's (the
        first query answers from it while a pass refreshes it in a thread: light, no child's start)."""
        index_path = None if seeded_index is None else str(seeded_index)
        app = cls(tree, settings, index_in_child=False, index_path=index_path, spare_trees=False)
        if seeded_index is not None:
            app.memory.first_query_wait = 0.0
        return app

    @classmethod
    def for_lookup(cls, folder: Folder, settings: Settings, *, index_path: str | None = None) -> Application:
        """A look-up or a decision from the terminal (`context`, `history`, `undo`, `apply`, the
        doctor): nothing started ahead; an index pass, if asked for, runs in this process."""
        return cls(folder, settings, index_in_child=False, index_path=index_path, spare_trees=False)

    def __init__(
        self,
        workspace: Folder,
        settings: Settings,
        unsaved_files: UnsavedFiles = tuple,
        *,
        index_in_child: bool = True,
        index_path: str | None = None,
        spare_trees: bool = True,
    ) -> None:
        """Built one of the named ways above, which say what the flags are for."""
        self.settings = settings
        self.current_settings = lambda: self.settings  # the provider services read at each use
        self.unsaved = unsaved_files  # the files held unsaved in the editor, now (edits refuse them)
        self._wire_services(workspace, index_in_child, index_path)
        self._wire_runs(spare_trees)
        self._offer_operations()

    def _wire_services(self, workspace: Folder, index_in_child: bool, index_path: str | None) -> None:
        """The rooms, each built once, each reading the settings through `current_settings`."""
        settings = self.current_settings
        self.files = FileAccessManager(workspace, settings=settings)
        self.workspace = self.files.root
        self.shell = CommandExecutor(self.workspace, settings=settings)
        self.tools = ToolRegistry()
        # the LLM layer: cheap to build (pydantic-ai is imported on the first LLM call)
        self.handler = BaseHandler(settings=settings, tools=self.tools, files=self.files, shell=self.shell)
        self.tasks = TaskSystem(self.handler)
        # the index: its database opens on first use; its optional re-ranking runs a template
        self.memory = MemorySystem(
            self.files,
            settings,
            reranker=template_reranker(self.tasks),
            index_in_child=index_in_child,
            db_path=index_path,
        )
        history = self.settings.history
        self.checkpoints = CheckpointStore(self.files, history.max_runs, history.max_megabytes * 1024 * 1024)
        self.tests = TestRunner(self.workspace, self.shell, settings)
        # Aider: one persistent MCP session (started on first use), each edit's checkpoint
        self.aider = AiderBridge(self.files, settings, memory=self.memory)
        self.aider_tools = AiderExecutors(self.aider, self.files, self.checkpoints, self.unsaved)
        register_builtin_tools(self.tools, self.files, self.shell, self.memory, settings, self.aider_tools)

    def _wire_runs(self, spare_trees: bool) -> None:
        """Workflow runs in place and in worktrees of their own, and the history undo reads."""
        settings, busy = self.current_settings, self._editing_in_place
        self.workflows = WorkflowRuns(self, self.tests.pick)
        self.isolated_runs = IsolatedRuns(
            self.workspace,
            settings,
            self.checkpoints,
            self.unsaved,
            open_tree=lambda tree, seeded: Application.for_run_tree(tree, self.settings, seeded),
            close=close_within,
            index_path=lambda: self.memory.db_path,
            ignored=IgnoreRules(self.files, excludes=self.settings.context_excludes).left_out,
            busy=busy,
            pick_test_command=self.tests.pick,
            spares=spare_trees,
        )
        # where a run goes: in place, in a worktree, or several attempts (isolation/placement.py)
        placement = RunPlacement(self.workflows, self.isolated_runs, settings)
        self.run_workflow, self.steer = placement.run, placement.steer  # steer: a note for a run under way
        self.run_history = RunHistory(self.checkpoints, self.unsaved, busy, self.isolated_runs)
        self.warming = WarmUp(self.aider, self.handler.preload, settings, self.isolated_runs.prepare)

    def _offer_operations(self) -> None:
        """What the front ends and a run call, each answered by the room that owns it: no logic."""
        # the tests (suite/runner.py)
        self.test_command_choice = self.tests.choice
        self.pick_test_command = self.tests.pick
        self.run_tests = self.tests.run
        self.suite_seconds = self.tests.seconds
        # context, the conversation, the tools, the loop's typed questions (memory/, llm/, tools/)
        asks = ModelAsks(self.tasks)
        self.make_plan, self.analyse = asks.plan, asks.analysis
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
        # the history undo takes back (history/runs.py) and the workflow (workflow/)
        self.undo = self.run_history.undo
        self.history = self.run_history.runs  # stored_history: a folder not opened, from disk
        self.run_diff = self.run_history.diff
        # the runs in worktrees (isolation/): the user's decision on a ready one
        self.apply_run = partial(apply_attempt, self.isolated_runs)  # an attempt: its siblings go
        self.discard_run = self.isolated_runs.discard
        self.keep_run = self.isolated_runs.keep
        self.prepare_isolated = self.isolated_runs.prepare  # a spare tree for the next one
        # the workspace's files (files.py, the index)
        self.resolve_path = self.files.resolve
        self.relative_path = self.files.relative
        self.model_safe_files = self.files.model_safe_files
        self.files_changed = self.memory.files_changed
        self.files_renamed = self.memory.rename_paths
        self.index_location = lambda: self.memory.store.location  # the CLI's `context --json` says it
        # getting ready (warm_up.py), Aider's model and set-up (aider/), the spend (llm/)
        self.warm_up = self.warming.run
        self.aider_model = lambda: aider_model_for(self.settings)  # `aiderModel`, else from `model`
        self.aider_setup_needed = lambda: first_run.needed(self.settings)  # its environment to make
        self.spent_here = lambda: WorkflowUsage(planning=self.handler.usage_totals, aider=self.aider.spent)
        self.clear_budget = self.handler.clear_budget
        fixer = fix.FailingTestFixer(self.edit, self.memory.code_under_test, self.tests.rerun_failing)
        self.fix_and_retest = fixer.fix_and_retest

    def spent(self) -> WorkflowUsage:
        """What this folder's calls spent: its own and its isolated runs' trees' (isolation/runs.py)."""
        return self.spent_here().plus(self.isolated_runs.spent)

    def _editing_in_place(self) -> bool:
        """An edit or a run in place is under way (undo and apply would write under it)."""
        return self.aider_tools.editing or self.workflows.running

    def update_settings(self, settings: Settings) -> None:
        """Settings changed: services read them at their next use; the index is told (a pass)."""
        self.settings = settings
        self.memory.settings_changed()

    def set_aider_model(self, name: str) -> None:
        """Another model for Aider from the next edit on (its server restarts with it)."""
        self.update_settings(self.settings.model_copy(update={"aider_model": name}))

    async def index_workspace(self, progress: ProgressCallback | None = None) -> IndexStats:
        """Index the workspace (one pass at a time; a call during a pass joins it)."""
        return await self.memory.start_indexing(progress)

    async def handle_task_command(self, identifier: str, params: dict[str, Any] | None = None) -> TaskResult:
        """Run a direct tool or a template by id (tools/dispatch.py)."""
        return await run_task_command(self.tools, self.tasks, identifier, params)

    # -- the run's budget ------------------------------------------------------------------------
    def set_budget(self, max_tokens: int | None, max_cost: float | None) -> RunBudget:
        """Cap what the LLM calls and Aider's edits spend from now on (a run's; budget.py)."""
        budget = RunBudget(max_tokens, max_cost, self.spent_here, lambda path: self.settings.name(path))
        self.handler.set_budget(budget)
        return budget

    async def aclose(self) -> None:
        """Stop child processes and close stores (server shutdown)."""
        await self.warming.stop()
        await self.isolated_runs.aclose()
        await self.aider.aclose()
        await self.memory.aclose()
