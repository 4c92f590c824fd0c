"""Application: builds the services once and dispatches task commands.

The LSP layer calls `handle_task_command(identifier, params)`; identifiers are direct tools
(`system:read_files`, `aider:automatic`, …) or TaskSystem templates (`user:…`).
Services never import this module's callers (the LSP layer).
"""

from __future__ import annotations

import asyncio
import importlib
import logging
import os
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from .aider.bridge import AiderBridge, aider_model_for
from .checkpoints import CheckpointStore
from .executors import aider as aider_executors
from .executors import system
from .executors.context import GET_CONTEXT_SPEC, get_context
from .files import DEFAULT_SECRET_PATTERNS, FileAccessManager
from .handler import BaseHandler
from .handler.model_config import LLMConfigurationError, build_model
from .memory import MemorySystem, template_reranker
from .models import (
    ErrorReason,
    Finding,
    FindingsCallback,
    ProgressCallback,
    TaskResult,
    UnsavedFiles,
    WorkflowRequest,
    WorkflowStatus,
    complete_result,
    failed_result,
)
from .settings import Settings
from .shell import CommandExecutor
from .tasks import TaskSystem
from .tools import ToolRegistry

log = logging.getLogger(__name__)

# what the Aider bridge's MCP client imports on first use (about 0.7 s, several under load)
MCP_CLIENT_MODULES = (
    "anyio",
    "mcp.types",
    "mcp.client.session",
    "mcp.shared.exceptions",
    "mcp.shared.message",
)


def _no_progress(message: str, percentage: int | None) -> None:
    """Default progress sink: nothing to report to."""


def _no_findings(findings: list[Finding]) -> None:
    """Default findings sink: nobody shows them."""


@dataclass
class RequestContext:
    """What the caller (the editor, the CLI) gives a request: where to report progress and
    findings (test failures, analysis; the LSP layer publishes them as diagnostics), and the
    workspace-relative paths open in the editor (a ranking hint). Unsaved buffers are not
    here: the Application asks its `unsaved_files` provider at each edit."""

    report_progress: ProgressCallback = _no_progress
    report_findings: FindingsCallback = _no_findings
    open_files: list[str] = field(default_factory=list)


class Application:
    """Everything one workspace needs, wired once."""

    def __init__(
        self,
        workspace: str | os.PathLike[str],
        settings: Settings,
        unsaved_files: UnsavedFiles = tuple,
    ) -> None:
        """`unsaved_files` tells which files the editor holds with unsaved changes (asked at
        each edit and undo, which refuse to overwrite them); without an editor there are none."""
        self.settings = settings
        self.files = FileAccessManager(
            workspace,
            max_file_bytes=settings.max_file_bytes,
            secret_patterns=settings.secret_patterns,
        )
        self.workspace = self.files.root
        self.shell = CommandExecutor(self.workspace, output_cap=settings.output_cap_bytes)
        self.tools = ToolRegistry()
        # LLM layer: cheap to build (pydantic-ai is imported on the first LLM call).
        self.handler = BaseHandler(
            settings=lambda: self.settings, tools=self.tools, files=self.files, shell=self.shell
        )
        self.tasks = TaskSystem(self.handler)
        # Workspace index: cheap to build; the database opens on first use / start_indexing.
        # Its optional re-ranking runs the TaskSystem's template (it never calls back into here).
        self.memory = MemorySystem(self.files, settings, reranker=template_reranker(self.tasks))
        self._register_system_tools()
        # Aider: one persistent MCP session (started on first use), checkpoints for undo.
        self.checkpoints = CheckpointStore(self.files)
        self.aider = AiderBridge(self.files, lambda: self.settings, memory=self.memory)
        self.aider_tools = aider_executors.AiderExecutors(
            self.aider, self.files, self.checkpoints, unsaved_files
        )
        self.tools.register(aider_executors.AIDER_AUTOMATIC_SPEC, self.aider_tools.automatic)
        self.tools.register(aider_executors.AIDER_INTERACTIVE_SPEC, self.aider_tools.interactive)
        self._workflow_running = False
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

    def update_settings(self, settings: Settings) -> None:
        """Settings changed in the editor: later calls use the new values."""
        self.settings = settings
        self.files.secret_patterns = DEFAULT_SECRET_PATTERNS + tuple(settings.secret_patterns)
        self.files.max_file_bytes = settings.max_file_bytes
        self.shell.output_cap = settings.output_cap_bytes
        self.memory.update_settings(settings)
        self.handler.set_debug_mode(settings.debug)

    async def run_tests(self, command: str | None = None) -> TaskResult:
        """Run the user's test command (the argument, else the `testCommand` setting)."""
        command = command or self.settings.test_command
        if not command:
            return failed_result(
                ErrorReason.CONFIGURATION_ERROR,
                "no test command: set aiderLsp.testCommand or AIDER_LSP_TEST_COMMAND",
            )
        return await self.shell.execute(
            command, timeout=self.settings.timeouts.test, use_shell=self.settings.test_shell
        )

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
        try:
            build_model(self.settings)  # imports pydantic-ai and the configured provider's SDK
        except LLMConfigurationError:
            pass  # no model configured: the first LLM call will say so
        if aider_configured:
            for module in MCP_CLIENT_MODULES:
                importlib.import_module(module)

    async def run_workflow(self, request: WorkflowRequest, ctx: RequestContext) -> TaskResult:
        """Run the coding workflow (plan → edit → test → analyse) for a goal; one at a time.

        COMPLETE when the goal is reached, FAILED with the reason otherwise; cancellation
        propagates after the run's checkpoint is settled (undo restores what it changed)."""
        from .workflow import CodingWorkflowOrchestrator

        if self._workflow_running:
            return failed_result(
                ErrorReason.INPUT_VALIDATION_FAILURE, "a workflow is already running in this workspace"
            )
        self._workflow_running = True
        try:
            orchestrator = CodingWorkflowOrchestrator(
                self,
                request.goal,
                request.context,
                request.test_command,
                self.settings.max_retries if request.max_retries is None else request.max_retries,
                request.file_context,
            )
            try:
                outcome = await orchestrator.run(ctx)
            except Exception as exc:  # a bug must not reach the user as a traceback
                log.exception("workflow run failed")
                return failed_result(ErrorReason.UNEXPECTED_ERROR, f"the workflow failed: {exc}")
        finally:
            self._workflow_running = False
        changed, created, diff = orchestrator.changes()
        notes: dict[str, Any] = {
            "workflow": outcome.model_dump(mode="json"),
            "changed_files": changed,
            "created_files": created,
            "diff": diff,
            "checkpoint_id": orchestrator.checkpoint.id if orchestrator.checkpoint else None,
        }
        if outcome.status is WorkflowStatus.SUCCESS:
            return complete_result(outcome.content, notes=notes, parsed=notes["workflow"])
        result = failed_result(outcome.reason or ErrorReason.UNEXPECTED_ERROR, outcome.content, notes=notes)
        result.parsed_content = notes["workflow"]
        return result

    async def aclose(self) -> None:
        """Stop child processes and close stores (server shutdown)."""
        warming = self._warm_up
        if warming is not None and warming is not asyncio.current_task():
            warming.cancel()
            await asyncio.wait([warming], timeout=10)  # its outcome is not ours to raise
        await self.aider.aclose()
        await self.memory.aclose()
