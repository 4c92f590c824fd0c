"""The ACP agent: the protocol's methods and the session table.

`initialize` answers at once (nothing heavy is imported for it). `session/new` opens the
workspace at `cwd` (absolute and existing, else an invalid-params error): one Application per
workspace, shared by its sessions, built then and warmed up in the background as `serve` does,
and held in the pool both front ends share (workspaces.py: at most `maxOpenFolders` alive, the
least recently used idle one closed beyond it; a session on a closed one reopens it at its next
request, its Aider chats started again by the Aider executors);
the MCP servers it passes open in the background for the planning/analysis model
(mcp_servers.py) and close with the connection.
A prompt runs in a task of its own so that `session/cancel` can stop it (the Application
stops Aider and the test processes) and the prompt is answered `cancelled` within a second.
However a turn ends, what it showed is closed before its answer and nothing of it follows the
answer (session.py's Outbox); a prompt sent while a cancelled turn still stops waits for it.
"""

from __future__ import annotations

import asyncio
import logging
import os
import uuid
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from acp.schema import (
    AgentCapabilities,
    AuthenticateResponse,
    CloseSessionResponse,
    ConfigOptionUpdate,
    CurrentModeUpdate,
    DeleteSessionRequest,
    DeleteSessionResponse,
    Implementation,
    InitializeResponse,
    ListSessionsResponse,
    LoadSessionResponse,
    McpCapabilities,
    NewSessionResponse,
    PromptCapabilities,
    PromptResponse,
    ResumeSessionResponse,
    SessionCapabilities,
    SessionCloseCapabilities,
    SessionDeleteCapabilities,
    SessionInfo,
    SessionInfoUpdate,
    SessionListCapabilities,
    SessionResumeCapabilities,
    SetSessionConfigOptionResponse,
    SetSessionModeResponse,
    StopReason,
)

from acp import PROTOCOL_VERSION, RequestError

from .. import __version__
from ..workspaces import ApplicationPool, not_a_project, settle
from . import transcript
from .auth import SIGN_IN_FIELDS, auth_methods, runs_terminal_auth, sign_in_required
from .buffers import HeldFiles
from .commands import available_commands
from .host import AcpHost
from .mcp_servers import McpServers
from .modes import MODE_OPTION, Mode, mode_state, parse_mode
from .options import ISOLATION_OPTION, OptionError, session_options, set_option
from .session import AcpSession, Outbox

if TYPE_CHECKING:
    from acp.interfaces import Client

    from ..config.settings import Settings
    from ..models import UnsavedFiles

log = logging.getLogger(__name__)

CANCEL_ANSWER_SECONDS = 0.8  # a cancelled prompt is answered by then, its clean-up goes on
CLOSE_SECONDS = 10.0  # at the end, for the turns to settle
CANCELLED = "Cancelled."  # said for a turn answered before it could say so itself
INVALID_PARAMS = -32602


def invalid_params(message: str) -> RequestError:
    """A JSON-RPC invalid-params error whose message says what to do."""
    return RequestError(INVALID_PARAMS, message)


