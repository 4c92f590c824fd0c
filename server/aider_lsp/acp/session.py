"""One ACP session: its workspace's Application, its mode, its Aider chats, the prompt
running now, and the ordered way its updates reach the client."""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from acp.schema import AgentMessageChunk, TextContentBlock, ToolCallProgress, ToolCallStart

from acp import text_block, tool_content, update_agent_message_text, update_tool_call

from .buffers import HeldFiles
from .mcp_servers import McpServers
from .modes import DEFAULT_MODE, Mode
from .said import HeldCode, SaidSoFar
from .transcript import SessionMeta, Transcript
from .writing import CodeBeingWritten

if TYPE_CHECKING:
    from acp.interfaces import Client

    from ..models import WorkflowUsage
    from .host import AcpHost

log = logging.getLogger(__name__)

SendUpdate = Callable[[str, Any], Awaitable[None]]  # (session id, update): the connection's session_update
# what a turn shows (not the session's state: modes, options, commands, usage)
TURN_UPDATES = frozenset(
    {"agent_message_chunk", "agent_thought_chunk", "tool_call", "tool_call_update", "plan"}
)
CLOSED = ("completed", "failed")


class Outbox:
    """Updates sent in the order they were posted, from sync callbacks (a run's progress) and
    async code alike; `flush` waits until everything posted is sent.

    A turn runs from `new_turn` to `end_turn`: its end closes what it left open, and what it
    posts after that (a cancelled turn still stopping Aider) is not sent. Why: ACP wants every
    update of a turn before the prompt's answer, and a client takes what comes after the answer
    as part of the next turn, or renders it into the user's next prompt."""

    def __init__(
        self, session_id: str, send: SendUpdate, record: Callable[[Any], None] | None = None
    ) -> None:
        """`record` keeps each update as it is posted (the session's transcript)."""
        self.session_id = session_id
        self.send = send
        self.record = record
        self._queue: asyncio.Queue[Any] = asyncio.Queue()
        self._pump: asyncio.Task[None] | None = None
        self.said = SaidSoFar()  # the current turn's reply so far, as sent
        self.held = HeldCode()  # a code block of it not closed yet, not sent yet
        self.writing = CodeBeingWritten()  # that block shown as it grows (a tool call)
        self.open_calls: dict[str, None] = {}  # the turn's tool calls not closed yet, in order
        self.ended = False  # the turn was answered: nothing more of it is sent

    def new_turn(self) -> None:
        self.said.reset()
        self.held = HeldCode()
        self.writing = CodeBeingWritten()
        self.open_calls.clear()
        self.ended = False

    async def end_turn(self, why: str) -> None:
        """Close the turn as a client renders it, everything sent: each tool call still open
        failed with `why`, an open code block ended. Nothing of the turn is sent after it."""
        self.writing = CodeBeingWritten()  # its call, if shown, is open: failed below
        for call_id in list(self.open_calls):
            self.post(update_tool_call(call_id, status="failed", content=[tool_content(text_block(why))]))
        self._release()
        closing = self.said.closing()
        if closing:
            self.post(update_agent_message_text(closing))
        self.ended = True
        await self.flush()

    def say(self, text: str) -> None:
        """A message that stands on its own as markdown, whatever the reply said before it
        (a blank line first, an open code block closed)."""
        self._release()
        self.post(update_agent_message_text(self.said.separator() + text))

    def post(self, update: Any) -> None:
        """Send an update after those posted before it; a turn's message text streams as it
        comes, its code blocks once they close (said.HeldCode)."""
        if isinstance(update, AgentMessageChunk) and isinstance(update.content, TextContentBlock):
            text = self.held.take(update.content.text)
            for shown in self.writing.follow(self.held, time.monotonic()):
                self._post(shown)
            if not text:
                return
            update = update_agent_message_text(text)
        self._post(update)

    def _release(self) -> None:
        """What the reply holds back, sent now, its open block closed."""
        held = self.held.flush()
        for shown in self.writing.done():
            self._post(shown)
        if held:
            self._post(update_agent_message_text(held))

    def _post(self, update: Any) -> None:
        kind = getattr(update, "session_update", None)
        if self.ended and kind in TURN_UPDATES:
            log.info("not sent: a %s of a turn already answered", kind)
            return
        self._follow(update)
        if self.record is not None:
            self.record(update)
        self._queue.put_nowait(update)
        if self._pump is None or self._pump.done():
            self._pump = asyncio.get_running_loop().create_task(self._drain())

    def _follow(self, update: Any) -> None:
        """Keep what the turn's end needs: the reply's text, the tool calls still open."""
        if isinstance(update, AgentMessageChunk) and isinstance(update.content, TextContentBlock):
            self.said.feed(update.content.text)
        elif isinstance(update, (ToolCallStart, ToolCallProgress)):
            if update.status in CLOSED:
                self.open_calls.pop(update.tool_call_id, None)
            elif isinstance(update, ToolCallStart):
                self.open_calls[update.tool_call_id] = None

    async def _drain(self) -> None:
        while not self._queue.empty():
            update = self._queue.get_nowait()
            try:
                await self.send(self.session_id, update)
            except Exception as exc:  # the client went away: nothing more reaches it
                log.info("session/update not sent: %s", exc)
            finally:
                self._queue.task_done()

    async def flush(self) -> None:
        await self._queue.join()


