"""CommandExecutor: timeouts kill the whole group, output caps keep head and tail."""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path

import pytest

from aider_lsp.processes.shell import CommandExecutor, cap_output
from aider_lsp.results import command_result
from aider_lsp_testing.waiting import eventually


async def test_exit_code_and_both_streams(tmp_path: Path) -> None:
    script = "import sys; print('out'); print('err', file=sys.stderr); sys.exit(3)"
    run = await CommandExecutor(tmp_path).execute(f'{sys.executable} -c "{script}"')
    assert run.error is None and run.ran and not run.passed  # a failing test run is not a tool failure
    assert run.exit_code == 3 and run.stdout.strip() == "out" and run.stderr.strip() == "err"
    result = command_result(run)  # system:execute_shell_command's answer on the wire
    assert result.status.value == "COMPLETE" and result.content == run.stdout
    assert result.notes == {
        "command": run.command,
        "exit_code": 3,
        "stdout": run.stdout,
        "stderr": run.stderr,
        "duration_s": run.duration_s,
        "success": False,
    }


async def test_runs_in_the_workspace_without_a_shell(tmp_path: Path) -> None:
    (tmp_path / "marker.txt").write_text("here")
    executor = CommandExecutor(tmp_path)
    result = await executor.execute("cat marker.txt ; echo injected")
    assert "injected" not in result.stdout  # `;` is an argument, not a shell operator
    shell = await executor.execute("cat marker.txt && echo chained", use_shell=True)
    assert shell.stdout == "herechained\n"


async def test_timeout_kills_children(tmp_path: Path) -> None:
    pid_file = tmp_path / "child.pid"
    script = (
        "import subprocess, sys, time; "
        f"p = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(600)']); "
        f"open({str(pid_file)!r}, 'w').write(str(p.pid)); time.sleep(600)"
    )
    executor = CommandExecutor(tmp_path)
    # both would sleep for ten minutes: only the timeout can end the run within the cap (5 s
    # leaves a busy machine the time to start them)
    run = await asyncio.wait_for(executor.execute(f'{sys.executable} -c "{script}"', timeout=5), 60)
    assert run.timed_out and run.exit_code is None and run.ran
    assert run.error is not None and run.error.reason == "execution_timeout"
    result = command_result(run)  # FAILED on the wire, the output kept
    assert result.notes["error"]["reason"] == "execution_timeout" and result.notes["exit_code"] is None
    child = int(pid_file.read_text())
    assert await eventually(lambda: not _alive(child))


async def test_cancel_kills_the_group(tmp_path: Path) -> None:
    pid_file = tmp_path / "pid"
    script = f"import os, time; open({str(pid_file)!r}, 'w').write(str(os.getpid())); time.sleep(600)"
    task = asyncio.create_task(CommandExecutor(tmp_path).run(f'{sys.executable} -c "{script}"'))
    assert await eventually(lambda: pid_file.exists() and pid_file.read_text())
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert await eventually(lambda: not _alive(int(pid_file.read_text())))


async def test_output_cap_keeps_head_and_tail(tmp_path: Path) -> None:
    script = "print('FIRST'); print('x' * 100000); print('LAST-ERROR')"
    result = await CommandExecutor(tmp_path, output_cap=1000).execute(f'{sys.executable} -c "{script}"')
    out = result.stdout
    assert out.startswith("FIRST") and out.rstrip().endswith("LAST-ERROR")
    assert "bytes omitted" in out and len(out) < 1200


def test_cap_output_is_exact_below_the_cap() -> None:
    assert cap_output(b"abc", 10) == "abc"


@pytest.mark.parametrize("command", ["", "   ", "a\x00b", "'unterminated"])
async def test_bad_commands_are_input_failures(tmp_path: Path, command: str) -> None:
    run = await CommandExecutor(tmp_path).execute(command)
    assert not run.ran and run.error is not None and run.error.reason == "input_validation_failure"
    assert command_result(run).notes == {"error": run.error.model_dump(mode="json")}


async def test_missing_program_is_a_tool_failure(tmp_path: Path) -> None:
    run = await CommandExecutor(tmp_path).execute("no-such-program-xyz --flag")
    assert run.error is not None and run.error.reason == "tool_execution_error"
    assert command_result(run).notes["error"]["reason"] == "tool_execution_error"


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie awaiting its parent is dead for our purpose
        with open(f"/proc/{pid}/stat") as handle:
            return handle.read().split(")")[-1].split()[0] != "Z"
    except FileNotFoundError:
        return False
