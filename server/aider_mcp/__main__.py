"""`python -m aider_mcp --cwd DIR --model MODEL`: the bundled Aider MCP server over stdio.

Aider and litellm print to stdout, and mcp 1.x's stdio transport does not protect it, so fd 1
is pointed at stderr before anything is imported and the transport gets a private duplicate of
the original stdout. stdin likewise: the transport keeps a private copy and fd 0 becomes
/dev/null, so nothing in Aider can ever read the JSON-RPC stream.
"""

from __future__ import annotations

import contextlib
import os
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import argparse

    from .engine import AiderEngine


def _private_stdio() -> tuple[int, int]:
    """Return private (stdin, stdout) fds for the transport; fd 0/1 become /dev/null/stderr."""
    transport_in = os.dup(0)
    transport_out = os.dup(1)
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.close(devnull)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    return transport_in, transport_out


def main(argv: list[str] | None = None) -> int:
    transport_in, transport_out = _private_stdio()  # before anything that might print is imported

    import logging
    import threading
    from pathlib import Path

    args = _parse_args(argv)
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
    cwd = Path(args.cwd).expanduser().resolve()
    if not cwd.is_dir():
        print(f"aider_mcp: --cwd {cwd} is not a directory", file=sys.stderr)
        return 2
    os.chdir(cwd)

    from .engine import AiderEngine, EngineConfig, secret_patterns_from_env

    engine = AiderEngine(
        EngineConfig(
            cwd=cwd,
            model=args.model,
            edit_format=args.edit_format,
            map_tokens=args.map_tokens,
            retry_timeout=args.retry_timeout,
            max_output_tokens=args.max_output_tokens,
            allow_outside_edits=args.allow_outside_edits,
            secret_patterns=secret_patterns_from_env(),
        )
    )
    # the language server may die without closing our stdin first (SIGKILL, OOM): an orphan
    # would go on editing files nobody will see reported nor be able to undo
    threading.Thread(target=_exit_with_parent, args=(os.getppid(),), daemon=True).start()
    if not args.no_warm_up:
        # import Aider/litellm while the client initialises: the first edit is not cold
        threading.Thread(target=_warm, args=(engine,), daemon=True).start()
    _serve(engine, transport_in, transport_out)
    return 0


def _parse_args(argv: list[str] | None) -> argparse.Namespace:
    """The launch options: the project, the model and how Aider edits."""
    import argparse

    parser = argparse.ArgumentParser(prog="aider_mcp", description=__doc__)
    parser.add_argument("--cwd", default=".", help="the project directory Aider edits")
    parser.add_argument("--model", default=os.environ.get("AIDER_MODEL", "gpt-4.1"))
    parser.add_argument("--edit-format", default=None, help="whole, diff, udiff, … (default: the model's)")
    parser.add_argument("--map-tokens", type=int, default=0, help="repo map size (0 = off)")
    parser.add_argument("--retry-timeout", type=float, default=10.0, help="max LLM retry backoff, seconds")
    parser.add_argument(
        "--max-output-tokens", type=int, default=0, help="the longest reply the model may write (0 = its own)"
    )
    parser.add_argument(
        "--allow-outside-edits",
        action="store_true",
        help="let Aider edit existing files that are not in the editable list (new files are always allowed)",
    )
    parser.add_argument("--no-warm-up", action="store_true", help="do not preload Aider at start")
    return parser.parse_args(argv)


def _serve(engine: AiderEngine, transport_in: int, transport_out: int) -> None:
    """Answer MCP on the private copies of stdin/stdout until the client closes them."""
    from io import TextIOWrapper

    import anyio
    from mcp.server.stdio import stdio_server

    from .server import build_server

    app = build_server(engine)
    stdin = anyio.wrap_file(TextIOWrapper(os.fdopen(transport_in, "rb"), encoding="utf-8", errors="replace"))
    stdout = anyio.wrap_file(TextIOWrapper(os.fdopen(transport_out, "wb"), encoding="utf-8"))

    async def serve() -> None:
        async with stdio_server(stdin=stdin, stdout=stdout) as (read_stream, write_stream):
            low = app._mcp_server
            await low.run(read_stream, write_stream, low.create_initialization_options())

    with contextlib.suppress(KeyboardInterrupt):
        anyio.run(serve)


def _exit_with_parent(parent: int, interval: float = 0.5) -> None:
    """Exit at once when the process that started us is gone (we were re-parented)."""
    import time

    while os.getppid() == parent:
        time.sleep(interval)
    print("aider_mcp: the language server is gone; exiting", file=sys.stderr)
    os._exit(1)


def _warm(engine: object) -> None:
    try:
        engine.warm_up_in_background()  # type: ignore[attr-defined]
    except Exception as exc:  # reported again, as {"error"}, by the first call
        print(f"aider_mcp: warm-up failed: {exc}", file=sys.stderr)


def _exit_now(code: int) -> None:
    """End the process at once once the client closed the transport: stderr flushed, no
    interpreter teardown and no atexit handlers (litellm's close its async HTTP clients and
    flush its logging queue: nothing of ours). Why: with Aider and litellm loaded the
    teardown takes longer than the client's grace after closing our stdin (0.3 s), so the
    client waited it out and sent SIGTERM, which skipped the handlers as well; a cold
    `aider-lsp run` spent that half second at its end. Nothing of ours is left to write:
    Aider keeps no history files here (engine.py) and its tags cache commits each entry."""
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):
            stream.flush()
    os._exit(code)


if __name__ == "__main__":
    _exit_now(main())