@dataclass
class AcpSession:
    """What a session keeps between prompts."""

    id: str
    root: Path  # the workspace as the session named it: its Application's key in the pool
    app: AcpHost
    outbox: Outbox
    mode: Mode = DEFAULT_MODE
    edit_chat: str | None = None  # the kept Aider chat of Edit turns
    ask_chat: str | None = None  # and of Ask turns (Aider's ask format, a chat of its own)
    files: list[str] = field(default_factory=list)  # the files earlier turns pointed at
    running: asyncio.Task[Any] | None = None  # the prompt's work, cancelled by session/cancel
    cancelled: asyncio.Event = field(default_factory=asyncio.Event)  # session/cancel came for it
    cancelled_prompt: list[Any] | None = None  # the last turn's blocks, when it was cancelled
    tool_calls: int = 0
    calls_mark: str = field(default_factory=lambda: uuid.uuid4().hex[:6])  # this process's, in each id
    mcp: McpServers = field(default_factory=McpServers)  # the MCP servers the client passed
    client: Client | None = None  # the connection, to ask the user (session/request_permission)
    transcript: Transcript | None = None  # the kept conversation (session/load)
    title: str | None = None
    last_diff: str = ""  # what the session's last edit or run changed (/diff)
    last_run: WorkflowUsage | None = None  # the spend of the turn's workflow run, by kind of call
    max_retries: int = 3  # a Workflow turn's retries (a config option; the settings' at the start)
    # where a Workflow turn edits: the user's files, or a worktree of its own (a config option)
    isolation: Literal["none", "worktree"] = "none"
    # several attempts at a Workflow turn's goal, the tests choosing (config options; the settings')
    attempts: int = 1
    steering: bool = False  # a Workflow turn runs: a prompt meanwhile is a note for it
    # an isolated Workflow turn (a worktree, or attempts): the runs under way before it began;
    # the note goes to those it started (None: the turn runs in place)
    runs_before: frozenset[str] | None = None
    choose: Literal["first-green", "compare"] = "first-green"
    reads_buffers: bool = False  # the client offers fs/read_text_file (its editor buffers)
    held: HeldFiles = field(default_factory=HeldFiles)  # the workspace's files kept from Aider
    skipped: set[str] = field(default_factory=set)  # this turn's files the user kept from Aider

    def keep_meta(self) -> None:
        """Save what session/list shows and session/load restores."""
        if self.transcript is not None:
            meta = SessionMeta(
                self.id,
                str(self.app.workspace),
                title=self.title,
                mode=self.mode.value,
                files=list(self.files),
            )
            self.transcript.save_meta(meta)

    def next_call_id(self, kind: str) -> str:
        """A tool call id no earlier process of this session used: a client that keeps the
        conversation across restarts (avante keys its chat's entries by it) never has a new
        call replace an old one."""
        self.tool_calls += 1
        return f"{kind}-{self.tool_calls}-{self.calls_mark}"
