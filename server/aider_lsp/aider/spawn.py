"""Starting the Aider server's process, apart from its MCP session (no mcp import here).

Why apart: importing the mcp SDK takes about a second, and the server's own start (Python,
mcp, Aider, litellm) several more. Spawned first, the server starts while the client imports
the SDK (and, in `aider-lsp run`, while the rest of the client starts), not after it; the
session (session.py) then adopts the running process.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
from anyio.abc import Process

from ..config.settings import Settings
from ..processes.child_start import start_whole
from .launch import ConfigurationProblem, LaunchSpec, launch_spec

# The environment the mcp SDK's `get_default_environment` gives a server (tests hold them equal).
INHERITED_ENV_VARS = (
    (
        "APPDATA",
        "HOMEDRIVE",
        "HOMEPATH",
        "LOCALAPPDATA",
        "PATH",
        "PATHEXT",
        "PROCESSOR_ARCHITECTURE",
        "SYSTEMDRIVE",
        "SYSTEMROOT",
        "TEMP",
        "USERNAME",
        "USERPROFILE",
    )
    if sys.platform == "win32"
    else ("HOME", "LOGNAME", "PATH", "SHELL", "TERM", "USER")
)


@dataclass
class Spawned:
    """A server process started for `spec`, not yet speaking MCP."""

    spec: LaunchSpec
    process: Any  # anyio.abc.Process
    stderr_path: Path


def inherited_environment() -> dict[str, str]:
    """The few variables every server inherits (shell functions skipped, as the SDK does)."""
    return {
        key: value
        for key in INHERITED_ENV_VARS
        if (value := os.environ.get(key)) is not None and not value.startswith("()")
    }


async def spawn(spec: LaunchSpec) -> Spawned:
    """The server process (a new session: its own process group) and its stderr log."""
    fd, stderr_name = tempfile.mkstemp(prefix="aider-mcp-", suffix=".log")
    stderr_file = os.fdopen(fd, "wb")
    try:
        process = await start_whole(
            anyio.open_process(
                [spec.command, *spec.args],
                env=inherited_environment() | dict(spec.env),
                cwd=spec.cwd,
                stderr=stderr_file,
                start_new_session=True,
            ),
            _kill_started,
        )
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(stderr_name)
        raise
    finally:
        stderr_file.close()
    return Spawned(spec, process, Path(stderr_name))


async def spawn_early(settings: Settings, workspace: Path) -> Spawned | None:
    """The server's process started before anything else of a one-shot run (`aider-lsp run`):
    its start (seconds) overlaps the client's imports and checks (about 0.3 s of importing the
    Application alone) instead of following them; `Application.warm_up(early)` adopts it.
    None when it cannot start: the first edit then says why."""
    try:
        return await spawn(launch_spec(settings, workspace))
    except (ConfigurationProblem, OSError):
        return None


async def _kill_started(process: Process) -> None:
    """A server started for a caller cancelled meanwhile: its group killed, its exit collected."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGKILL)
    await process.wait()


def discard(spawned: Spawned) -> None:
    """Kill a spawned server that no session adopted (its process group) and drop its log."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(spawned.process.pid, signal.SIGKILL)
    with contextlib.suppress(OSError):
        spawned.stderr_path.unlink()
