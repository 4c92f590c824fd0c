"""CommandExecutor: runs the user's test command in the workspace, safely.

argv via shlex by default (no shell), or `/bin/sh -c` when the user asked for a shell.
On Linux the command runs under reaper.py's supervisor (a child subreaper): when the command
exits, at the timeout and on cancel, everything it started is ended, even a grandchild that
left its session (setsid), and the run says what was ended. Elsewhere the command gets its own
process group, killed as a group (a descendant that left the group outlives the run there).
`execute` answers a CommandRun (models/commands.py): a non-zero exit is not an error, the analysis needs
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

from ..models import CommandRun, ErrorReason, TaskError
from .child_start import start_whole
from .reaper import Report, Supervision

if TYPE_CHECKING:
    from ..config.settings import SettingsProvider

TRUNCATION_MARK = "\n[... {omitted} bytes omitted ...]\n"
PIPE_GRACE_S = 0.5  # after the leader exited (or was killed): time left to drain its pipes
REAP_GRACE_S = 3.0  # asked to end the run, the supervisor kills and reaps within this


@dataclass(frozen=True)
class CommandOutput:
    exit_code: int | None
    stdout: str
    stderr: str
    duration_s: float
    timed_out: bool
    ended: tuple[str, ...] = ()  # "PID COMMAND" of the processes ended with the run


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


async def _end_run(supervision: Supervision, pid: int, exited: asyncio.Future[None]) -> None:
    """End what is left of the run: the supervisor kills and reaps it; its process group is
    killed after (the whole run without a supervisor, or a supervisor that missed its grace)."""
    supervision.end()
    try:
        if supervision.enabled:
            await _within(exited, REAP_GRACE_S)
    finally:
        _kill_group(pid)


async def _abandon(
    supervision: Supervision, transport: asyncio.SubprocessTransport, protocol: _RunProtocol
) -> None:
    """A run cancelled while its process started: ended as a cancel ends a running one."""
    try:
        await _end_run(supervision, transport.get_pid(), protocol.exited)
    finally:
        transport.close()
        supervision.finish()


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
        """Run to completion or to the timeout, whichever comes first; cancellation ends the
        run the same way and re-raises. Whatever the command started is ended with it.

        The timeout is a deadline: at it the run is ended, and the pipes are read for at most
        PIPE_GRACE_S more. Without a supervisor, a process that left the group (setsid) may
        keep them open forever; the run does not wait for it."""
        argv = self.build_argv(command, use_shell=use_shell)
        started = time.monotonic()
        supervision = Supervision()
        transport, protocol = await start_whole(
            self._spawn(supervision, argv, env), lambda started: _abandon(supervision, *started)
        )
        pid = transport.get_pid()
        try:
            timed_out = not await _within(protocol.exited, timeout)
            await _end_run(supervision, pid, protocol.exited)  # the deadline, or what outlived the leader
            await _within(protocol.pipes_closed, PIPE_GRACE_S)
            if timed_out:  # the leader was just killed: collect it
                await _within(protocol.exited, PIPE_GRACE_S)
        finally:
            try:
                if transport.get_returncode() is None:  # cancelled
                    await _end_run(supervision, pid, protocol.exited)
            finally:
                transport.close()  # stops reading pipes a stray process still holds
                report = supervision.finish()
        if report.spawn_error is not None:
            raise report.spawn_error
        return CommandOutput(
            exit_code=None if timed_out else _exit_code(report, transport.get_returncode()),
            stdout=protocol.streams[1].text(),
            stderr=protocol.streams[2].text(),
            duration_s=time.monotonic() - started,
            timed_out=timed_out,
            ended=report.ended,
        )

    async def _spawn(
        self, supervision: Supervision, argv: list[str], env: dict[str, str] | None
    ) -> tuple[asyncio.SubprocessTransport, _RunProtocol]:
        cap = self.output_cap
        try:
            return await asyncio.get_running_loop().subprocess_exec(
                lambda: _RunProtocol(cap),
                *supervision.argv(argv),
                cwd=self.cwd,
                stdin=asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
                env={**os.environ, **(env or {})},
                start_new_session=True,
                pass_fds=supervision.pass_fds,
            )
        except BaseException:
            supervision.finish()
            raise
        finally:
            supervision.spawned()

    async def execute(
        self,
        command: str,
        *,
        timeout: float = 300.0,
        use_shell: bool = False,
        timeout_setting: str = "aiderLsp.timeouts.shell",
        command_setting: str = "aiderLsp.testCommand",
    ) -> CommandRun:
        """Run a command for a caller that wants a result, never an exception: a command that
        cannot run or is killed at the timeout is a CommandRun with its error (naming the
        `timeout_setting` that gave the limit, and `command_setting` for one that cannot start)."""
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
                    f"({command_setting} for the tests)",
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
            ended_processes=output.ended,
            error=error,
        )


def _exit_code(report: Report, returncode: int | None) -> int | None:
    """The command's own exit code: the supervisor's report has it (negative for a signal)."""
    return report.returncode if report.returncode is not None else returncode


def _error(reason: ErrorReason, message: str) -> TaskError:
    return TaskError(reason=reason, message=message)
