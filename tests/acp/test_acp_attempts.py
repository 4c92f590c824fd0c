"""Several attempts at a Workflow turn's goal through `aider-lsp acp` as a real subprocess
(#52): the attempts and how the tests choose are session config options; the turn ends asking
to apply the winner (its change shown), and applying it discards the other attempts."""

from __future__ import annotations

import json
import subprocess
import threading
from pathlib import Path
from typing import Any

import pytest
from test_acp import acp_agent, new_session, scripted_env

from acp import text_block
from aider_lsp_testing.calc_project import BUGGY, FIXED, HALF_FIXED, TEST_COMMAND
from aider_lsp_testing.llm_server import (
    IS_AIDER,
    IS_ANALYSIS,
    IS_PLAN,
    aider_whole,
    all_of,
    held,
    json_output,
    model_is,
    text,
)

pytestmark = [pytest.mark.aider, pytest.mark.timeout(400)]

MODELS = ["openai/breaks", "openai/fixes", "openai/idle"]


async def test_a_workflow_turn_of_three_attempts_asks_to_apply_the_winner(
    calc_project: Path, llm_server: Any, tmp_path: Path
) -> None:
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "calc"]):
        subprocess.run(
            ["git", "-c", "user.name=t", "-c", "user.email=t@t", *args], cwd=calc_project, check=True
        )
    gate = threading.Event()
    llm_server.add_rule(all_of(IS_AIDER, model_is("fixes")), aider_whole({"calc.py": FIXED}))
    llm_server.add_rule(
        all_of(IS_AIDER, model_is("breaks")), held(gate, aider_whole({"calc.py": HALF_FIXED}))
    )
    llm_server.add_rule(all_of(IS_AIDER, model_is("idle")), held(gate, text("I would leave it.")))
    llm_server.add_rule(IS_PLAN, json_output({"instructions": "fix calc.py", "files": ["calc.py"]}))
    llm_server.add_rule(
        IS_ANALYSIS, json_output({"verdict": "RETRY", "message": "red", "next_prompt": "again"})
    )
    env = scripted_env(
        llm_server.base_url,
        AIDER_LSP_TEST_COMMAND=TEST_COMMAND,
        AIDER_LSP_ATTEMPT_MODELS=json.dumps(MODELS),
        AIDER_LSP_MAX_RETRIES="0",
    )
    calc = calc_project / "calc.py"
    try:
        async with acp_agent(env, tmp_path / "agent.log") as (conn, client, _):
            session_id = await new_session(conn, calc_project)
            await conn.set_session_mode(session_id=session_id, mode_id="workflow")
            await conn.set_config_option(config_id="attempts", session_id=session_id, value="3")
            await conn.set_config_option(config_id="choose", session_id=session_id, value="first-green")
            client.answers.append("allow_once")
            answer = await conn.prompt(session_id=session_id, prompt=[text_block("make the tests pass")])
    finally:
        gate.set()
    reply = client.reply()
    assert answer.stop_reason == "end_turn", reply
    assert "attempt 2 wins" in reply and "passed the tests first" in reply
    assert "Attempt 1 (openai/breaks): stopped" in reply and "Attempt 3 (openai/idle): stopped" in reply
    (asked,) = client.diffs()[-1:]  # the question shows the winner's change
    assert (asked.old_text, asked.new_text) == (BUGGY, FIXED)
    assert client.offered == [["allow_once", "reject_once", "reject_always"]]
    assert calc.read_text() == FIXED and "Applied to your files: calc.py." in reply
    assert "The other attempts are discarded" not in reply  # stopped ones were never ready
    worktrees = subprocess.run(["git", "worktree", "list"], cwd=calc_project, capture_output=True, text=True)
    assert worktrees.stdout.count("\n") == 1, worktrees.stdout
