"""The mcp client SDK (and anyio), imported here and nowhere else in aider_lsp.

Why one module: mcp and anyio take ~0.7 s to import, so they stay off the server's start-up
path. Only the modules that talk to the server process (session.py, failures.py) import this
one, and the bridge imports those on first use, in one place (`AiderBridge._server`); the
Application pre-imports it in a worker thread after `initialized` (`AiderBridge.preload`).
"""

from __future__ import annotations

import anyio
import mcp.types as mcp_types
from mcp.client.session import ClientSession
from mcp.os.posix.utilities import terminate_posix_process_tree
from mcp.shared.exceptions import MCPError
from mcp.shared.message import SessionMessage

__all__ = [
    "ClientSession",
    "MCPError",
    "SessionMessage",
    "anyio",
    "mcp_types",
    "terminate_posix_process_tree",
]
