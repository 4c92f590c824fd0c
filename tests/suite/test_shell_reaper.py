"""No process outlives its run: a test command's grandchild that daemonises (double fork,
setsid) is ended when the command exits, at the timeout and on cancel, and the result names it;
a process the server started outside the run is left alone. Checked in the process table."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from aider_lsp.models import CommandRun
from aider_lsp.processes.reaper import Supervision
from aider_lsp.processes.shell import CommandExecutor
from aider_lsp.results import command_result, run_tests_result
from aider_lsp_testing.waiting import eventually

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the reaper is Linux only")

DAEMONISING_TEST = """\
import os, sys, time
pid_file = sys.argv[1]
with open(pid_file + ".leader", "w") as handle:
    handle.write(str(os.getpid()))
if os.fork() == 0:          # the child: a new session, then the daemon, then it leaves
    os.setsid()
    if os.fork() == 0:
        with open(pid_file + ".tmp", "w") as handle:
            handle.write(str(os.getpid()))
        os.rename(pid_file + ".tmp", pid_file)
        time.sleep(600)  # longer than any test waits: only the run's end ends it
    os._exit(0)
while not os.path.exists(pid_file):
    time.sleep(0.01)
print("tests started a daemon", flush=True)
time.sleep(float(sys.argv[2]))
sys.exit(int(sys.argv[3]))
"""


@pytest.fixture
def daemonising(tmp_path: Path) -> Iterator[tuple[CommandExecutor, Path, str]]:
    """The executor, the file the daemon writes its pid to, and the command (its arguments:
    how long the test command runs on, then its exit code). The daemon would sleep for ten
    minutes, so a run that waited for it would outlast the tests' caps."""
    (tmp_path / "suite.py").write_text(DAEMONISING_TEST)
    pid_file = tmp_path / "daemon.pid"
    yield CommandExecutor(tmp_path), pid_file, f"{sys.executable} suite.py {pid_file}"
    for left in (pid_file, pid_file.with_name(pid_file.name + ".leader")):
        if left.exists():  # the test failed: leave nothing running on this machine
            with contextlib.suppress(ProcessLookupError, ValueError):
                os.kill(int(left.read_text()), signal.SIGKILL)


def _in_process_table(pid: int) -> bool:
    """Listed in /proc at all: running, stopped or a zombie nobody reaped."""
    return Path(f"/proc/{pid}").exists()


def _names(run: CommandRun, pid: int) -> bool:
    return any(line.startswith(f"{pid} ") for line in run.ended_processes)


async def test_a_daemon_left_by_a_finished_test_command_is_ended_and_named(
    daemonising: tuple[CommandExecutor, Path, str],
) -> None:
    executor, pid_file, command = daemonising
    # a cap: the daemon keeps the command's stdout open for ten minutes, a run waiting for it fails
    run = await asyncio.wait_for(executor.execute(f"{command} 0 3"), 60)
    daemon = int(pid_file.read_text())
    assert run.exit_code == 3 and not run.timed_out and run.error is None  # the command's own code
    assert run.stdout == "tests started a daemon\n"
    assert not _in_process_table(daemon)
    assert _names(run, daemon) and len(run.ended_processes) == 1, run.ended_processes
    shown = run_tests_result(run)
    assert shown.content.startswith("the tests fail (exit code 3)")
    assert shown.content.splitlines()[-1].startswith(f"ended with the run: 1 process: {daemon} ")
    assert shown.notes["ended_processes"] == list(run.ended_processes)
    assert command_result(run).content == run.stdout  # system:execute_shell_command: stdout as is


async def test_at_the_timeout_the_command_and_its_daemon_are_ended(
    daemonising: tuple[CommandExecutor, Path, str],
) -> None:
    executor, pid_file, command = daemonising
    # the command would run for ten minutes: only its timeout can end it within the cap (5 s
    # leaves a busy machine the time to start the command and its daemon)
    run = await asyncio.wait_for(executor.execute(f"{command} 600 0", timeout=5), 60)
    daemon = int(pid_file.read_text())
    assert run.timed_out and run.exit_code is None
    assert not _in_process_table(daemon)
    assert _names(run, daemon) and len(run.ended_processes) == 2  # the test command and its daemon
    assert command_result(run).notes["ended_processes"] == list(run.ended_processes)


