"""The editor closes (or reloads the window) while a command runs: it sends `shutdown`, then
`exit`. The shutdown must answer at once and without error, `exit` must end the server, and
nothing the server started may live on: not the test command's processes, not the Aider MCP
server. Each test records the server's process tree while the command is busy, then checks
that every process of it is gone."""

from __future__ import annotations

import asyncio
import json
import sys
import time
from pathlib import Path
from typing import Any

from aider_lsp.processes.reaper import describe, live_descendants
from aider_lsp_testing import FAKE_AIDER_MCP
from aider_lsp_testing.calc_project import PLAN
from aider_lsp_testing.llm_server import IS_PLAN, json_output
from aider_lsp_testing.lsp_session import AiderTestClient, start_command
from aider_lsp_testing.raw_lsp import alive
from aider_lsp_testing.slow_commands import slow_test_command
from aider_lsp_testing.waiting import eventually

SHUTDOWN_ANSWER_S = 60.0  # a cap, not a timing: the shutdown is expected in about a second
EXIT_S = 60.0


def fake_aider(mode: str, log: Path) -> dict[str, Any]:
    """`aiderServer` for the stdlib fake Aider MCP server, its calls logged to `log`."""
    return {"command": sys.executable, "args": [FAKE_AIDER_MCP, mode], "env": {"FAKE_LOG": str(log)}}


def server_tree(client: AiderTestClient) -> dict[int, str]:
    """Every live process below the server (pid → what `ps` would show)."""
    process = client.server_process
    assert process is not None
    return {pid: describe(pid) for pid in live_descendants(process.pid)}


async def shut_down(client: AiderTestClient, busy: dict[int, str]) -> None:
    """shutdown (answered in time, without error), exit (the process ends with 0), and
    every process that was below the server is gone."""
    process = client.server_process
    assert process is not None
    started = time.monotonic()
    await asyncio.wait_for(client.shutdown_async(None), SHUTDOWN_ANSWER_S)
    answered = time.monotonic() - started
    client.exit(None)
    await asyncio.wait_for(process.wait(), EXIT_S)
    assert process.returncode == 0, f"exit code {process.returncode} (shutdown answered in {answered:.1f} s)"
    assert await eventually(lambda: not any(alive(pid) for pid in busy)), [
        line for pid, line in busy.items() if alive(pid)
    ]


async def wait_for_file(path: Path, timeout: float = 30) -> str:
    assert await eventually(lambda: path.exists() and path.read_text(), timeout), f"{path} never written"
    return path.read_text()


async def test_shutdown_during_run_tests_ends_the_test_processes(lsp, workspace: Path) -> None:
    pid_file = workspace.parent / "test.pid"
    options = {"testCommand": slow_test_command(pid_file)}
    async with lsp(workspace, init_options=options) as client:
        _, pending = start_command(client, "aider-lsp.system.runTests", {})
        await wait_for_file(pid_file)
        assert await eventually(lambda: len(server_tree(client)) >= 3)  # supervisor, test, its child
        busy = server_tree(client)
        await shut_down(client, busy)
        pending.cancel()


async def test_shutdown_during_an_aider_edit_ends_the_aider_server(lsp, workspace: Path) -> None:
    calls = workspace.parent / "aider-calls.jsonl"
    options = {"aiderServer": fake_aider("hang-edit", calls), "aiderModel": "openai/fake-1"}
    async with lsp(workspace, init_options=options) as client:
        _, pending = start_command(
            client, "aider-lsp.aider.automatic", {"prompt": "x", "file_context": ["pkg/calc.py"]}
        )
        logged = await wait_for_file(calls)
        assert await eventually(lambda: "aider_ai_code" in calls.read_text()), logged
        busy = server_tree(client)
        aider_pid = json.loads(calls.read_text().splitlines()[-1])["pid"]
        assert aider_pid in busy
        await shut_down(client, busy)
        pending.cancel()


async def test_shutdown_during_a_workflow_run_ends_its_test_and_aider(
    lsp, workspace: Path, llm_server: Any
) -> None:
    pid_file = workspace.parent / "test.pid"
    calls = workspace.parent / "aider-calls.jsonl"
    (workspace / "calc.py").write_text("def subtract(a, b):\n    return a + b\n")
    llm_server.add_rule(IS_PLAN, json_output(PLAN))
    options = {
        "model": "openai:scripted-planner",
        "baseUrl": llm_server.base_url,
        "apiKey": "test-key",
        "aiderModel": "openai/fake-1",
        "aiderServer": fake_aider("ok", calls),
    }
    async with lsp(workspace, init_options=options) as client:
        run = {"goal": "fix calc", "test_command": slow_test_command(pid_file)}
        _, pending = start_command(client, "aider-lsp.workflow.run", run)
        await wait_for_file(pid_file, 60)
        assert await eventually(lambda: len(server_tree(client)) >= 4)  # Aider, supervisor, test, its child
        busy = server_tree(client)
        await shut_down(client, busy)
        pending.cancel()