class AiderAgent:
    """The sessions of one client connection and the Applications they run on."""

    def __init__(
        self,
        make_app: Callable[[Path, UnsavedFiles], AcpHost],
        load_settings: Callable[[], Settings] | None = None,
    ) -> None:
        """`make_app(workspace, unsaved_files)`: the files a turn keeps from Aider are its
        Application's unsaved files (buffers.py); `load_settings`: the settings as they are
        now (a sign-in since the start included), read again for a session without a model."""
        self.make_app = make_app
        self.load_settings = load_settings
        self.client: Client | None = None
        self.reads_buffers = False  # the client offers fs/read_text_file
        self.sessions: dict[str, AcpSession] = {}
        self.apps: ApplicationPool[AcpHost] = ApplicationPool()
        self.held: dict[Path, HeldFiles] = {}  # every workspace opened here (its files kept from Aider)
        self._background: set[asyncio.Task[Any]] = set()

    def on_connect(self, conn: Client) -> None:
        self.client = conn

    # -- lifecycle ----------------------------------------------------------------------------
    async def initialize(
        self, protocol_version: int, client_capabilities: Any = None, **kwargs: Any
    ) -> InitializeResponse:
        files = getattr(client_capabilities, "fs", None)
        self.reads_buffers = bool(getattr(files, "read_text_file", False))
        terminal = runs_terminal_auth(client_capabilities)
        capabilities = AgentCapabilities(
            load_session=True,
            session_capabilities=SessionCapabilities(
                list=SessionListCapabilities(),
                resume=SessionResumeCapabilities(),
                close=SessionCloseCapabilities(),
                delete=SessionDeleteCapabilities(),
            ),
            prompt_capabilities=PromptCapabilities(embedded_context=True, image=True),
            mcp_capabilities=McpCapabilities(http=True, sse=True),
        )
        return InitializeResponse(
            protocol_version=min(protocol_version, PROTOCOL_VERSION),
            agent_capabilities=capabilities,
            auth_methods=list(auth_methods(terminal)),
            agent_info=Implementation(name="aider-lsp", title="Aider (aider-lsp)", version=__version__),
        )

    async def new_session(
        self, cwd: str, mcp_servers: list[Any] | None = None, **kwargs: Any
    ) -> NewSessionResponse:
        workspace = _workspace(cwd)
        self._signed_in(self._app_for(workspace))
        await asyncio.to_thread(transcript.prune, workspace, transcript.MAX_SESSIONS - 1)
        session = self._open(workspace, uuid.uuid4().hex, mcp_servers)
        session.keep_meta()
        session.outbox.post(available_commands())  # sent after the answer: nothing awaited from here
        return NewSessionResponse(
            session_id=session.id, modes=mode_state(session.mode), config_options=session_options(session)
        )

    async def authenticate(self, method_id: str, **kwargs: Any) -> AuthenticateResponse:
        """The client's sign-in is done (the terminal's `aider-lsp login`): read it again."""
        for app in self.apps.values():
            self._refresh(app)
        return AuthenticateResponse()

    def _signed_in(self, app: AcpHost) -> None:
        """A session needs a model: without one, the sign-in is read again (it may have been made
        since the start); still none, the client is told to sign in (auth-required)."""
        if not app.settings.model:
            self._refresh(app)
        if not app.settings.model:
            raise sign_in_required()

    def _refresh(self, app: AcpHost) -> None:
        """The sign-in's settings as they are now, over the app's (its session options stay)."""
        if self.load_settings is None:
            return
        fresh = self.load_settings()
        update = {name: getattr(fresh, name) for name in SIGN_IN_FIELDS}
        if any(getattr(app.settings, name) != value for name, value in update.items()):
            app.update_settings(app.settings.model_copy(update=update))

    def _open(self, workspace: Path, session_id: str, mcp_servers: list[Any] | None) -> AcpSession:
        """A session on the workspace's Application, its conversation kept in `.aider-lsp/`."""
        app = self._app_for(workspace)
        kept = transcript.Transcript(workspace, session_id)
        outbox = Outbox(session_id, self._send_update, record=kept.record)
        mcp = McpServers.start(list(mcp_servers or []), workspace)
        session = AcpSession(
            id=session_id,
            root=workspace,
            app=app,
            outbox=outbox,
            mcp=mcp,
            client=self.client,
            transcript=kept,
        )
        session.reads_buffers, session.held = self.reads_buffers, self.held[workspace]
        session.max_retries, session.isolation = app.settings.max_retries, app.settings.isolation
        session.attempts, session.choose = app.settings.attempts, app.settings.choose_attempt
        self.sessions[session_id] = session
        return session

    async def load_session(
        self, cwd: str, session_id: str, mcp_servers: list[Any] | None = None, **kwargs: Any
    ) -> LoadSessionResponse:
        """A session kept in the workspace, its conversation replayed before the answer."""
        workspace = _workspace(cwd)
        session = await self._reopen(workspace, session_id, mcp_servers)
        for update in await asyncio.to_thread(transcript.replay, workspace, session_id):
            await self._send_update(session_id, update)
        session.outbox.post(available_commands())
        return LoadSessionResponse(modes=mode_state(session.mode), config_options=session_options(session))

    async def resume_session(
        self, cwd: str, session_id: str, mcp_servers: list[Any] | None = None, **kwargs: Any
    ) -> ResumeSessionResponse:
        """A kept session goes on where it was, nothing replayed (the client shows its own copy
        of the conversation)."""
        session = await self._reopen(_workspace(cwd), session_id, mcp_servers)
        session.outbox.post(available_commands())
        return ResumeSessionResponse(modes=mode_state(session.mode), config_options=session_options(session))

    async def _reopen(self, workspace: Path, session_id: str, mcp_servers: list[Any] | None) -> AcpSession:
        """A kept session opened again with its mode and files (one open already is replaced)."""
        meta = await asyncio.to_thread(transcript.read_meta, workspace, session_id)
        if meta is None:
            raise invalid_params(f"no session {session_id!r} is kept in {workspace}: session/list names them")
        old = self.sessions.get(session_id)
        if old is not None:
            await self._shut(old)
        session = self._open(workspace, session_id, mcp_servers)
        session.mode = parse_mode(meta.mode) or session.mode
        session.files, session.title = list(meta.files), meta.title
        return session

    async def close_session(self, session_id: str, **kwargs: Any) -> CloseSessionResponse:
        """The client is done with the session (a tab closed): its turn stops, its MCP servers
        close; it stays kept (session/list, load, resume)."""
        session = self.sessions.get(session_id)
        if session is None:
            raise invalid_params(f"unknown session {session_id!r}: nothing open to close")
        await self._shut(session)
        return CloseSessionResponse()

    async def delete_session(self, session_id: str, **kwargs: Any) -> DeleteSessionResponse:
        """Forget a session: closed if open, its kept conversation deleted from its workspace
        (session/delete: the SDK has no route for it, server.py answers it through screen.py)."""
        session = self.sessions.get(session_id)
        if session is not None:
            await self._shut(session)
        workspaces = [session.root] if session is not None else list(self.held)
        deleted = [await asyncio.to_thread(transcript.delete, root, session_id) for root in workspaces]
        if not any(deleted):
            raise invalid_params(f"no session {session_id!r} is kept here: session/list names them")
        return DeleteSessionResponse()

    async def delete_request(self, params: dict[str, Any]) -> dict[str, Any]:
        """`session/delete` as its raw params (screen.py hands it here), answered as a dict."""
        request = DeleteSessionRequest.model_validate(params)
        answer = await self.delete_session(request.session_id)
        return answer.model_dump(by_alias=True, exclude_none=True)

    async def _shut(self, session: AcpSession) -> None:
        """A session leaves the table: its running turn stops (settled, its run recorded) and
        its MCP servers close."""
        self.sessions.pop(session.id, None)
        running = session.running
        if running is not None and not running.done():
            session.cancelled.set()
            running.cancel()
            await settle([running], CLOSE_SECONDS)
        await session.mcp.aclose()

    async def list_sessions(
        self, cwd: str | None = None, cursor: str | None = None, **kwargs: Any
    ) -> ListSessionsResponse:
        """The sessions kept in `cwd` (else in every workspace open here), newest first; one
        page (a workspace keeps at most MAX_SESSIONS)."""
        workspaces = [_workspace(cwd)] if cwd is not None else list(self.held)
        found = [
            meta for workspace in workspaces for meta in await asyncio.to_thread(transcript.listed, workspace)
        ]
        found.sort(key=lambda meta: meta.updated_at, reverse=True)
        sessions = [
            SessionInfo(
                session_id=meta.session_id, cwd=meta.cwd, title=meta.title, updated_at=meta.updated_iso
            )
            for meta in found
        ]
        return ListSessionsResponse(sessions=sessions)

    def _app_for(self, workspace: Path) -> AcpHost:
        """The workspace's Application, built and warmed up (Aider, the index) at its first
        session, and again when the pool closed it meanwhile. The pool's bound is the settings'
        `maxOpenFolders` (the environment's: the same for every workspace)."""
        app = self.apps.use(workspace)
        if app is None:
            app = self.make_app(workspace, self.held.setdefault(workspace, HeldFiles()))
            self.apps.limit = max(1, app.settings.max_open_folders)
            self.apps.keep(workspace, app)
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
        """The session, on its workspace's Application as the pool holds it now."""
        session = self.sessions.get(session_id)
        if session is None:
            raise invalid_params(f"unknown session {session_id!r}: start one with session/new")
        session.app = self._app_for(session.root)
        return session

    # -- modes --------------------------------------------------------------------------------
    async def set_session_mode(self, mode_id: str, session_id: str, **kwargs: Any) -> SetSessionModeResponse:
        session = self._session(session_id)
        session.mode = _mode(mode_id)
        session.keep_meta()
        session.outbox.post(
            ConfigOptionUpdate(session_update="config_option_update", config_options=session_options(session))
        )
        return SetSessionModeResponse()

    async def set_config_option(
        self, config_id: str, session_id: str, value: str | bool, **kwargs: Any
    ) -> SetSessionConfigOptionResponse:
        session = self._session(session_id)
        try:
            set_option(session, config_id, value)
        except OptionError as exc:
            raise invalid_params(str(exc)) from exc
        session.keep_meta()
        if config_id == ISOLATION_OPTION and value == "worktree":  # the next turn starts at once
            self._keep(asyncio.create_task(session.app.prepare_isolated(), name="spare-worktree"))
        if config_id == MODE_OPTION:
            session.outbox.post(
                CurrentModeUpdate(session_update="current_mode_update", current_mode_id=session.mode)
            )
        return SetSessionConfigOptionResponse(config_options=session_options(session))

    # -- prompts ------------------------------------------------------------------------------
    async def prompt(self, prompt: list[Any], session_id: str, **kwargs: Any) -> PromptResponse:
        from . import prompt as prompt_content
        from .turns import run_turn  # the Application's models: imported at the first prompt

        session = self._session(session_id)
        await _stopped(session)
        if session.running is not None and not session.running.done():
            return await _as_note(session, prompt)
        prompt = _without_resent(session, prompt)
        request = prompt_content.parse_prompt(prompt, session.app.workspace, session.app.model_safe_files)
        _keep_prompt(session, prompt, request.text)
        spent_before = session.app.spent()
        session.outbox.new_turn()
        work = asyncio.create_task(run_turn(session, request), name=f"acp-prompt-{session_id}")
        session.running, session.cancelled = work, asyncio.Event()
        try:
            with self.apps.in_use(session.root):
                stop_reason = await _finished(work, session.cancelled)
        except asyncio.CancelledError:  # the connection is closing: the turn goes with it
            work.cancel()
            raise
        except Exception:  # answered as an error: what the turn showed is closed first
            await session.outbox.end_turn("stopped: the agent failed (its log says why)")
            raise
        session.cancelled_prompt = list(prompt) if stop_reason == "cancelled" else None
        if stop_reason == "cancelled" and not work.done():
            self._keep(work)  # the Application is still stopping Aider or the tests
            session.outbox.say(CANCELLED)  # the turn's own words would come after the answer
        await self._report_usage(session)
        await session.outbox.end_turn(
            "cancelled" if stop_reason == "cancelled" else "not finished when the turn ended"
        )
        session.keep_meta()
        from .render import turn_usage

        return PromptResponse(
            stop_reason=stop_reason, usage=turn_usage(session.app.spent().since(spent_before))
        )

    async def _report_usage(self, session: AcpSession) -> None:
        from .render import usage_update

        budget = session.app.settings.budget.max_tokens
        run, session.last_run = session.last_run, None
        session.outbox.post(usage_update(session.app.spent(), budget, run=run))

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
        """Stop every prompt still running and every Application (the client went away): the
        cancelled turns settle (a workflow records its run) while the Applications close, each
        within the pool's bound, its children killed past it."""
        turns = [session.running for session in self.sessions.values() if session.running is not None]
        for turn in turns:
            turn.cancel()
        await asyncio.gather(*(session.mcp.aclose() for session in self.sessions.values()))
        await asyncio.gather(settle(turns, CLOSE_SECONDS), self.apps.aclose())


