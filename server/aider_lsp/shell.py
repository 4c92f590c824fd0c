"""CommandExecutor: runs the user's test command in the workspace, safely.

argv via shlex by default (no shell), or `/bin/sh -c` when the user asked for a shell.
The child gets its own process group so a timeout or a cancel kills every descendant.
`execute` answers a CommandRun (models.py): a non-zero exit is not an error, the analysis needs
its output; results.py turns it into the `system:execute_shell_command` TaskResult.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shlex
import signal
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from .models import CommandRun, ErrorReason, TaskError

if TYPE_CHECKING:
    from .settings import SettingsProvider

TRUNCATION_MARK = "\n[... {omitted} bytes omitted ...]\n"


@dataclass(frozen=True)
class CommandOutput:
    exit_code: int | None
    stdout: str
    stderr: str
    duration_s: float
    timed_out: bool


def cap_output(data: bytes, cap: int) -> str:
    """Keep the head and the tail of long output: the error is usually at the end."""
    if len(data) <= cap:
        return data.decode("utf-8", errors="replace")
    head = cap // 2
    tail = cap - head
    omitted = len(data) - cap
    return (
        data[:head].decode("utf-8", errors="replace")
        + TRUNCATION_MARK.format(omitted=omitted)
        + data[-tail:].decode("utf-8", errors="replace")
    )


def _kill_group(process: asyncio.subprocess.Process) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGKILL)


class CommandExecutor:
    def __init__(
        self,
        cwd: str | os.PathLike[str],
        *,
        output_cap: int = 64_000,
        settings: SettingsProvider | None = None,
    ) -> None:
        """The output cap is read from `settings` at each run when it is given (the server's:
        `outputCapBytes` changes in the editor), else the fixed `output_cap`."""
        self.cwd = Path(cwd)
        self._settings = settings
        self._output_cap = output_cap

    @property
    def output_cap(self) -> int:
        """Bytes kept of each output stream (head and tail)."""
        return self._settings().output_cap_bytes if self._settings else self._output_cap

    def build_argv(self, command: str, *, use_shell: bool = False) -> list[str]:
        """argv for a command string; ValueError with the reason when it cannot be parsed."""
        if not command or not command.strip():
            raise ValueError("the command is empty")
        if "\x00" in command:
            raise ValueError("the command contains a NUL byte")
        if use_shell:
            return ["/bin/sh", "-c", command]
        argv = shlex.split(command)
        if not argv:
            raise ValueError("the command is empty")
        return argv

    async def run(
        self,
        command: str,
        *,
        timeout: float = 300.0,
        use_shell: bool = False,
        env: dict[str, str] | None = None,
    ) -> CommandOutput:
        """Run to completion or timeout; cancellation kills the process group and re-raises."""
        argv = self.build_argv(command, use_shell=use_shell)
        started = time.monotonic()
        process = await asyncio.create_subprocess_exec(
            *argv,
            cwd=self.cwd,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            env={**os.environ, **(env or {})},
            start_new_session=True,
        )
        timed_out = False
        try:
            stdout, stderr = await asyncio.wait_for(process.communicate(), timeout)
        except TimeoutError:
            timed_out = True
            _kill_group(process)
            stdout, stderr = await process.communicate()
        except asyncio.CancelledError:
            _kill_group(process)
            await process.wait()
            raise
        finally:
            if process.returncode is None:
                _kill_group(process)
        if not timed_out:
            _kill_group(process)  # descendants that outlived the leader (daemonised children)
        return CommandOutput(
            exit_code=None if timed_out else process.returncode,
            stdout=cap_output(stdout, self.output_cap),
            stderr=cap_output(stderr, self.output_cap),
            duration_s=time.monotonic() - started,
            timed_out=timed_out,
        )

    async def execute(self, command: str, *, timeout: float = 300.0, use_shell: bool = False) -> CommandRun:
        """Run a command for a caller that wants a result, never an exception: a command that
        cannot run or is killed at the timeout is a CommandRun with its error."""
        try:
            output = await self.run(command, timeout=timeout, use_shell=use_shell)
        except ValueError as exc:
            return CommandRun(
                command=command, error=_error(ErrorReason.INPUT_VALIDATION_FAILURE, f"bad command: {exc}")
            )
        except (FileNotFoundError, PermissionError) as exc:
            return CommandRun(
                command=command,
                error=_error(ErrorReason.TOOL_EXECUTION_ERROR, f"cannot start the command: {exc}"),
            )
        error = None
        if output.timed_out:
            error = _error(
                ErrorReason.EXECUTION_TIMEOUT,
                f"the command did not finish within {timeout:g} s and was killed",
            )
        return CommandRun(
            command=command,
            exit_code=output.exit_code,
            duration_s=round(output.duration_s, 3),
            stdout=output.stdout,
            stderr=output.stderr,
            timed_out=output.timed_out,
            error=error,
        )


def _error(reason: ErrorReason, message: str) -> TaskError:
    return TaskError(reason=reason, message=message)
