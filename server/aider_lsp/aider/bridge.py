"""AiderBridge: the seeds' bridge to an Aider MCP server, and the one door to it.

It ties the other modules together: launch.py says how to start the server (from Settings),
session.py runs it and its persistent MCP session (imported on first use: it brings mcp),
failures.py maps what went wrong to an ErrorReason, results.py judges an answer. The bridge
adds what spans a call: one call at a time (a lock), the editable files read before and after
(checkpoints.snapshot_files) so that an edit's success comes from the files, never from the
server's word, and the file context.

File context (the seeds' `set_file_context` / `get_file_context` / `get_context_for_query`):
an edit given no files asks `get_context_for_query` (the MemorySystem) for the instruction's
files and `set_file_context` keeps those that exist, stay in the workspace and are not
secret; the edit then runs on `get_file_context()`. The context is set anew by each such
edit and never carried over to the next one: a new instruction is about other files, and a
conversation that keeps its files is `aider:interactive` with its session.
"""

from __future__ import annotations

import asyncio
import importlib
import logging
from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from ..config.endpoints import ModelRole, name_problem
from ..config.settings import Settings
from ..guards.files import AccessDenied, FileAccessManager
from ..history.checkpoints import snapshot_files
from ..models import (
    AiderEditOutcome,
    AssociativeMatchResult,
    CallUsage,
    ContextGenerationInput,
    ErrorReason,
    ReplyCallback,
    Spend,
    TaskError,
    TaskResult,
)
from .launch import (
    AIDER_PROMPT_TOKENS,
    ConfigurationProblem,
    LaunchSpec,
    aider_model_for,
    launch_spec,
    launch_spec_for_tool,
)
from .results import EDIT_TOOLS, CallFailure, EditedFiles, ToolReply, edit_outcome, tool_result
from .spawn import Spawned, discard, spawn

log = logging.getLogger(__name__)

SESSION_MODULE = "aider_lsp.aider.session"  # imported on first use (mcp, anyio)
CHARS_PER_TOKEN = 4

if TYPE_CHECKING:
    from .session import ServerSession


