"""The ACP agent: the protocol's methods and the session table.

`initialize` answers at once (nothing heavy is imported for it). `session/new` opens the
workspace at `cwd` (absolute and existing, else an invalid-params error): one Application per
workspace, shared by its sessions, built then and warmed up in the background as `serve` does;
the MCP servers it passes open in the background for the planning/analysis model
(mcp_servers.py) and close with the connection.
A prompt runs in a task of its own so that `session/cancel` can stop it (the Application
stops Aider and the test processes) and the prompt is answered `cancelled` within a second.
"""

from __future__ import annotations

import asyncio
import logging
import os
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from acp import PROTOCOL_VERSION, RequestError
from acp.schema import (
    AgentCapabilities,
    ConfigOptionUpdate,
    CurrentModeUpdate,
    Implementation,
    InitializeResponse,
    McpCapabilities,
    NewSessionResponse,
    PromptCapabilities,
    PromptResponse,
    SetSessionConfigOptionResponse,
    SetSessionModeResponse,
    StopReason,
)

from .. import __version__
from .mcp_servers import McpServers
from .modes import MODE_OPTION, Mode, config_options, mode_state, parse_mode
from .session import AcpSession, Outbox

if TYPE_CHECKING:
    from acp.interfaces import Client

    from ..app import Application

log = logging.getLogger(__name__)

CANCEL_ANSWER_SECONDS = 0.8  # a cancelled prompt is answered by then, its clean-up goes on
INVALID_PARAMS = -32602


def invalid_params(message: str) -> RequestError:
    """A JSON-RPC invalid-params error whose message says what to do."""
    return RequestError(INVALID_PARAMS, message)


class AiderAgent:
    """The sessions of one client connection and the Applications they run on."""

    def __init__(self, make_app: Callable[[Path], Application]) -> None:
        self.make_app = make_app
        self.client: Client | None = None
        self.sessions: dict[str, AcpSession] = {}
        self.apps: dict[Path, Application] = {}
        self._background: set[asyncio.Task[Any]] = set()

    def on_connect(self, conn: Client) -> None:
        self.client = conn

    # -- lifecycle ----------------------------------------------------------------------------
    async def initialize(self, protocol_version: int, **kwargs: Any) -> InitializeResponse:
        capabilities = AgentCapabilities(
            prompt_capabilities=PromptCapabilities(embedded_context=True),
            mcp_capabilities=McpCapabilities(http=True, sse=True),
        )
        return InitializeResponse(
            protocol_version=min(protocol_version, PROTOCOL_VERSION),
            agent_capabilities=capabilities,
            agent_info=Implementation(name="aider-lsp", title="Aider (aider-lsp)", version=__version__),
        )

    async def new_session(
        self, cwd: str, mcp_servers: list[Any] | None = None, **kwargs: Any
    ) -> NewSessionResponse:
        workspace = _workspace(cwd)
        app = self._app_for(workspace)
        session_id = uuid.uuid4().hex
        outbox = Outbox(session_id, self._send_update)
        mcp = McpServers.start(list(mcp_servers or []), workspace)
        self.sessions[session_id] = AcpSession(
            id=session_id, app=app, outbox=outbox, mcp=mcp, client=self.client
        )
        return NewSessionResponse(
            session_id=session_id, modes=mode_state(Mode.EDIT), config_options=config_options(Mode.EDIT)
        )

    def _app_for(self, workspace: Path) -> Application:
        """The workspace's Application, built and warmed up (Aider, the index) at its first session."""
        app = self.apps.get(workspace)
        if app is None:
            app = self.apps[workspace] = self.make_app(workspace)
            self._keep(asyncio.create_task(app.warm_up(), name="aider-warm-up"))
            self._keep(asyncio.create_task(_index(app), name="workspace-index"))
        return app

    def _keep(self, task: asyncio.Task[Any]) -> None:
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    async def _send_update(self, session_id: str, update: Any) -> None:
        if self.client is not None:
            await self.client.session_update(session_id=session_id, update=update)

    def _session(self, session_id: str) -> AcpSession:
        session = self.sessions.get(session_id)
        if session is None:
            raise invalid_params(f"unknown session {session_id!r}: start one with session/new")
        return session

    # -- modes --------------------------------------------------------------------------------
    async def set_session_mode(self, mode_id: str, session_id: str, **kwargs: Any) -> SetSessionModeResponse:
        session = self._session(session_id)
        session.mode = _mode(mode_id)
        session.outbox.post(
            ConfigOptionUpdate(
                session_update="config_option_update", config_options=config_options(session.mode)
            )
        )
        return SetSessionModeResponse()

    async def set_config_option(
        self, config_id: str, session_id: str, value: str | bool, **kwargs: Any
    ) -> SetSessionConfigOptionResponse:
        session = self._session(session_id)
        if config_id != MODE_OPTION:
            raise invalid_params(f"unknown config option {config_id!r}: this agent has {MODE_OPTION!r}")
        session.mode = _mode(value)
        session.outbox.post(
            CurrentModeUpdate(session_update="current_mode_update", current_mode_id=session.mode)
        )
        return SetSessionConfigOptionResponse(config_options=config_options(session.mode))

    # -- prompts ------------------------------------------------------------------------------
    async def prompt(self, prompt: list[Any], session_id: str, **kwargs: Any) -> PromptResponse:
        from . import prompt as prompt_content
        from .turns import run_turn  # the Application's models: imported at the first prompt

        session = self._session(session_id)
        if session.running is not None and not session.running.done():
            raise invalid_params("a prompt is already running in this session: wait for it or cancel it")
        request = prompt_content.parse_prompt(prompt, session.app.workspace, session.app.model_safe_files)
        spent_before = session.app.spent()
        work = asyncio.create_task(run_turn(session, request), name=f"acp-prompt-{session_id}")
        session.running, session.cancelled = work, asyncio.Event()
        try:
            stop_reason = await _finished(work, session.cancelled)
        except asyncio.CancelledError:  # the connection is closing: the turn goes with it
            work.cancel()
            raise
        if stop_reason == "cancelled" and not work.done():
            self._keep(work)  # the Application is still stopping Aider or the tests
        await self._report_usage(session)
        await session.outbox.flush()
        from .render import turn_usage

        return PromptResponse(
            stop_reason=stop_reason, usage=turn_usage(session.app.spent().since(spent_before))
        )

    async def _report_usage(self, session: AcpSession) -> None:
        from .render import usage_update

        budget = session.app.settings.budget.max_tokens
        session.outbox.post(usage_update(session.app.spent(), budget))

    async def cancel(self, session_id: str, **kwargs: Any) -> None:
        session = self.sessions.get(session_id)
        if session is None:
            log.info("session/cancel for unknown session %s", session_id)
            return
        if session.running is not None and not session.running.done():
            session.cancelled.set()
            session.running.cancel()

    # -- shutdown -----------------------------------------------------------------------------
    async def aclose(self) -> None:
        """Stop every prompt still running and every Application (the client went away)."""
        for session in self.sessions.values():
            if session.running is not None:
                session.running.cancel()
        await asyncio.gather(*(session.mcp.aclose() for session in self.sessions.values()))
        for app in self.apps.values():
            try:
                await asyncio.wait_for(app.aclose(), 10)
            except BaseException as exc:  # exiting anyway
                log.warning("closing %s: %s", app.workspace, exc)


