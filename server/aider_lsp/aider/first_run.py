"""The Aider environment made on first use, for a front end that shows it happening.

An ACP editor starts `aider-lsp acp` from a package install, with no step of its own before the
first prompt (the VS Code extension runs `aider-lsp setup-aider` itself). So the first prompt
that needs Aider runs that same step here: `aider-lsp setup-aider` in a child process, each of
its lines passed on as it comes (pip's "Collecting …", "Installing …"). A cancel kills the
child's process group: what it left is never taken for complete (aider_env's stamp is written
last) and the next prompt goes on from there. Two agents at once: the second waits on the
first's lock (aider_env.setup) and then finds the environment ready.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys
from collections import deque
from collections.abc import Callable

from ..config import aider_env
from ..config.settings import Settings
from ..processes.process_start import SAFE_PATH, neutral_folder

RETRY_COMMAND = "aider-lsp setup-aider"


class SetupFailed(Exception):
    """The set-up ended without a ready environment; the message says why and how to retry."""


def needed(settings: Settings) -> bool:
    """Whether a prompt that uses Aider must set its environment up first: the bundled server
    is the one configured and its environment is not ready."""
    return not settings.aider_server.command and not aider_env.is_ready()


async def set_up(on_line: Callable[[str], None]) -> None:
    """Make the Aider environment, `on_line` told each line of the set-up's output. Raises
    SetupFailed (the cause, the command to retry); a cancel stops it and propagates."""
    command = [sys.executable, SAFE_PATH, "-m", "aider_lsp", "setup-aider"]
    process = await asyncio.create_subprocess_exec(
        *command,
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
        cwd=neutral_folder(),
        start_new_session=True,
    )
    tail: deque[str] = deque(maxlen=5)
    try:
        assert process.stdout is not None  # PIPE asked for
        async for raw in process.stdout:
            line = raw.decode("utf-8", errors="replace").rstrip()
            if line:
                tail.append(line)
                on_line(line)
        code = await process.wait()
    except BaseException:  # a cancel (or anything else): nothing of the set-up runs on
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(process.pid, signal.SIGKILL)
        with contextlib.suppress(ProcessLookupError):
            await process.wait()
        raise
    if code != 0 or not aider_env.is_ready():
        cause = " ".join(tail) or f"it exited with {code}"
        raise SetupFailed(
            f"setting up Aider's environment failed: {cause[-600:]}; retry with `{RETRY_COMMAND}`"
        )


async def set_up_or_reason(on_line: Callable[[str], None]) -> str | None:
    """`set_up` for a front end that words the outcome: None when ready, else why and how to retry."""
    try:
        await set_up(on_line)
    except SetupFailed as exc:
        return str(exc)
    return None
