"""The MCP tools: `aider_ai_code`, `list_models` (public aider-mcp-server contract) and chat sessions.

Every tool answers one TextContent holding JSON; failures are `{"error": "..."}`.
Aider runs in a worker thread, one edit at a time (the engine's lock).
"""

from __future__ import annotations

import functools
import json
import logging
import traceback
from typing import Any

import anyio
from mcp.server.fastmcp import FastMCP

from .engine import AiderEngine, EngineError

log = logging.getLogger("aider_mcp")


def _json(payload: dict[str, Any]) -> str:
    return json.dumps(payload)


async def _guarded(func: Any, *args: Any) -> str:
    """Run a blocking engine call off the event loop; errors become {"error"}."""
    try:
        return _json(await anyio.to_thread.run_sync(func, *args))
    except EngineError as exc:
        return _json({"error": str(exc)})
    except Exception as exc:  # Aider failed in a way it did not report itself
        log.error("aider failed:\n%s", traceback.format_exc())
        return _json({"error": f"{type(exc).__name__}: {exc}"})


def build_server(engine: AiderEngine) -> FastMCP:
    """The FastMCP app with its tools bound to one engine."""
    mcp = FastMCP("aider-mcp", instructions="Edit files in the working directory with Aider.")

    @mcp.tool(structured_output=False)
    async def aider_ai_code(
        ai_coding_prompt: str,
        relative_editable_files: list[str],
        relative_readonly_files: list[str] | None = None,
        model: str | None = None,
    ) -> str:
        """Run one Aider edit. Returns JSON {"success", "diff", ...}: success means an
        editable file really changed; diff is a unified diff of this edit only."""
        return await _guarded(
            engine.code, ai_coding_prompt, relative_editable_files, relative_readonly_files or [], model
        )

    @mcp.tool(structured_output=False)
    async def list_models(substring: str = "") -> str:
        """Models Aider knows whose name contains the substring. Returns {"models": [...]}."""
        try:
            models = await anyio.to_thread.run_sync(engine.list_models, substring)
        except Exception as exc:
            return _json({"error": f"{type(exc).__name__}: {exc}"})
        return _json({"models": models})

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
    ) -> str:
        """One turn of a multi-turn Aider session that keeps its chat. Without session_id a new
        session starts; the answer carries its session_id plus {"success", "diff", "reply"}.
        ask: Aider answers about the files (its "ask" format) and edits nothing.
        `allow_outside_files`: files Aider asks to add or edits outside the chat join it
        (inside the working directory, not secret, not one of `unsaved_files`); the answer
        names them (`added_files`) and gives what files written outside the editable list
        held before (`outside_before`: base64, null when absent) so undo can restore them."""
        return await _guarded(
            functools.partial(
                engine.chat,
                message,
                session_id,
                relative_editable_files or [],
                relative_readonly_files or [],
                model,
                ask=ask,
                allow_outside_files=allow_outside_files,
                unsaved_files=unsaved_files or [],
            )
        )

    @mcp.tool(structured_output=False)
    async def aider_chat_end(session_id: str) -> str:
        """End a session and forget its chat. Returns {"ended": bool, "session_id"}."""
        return _json(engine.end(session_id))

    return mcp