async def _finished(work: asyncio.Task[StopReason], cancelled: asyncio.Event) -> StopReason:
    """The turn's stop reason: its own, or `cancelled` once session/cancel came (answered
    within CANCEL_ANSWER_SECONDS while the clean-up goes on). An unexpected error propagates:
    the SDK logs it and answers a JSON-RPC internal error (never a traceback on stdout)."""
    waiter = asyncio.create_task(cancelled.wait())
    try:
        await asyncio.wait([work, waiter], return_when=asyncio.FIRST_COMPLETED)
    finally:
        waiter.cancel()
    if not cancelled.is_set():
        return work.result()
    await asyncio.wait([work], timeout=CANCEL_ANSWER_SECONDS)
    if work.done() and not work.cancelled() and work.exception() is None:
        return work.result()  # it ended on its own (e.g. a run's own "cancelled")
    return "cancelled"


def _workspace(cwd: str) -> Path:
    """The session's workspace: `cwd` absolute and an existing folder, else invalid params."""
    if not isinstance(cwd, str) or not cwd or not os.path.isabs(cwd):
        raise invalid_params(f"cwd must be an absolute path, got {cwd!r}")
    path = Path(cwd).resolve()
    if not path.is_dir():
        raise invalid_params(f"cwd is not an existing folder: {cwd}")
    return path


def _mode(value: object) -> Mode:
    mode = parse_mode(value)
    if mode is None:
        raise invalid_params(f"unknown mode {value!r}: one of {', '.join(m.value for m in Mode)}")
    return mode


async def _index(app: Application) -> None:
    """Index the workspace in the background (the Edit turn's file pick reads it); a failure
    only logs."""
    try:
        await app.index_workspace()
    except Exception as exc:
        log.warning("indexing %s failed: %s", app.workspace, exc)
