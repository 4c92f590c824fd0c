"""`aider-lsp acp`: the Agent Client Protocol agent on stdio, for the editors that host coding
agents (Zed, JetBrains, Neovim, Emacs, VS Code's ACP client). The ACP front end is imported
here, when it runs, never by the other subcommands."""

from __future__ import annotations


def serve_acp() -> int:
    """Serve until the client closes the connection: 0."""
    from ..acp.server import serve_stdio

    return serve_stdio()
