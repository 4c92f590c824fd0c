"""The Aider MCP server as a child process with one persistent MCP session over its stdio.

Why persistent: starting Aider costs seconds (imports, litellm); a warm session edits in
milliseconds plus the LLM's time. The server runs in its own process group, its stderr goes
to a temp log (its tail is shown with a failure). Each call pings first (a server killed
since the last call is caught before a request is sent), runs under the caller's deadline,
and stops the server on a timeout, a broken connection or a cancellation, so that the next
call starts a new one and a cancelled edit cannot land later. The caller (the bridge) runs
one call at a time. This module imports mcp (through mcp_sdk): the bridge imports it on
first use only.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

from .failures import CallContext, ServerStartError, classify, describe
from .launch import LaunchSpec
from .mcp_sdk import (
    ClientSession,
    SessionMessage,
    anyio,
    mcp_types,
    terminate_posix_process_tree,
)
from .results import CallFailure, ToolReply
from .spawn import Spawned, discard, spawn

log = logging.getLogger(__name__)

STDERR_TAIL_BYTES = 4000
PING_SECONDS = 5.0
WARM_UP_QUERY = "aider-lsp warm-up"  # list_models with a name no model has: a cheap first tool call
WARM_UP_CALL_SECONDS = 60.0  # Aider's own warm-up, which that call waits for, takes seconds
STDIN_CLOSE_GRACE = 0.3  # the bundled server exits at once when its stdin closes
SIGTERM_GRACE = 1.0  # then the group gets SIGTERM, and SIGKILL after this
STOP_WAIT_SECONDS = 6.0

_STDOUT_CLOSED = (anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError, OSError)
_STDIN_CLOSED = (anyio.ClosedResourceError, anyio.BrokenResourceError, OSError)


def _tail(path: Path) -> str:
    """The end of the server's stderr log ("" when it is gone)."""
    try:
        data = path.read_bytes()[-STDERR_TAIL_BYTES:]
    except OSError:
        return ""
    return data.decode("utf-8", errors="replace").strip()


@dataclass
class _Connection:
    """A running server: its process, the MCP session, and the task that owns both."""

    spec: LaunchSpec
    process: Any
    session: ClientSession
    owner: asyncio.Task[None]
    stop: asyncio.Event
    stderr_path: Path
    closed: asyncio.Event = field(default_factory=asyncio.Event)

    @property
    def alive(self) -> bool:
        return self.process.returncode is None and not self.closed.is_set()

    def stderr_tail(self) -> str:
        return _tail(self.stderr_path)


@dataclass
class _Start:
    """What the owner task of a server being started shares with the caller of `_start`."""

    spec: LaunchSpec
    process: Any
    stderr_path: Path
    ready: asyncio.Future[_Connection]
    stop: asyncio.Event
    conn: _Connection | None = None


@dataclass
class _CallState:
    """How far a call got: starting the server, or calling the tool on it."""

    stage: str = "start"
    conn: _Connection | None = None