async def _stopped(session: AcpSession) -> None:
    """A cancelled turn answered while it still stops Aider or the tests: the next prompt waits
    for it (CLOSE_SECONDS at most) rather than being refused, as a user who typed it expects."""
    running = session.running
    if running is not None and not running.done() and session.cancelled.is_set():
        await asyncio.wait([running], timeout=CLOSE_SECONDS)


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


def _without_resent(session: AcpSession, blocks: list[Any]) -> list[Any]:
    """The prompt without the cancelled one a client sends again in front of it.

    CodeCompanion does so on purpose ("if a user stops the request, be prepared to send the
    last message again"): after a cancel, the next `session/prompt` holds the cancelled blocks
    and then the new ones, and the cancelled request (an edit too) would run again. Sent alone,
    the same blocks are a retry the user asked for, and run."""
    resent, session.cancelled_prompt = session.cancelled_prompt, None
    if not resent or len(blocks) <= len(resent):
        return blocks
    if [_block(b) for b in blocks[: len(resent)]] != [_block(b) for b in resent]:
        return blocks
    log.info("the cancelled prompt was sent again in front of the next one: left out")
    return blocks[len(resent) :]


def _steer(session: AcpSession, note: str) -> str | None:
    """The note given to the turn's run(s); None when one took it, else why none did."""
    from .turns import running_runs

    if session.runs_before is None:
        refused = session.app.steer(None, note)
        return None if refused is None else refused.message
    started = [run_id for run_id in running_runs(session) if run_id not in session.runs_before]
    answers = [session.app.steer(run_id, note) for run_id in started]
    if any(answer is None for answer in answers):
        return None
    return answers[0].message if answers and answers[0] is not None else "its run has not started yet"


