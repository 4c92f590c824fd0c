"""The failure taxonomy: which exception from starting or calling the server → which ErrorReason,
and whether the server must be stopped (the next call then starts a new one).

| exception                                   | reason              | server stopped |
|---------------------------------------------|---------------------|----------------|
| TimeoutError (the bridge's own deadline)    | execution_timeout   | yes            |
| ServerStartError (died or failed at start)  | connection_error    | (already gone) |
| FileNotFoundError (no such command)         | configuration_error | (never ran)    |
| MCPError, connection closed or during start | connection_error    | yes            |
| MCPError otherwise (the tool call refused)  | protocol_error      | no             |
| OSError, broken or closed stream            | connection_error    | yes            |
| anything else (malformed messages, …)       | protocol_error      | yes            |
"""

from __future__ import annotations

from dataclasses import dataclass

from ..models import ErrorReason
from .mcp_sdk import MCPError, anyio, mcp_types
from .results import CallFailure

STREAM_ERRORS = (OSError, ConnectionError, anyio.BrokenResourceError, anyio.ClosedResourceError)


class ServerStartError(ConnectionError):
    """The server did not come up; carries the tail of its stderr."""

    def __init__(self, message: str, stderr_tail: str = "") -> None:
        super().__init__(message)
        self.stderr_tail = stderr_tail


@dataclass(frozen=True)
class CallContext:
    """Where a call failed: its tool, stage ("start" or "call"), command, deadline, and the
    server's state (alive, the tail of its stderr) when it failed."""

    tool_name: str
    stage: str
    command: str
    deadline: float
    alive: bool
    stderr_tail: str


def describe(exc: BaseException) -> str:
    """`Type: message` of an exception (the first of a group)."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    text = str(exc) or type(exc).__name__
    return f"{type(exc).__name__}: {text}" if str(exc) else text


def classify(exc: Exception, where: CallContext) -> CallFailure:
    """The FAILED answer for a failed start or call (see the table in the module doc)."""
    if isinstance(exc, TimeoutError):
        what = "starting the Aider MCP server" if where.stage == "start" else where.tool_name
        return _failure(
            ErrorReason.EXECUTION_TIMEOUT,
            f"{what} did not finish within {where.deadline:g}s; the server was stopped"
            " and the next call starts a new one",
            where.stderr_tail,
        )
    if isinstance(exc, ServerStartError):
        return _failure(
            ErrorReason.CONNECTION_ERROR,
            f"the Aider MCP server did not start: {exc}{_which(where.command, exc.stderr_tail)}",
            exc.stderr_tail,
            broken=False,
        )
    if isinstance(exc, FileNotFoundError):
        return CallFailure(
            ErrorReason.CONFIGURATION_ERROR,
            f"cannot start the Aider MCP server {where.command!r}: {exc}"
            " (check the aiderServer setting, or run `aider-lsp setup-aider`)",
        )
    if isinstance(exc, MCPError):
        return _mcp_failure(exc, where)
    if isinstance(exc, STREAM_ERRORS):
        return _failure(
            ErrorReason.CONNECTION_ERROR,
            f"the Aider MCP server is unreachable ({where.stage}): {exc or type(exc).__name__}",
            where.stderr_tail,
        )
    return _failure(
        ErrorReason.PROTOCOL_ERROR,
        f"{where.tool_name}: unexpected MCP failure: {type(exc).__name__}: {exc}",
        "",
    )


def _mcp_failure(exc: MCPError, where: CallContext) -> CallFailure:
    """An MCP error answer: the tool call refused (the server is fine), or the connection lost."""
    closed = exc.code == mcp_types.CONNECTION_CLOSED or not where.alive
    if not (closed or where.stage == "start"):
        return CallFailure(
            ErrorReason.PROTOCOL_ERROR, f"{where.tool_name}: MCP error {exc.code}: {exc.message}"
        )
    return _failure(
        ErrorReason.CONNECTION_ERROR,
        f"the Aider MCP server closed the connection during {where.stage}: {exc.message};"
        " the next call starts a new one",
        where.stderr_tail,
    )


def _which(command: str, stderr_tail: str) -> str:
    """The program that was started and the last line it printed: a server command the user
    (or a repository, once trusted) set is named, so a wrong one is found at once."""
    said = next((line.strip() for line in reversed(stderr_tail.splitlines()) if line.strip()), "")
    return f" (the command {command!r}" + (f" printed: {said[:200]}" if said else "") + ")"


def _failure(reason: ErrorReason, message: str, tail: str, *, broken: bool = True) -> CallFailure:
    return CallFailure(reason, message, {"server_stderr": tail} if tail else {}, server_broken=broken)
