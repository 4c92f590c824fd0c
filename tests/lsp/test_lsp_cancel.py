"""Cancelling a long command stops it and its child processes (pygls 2 does not, alone)."""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path

from lsprotocol import types

from aider_lsp_testing.lsp_session import cancel_command, execute, start_command
from aider_lsp_testing.waiting import eventually


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
        with open(f"/proc/{pid}/stat") as handle:
            return handle.read().split(")")[-1].split()[0] != "Z"
    except (ProcessLookupError, FileNotFoundError):
        return False


def _slow_test_command(pid_file: Path) -> str:
    script = f"import os, time; open({str(pid_file)!r}, 'w').write(str(os.getpid())); time.sleep(600)"
    return f'{sys.executable} -c "{script}"'


async def _wait_for_pid(pid_file: Path) -> int:
    started = await eventually(lambda: pid_file.exists() and pid_file.read_text())
    assert started, "the test command never started"
    return int(pid_file.read_text())


async def test_run_tests_reports_output_and_progress(lsp, workspace: Path) -> None:
    command = f"{sys.executable} -c \"print('1 passed'); raise SystemExit(1)\""
    async with lsp(workspace, init_options={"testCommand": command}) as client:
        result = await execute(client, "aider-lsp.system.runTests", {})
        assert result["status"] == "COMPLETE"
        assert result["notes"]["exit_code"] == 1 and "1 passed" in result["notes"]["stdout"]
        kinds = [report.kind for reports in client.progress_reports.values() for report in reports]
        assert kinds[0] == "begin" and kinds[-1] == "end"


async def test_no_test_command_names_the_setting(lsp, workspace: Path) -> None:
    async with lsp(workspace) as client:
        result = await execute(client, "aider-lsp.system.runTests", {})
    assert result["notes"]["error"]["reason"] == "configuration_error"
    assert "AIDER_LSP_TEST_COMMAND" in result["content"]


async def test_cancel_request_stops_the_command_and_its_process(lsp, workspace: Path) -> None:
    pid_file = workspace / "pid"
    async with lsp(workspace, init_options={"testCommand": _slow_test_command(pid_file)}) as client:
        msg_id, pending = start_command(client, "aider-lsp.system.runTests", {})
        pid = await _wait_for_pid(pid_file)
        await cancel_command(client, msg_id, pending)
        await eventually(lambda: not _alive(pid))
        assert not _alive(pid), "the test command survived the cancel"
        after = await execute(client, "aider-lsp.tools.list", {})
        assert after["status"] == "COMPLETE"


async def test_progress_cancel_stops_the_command(lsp, workspace: Path) -> None:
    pid_file = workspace / "pid"
    async with lsp(workspace, init_options={"testCommand": _slow_test_command(pid_file)}) as client:
        pending = asyncio.ensure_future(execute(client, "aider-lsp.system.runTests", {}))
        pid = await _wait_for_pid(pid_file)
        token = next(  # the command's token (the workspace index reports under its own)
            token
            for token, reports in client.progress_reports.items()
            if reports and getattr(reports[0], "title", None) == "Running tests"
        )
        client.protocol.notify(
            types.WINDOW_WORK_DONE_PROGRESS_CANCEL, types.WorkDoneProgressCancelParams(token=token)
        )
        result = await asyncio.wait_for(pending, 60)
        assert result["status"] == "FAILED"
        assert result["notes"]["error"]["reason"] == "cancelled"
        assert await eventually(lambda: not _alive(pid)), "the test command survived the progress cancel"
