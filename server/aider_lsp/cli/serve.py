"""`aider-lsp serve [--tcp HOST:PORT]`: the language server, on stdio (how editors start it) or
on TCP (debugging). The LSP front end is imported here, when it runs, never by the other
subcommands."""

from __future__ import annotations

import sys


def serve(tcp: str | None) -> int:
    """Serve until the editor exits: 0; 1 when the TCP port cannot be listened on; 2 for a
    malformed --tcp."""
    from ..lsp.logging_setup import install_log_filters

    install_log_filters()
    from ..lsp.server import serve_stdio, serve_tcp

    if tcp:
        host, _, port = tcp.rpartition(":")
        if not port.isdigit() or not 0 <= int(port) <= 65535:
            print(f"aider-lsp: --tcp wants HOST:PORT with a port 0-65535, got {tcp!r}", file=sys.stderr)
            return 2
        try:
            serve_tcp(host.strip("[]") or "127.0.0.1", int(port))
        except OSError as exc:  # port in use, unknown host
            print(f"aider-lsp: cannot listen on {tcp}: {exc}", file=sys.stderr)
            return 1
    else:
        return serve_stdio()
    return 0
