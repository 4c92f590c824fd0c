"""The server's life: initialize records the workspace folders, initialized loads the application,
reads the settings, opens the first folder and starts its index (the other folders open on first
use: lsp/workspace.py); shutdown (or SIGTERM) closes every folder's Aider server and process group.

Answering initialize needs only pygls: the application (pydantic, the services) is imported when
`initialized` arrives, so an editor gets its answer as soon as pygls could give one.
"""

from __future__ import annotations

import asyncio
import logging
import os
import signal
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, BinaryIO

from lsprotocol import types

from . import cancellation, configuration, indexing, workspace

if TYPE_CHECKING:
    from .language_server import AiderLanguageServer

log = logging.getLogger(__name__)


def exit_cleanly_on_sigterm(ls: AiderLanguageServer) -> None:
    """SIGTERM (an editor stopping us, a session ending) cancels the commands still running
    and closes the Aider server and its process group before exiting, as shutdown would; the
    default would leave it running."""
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        return

    async def terminate() -> None:
        log.info("SIGTERM: closing and exiting")
        cancellation.cancel_pending_requests(ls.protocol)
        await workspace.close_all(ls)
        logging.shutdown()
        os._exit(0)

    try:
        loop.add_signal_handler(signal.SIGTERM, lambda: ls.keep_task(loop.create_task(terminate())))
    except (NotImplementedError, RuntimeError, ValueError):  # not the main thread / no signals here
        pass


class PipeToClient:
    """The stdout pipe to the editor. An editor may close it without waiting for our last
    answers (the shutdown answer, a progress end): later writes are dropped, with one log
    line, instead of a BrokenPipeError traceback from each."""

    def __init__(self, fd: int) -> None:
        self.stream = os.fdopen(fd, "wb", buffering=0)
        self.closed_by_client = False

    def write(self, data: bytes) -> None:
        if self.closed_by_client:
            return
        try:
            self.stream.write(data)
        except (BrokenPipeError, ConnectionResetError, ValueError):  # ValueError: closed file
            self.closed_by_client = True
            log.info("the client closed the connection; dropping what is left to send")

    def flush(self) -> None:
        """Unbuffered: nothing to flush."""

    def close(self) -> None:
        try:
            self.stream.close()
        except OSError:  # the client closed it first
            pass


async def start_session(ls: AiderLanguageServer) -> None:
    """The editor's settings, then the index and Aider's start-up, in the background."""
    try:
        await configuration.pull_configuration(ls)
    finally:
        ls.configured.set()
    configuration.show_settings_problem(ls)
    indexing.start_watching(ls)
    for app in list(ls.folders.apps.values()):  # the first folder's: the first edit should not wait
        workspace.start_services(ls, app)  # background, with $/progress


class ScreenedInput:
    """The stdin pipe from the editor, each message body screened (protocol.screen_body)
    before pygls parses it: pygls reads headers with `readline` and a body with `read(n)`."""

    def __init__(self, stream: BinaryIO, screen: Callable[[bytes], bytes]) -> None:
        self.stream = stream
        self.screen = screen

    def readline(self) -> bytes:
        return self.stream.readline()

    def read(self, size: int) -> bytes:
        return self.screen(self.stream.read(size))


def register(server: AiderLanguageServer) -> None:
    @server.feature(types.INITIALIZE)
    def on_initialize(ls: AiderLanguageServer, params: types.InitializeParams) -> None:
        options = params.initialization_options
        ls.init_options = dict(options) if isinstance(options, dict) else {}
        ls.folders.add(workspace.initial_folders(params))
        exit_cleanly_on_sigterm(ls)

    @server.feature(types.INITIALIZED)
    def on_initialized(ls: AiderLanguageServer, params: types.InitializedParams) -> None:
        """Synchronous, so the settings and the Application exist before the next message."""
        from . import runtime  # noqa: F401  the command machinery, now rather than at the first command

        configuration.apply_settings(ls, ls.init_options)
        assert ls.settings is not None  # applied just above
        ls.folders.apps.limit = ls.settings.max_open_folders  # read once: a later change needs a restart
        workspace.open_first_folder(ls)
        ls.keep_task(asyncio.create_task(start_session(ls), name="aider-lsp-start"))

    @server.feature(types.SHUTDOWN)
    async def on_shutdown(ls: AiderLanguageServer, params: Any = None) -> None:
        await workspace.close_all(ls)