async def test_a_cancelled_run_ends_the_daemon_too(daemonising: tuple[CommandExecutor, Path, str]) -> None:
    executor, pid_file, command = daemonising
    task = asyncio.create_task(executor.run(f"{command} 600 0"))
    assert await eventually(pid_file.exists), "the daemon never started"
    daemon = int(pid_file.read_text())
    assert _in_process_table(daemon)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await asyncio.wait_for(task, 60)
    # ended by the cancel: it would sleep for ten minutes (the kernel may take a moment to take
    # the killed daemon out of the process table)
    assert await eventually(lambda: not _in_process_table(daemon))


async def test_a_process_the_server_started_outside_the_run_is_left_alone(
    daemonising: tuple[CommandExecutor, Path, str],
) -> None:
    executor, pid_file, command = daemonising
    bystander = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    detached = subprocess.Popen(["sleep", "60"], start_new_session=True)  # like the Aider MCP server
    try:
        run = await executor.execute(f"{command} 0 0")
        assert not _in_process_table(int(pid_file.read_text()))
        assert bystander.poll() is None and detached.poll() is None
        assert not _names(run, bystander.pid) and not _names(run, detached.pid)
    finally:
        for process in (bystander, detached):
            process.kill()
            process.wait()


SERVER = """\
import asyncio, sys
from aider_lsp.processes.shell import CommandExecutor
asyncio.run(CommandExecutor(sys.argv[1]).run(sys.argv[2]))
"""


async def test_when_the_server_dies_the_run_ends_with_it(
    daemonising: tuple[CommandExecutor, Path, str],
) -> None:
    """The server killed mid-run (SIGKILL: no cleanup of its own): its end of the control
    pipe closes, and the supervisor ends the test command and its daemon."""
    executor, pid_file, command = daemonising
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    server = subprocess.Popen([sys.executable, "-c", SERVER, str(executor.cwd), f"{command} 600 0"], env=env)
    try:
        assert await eventually(lambda: pid_file.exists() or server.poll() is not None)
        daemon = int(pid_file.read_text())
    finally:
        server.kill()
        server.wait()
    assert await eventually(lambda: not _in_process_table(daemon)), "the daemon outlived its server"


async def test_a_command_that_leaves_nothing_ends_nothing(tmp_path: Path) -> None:
    run = await CommandExecutor(tmp_path).execute(f"{sys.executable} -c print(1)")
    assert run.exit_code == 0 and run.ended_processes == ()
    assert "ended_processes" not in command_result(run).notes
    assert run_tests_result(run).content == "1\n"


async def test_a_command_killed_by_a_signal_keeps_its_exit_code(tmp_path: Path) -> None:
    run = await CommandExecutor(tmp_path).execute("kill -9 $$", use_shell=True)
    assert run.exit_code == -signal.SIGKILL and run.error is None


def test_the_report_is_read_while_a_child_forked_meanwhile_still_holds_the_pipe() -> None:
    """The supervisor wrote its report and exited, but a process another thread forked at
    that moment still holds the report pipe's write end (until it closes its inherited fds):
    the report is read all the same (it was lost: a command that could not start read as
    "the tests fail (exit code 127)")."""
    supervision = Supervision()
    writer = supervision._report_w  # the supervisor's end, as it inherited it
    inherited = os.dup(writer)  # the copy a child forked meanwhile holds
    try:
        os.write(writer, b"spawn_error 2 no-such-program\n")
        report = supervision.finish()  # closes the server's copy of the write end
    finally:
        os.close(inherited)
    assert report.spawn_error is not None and report.spawn_error.errno == 2
    assert report.spawn_error.filename == "no-such-program"