def _block(block: Any) -> Any:
    return block.model_dump(mode="json", exclude_none=True) if hasattr(block, "model_dump") else block


def _keep_prompt(session: AcpSession, blocks: list[Any], text: str) -> None:
    """The user's prompt joins the kept conversation (the client shows it already); the first
    one titles the session (said to the client: session_info_update)."""
    from acp import update_user_message

    if session.transcript is not None:
        for block in blocks:
            session.transcript.record(update_user_message(block))
    if session.title is None and text:
        session.title = transcript.title_of(text)
        now = datetime.now(UTC).isoformat(timespec="seconds").replace("+00:00", "Z")
        session.outbox.post(
            SessionInfoUpdate(session_update="session_info_update", title=session.title, updated_at=now)
        )


def _workspace(cwd: str) -> Path:
    """The session's workspace: `cwd` absolute and an existing folder, else invalid params."""
    if not isinstance(cwd, str) or not cwd or not os.path.isabs(cwd):
        raise invalid_params(f"cwd must be an absolute path, got {cwd!r}")
    path = Path(cwd).resolve()
    if not path.is_dir():
        raise invalid_params(f"cwd is not an existing folder: {cwd}")
    problem = not_a_project(path)  # avante sends the folder Neovim started in (often `~`)
    if problem is not None:
        raise invalid_params(f"cwd: {problem}: open the project's folder, or start the editor in it")
    return path