class AiderBridge:
    """call_aider_tool over ONE persistent session per workspace (see module doc)."""

    def __init__(
        self,
        files: FileAccessManager,
        get_settings: Callable[[], Settings],
        memory: Any | None = None,
    ) -> None:
        self.files = files
        self.workspace = files.root
        self._get_settings = get_settings
        self.memory = memory
        self._lock = asyncio.Lock()
        self._session: ServerSession | None = None
        self._file_context: list[str] = []
        # Aider's own spend over this session's edits (what the servers reported, and the
        # estimates of calls stopped while the model answered)
        self._reported = Spend()
        self._answering: tuple[dict[str, Any], HeardReply] | None = None  # the call in flight

    @property
    def spent(self) -> Spend:
        """Aider's spend so far: what the calls reported, and the estimate of the one the
        model is answering now (a cancel reports it at once, before the call has stopped)."""
        if self._answering is None or not self._answering[1].characters:
            return self._reported
        params, heard = self._answering
        return self._reported.plus(self._cancelled_usage(params, heard.characters))

    def settings(self) -> Settings:
        """The settings in force now (they change live in the editor)."""
        return self._get_settings()

    # -- file context ----------------------------------------------------------------------
    def set_file_context(self, file_paths: list[str], source: str = "explicit") -> dict[str, Any]:
        """Keep only existing, workspace-confined, non-secret files; report what was dropped."""
        kept, refused = self.files.model_safe_files(file_paths, must_exist=True)
        self._file_context = kept
        skipped = [{"path": refusal.path, "reason": refusal.reason} for refusal in refused]
        return {"file_paths": list(kept), "skipped": skipped, "source": source}

    def get_file_context(self) -> list[str]:
        return list(self._file_context)

    async def get_context_for_query(self, query: str) -> AssociativeMatchResult:
        """Relevant files for a query from the MemorySystem (when there is one)."""
        if self.memory is None:
            return AssociativeMatchResult(
                context_summary="No workspace memory is available.", error="memory unavailable"
            )
        try:
            return await self.memory.get_relevant_context_for(ContextGenerationInput(query=query))
        except Exception as exc:
            return AssociativeMatchResult(context_summary="Context retrieval failed.", error=str(exc))

    # -- the server ------------------------------------------------------------------------
    @staticmethod
    def preload() -> None:
        """Import what the first call needs (session.py: mcp and anyio, about 0.7 s, several
        under load); for a worker thread at warm-up, so the first edit does not pay it."""
        importlib.import_module(SESSION_MODULE)

    async def _server(self) -> ServerSession:
        """The server session, made on first use: the one place that imports session.py, and
        with it mcp and anyio (~0.7 s, seconds on a busy machine), so that they stay off the
        start-up path. The import runs in a worker thread: on the event loop it would stall
        every request meanwhile (or wait there for the warm-up's thread importing it)."""
        if self._session is None:
            module = await asyncio.to_thread(importlib.import_module, SESSION_MODULE)
            if self._session is None:
                self._session = module.ServerSession()
        return self._session

    @property
    def server_pid(self) -> int | None:
        """The running server's pid (tests kill it to check the restart)."""
        return self._session.pid if self._session is not None else None

    @property
    def starts(self) -> int:
        """How many servers this bridge has started (restarts are visible)."""
        return self._session.starts if self._session is not None else 0

    async def warm_up(self, early: Spawned | None = None) -> bool:
        """Start the server ahead of the first edit (e.g. after `initialized`); the bundled
        server then imports Aider in the background. False when not configured or it failed.
        `early`: its process, spawned ahead by the caller (`aider-lsp run`), adopted here.

        Only before any server was started: once a call started one, warming up has nothing to
        do, and after a cancelled edit stopped it, starting it again would undo that stop."""
        settings = self._get_settings()
        try:
            spec = launch_spec(settings, self.workspace)
        except ConfigurationProblem:
            if early is not None:
                discard(early)
            return False
        async with self._lock:
            if self._session is not None and self._session.starts:
                if early is not None:
                    discard(early)
                return self._session.running
            return await self._start_early(spec, early)

    async def _start_early(self, spec: LaunchSpec, early: Spawned | None) -> bool:
        """Spawn the server, then import session.py (mcp) while it starts, then adopt it."""
        try:
            early = early or await spawn(spec)
        except OSError as exc:  # the first edit will report it, with the server's command
            log.warning("could not start the Aider MCP server: %s", exc)
            return False
        try:
            server = await self._server()
        except BaseException:
            discard(early)
            raise
        return await server.warm_up(spec, self.settings().timeouts.aider, early)

    async def restart(self) -> None:
        """Stop the server; the next call starts a fresh one (new session, empty chats)."""
        async with self._lock:
            await self.aclose()

    @property
    def running(self) -> bool:
        """A server is running (its chats are alive; a stopped one forgot them)."""
        return self._session is not None and self._session.running

    async def aclose(self) -> None:
        """Stop the server and its process group (shutdown)."""
        if self._session is not None:
            await self._session.stop()

    def kill(self) -> None:
        """Kill the server's process group now, without waiting (a close that took too long)."""
        if self._session is not None:
            self._session.kill()

    # -- calls -----------------------------------------------------------------------------
    async def call_aider_tool(
        self, tool_name: str, params: dict[str, Any], *, timeout: float | None = None
    ) -> TaskResult:
        """The seeds' call: any tool; every failure is a FAILED TaskResult with its ErrorReason."""
        if tool_name in EDIT_TOOLS:
            outcome = await self.edit(tool_name, params, timeout=timeout)
            return outcome.to_task_result()
        reply = await self._exchange(tool_name, params, timeout, [])
        return reply.to_task_result() if isinstance(reply, CallFailure) else tool_result(tool_name, reply[0])

    async def edit(
        self,
        tool_name: str,
        params: dict[str, Any],
        *,
        timeout: float | None = None,
        on_reply: ReplyCallback | None = None,
    ) -> AiderEditOutcome:
        """One edit (`aider_ai_code` or `aider_chat`), judged by the editable files themselves.
        `on_reply` reads Aider's reply as it is written (a server that does not stream it
        sends nothing there: the outcome's reply holds it all the same)."""
        editable = [p for p in params.get("relative_editable_files") or [] if isinstance(p, str)]
        heard = HeardReply(on_reply) if on_reply is not None else None
        try:
            reply = await self._exchange(tool_name, params, timeout, editable, heard)
        except asyncio.CancelledError:
            if heard is not None and heard.characters:  # the model was answering: it was paid
                self._reported = self._reported.plus(self._cancelled_usage(params, heard.characters))
            raise
        if isinstance(reply, CallFailure):
            return reply.as_edit(tool_name)
        answer, files, spec = reply
        outcome = edit_outcome(tool_name, answer, files, bundled=spec.bundled)
        if outcome.server_success is not None:  # a well-formed answer: Aider ran
            self._reported = self._reported.plus(outcome.usage)
        return self._endpoint_named(outcome)

    def _cancelled_usage(self, params: dict[str, Any], reply_characters: int) -> CallUsage:
        """What a call stopped while the model answered cost at least, estimated (its server,
        stopped with it, reports nothing): Aider's prompt, the message, the files it sent
        whole, the reply so far. A chat's earlier turns and the repo map are left out: a floor."""
        message = params.get("ai_coding_prompt") or params.get("message") or ""
        files = [
            path
            for key in ("relative_editable_files", "relative_readonly_files")
            for path in params.get(key) or []
            if isinstance(path, str)
        ]
        characters = len(str(message)) + reply_characters + sum(map(self._size, files))
        return CallUsage(requests=1, estimated_tokens=AIDER_PROMPT_TOKENS + characters // CHARS_PER_TOKEN)

    def _size(self, relative: str) -> int:
        """A workspace file's size in bytes (0: gone, or not the workspace's)."""
        try:
            return self.files.resolve(relative).stat().st_size
        except (OSError, ValueError, AccessDenied):
            return 0

    def _endpoint_named(self, outcome: AiderEditOutcome) -> AiderEditOutcome:
        """An edit that changed nothing because Aider's model endpoint refused it (Aider prints
        litellm's error and answers with no change) fails with that mistake named, not as a
        reply that changed no file (which a workflow would retry, paying for it again)."""
        errors = outcome.server_report.get("errors")
        if outcome.success or not isinstance(errors, list) or not errors:
            return outcome
        settings = self._get_settings()
        name = settings.name
        model = aider_model_for(settings) or "?"
        role = ModelRole("Aider's model", model, name("aiderModel"), name("baseUrl"), name("apiKey"))
        problem = name_problem("\n".join(map(str, errors)), role, settings.base_url)
        if problem is None:
            return outcome
        detail = (str(errors[-1]).strip().splitlines() or [""])[0][:300]
        error = TaskError(reason=problem.reason, message=f"{problem.message} (Aider: {detail})")
        return outcome.model_copy(update={"error": error})

    async def _exchange(
        self,
        tool_name: str,
        params: dict[str, Any],
        timeout: float | None,
        editable: list[str],
        on_reply: ReplyCallback | None = None,
    ) -> tuple[ToolReply, EditedFiles, LaunchSpec] | CallFailure:
        """Launch spec, then the call under the lock with the editable files read around it."""
        settings = self._get_settings()
        try:
            spec = launch_spec_for_tool(settings, self.workspace, tool_name)
        except ConfigurationProblem as exc:
            return CallFailure(ErrorReason.CONFIGURATION_ERROR, str(exc))
        deadline = timeout if timeout is not None else settings.timeouts.aider
        async with self._lock:
            before = snapshot_files(self.files.resolve, editable)
            self._answering = (params, on_reply) if isinstance(on_reply, HeardReply) else None
            try:
                reply = await (await self._server()).call(spec, tool_name, params, deadline, on_reply)
            finally:
                self._answering = None
            if isinstance(reply, CallFailure):
                return _named(reply, settings, timed=timeout is None)
            after = snapshot_files(self.files.resolve, editable)
        return reply, EditedFiles(editable, before, after), spec


class HeardReply:
    """The reply pieces handed on to the caller, counted: a call cancelled after the first
    piece reached the model (see `AiderBridge._cancelled_usage`)."""

    def __init__(self, on_reply: ReplyCallback) -> None:
        self._on_reply = on_reply
        self.characters = 0

    def __call__(self, text: str) -> None:
        self.characters += len(text)
        self._on_reply(text)


def _named(failure: CallFailure, settings: Settings, *, timed: bool) -> CallFailure:
    """A timeout's message with the setting that gave the deadline, as its reader sets it."""
    if failure.reason is not ErrorReason.EXECUTION_TIMEOUT or not timed:
        return failure
    hint = f": raise {settings.name('timeouts.aider')} for a slow model or a large edit"
    return replace(failure, message=failure.message + hint)
