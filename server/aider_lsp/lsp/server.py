"""The one language server: created here, given its features, served on stdio or TCP.

Each feature module has a `register(server)` that adds its handlers; a new feature
(diagnostics, code actions…) is one line in FEATURES. A new command is one CommandSpec
in lsp/commands.py.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from typing import BinaryIO, cast

from . import (
    code_actions,
    command_handlers,
    configuration,
    documents,
    indexing,
    lifecycle,
    protocol,
    workspace,
)
from .language_server import AiderLanguageServer

FEATURES: list[Callable[[AiderLanguageServer], None]] = [
    lifecycle.register,  # initialize, initialized, shutdown, SIGTERM
    configuration.register,  # didChangeConfiguration
    workspace.register,  # didChangeWorkspaceFolders: a folder's Application made on use, closed on removal
    documents.register,  # didOpen / didChange / didSave / didClose
    indexing.register,  # watched files, renames
    command_handlers.register,  # workspace/executeCommand: every CommandId, run by runtime.py
    code_actions.register,  # Fix with Aider, Run Aider workflow, Edit selection with Aider
]

server = AiderLanguageServer()
for register in FEATURES:
    register(server)


def serve_stdio() -> int:
    """Serve on stdio; fd 1 is handed to the transport and redirected to stderr for all else.

    Returns the exit code: 1 after `exit` without `shutdown` (LSP), else 0."""
    transport = lifecycle.PipeToClient(os.dup(1))
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    stdin = lifecycle.ScreenedInput(sys.stdin.buffer, protocol.screen_body)  # pygls: readline and read
    server.start_io(cast(BinaryIO, stdin), cast(BinaryIO, transport))  # pygls calls write/flush/close only
    return server.protocol.exit_code


def serve_tcp(host: str, port: int) -> None:
    server.start_tcp(host, port)