class ServerSession:
    """One persistent server and session; `call` starts (or restarts) it as needed."""

    def __init__(self) -> None:
        self._conn: _Connection | None = None
        self._stopping: list[_Connection] = []  # servers being stopped (by `stop`, not yet gone)
        self.starts = 0  # how many servers were started (restarts are visible)

    @property
    def pid(self) -> int | None:
        """The running server's pid (tests kill it to check the restart)."""
        conn = self._conn
        return conn.process.pid if conn is not None and conn.alive else None

    @property
    def running(self) -> bool:
        return self._conn is not None

    # -- calls -----------------------------------------------------------------------------
    async def call(
        self,
        spec: LaunchSpec,
        tool_name: str,
        params: dict[str, Any],
        deadline: float,
        on_text: Callable[[str], None] | None = None,
    ) -> ToolReply | CallFailure:
        """Call one tool within `deadline` seconds (server start included); a failure is
        classified, never raised, except cancellation, which stops the server first.
        `on_text` takes the messages of the call's progress notifications (the bundled
        server's pieces of Aider's reply); without it the server is asked for none."""
        state = _CallState()
        progress = _progress_messages(on_text) if on_text is not None else None
        try:
            async with asyncio.timeout(deadline):
                state.conn = await self._ensure(spec)
                state.stage = "call"
                result = await state.conn.session.call_tool(tool_name, params, progress_callback=progress)
        except asyncio.CancelledError:
            # a cancelled edit must not land later: stop the server with it
            await asyncio.shield(self.stop())
            raise
        except Exception as exc:
            return await self._failed(
                exc, CallContext(tool_name, state.stage, spec.command, deadline, *self._state(state))
            )
        texts = tuple(block.text for block in result.content if isinstance(block, mcp_types.TextContent))
        return ToolReply(texts, bool(result.is_error))

    def _state(self, state: _CallState) -> tuple[bool, str]:
        """(alive, stderr tail) of the server the failed call was talking to."""
        conn = state.conn or self._conn
        return (state.conn is None or state.conn.alive), (conn.stderr_tail() if conn else "")

    async def _failed(self, exc: Exception, where: CallContext) -> CallFailure:
        failure = classify(exc, where)
        if failure.server_broken:
            await self.stop()
        return failure

    async def warm_up(self, spec: LaunchSpec, deadline: float, early: Spawned | None = None) -> bool:
        """Start the server ahead of the first call (`early`: its process, already spawned);
        False (and nothing left running) when it failed."""
        try:
            async with asyncio.timeout(deadline):
                conn = await self._ensure(spec, early)
                # the client lists the tools before its first call (to check results against
                # their schemas), and the server's first tool call is slow (its worker thread,
                # Aider's warm-up it waits for): both now, not on the first edit
                await conn.session.list_tools()
            await self._first_call(conn)
            return True
        except Exception as exc:
            log.warning("could not pre-start the Aider MCP server: %s", describe(exc))
            await self.stop()
            return False

    async def _first_call(self, conn: _Connection) -> None:
        """A cheap tool call, bounded: a server that does not know it or is slow to answer is
        left to the first real call's own deadline, never stopped by the warm-up."""
        try:
            async with asyncio.timeout(WARM_UP_CALL_SECONDS):
                await conn.session.call_tool("list_models", {"substring": WARM_UP_QUERY})
        except Exception as exc:
            log.info("the Aider server's first tool call during warm-up: %s", describe(exc))

    async def _ensure(self, spec: LaunchSpec, early: Spawned | None = None) -> _Connection:
        """The running connection for `spec`: a dead, unresponsive or differently launched
        server is stopped and a new one started (`early`'s process when it was spawned ahead)."""
        conn = self._conn
        if conn is not None and (not conn.alive or conn.spec != spec or not await self._responsive(conn)):
            await self.stop()
            conn = None
        if conn is None:
            conn = await self._start(spec, early)
            self._conn = conn
        return conn

    async def _responsive(self, conn: _Connection) -> bool:
        """A ping before each call: a server killed since the last call is caught here,
        before a request is sent to it (its exit may not have been noticed yet)."""
        try:
            with anyio.fail_after(PING_SECONDS):
                await conn.session.send_ping()
            return conn.alive
        except Exception as exc:  # no answer: the caller starts a new server
            log.debug("the Aider server did not answer a ping: %s", describe(exc))
            return False

    # -- process lifecycle -----------------------------------------------------------------
    async def _start(self, spec: LaunchSpec, early: Spawned | None = None) -> _Connection:
        """Spawn the server in its own process group (or adopt `early`, spawned ahead for
        this very spec) and initialise an MCP session."""
        if early is not None and early.spec != spec:
            discard(early)
            early = None
        spawned = early or await spawn(spec)
        process, stderr_path = spawned.process, spawned.stderr_path
        self.starts += 1
        start = _Start(
            spec, process, stderr_path, asyncio.get_running_loop().create_future(), asyncio.Event()
        )
        owner = asyncio.create_task(_own(start), name="aider-mcp-session")
        try:
            return await asyncio.shield(start.ready)
        except BaseException:
            start.stop.set()
            _kill_group(process.pid, signal.SIGKILL)
            with contextlib.suppress(BaseException):
                await asyncio.wait_for(asyncio.shield(owner), 5)
            raise

    async def stop(self) -> None:
        """Stop the server and its process group; the next call starts a new one.

        Returns once every stop under way has ended too. Why: a cancelled edit starts the
        stop (`call`), and the shutdown's stop right after found no server and returned at
        once; the process then exited while the server was still being stopped, and a server
        busy in an edit (not reading its stdin) outlived it. A server that has not ended within
        STOP_WAIT_SECONDS has its group killed. The caller's cancellation is not swallowed."""
        conn, self._conn = self._conn, None
        if conn is not None:
            conn.stop.set()
            self._stopping.append(conn)
        for stopping in list(self._stopping):
            try:
                await asyncio.wait_for(asyncio.shield(stopping.owner), STOP_WAIT_SECONDS)
            except TimeoutError:
                log.warning("the Aider MCP server %d did not stop in time: killed", stopping.process.pid)
                _kill_group(stopping.process.pid, signal.SIGKILL)
            except Exception as exc:  # the owner's own failure: it has ended, its group with it
                log.debug("the Aider server's owner ended with: %s", describe(exc))
            self._stopping = [other for other in self._stopping if other is not stopping]
            with contextlib.suppress(OSError):
                stopping.stderr_path.unlink()

    def kill(self) -> None:
        """SIGKILL the group of every server not yet seen to end: the last resort when closing
        took too long. Synchronous, so nothing can keep it from running."""
        for conn in [self._conn, *self._stopping]:
            if conn is not None and not conn.owner.done():
                _kill_group(conn.process.pid, signal.SIGKILL)