def _mode(value: object) -> Mode:
    mode = parse_mode(value)
    if mode is None:
        raise invalid_params(f"unknown mode {value!r}: one of {', '.join(m.value for m in Mode)}")
    return mode


async def _index(app: AcpHost) -> None:
    """Index the workspace in the background (the Edit turn's file pick reads it); a failure
    only logs."""
    try:
        await app.index_workspace()
    except Exception as exc:
        log.warning("indexing %s failed: %s", app.workspace, exc)


async def _as_note(session: AcpSession, prompt: list[Any]) -> PromptResponse:
    """A prompt sent while a turn runs: a note for the Workflow turn's run (its next edit
    carries it, said in the running turn): the run in place, or each isolated run the turn
    started (its attempts); else refused as before (the client may queue it)."""
    from .prompt import current_request  # the prompt's own modules: imported at the first prompt

    texts = [getattr(block, "text", "") for block in prompt if getattr(block, "text", None)]
    note = " ".join(current_request(texts)).strip()
    refused = _steer(session, note) if session.steering and note else None
    if not session.steering or not note or refused is not None:
        why = f" ({refused})" if refused is not None else ""
        raise invalid_params(f"a prompt is already running in this session: wait for it or cancel it{why}")
    session.outbox.say(f"Noted for the run's next edit: “{note}”.")
    await session.outbox.flush()  # said before this prompt is answered
    return PromptResponse(stop_reason="end_turn")
