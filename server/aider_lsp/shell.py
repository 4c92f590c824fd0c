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
PIPE_GRACE_S = 0.5  # after the leader exited (or was killed): time left to drain its pipes


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


def _kill_group(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)


class _HeadAndTail:
    """One output stream as it arrives, bounded: the first and the last `cap` bytes (a test
    run may print 50 MB; only what `cap_output` keeps is held)."""

    def __init__(self, cap: int) -> None:
        self.cap = cap
        self.head = bytearray()
        self.tail = bytearray()
        self.total = 0

    def add(self, data: bytes) -> None:
        self.total += len(data)
        room = self.cap - len(self.head)
        if room > 0:
            self.head += data[:room]
            data = data[room:]
        self.tail += data
        if len(self.tail) > 2 * self.cap:
            del self.tail[: len(self.tail) - self.cap]

    def text(self) -> str:
        if self.total <= self.cap:
            return bytes(self.head).decode("utf-8", errors="replace")
        whole = bytes(self.head) + bytes(self.tail[-self.cap :])  # its middle is never used
        head = self.cap // 2
        tail = self.cap - head
        return (
            whole[:head].decode("utf-8", errors="replace")
            + TRUNCATION_MARK.format(omitted=self.total - self.cap)
            + whole[-tail:].decode("utf-8", errors="replace")
        )


class _RunProtocol(asyncio.SubprocessProtocol):
    """A child's output and the moments it exited and its pipes closed: these differ when a
    descendant that left the process group (setsid) keeps stdout open."""

    def __init__(self, cap: int) -> None:
        loop = asyncio.get_running_loop()
        self.streams = {1: _HeadAndTail(cap), 2: _HeadAndTail(cap)}
        self.exited: asyncio.Future[None] = loop.create_future()
        self.pipes_closed: asyncio.Future[None] = loop.create_future()
        self._open = {1, 2}

    def pipe_data_received(self, fd: int, data: bytes) -> None:
        self.streams[fd].add(data)

    def pipe_connection_lost(self, fd: int, exc: Exception | None) -> None:
        self._open.discard(fd)
        if not self._open and not self.pipes_closed.done():
            self.pipes_closed.set_result(None)

    def process_exited(self) -> None:
        if not self.exited.done():
            self.exited.set_result(None)


async def _within(future: asyncio.Future[None], seconds: float) -> bool:
    """True when `future` completes within `seconds` (it is never cancelled)."""
    try:
        await asyncio.wait_for(asyncio.shield(future), max(0.0, seconds))
    except TimeoutError:
        return False
    return True


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
        """Run to completion or to the timeout, whichever comes first; cancellation kills the
        process group and re-raises.

        The timeout is a deadline: at it the group is killed, and the pipes are read for at
        most PIPE_GRACE_S more. A process that left the group (setsid) may keep them open
        forever; the run does not wait for it, and neither does a run whose leader exited."""
        argv = self.build_argv(command, use_shell=use_shell)
        loop = asyncio.get_running_loop()
        started = time.monotonic()
        cap = self.output_cap
        transport, protocol = await loop.subprocess_exec(
            lambda: _RunProtocol(cap),
            *argv,
            cwd=self.cwd,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            env={**os.environ, **(env or {})},
            start_new_session=True,
        )
        pid = transport.get_pid()
        try:
            timed_out = not await _within(protocol.exited, timeout)
            _kill_group(pid)  # at the deadline, or the descendants that outlived the leader
            await _within(protocol.pipes_closed, PIPE_GRACE_S)
            if timed_out:  # the leader was just killed: collect it
                await _within(protocol.exited, PIPE_GRACE_S)
        finally:
            if transport.get_returncode() is None:
                _kill_group(pid)
            transport.close()  # stops reading pipes a stray process still holds
        return CommandOutput(
            exit_code=None if timed_out else transport.get_returncode(),
            stdout=protocol.streams[1].text(),
            stderr=protocol.streams[2].text(),
            duration_s=time.monotonic() - started,
            timed_out=timed_out,
        )

    async def execute(
        self,
        command: str,
        *,
        timeout: float = 300.0,
        use_shell: bool = False,
        timeout_setting: str = "aiderLsp.timeouts.shell",
    ) -> CommandRun:
        """Run a command for a caller that wants a result, never an exception: a command that
        cannot run or is killed at the timeout is a CommandRun with its error (naming the
        `timeout_setting` that gave the limit)."""
        try:
            output = await self.run(command, timeout=timeout, use_shell=use_shell)
        except ValueError as exc:
            return CommandRun(
                command=command, error=_error(ErrorReason.INPUT_VALIDATION_FAILURE, f"bad command: {exc}")
            )
        except OSError as exc:  # not found, not executable, a name too long, too many processes…
            program = (exc.filename if isinstance(exc.filename, str) else command)[:120]
            return CommandRun(
                command=command,
                error=_error(
                    ErrorReason.TOOL_EXECUTION_ERROR,
                    f"cannot start the command: {exc.strerror or exc}: {program}; check the command "
                    "(aiderLsp.testCommand for the tests)",
                ),
            )
        error = None
        if output.timed_out:
            error = _error(
                ErrorReason.EXECUTION_TIMEOUT,
                f"the command did not finish within {timeout:g} s and was killed, with every "
                f"process it started: raise {timeout_setting} if it needs longer, or find what hangs",
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
