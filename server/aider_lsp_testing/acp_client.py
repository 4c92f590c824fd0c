"""The editor's side of an ACP connection for the tests: a client that records every
session/update, answers permission requests from a script and serves its editor buffers; and
the agent run in this process over the SDK's in-memory transport pair.

Why in-process: the SDK's `memory_transport_pair` carries the same JSON-RPC messages as stdio
(each validated and routed by the SDK on both ends), so a test over it sees what a client
sees, in milliseconds, with the Application replaced by a fake (fake_app.py).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, TypeVar

from acp._transport import memory_transport_pair
from acp.agent.connection import AgentSideConnection
from acp.client.connection import ClientSideConnection
from acp.schema import (
    AgentMessageChunk,
    AllowedOutcome,
    ClientCapabilities,
    FileEditToolCallContent,
    PermissionOption,
    ReadTextFileResponse,
    RequestPermissionResponse,
    ToolCallProgress,
    ToolCallUpdate,
)

from aider_lsp.acp.agent import AiderAgent
from aider_lsp.acp.host import AcpHost
from aider_lsp.models import UnsavedFiles

U = TypeVar("U")


class RecordingClient:
    """The editor's side: keeps every session/update it is sent."""

    def __init__(self) -> None:
        self.updates: list[Any] = []
        self.answers: list[str] = []  # the options chosen, in turn, for permission requests
        self.asked: list[ToolCallUpdate] = []  # the permission requests' tool calls
        self.offered: list[list[str]] = []  # the option ids each request offered
        self.offered_names: list[list[str]] = []  # and their names, as a user reads them
        self.buffers: dict[str, str] = {}  # path → the editor's text (fs/read_text_file)
        self.read: list[str] = []  # the paths the agent read through fs/read_text_file
        self.before_answer: Callable[[], None] | None = None  # what the user does before answering
        self.thinking: asyncio.Event | None = None  # set: the user answers (unset: not yet)

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        self.updates.append(update)

    async def request_permission(
        self, options: list[PermissionOption], session_id: str, tool_call: ToolCallUpdate, **kwargs: Any
    ) -> RequestPermissionResponse:
        if self.before_answer is not None:
            self.before_answer()
        self.asked.append(tool_call)
        self.offered.append([option.option_id for option in options])
        self.offered_names.append([option.name for option in options])
        # an option's id is its kind: a client that reads the id alone (avante) reads it right
        assert all(option.option_id == option.kind for option in options), options
        if self.thinking is not None:
            await self.thinking.wait()
        chosen = self.answers.pop(0)
        assert chosen in self.offered[-1], (chosen, self.offered[-1])
        return RequestPermissionResponse(outcome=AllowedOutcome(outcome="selected", option_id=chosen))

    async def read_text_file(self, path: str, session_id: str, **kwargs: Any) -> ReadTextFileResponse:
        self.read.append(path)
        return ReadTextFileResponse(content=self.buffers.get(path) or Path(path).read_text())

    def on_connect(self, conn: Any) -> None:
        """Nothing to keep."""

    def of(self, kind: type[U]) -> list[U]:
        return [update for update in self.updates if isinstance(update, kind)]

    def reply(self) -> str:
        """The turn's message chunks as the client renders them: one text."""
        return "".join(
            chunk.content.text for chunk in self.of(AgentMessageChunk) if hasattr(chunk.content, "text")
        )

    def diffs(self) -> list[FileEditToolCallContent]:
        return [
            item
            for update in self.of(ToolCallProgress)
            for item in update.content or []
            if isinstance(item, FileEditToolCallContent)
        ]


MakeApp = Callable[[Path, UnsavedFiles], AcpHost]


@asynccontextmanager
async def in_process_agent(
    make_app: MakeApp, capabilities: ClientCapabilities | None = None
) -> AsyncIterator[tuple[ClientSideConnection, RecordingClient, AiderAgent]]:
    """The agent on `make_app`'s Applications, initialized, over an in-memory connection:
    (the client's connection, what the client received, the agent). Closed as `serve` closes it."""
    agent_end, client_end = memory_transport_pair()
    agent = AiderAgent(make_app)
    # the methods it has; session/resume and session/close are "unstable" in SDK 0.12's router
    agent_side = AgentSideConnection(agent, agent_end, use_unstable_protocol=True)  # type: ignore[arg-type]
    client = RecordingClient()
    conn = ClientSideConnection(client, client_end)  # type: ignore[arg-type]
    try:
        await conn.initialize(protocol_version=1, client_capabilities=capabilities or ClientCapabilities())
        yield conn, client, agent
    finally:
        await conn.close()
        await agent.aclose()
        await agent_side.close()
