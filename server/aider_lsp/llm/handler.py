"""BaseHandler: the tools, data context, history and prompts around each LLM call.

Why: templates, the workflow and the editor commands share one conversation, one data
context and one tool registry; this class owns them and hands each LLM call exactly the
system prompt, tools, output type and model it asked for (LLMInteractionManager).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, ValidationError

from ..config.settings import Settings, SettingsProvider
from ..guards.budget import RunBudget
from ..guards.files import AccessDenied, FileAccessManager
from ..guards.redact import redact, secret_values
from ..models import (
    DataContext,
    ErrorReason,
    HistoryConfigSettings,
    MatchItem,
    Spend,
    TaskResult,
    ToolSpec,
    complete_result,
    failed_result,
)
from ..processes.shell import CommandExecutor
from ..tools.registry import ToolExecutor, ToolRegistry
from .interaction import LLMInteractionManager, log_debug
from .model_config import LLMConfigurationError, build_model

log = logging.getLogger(__name__)

DEFAULT_BASE_PROMPT = (
    "You are the planning and analysis assistant of aider-lsp, a tool that edits code in the "
    "user's workspace with Aider and checks the result with the user's test command. "
    "Be precise and concrete. Refer to files by their workspace-relative paths. "
    "Use the read-only tools to look at files when you need more context."
)
# What a model may use unless a template or a caller allows more.
DEFAULT_MODEL_TOOLS: tuple[str, ...] = ("system:get_context", "system:read_files")
# Never offered to a model: only the command the user configured runs.
NEVER_OFFERED: frozenset[str] = frozenset({"system:execute_shell_command"})
MAX_CONTEXT_FILES = 12
MAX_CONTEXT_CHARS = 120_000


class ToolSelectionError(ValueError):
    """A tools_override names a tool that is unknown or may not be offered to a model."""


@dataclass
class _Found:
    """What a context query found: (path, relevance) pairs, items without a file, a summary."""

    files: list[tuple[str, float]] = field(default_factory=list)
    items: list[MatchItem] = field(default_factory=list)
    summary: str | None = None


class BaseHandler:
    """Tools + data context + conversation + prompts; LLM calls go through LLMInteractionManager."""

    def __init__(
        self,
        *,
        settings: SettingsProvider,
        tools: ToolRegistry,
        files: FileAccessManager,
        shell: CommandExecutor,
        base_system_prompt: str = DEFAULT_BASE_PROMPT,
        llm: LLMInteractionManager | None = None,
    ) -> None:
        """`settings` is read at each use (they change live in the editor); nothing pushes them."""
        self._settings = settings
        self.tools = tools
        self.files = files
        self.shell = shell
        self.base_system_prompt = base_system_prompt
        self.llm = llm or LLMInteractionManager(self._settings)
        self.data_context: DataContext | None = None

    @property
    def settings(self) -> Settings:
        return self._settings()

    @property
    def debug(self) -> bool:
        """The `debug` setting, unless set_debug_mode said otherwise."""
        return self.llm.debug

    # ------------------------------------------------------------------ tools
    def register_tool(self, spec: ToolSpec, executor: ToolExecutor) -> bool:
        """Add a tool to the one registry (usable by models and programmatically)."""
        ok = self.tools.register(spec, executor)
        self.log_debug("register_tool %s: %s", spec.name, "ok" if ok else "name taken")
        return ok

    async def _execute_tool(self, name: str, params: dict[str, Any]) -> TaskResult:
        """Run a registered tool by either spelling (`aider:automatic` / `aider_automatic`)."""
        self.log_debug("tool %s %r", name, params)
        return await self.tools.execute(name, params)

    def get_tools_for_agent(self, tools_override: Sequence[str] | None = None) -> list[ToolSpec]:
        """The tools a model is offered: the read-only defaults, or exactly `tools_override`.

        With outputMode "prompted" (models without tool calling) the default is no tools.

        `system:execute_shell_command` is never offered; an unknown name is an error.
        """
        if tools_override is None:
            if self.settings.output_mode == "prompted":
                return []  # prompted output is for models without tool calling
            return [tool.spec for name in DEFAULT_MODEL_TOOLS if (tool := self.tools.get(name))]
        specs: list[ToolSpec] = []
        for name in tools_override:
            tool = self.tools.get(name)
            if tool is None:
                raise ToolSelectionError(f"unknown tool {name!r}")
            if tool.spec.name in NEVER_OFFERED:
                raise ToolSelectionError(f"{tool.spec.name} is never offered to a model")
            if tool.spec not in specs:
                specs.append(tool.spec)
        return specs

    async def _run_model_tool(self, name: str, params: dict[str, Any]) -> TaskResult:
        if name in NEVER_OFFERED:
            return failed_result(ErrorReason.ACCESS_DENIED, f"{name} is not available to the model")
        return await self._execute_tool(name, params)

    # ------------------------------------------------------------------ data context
    async def prime_data_context(
        self, query: str | None = None, initial_files: Sequence[str] | None = None
    ) -> TaskResult:
        """Fill the data context from explicit files and/or a context query (system:get_context)."""
        files = list(initial_files or [])
        if not isinstance(initial_files, (list, tuple, type(None))) or not all(
            isinstance(f, str) for f in files
        ):
            return failed_result(
                ErrorReason.INPUT_VALIDATION_FAILURE, "initial_files must be a list of paths"
            )
        if not (query and query.strip()) and not files:
            return failed_result(ErrorReason.INPUT_VALIDATION_FAILURE, "give a query or initial_files")
        wanted: list[tuple[str, float]] = [(path, 1.0) for path in files]
        items: list[MatchItem] = []
        summary: str | None = None
        if query and query.strip():
            found = await self._found_for_query(query, files)
            if isinstance(found, TaskResult):
                return found
            summary, items = found.summary, found.items
            for path, score in found.files:
                if all(path != w for w, _ in wanted):
                    wanted.append((path, score))
        file_items, skipped = self._read_context_files(wanted[: MAX_CONTEXT_FILES + len(files)])
        items = [*items, *file_items]
        self.data_context = DataContext(source_query=query, items=items, overall_summary=summary)
        paths = [item.source_path for item in items if item.source_path]
        return complete_result(
            json.dumps(paths),
            notes={
                "file_paths": paths,
                "item_count": len(items),
                "skipped_files": [s["path"] for s in skipped],
                "skipped_reasons": skipped,
                "context_summary": summary,
            },
        )

    async def _found_for_query(self, query: str, files: list[str]) -> _Found | TaskResult:
        """What system:get_context finds for the query: files with their scores, items without a
        file, the summary; a FAILED result when retrieval is missing (and no files were given)
        or failed."""
        if "system:get_context" not in self.tools:
            if not files:
                return failed_result(
                    ErrorReason.CONTEXT_RETRIEVAL_FAILURE,
                    "no context retrieval is available (system:get_context is not registered)",
                )
            return _Found()
        answer = await self._execute_tool("system:get_context", {"query": query, "target_files": files})
        if not answer.ok:
            error = answer.error
            return failed_result(
                ErrorReason.CONTEXT_RETRIEVAL_FAILURE,
                f"context retrieval failed: {error.message if error else answer.content}",
            )
        found = _Found(summary=answer.notes.get("context_summary"))
        matches = answer.notes.get("matches")
        if isinstance(matches, list) and matches:
            for raw in matches:
                try:
                    item = MatchItem.model_validate(raw)
                except ValidationError as exc:  # the index's own answer: a bug to see, not to hide
                    log.warning("a context match was skipped (not a MatchItem): %s", exc.errors()[0]["msg"])
                    continue
                if item.source_path:
                    found.files.append((item.source_path, item.relevance_score))
                else:
                    found.items.append(item)
        else:
            found.files = [
                (path, 0.5) for path in answer.notes.get("file_paths") or [] if isinstance(path, str)
            ]
        return found

    def _read_context_files(
        self, wanted: list[tuple[str, float]]
    ) -> tuple[list[MatchItem], list[dict[str, str]]]:
        """The files' text as items (model-safe reads), and the files skipped with why."""
        items: list[MatchItem] = []
        skipped: list[dict[str, str]] = []
        for path, score in wanted:
            try:
                text = self.files.read_text(path, for_model=True)
            except (AccessDenied, OSError) as exc:
                skipped.append({"path": path, "reason": str(exc)})
                continue
            items.append(
                MatchItem(
                    id=text.path,
                    content=text.text,
                    relevance_score=max(0.0, min(1.0, float(score))),
                    content_type="file_content",
                    source_path=text.path,
                    metadata={"truncated": text.truncated} if text.truncated else None,
                )
            )
        return items, skipped

    def clear_data_context(self) -> None:
        self.data_context = None

    def reset_conversation(self) -> None:
        """Forget the session history (the data context stays; see clear_data_context)."""
        self.llm.reset_conversation()

    def reset(self) -> TaskResult:
        """`aider-lsp.handler.reset`: clear history and data context."""
        turns = self.llm.history_turns
        had_context = self.data_context is not None
        self.reset_conversation()
        self.clear_data_context()
        return complete_result(
            "conversation and data context cleared",
            notes={"turns_cleared": turns, "data_context_cleared": had_context},
        )

    def _create_data_context_string(self, context: DataContext | None = None) -> str:
        """The data context as `<file path="…">…</file>` blocks (size-capped)."""
        context = context if context is not None else self.data_context
        if context is None or not context.items:
            return ""
        blocks: list[str] = []
        used = 0
        omitted = 0
        for item in context.items:
            if item.source_path:
                block = f'<file path="{item.source_path}">\n{item.content}\n</file>'
            else:
                block = f'<context id="{item.id}" type="{item.content_type}">\n{item.content}\n</context>'
            if used + len(block) > MAX_CONTEXT_CHARS:
                omitted += 1
                continue
            blocks.append(block)
            used += len(block)
        if omitted:
            blocks.append(f"[{omitted} more context item(s) omitted for size]")
        header = "Workspace context"
        if context.source_query:
            header += f" for: {context.source_query}"
        if context.overall_summary:
            header += f"\n{context.overall_summary}"
        return header + "\n" + "\n".join(blocks)

    def build_system_prompt(
        self, template_instructions: str | None = None, *, include_data_context: bool = True
    ) -> str:
        """Base prompt + template instructions + data context."""
        parts = [self.base_system_prompt.strip()]
        if template_instructions and template_instructions.strip():
            parts.append(template_instructions.strip())
        if include_data_context:
            context = self._create_data_context_string()
            if context:
                parts.append(context)
        return "\n\n".join(parts)

    # ------------------------------------------------------------------ LLM
    async def execute_llm_call(
        self,
        prompt: str,
        *,
        system_prompt_override: str | None = None,
        tools_override: Sequence[str] | None = None,
        output_type_override: type[BaseModel] | None = None,
        model_override: str | None = None,
        history_config: HistoryConfigSettings | None = None,
        template_instructions: str | None = None,
        output_check: Callable[[Any], str | None] | None = None,
    ) -> TaskResult:
        """One LLM call; every override really reaches the model."""
        if not isinstance(prompt, str) or not prompt.strip():
            return failed_result(ErrorReason.INPUT_VALIDATION_FAILURE, "the prompt is empty")
        try:
            tools = self.get_tools_for_agent(tools_override)
        except ToolSelectionError as exc:
            return failed_result(ErrorReason.INPUT_VALIDATION_FAILURE, str(exc))
        system_prompt = (
            system_prompt_override
            if system_prompt_override is not None
            else self.build_system_prompt(template_instructions)
        )
        # credential values (provider keys in the environment, e.g. printed by a test) never
        # reach the model: not in the prompt, the system prompt or a tool's answer
        secrets = secret_values(extra=[self.settings.api_key])

        async def run_tool(name: str, params: dict[str, Any]) -> TaskResult:
            result = await self._run_model_tool(name, params)
            error = result.error
            if error is not None:
                error = error.model_copy(update={"message": redact(error.message, secrets)})
            return TaskResult(
                status=result.status,
                content=redact(result.content, secrets),
                notes=dict(result.notes),
                parsedContent=result.parsed_content,
                error=error,
            )

        return await self.llm.execute_call(
            redact(prompt, secrets),
            system_prompt=redact(system_prompt, secrets),
            tools=tools,
            run_tool=run_tool,
            output_type=output_type_override,
            model_override=model_override,
            history_config=history_config,
            output_check=output_check,
        )

    def check_workspace_paths(self, paths: Sequence[str] | None, field: str) -> str | None:
        """Which of `paths` cannot be edited and why (outside the workspace, a secret), or None.
        Read by the model (to fix its answer) and, when it never does, by the user."""
        bad: list[str] = []
        for path in paths or []:
            try:
                real = self.files.check_model_safe(path)
            except (AccessDenied, OSError, ValueError) as exc:
                bad.append(f"{path} ({_why_refused(exc)})")
                continue
            if real.is_dir():
                bad.append(f"{path} (a folder, not a file)")
        if bad:
            return (
                f"`{field}` names files aider-lsp cannot edit: {'; '.join(bad)}. Only workspace-relative "
                "paths of files inside the workspace that are not secrets can be edited"
            )
        return None

    def get_provider_identifier(self, model_override: str | None = None) -> str:
        return self.llm.provider_identifier(model_override)

    def set_budget(self, budget: RunBudget) -> None:
        """Cap the LLM calls that follow (one workflow run): once the run has spent `budget`, a
        call is refused (FAILED budget_exceeded) with the budget's message."""
        self.llm.set_budget(budget)

    def clear_budget(self) -> None:
        self.llm.clear_budget()

    def preload(self) -> None:
        """Import pydantic-ai and the configured provider's SDK (seconds) by building the model
        once: for a worker thread at warm-up, so the first LLM call does not pay it. Without a
        model configured there is nothing to load (the first call will say what to set)."""
        try:
            build_model(self.settings)
        except LLMConfigurationError:
            pass

    @property
    def usage_totals(self) -> Spend:
        """What this session's planning/analysis calls spent, added up."""
        return self.llm.usage

    # ------------------------------------------------------------------ misc
    async def execute_file_path_command(self, command: str) -> TaskResult:
        """Run a command that prints file paths (`git diff --name-only`, `find …`): the files
        it names that exist in the workspace and may reach a model (no secret, no folder),
        workspace-relative in `content`/`file_paths` and absolute in `absolute_paths`; the
        rest in `skipped`. A command that fails, times out or cannot start is a FAILED result."""
        if not isinstance(command, str) or not command.strip():
            return failed_result(ErrorReason.INPUT_VALIDATION_FAILURE, "missing command")
        output = await self._run_path_command(command)
        if isinstance(output, TaskResult):
            return output
        printed = [line.strip() for line in output.splitlines() if line.strip()]
        paths, refused = self.files.model_safe_files(printed, must_exist=True)
        return complete_result(
            json.dumps(paths),
            notes={
                "file_paths": paths,
                "absolute_paths": [str(self.files.resolve(p)) for p in paths],
                "skipped": [r.path for r in refused],
                "skipped_reasons": [{"path": r.path, "reason": r.reason} for r in refused],
            },
        )

    async def _run_path_command(self, command: str) -> str | TaskResult:
        """The command's stdout, or a FAILED result saying why there is none."""
        timeout = self.settings.timeouts.shell
        try:
            output = await self.shell.run(command, timeout=timeout, use_shell=self.settings.test_shell)
        except ValueError as exc:
            return failed_result(ErrorReason.INPUT_VALIDATION_FAILURE, f"bad command: {exc}")
        except OSError as exc:
            return failed_result(ErrorReason.TOOL_EXECUTION_ERROR, f"cannot start the command: {exc}")
        if output.timed_out:
            return failed_result(
                ErrorReason.EXECUTION_TIMEOUT,
                f"the command did not finish within {timeout:g} s and was killed: "
                f"raise {self.settings.name('timeouts.shell')} if it needs longer",
            )
        if output.exit_code != 0:
            return failed_result(
                ErrorReason.TOOL_EXECUTION_ERROR,
                f"the command exited with {output.exit_code}: {output.stderr.strip()[:500]}",
                notes={"exit_code": output.exit_code, "stderr": output.stderr},
            )
        return output.stdout

    def set_debug_mode(self, enabled: bool | None) -> None:
        """Log prompts, tools and failures whatever the `debug` setting says (None: follow the
        setting again); says so in the log when debug logging was or becomes on."""
        was = self.debug
        self.llm.debug_override = None if enabled is None else bool(enabled)
        if was or self.debug:
            log_debug(True, "debug mode %s", "on" if self.debug else "off")

    def log_debug(self, message: str, *args: Any) -> None:
        """A detail of the LLM layer, shown in the log when debug mode is on (see log_debug)."""
        log_debug(self.debug, message, *args)


def _why_refused(exc: Exception) -> str:
    """A refusal's reason in a few words (FileAccessManager's messages repeat the path)."""
    text = str(exc)
    if text.startswith("path is outside the workspace"):
        return "outside the workspace"
    if text.startswith("refusing a secret file"):
        return "refused as a secret: keys and credentials never reach a model"
    return text
