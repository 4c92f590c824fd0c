"""The editor quits during a Workflow turn: it closes the agent's stdin. `aider-lsp acp`
must exit, leaving no test process and no Aider MCP server behind, whether the turn was in
its test run or in an Aider edit that does not answer."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

import pytest
from acp.schema import ClientCapabilities
from test_acp import AGENT, PLAN, RecordingClient, scripted_env

from acp import spawn_agent_process, text_block
from aider_lsp.processes.reaper import describe, live_descendants
from aider_lsp_testing import FAKE_AIDER_MCP
from aider_lsp_testing.llm_server import IS_ANALYSIS, IS_PLAN, json_output
from aider_lsp_testing.raw_lsp import alive
from aider_lsp_testing.slow_commands import slow_test_command
from aider_lsp_testing.waiting import eventually

EXIT_S = 60.0  # a cap, not a timing: the agent is expected to exit in a second or two


def busy_in(stage: str, pid_file: Path, calls: Path) -> bool:
    """The turn is where the test wants it: in its test run, or inside an Aider edit."""
    if stage == "tests":
        return pid_file.exists() and bool(pid_file.read_text())
    return calls.exists() and "aider_ai_code" in calls.read_text()


@pytest.mark.parametrize(("stage", "aider_mode", "processes"), [("tests", "ok", 4), ("edit", "hang-edit", 1)])
async def test_stdin_closed_during_a_workflow_turn_ends_the_agent_and_its_children(
    stage: str, aider_mode: str, processes: int, calc_project: Path, llm_server: Any, tmp_path: Path
) -> None:
    pid_file, calls = tmp_path / "test.pid", tmp_path / "aider-calls.jsonl"
    llm_server.add_rule(IS_PLAN, json_output(PLAN))
    llm_server.add_rule(IS_ANALYSIS, json_output({"verdict": "FAILURE", "message": "no"}))
    env = scripted_env(llm_server.base_url, AIDER_LSP_TEST_COMMAND=slow_test_command(pid_file))
    env["AIDER_LSP_AIDER_SERVER"] = json.dumps(  # the stdlib fake: a real Aider adds nothing here
        {"command": sys.executable, "args": [FAKE_AIDER_MCP, aider_mode], "env": {"FAKE_LOG": str(calls)}}
    )
    client = RecordingClient()
    with (tmp_path / "agent.log").open("wb") as stderr:
        async with spawn_agent_process(
            client, *AGENT, env=env, transport_kwargs={"stderr": stderr.fileno()}
        ) as (conn, process):
            await conn.initialize(protocol_version=1, client_capabilities=ClientCapabilities())
            session_id = (await conn.new_session(cwd=str(calc_project), mcp_servers=[])).session_id
            await conn.set_session_mode(session_id=session_id, mode_id="workflow")
            turn = asyncio.ensure_future(
                conn.prompt(session_id=session_id, prompt=[text_block("make the tests pass")])
            )
            assert await eventually(lambda: busy_in(stage, pid_file, calls), 60), client.reply()
            # the Aider server; in the tests also the supervisor, the test and its child
            assert await eventually(lambda: len(live_descendants(process.pid)) >= processes)
            busy = {pid: describe(pid) for pid in live_descendants(process.pid)}

            process.stdin.close()  # the editor quit
            await asyncio.wait_for(process.wait(), EXIT_S)
            turn.cancel()
    assert process.returncode == 0
    assert await eventually(lambda: not any(alive(pid) for pid in busy)), [
        line for pid, line in busy.items() if alive(pid)
    ]
