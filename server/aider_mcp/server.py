"""The MCP tools: `aider_ai_code`, `list_models` (public aider-mcp-server contract) and chat sessions.

Every tool answers one TextContent holding JSON; failures are `{"error": "..."}`.
Aider runs in a worker thread, one edit at a time (the engine's lock). An edit or chat turn
whose request carries a progress token (the client passed a progress callback) streams Aider's
reply to it as `notifications/progress` messages while it runs (streaming.py); the answer
still holds the whole reply.
"""

from __future__ import annotations

import functools
import json
import logging
import traceback
from collections.abc import Awaitable, Callable
from typing import Any

import anyio
from mcp.server.fastmcp import Context, FastMCP

from .engine import AiderEngine, EngineError
from .streaming import Send, forwarding

log = logging.getLogger("aider_mcp")


def _json(payload: dict[str, Any]) -> str:
    return json.dumps(payload)


async def _guarded(func: Any, *args: Any) -> str:
    """Run a blocking engine call off the event loop; errors become {"error"}."""
    return await _answer(lambda: anyio.to_thread.run_sync(func, *args))


async def _answer(run: Callable[[], Awaitable[dict[str, Any]]]) -> str:
    """The JSON answer of an engine call; errors become {"error"}."""
    try:
        return _json(await run())
    except EngineError as exc:
        return _json({"error": str(exc), **({"code": exc.code} if exc.code else {})})
    except Exception as exc:  # Aider failed in a way it did not report itself
        log.error("aider failed:\n%s", traceback.format_exc())
        return _json({"error": f"{type(exc).__name__}: {exc}"})


async def _streamed(ctx: Context | None, call: functools.partial[dict[str, Any]]) -> str:
    """`_guarded`, with Aider's reply sent as it is written when the client asked for progress."""
    send = _progress_sender(ctx)
    if send is None:
        return await _guarded(call)
    return await _answer(lambda: forwarding(lambda on_text: call(on_text=on_text), send))


def _progress_sender(ctx: Context | None) -> Send | None:
    """Pieces of the reply as progress notifications of this request (progress: the reply's
    characters so far), or None when the request carries no progress token."""
    if ctx is None:
        return None
    meta = ctx.request_context.meta
    if meta is None or meta.progressToken is None:
        return None
    context, sent = ctx, 0

    async def send(text: str) -> None:
        nonlocal sent
        sent += len(text)
        await context.report_progress(sent, None, text)

    return send


def build_server(engine: AiderEngine) -> FastMCP:
    """The FastMCP app with its tools bound to one engine."""
    mcp = FastMCP("aider-mcp", instructions="Edit files in the working directory with Aider.")
    _add_edit_tool(mcp, engine)
    _add_chat_tool(mcp, engine)
    _add_lookup_tools(mcp, engine)
    return mcp


def _add_edit_tool(mcp: FastMCP, engine: AiderEngine) -> None:
    """One stateless edit: the public aider-mcp-server's contract (and images)."""

    @mcp.tool(structured_output=False)
    async def aider_ai_code(
        ai_coding_prompt: str,
        relative_editable_files: list[str],
        relative_readonly_files: list[str] | None = None,
        model: str | None = None,
        image_files: list[str] | None = None,
        ctx: Context | None = None,
    ) -> str:
        """Run one Aider edit. Returns JSON {"success", "diff", ...}: success means an
        editable file really changed; diff is a unified diff of this edit only.
        `image_files`: absolute paths of images shown to the model (one that reads images)."""
        call = functools.partial(
            engine.code,
            ai_coding_prompt,
            relative_editable_files,
            relative_readonly_files or [],
            model,
            images=image_files or [],
        )
        return await _streamed(ctx, call)


def _add_chat_tool(mcp: FastMCP, engine: AiderEngine) -> None:
    """A turn of a kept chat: Aider's interactive session, one message at a time."""

    @mcp.tool(structured_output=False)
    async def aider_chat(
        message: str,
        session_id: str | None = None,
        relative_editable_files: list[str] | None = None,
        relative_readonly_files: list[str] | None = None,
        model: str | None = None,
        ask: bool = False,
        allow_outside_files: bool = False,
        unsaved_files: list[str] | None = None,
        dropped_files: list[str] | None = None,
        image_files: list[str] | None = None,
        ctx: Context | None = None,
    ) -> str:
        """One turn of a multi-turn Aider session that keeps its chat. Without session_id a new
        session starts; the answer carries its session_id plus {"success", "diff", "reply"}.
        ask: Aider answers about the files (its "ask" format) and edits nothing.
        `allow_outside_files`: files Aider asks to add or edits outside the chat join it
        (inside the working directory, not secret, not one of `unsaved_files`); the answer
        names them (`added_files`) and gives what files written outside the editable list
        held before (`outside_before`: base64, null when absent) so undo can restore them.
        `dropped_files`: files that leave the chat before this turn (they stay on disk).
        `image_files`: absolute paths of images shown to the model for this turn only; a
        model that reads no images is refused by name (`code` "no_vision"), nothing asked."""
        call = functools.partial(
            engine.chat,
            message,
            session_id,
            relative_editable_files or [],
            relative_readonly_files or [],
            model,
            ask=ask,
            allow_outside_files=allow_outside_files,
            unsaved_files=unsaved_files or [],
            dropped=dropped_files or [],
            images=image_files or [],
        )
        return await _streamed(ctx, call)


def _add_lookup_tools(mcp: FastMCP, engine: AiderEngine) -> None:
    """The tools that edit nothing: the models Aider knows, and ending a kept chat."""

    @mcp.tool(structured_output=False)
    async def list_models(substring: str = "") -> str:
        """Models Aider knows whose name contains the substring. Returns {"models": [...]}."""
        try:
            models = await anyio.to_thread.run_sync(engine.list_models, substring)
        except Exception as exc:
            return _json({"error": f"{type(exc).__name__}: {exc}"})
        return _json({"models": models})

    @mcp.tool(structured_output=False)
    async def aider_chat_end(session_id: str) -> str:
        """End a session and forget its chat. Returns {"ended": bool, "session_id"}."""
        return _json(engine.end(session_id))