def _progress_messages(on_text: Callable[[str], None]) -> Any:
    """A progress callback handing each notification's message on (its numbers say nothing
    here). It runs before the call's answer is read: the pieces arrive in order, then the end."""

    async def progress(progress: float, total: float | None, message: str | None) -> None:
        if message:
            on_text(message)

    return progress


async def _own(start: _Start) -> None:
    """Owner task: pumps the pipes, holds the session open until told to stop.

    Why not the SDK's `stdio_client`, which also starts the server in a new session and
    stops it by closing stdin, then SIGTERM and SIGKILL of the group: it does not hand out
    the process, so the bridge could neither tell that the server died (`alive`, checked
    before each call without a round trip) nor name its pid (`server_pid`), and its fixed
    grace periods (2 s + 2 s) slow down a cancelled edit. What is kept here is only that:
    the pipe pumps around our own process; the environment and the group kill are the SDK's.
    """
    try:
        await _serve(start)
    except BaseException as exc:
        if not start.ready.done():
            start.ready.set_exception(ServerStartError(describe(exc)))
    finally:
        if start.conn is not None:
            start.conn.closed.set()
        await _terminate(start.process)
        _settle_start(start)


async def _serve(start: _Start) -> None:
    """Run the pipe pumps and the MCP session until `start.stop` is set."""
    read_send, read_recv = anyio.create_memory_object_stream[SessionMessage | Exception](16)
    write_send, write_recv = anyio.create_memory_object_stream[SessionMessage](16)

    async def read() -> None:
        await _pump_stdout(start.process, read_send)
        if start.conn is not None:
            start.conn.closed.set()

    async with anyio.create_task_group() as group:
        group.start_soon(read)
        group.start_soon(_pump_stdin, start.process, write_recv)
        try:
            async with ClientSession(read_recv, write_send) as session:
                await session.initialize()
                owner = cast("asyncio.Task[None]", asyncio.current_task())  # the owner task itself
                start.conn = _Connection(
                    start.spec, start.process, session, owner, start.stop, start.stderr_path
                )
                start.ready.set_result(start.conn)
                await start.stop.wait()
        finally:
            group.cancel_scope.cancel()


async def _pump_stdout(process: Any, send: Any) -> None:
    """Server stdout → session: one JSON-RPC message a line; a stray print is an error item."""
    buffer = b""
    async with send:
        with contextlib.suppress(*_STDOUT_CLOSED):
            while True:
                buffer += await process.stdout.receive()
                *lines, buffer = buffer.split(b"\n")
                for line in lines:
                    if line.strip():
                        await send.send(_message(line))


def _message(line: bytes) -> SessionMessage | Exception:
    try:
        return SessionMessage(mcp_types.jsonrpc_message_adapter.validate_json(line))
    except ValueError as exc:  # a stray print on the server's stdout
        log.warning("aider server wrote non-JSON-RPC to stdout: %r", line[:200])
        return exc


async def _pump_stdin(process: Any, receive: Any) -> None:
    """Session → server stdin, one JSON line per message."""
    async with receive:
        with contextlib.suppress(*_STDIN_CLOSED):
            async for message in receive:
                data = message.message.model_dump_json(by_alias=True, exclude_unset=True)
                await process.stdin.send((data + "\n").encode("utf-8"))


def _settle_start(start: _Start) -> None:
    """After the owner ends: a start that never got ready fails with the server's stderr
    tail; the log of a server that never ran a session is removed."""
    if not start.ready.done():
        start.ready.set_exception(ServerStartError("the Aider MCP server exited during start"))
    if start.conn is not None:
        return
    error = start.ready.exception() if not start.ready.cancelled() else None
    if isinstance(error, ServerStartError):
        error.stderr_tail = _tail(start.stderr_path)
    with contextlib.suppress(OSError):
        start.stderr_path.unlink()


async def _terminate(process: Any) -> None:
    """Close stdin (the server's cue to exit), then the SDK's SIGTERM → SIGKILL of the
    whole process group, strays included even when the server itself already exited."""
    with anyio.CancelScope(shield=True):
        with contextlib.suppress(Exception):
            await process.stdin.aclose()
        with anyio.move_on_after(STDIN_CLOSE_GRACE):
            while process.returncode is None:
                await anyio.sleep(0.02)
        await terminate_posix_process_tree(process, SIGTERM_GRACE)


def _kill_group(pid: int, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, sig)
