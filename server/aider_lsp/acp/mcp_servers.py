"""The MCP servers a client passes with `session/new` (Zed passes its context servers to every
agent), given to the planning/analysis model as tools.

Each server becomes a pydantic-ai `MCPToolset` (FastMCP's client: stdio, streamable HTTP or
SSE), its tools prefixed with the server's name so two servers never clash. A server is opened
once for the session by a task of its own (the MCP client's task groups must close in the task
that opened them) and stays open until the session ends, when its process ends with it.
`session/new` does not wait for them: the first Workflow turn does (at most START_SECONDS) and
names every server that did not start, so none is ignored in silence. Ask and Edit turns are
Aider's alone and do not use them.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from acp.schema import HttpMcpServer, McpServerStdio, SseMcpServer

log = logging.getLogger(__name__)

START_SECONDS = 30.0  # a server not answering its tool list by then is named as not started
STOP_SECONDS = 5.0


def _safe_name(name: str) -> str:
    """A tool-name prefix providers accept (letters, digits, `_`, `-`)."""
    return re.sub(r"[^A-Za-z0-9_-]+", "_", name).strip("_") or "mcp"


def _toolset(server: Any, workspace: Path) -> Any:
    """The pydantic-ai toolset for one server the client passed (imports FastMCP: call it off
    the event loop); ValueError for a kind this agent does not take."""
    from fastmcp.client.transports import SSETransport, StdioTransport, StreamableHttpTransport
    from pydantic_ai.mcp import MCPToolset

    transport: Any
    if isinstance(server, McpServerStdio):
        env = {item.name: item.value for item in server.env}
        transport = StdioTransport(
            server.command,
            list(server.args),
            env=env,
            cwd=str(workspace),
            keep_alive=False,
            log_file=sys.stderr,
        )
    elif isinstance(server, HttpMcpServer):
        transport = StreamableHttpTransport(server.url, headers={h.name: h.value for h in server.headers})
    elif isinstance(server, SseMcpServer):
        transport = SSETransport(server.url, headers={h.name: h.value for h in server.headers})
    else:
        kind = getattr(server, "type", type(server).__name__)
        raise ValueError(f"a {kind!r} MCP server is not supported (stdio, http and sse are)")
    return MCPToolset(transport, tool_error_behavior="failed").prefixed(_safe_name(server.name))


@dataclass
class _Server:
    name: str
    toolset: Any = None
    ready: asyncio.Future[int] | None = None  # the number of tools, once open
    owner: asyncio.Task[None] | None = None
    problem: str | None = None  # why it is not available


@dataclass
class McpServers:
    """One session's MCP servers: opened in the background, closed with the session."""

    servers: list[_Server] = field(default_factory=list)
    stop: asyncio.Event = field(default_factory=asyncio.Event)
    reported: bool = False  # the failures were named in a reply already

    @classmethod
    def start(cls, passed: list[Any], workspace: Path) -> McpServers:
        """Start opening each server the client passed (none: nothing to do)."""
        found = cls()
        for server in passed:
            entry = _Server(name=str(getattr(server, "name", "?")))
            entry.ready = asyncio.get_running_loop().create_future()
            entry.owner = asyncio.create_task(
                found._keep_open(entry, server, workspace), name=f"mcp-{entry.name}"
            )
            found.servers.append(entry)
        return found

    async def _keep_open(self, entry: _Server, server: Any, workspace: Path) -> None:
        """Open the server, list its tools, and hold it open until the session ends."""
        assert entry.ready is not None
        try:
            entry.toolset = await asyncio.to_thread(_toolset, server, workspace)
            async with entry.toolset:
                tools = await entry.toolset.wrapped.list_tools()
                entry.ready.set_result(len(tools))
                log.info("MCP server %s: %d tools", entry.name, len(tools))
                await self.stop.wait()
        except asyncio.CancelledError:
            raise
        except BaseException as exc:  # an ExceptionGroup from the client's task group too
            entry.problem = _why(exc)
            log.warning("MCP server %s did not start: %s", entry.name, entry.problem)
        finally:
            if not entry.ready.done():
                entry.ready.set_result(0)

    async def ready(self) -> list[str]:
        """Wait (at most START_SECONDS) until every server is open or failed; the failures as
        "name: why", once per session (later calls: [])."""
        pending = [entry.ready for entry in self.servers if entry.ready is not None]
        if pending:
            await asyncio.wait(pending, timeout=START_SECONDS)
        for entry in self.servers:
            if entry.problem is None and not (entry.ready and entry.ready.done()):
                entry.problem = f"no answer within {START_SECONDS:g} s"
        if self.reported:
            return []
        self.reported = True
        return [f"{entry.name}: {entry.problem}" for entry in self.servers if entry.problem]

    @property
    def toolsets(self) -> list[Any]:
        """The toolsets of the servers open now."""
        return [
            entry.toolset
            for entry in self.servers
            if entry.problem is None and entry.ready is not None and entry.ready.done()
        ]

    async def aclose(self) -> None:
        """Close every server (its process ends): the session is over."""
        self.stop.set()
        owners = [entry.owner for entry in self.servers if entry.owner is not None]
        if not owners:
            return
        _, stuck = await asyncio.wait(owners, timeout=STOP_SECONDS)
        for task in stuck:
            task.cancel()
        if stuck:
            with contextlib.suppress(BaseException):
                await asyncio.wait(stuck, timeout=STOP_SECONDS)


def _why(exc: BaseException) -> str:
    """The first real error inside an exception group, as one line."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0]}" if text else type(exc).__name__
