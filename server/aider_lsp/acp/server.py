"""Serve the ACP agent on stdio until the client closes the pipe (or SIGTERM).

fd 1 is handed to the connection and redirected to stderr for everything else (Aider, a
library's print), so only ACP messages reach stdout. Settings come from the agent's
environment (`AIDER_LSP_MODEL`, `AIDER_LSP_BASE_URL`, `AIDER_LSP_AIDER_MODEL`, … as
settings.py reads them): nothing in a workspace chooses a model, an endpoint or a key.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import signal
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO, cast

from acp.core import DEFAULT_STDIO_BUFFER_LIMIT_BYTES

from acp import run_agent

from .agent import AiderAgent, invalid_params
from .screen import LocalRequest, screened

if TYPE_CHECKING:
    from acp.interfaces import Agent

    from ..app import Application
    from ..config.settings import Settings
    from ..models import UnsavedFiles

log = logging.getLogger(__name__)


def build_app(workspace: Path, unsaved_files: UnsavedFiles) -> Application:
    """The workspace's Application on the environment's settings (a bad one: invalid params);
    `unsaved_files`: those the running turns keep from Aider."""
    from ..app import Application

    return Application.for_server(workspace, current_settings(), unsaved_files)


def current_settings() -> Settings:
    """The environment's settings and the sign-in as they are now (a bad value: invalid params)."""
    from ..config.settings import SettingsError, load_settings

    try:
        return load_settings()
    except SettingsError as exc:
        raise invalid_params(f"aider-lsp's settings are invalid: {exc}") from exc


def serve_stdio() -> int:
    """Serve on stdio; 0 when the client closed the connection."""
    private = os.dup(1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    asyncio.run(_serve(private))
    return 0


async def _serve(stdout_fd: int) -> None:
    loop = asyncio.get_running_loop()
    stdin = asyncio.StreamReader(limit=DEFAULT_STDIO_BUFFER_LIMIT_BYTES)
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(stdin), sys.stdin)
    writer = await _writer(loop, stdout_fd, stdin)

    def answer(message: dict[str, Any]) -> None:
        writer.write(json.dumps(message).encode() + b"\n")

    agent = AiderAgent(build_app, current_settings)
    local: dict[str, LocalRequest] = {"session/delete": agent.delete_request}  # not routed by the SDK
    reader, screening = screened(stdin, answer, DEFAULT_STDIO_BUFFER_LIMIT_BYTES, local)
    main = asyncio.current_task()
    with contextlib.suppress(NotImplementedError, RuntimeError):
        if main is not None:
            loop.add_signal_handler(signal.SIGTERM, main.cancel)
    try:
        # the SDK routes to the methods the agent has (the rest answer "method not found"):
        # it asks for its full protocol only to type-check a complete agent; session/resume
        # and session/close are stable in the schema, "unstable" in SDK 0.12's router
        await run_agent(cast("Agent", agent), writer, reader, use_unstable_protocol=True)
    except asyncio.CancelledError:
        log.info("SIGTERM: closing")
    finally:
        screening.cancel()
        await agent.aclose()
        with contextlib.suppress(Exception):
            writer.close()


async def _writer(
    loop: asyncio.AbstractEventLoop, fd: int, reader: asyncio.StreamReader
) -> asyncio.StreamWriter:
    """A stream writer on the client's stdout: a pipe (how clients start agents), else a file
    written as it comes (a redirected stdout)."""
    pipe = os.fdopen(fd, "wb", buffering=0)
    protocol = asyncio.streams.FlowControlMixin()
    transport: asyncio.WriteTransport
    try:
        transport, _ = await loop.connect_write_pipe(lambda: protocol, pipe)
    except ValueError:  # not a pipe, socket or character device
        transport = _FileTransport(pipe)
    return asyncio.StreamWriter(transport, protocol, reader, loop)


class _FileTransport(asyncio.WriteTransport):
    """Writes straight to a file (stdout redirected to one): never blocks for long."""

    def __init__(self, stream: BinaryIO) -> None:
        super().__init__()
        self.stream = stream
        self._closing = False

    def write(self, data: bytes | bytearray | memoryview) -> None:
        if not self._closing:
            self.stream.write(data)

    def is_closing(self) -> bool:
        return self._closing

    def close(self) -> None:
        self._closing = True
        with contextlib.suppress(OSError):
            self.stream.close()
