"""Each message a turn sends stands on its own as markdown, whatever came before it: a cancel
notice after Aider's reply stopped inside a code block is not rendered inside that block; a
test run we stopped on purpose is not shown as a failure."""

from __future__ import annotations

from pathlib import Path

import pytest
from acp.schema import TextContentBlock

from aider_lsp.acp import render
from aider_lsp.acp.said import SaidSoFar
from aider_lsp.models import CommandRun, ErrorReason, SuiteScope, TaskError, TestRunFinished
from aider_lsp_testing.apps import scripted_environment
from aider_lsp_testing.calc_project import HALF_FIXED, TEST_COMMAND
from aider_lsp_testing.llm_server import IS_AIDER, ScriptedLLMServer, aider_whole, dribbled
from aider_lsp_testing.raw_acp import RawAcpClient


def _said(*pieces: str) -> str:
    said = SaidSoFar()
    for piece in pieces:
        said.feed(piece)
    return said.separator()


def test_the_separator_closes_an_open_code_block_and_leaves_a_blank_line() -> None:
    assert _said() == ""  # nothing before: nothing to separate
    assert _said("Here it is:\n```python\nx = 1") == "\n```\n\n"
    assert _said("Here it is:\n```python\nx = 1\n") == "```\n\n"
    assert _said("```python\nx = 1\n```") == "\n\n"  # the block was closed, without a newline
    assert _said("```py", "thon\nx = 1\n``", "`\n") == "\n"  # fences split across chunks
    assert _said("Done.\n\n") == ""


def _fences_before(text: str, end: int) -> int:
    return sum(1 for line in text[:end].split("\n") if line.lstrip().startswith("```"))


@pytest.mark.aider
def test_a_cancel_notice_after_a_reply_cut_inside_a_code_block_renders_outside_it(
    calc_project: Path, llm_server: ScriptedLLMServer, tmp_path: Path
) -> None:
    # Aider's reply written slowly: the cancel lands while its code block is open
    llm_server.add_rule(IS_AIDER, dribbled(aider_whole({"calc.py": HALF_FIXED}), pieces=40, every=0.25))
    env = scripted_environment(llm_server.base_url, AIDER_LSP_TEST_COMMAND=TEST_COMMAND)
    client = RawAcpClient(tmp_path / "agent.log", env)
    try:
        session = client.open_session(calc_project, mode="workflow")
        prompt = {"sessionId": session, "prompt": [{"type": "text", "text": "Fix subtract in calc.py"}]}
        turn = client.start_request("session/prompt", prompt)

        def reply() -> str:
            chunks = [u for u in client.updates() if u.get("sessionUpdate") == "agent_message_chunk"]
            return "".join(chunk["content"].get("text", "") for chunk in chunks)

        client.wait_for(lambda _: _fences_before(reply(), len(reply())) % 2 == 1, timeout=120)
        client.send({"method": "session/cancel", "params": {"sessionId": session}})
        assert client.wait_response(turn, timeout=30)["result"]["stopReason"] == "cancelled"
    finally:
        client.close()
    text = reply()
    notice = text.find("cancelled")
    assert notice > 0, text
    assert _fences_before(text, notice) % 2 == 0, f"the notice is inside a code block:\n{text}"
    assert "Traceback" not in client.stderr_text()


def test_a_test_run_stopped_on_purpose_is_not_a_failure(tmp_path: Path) -> None:
    stopped = TestRunFinished(
        iteration=1,
        command="pytest",
        scope=SuiteScope.WHOLE,
        before_edit=True,
        stopped="Aider was ready 1 s before it: the first edit went on without it",
    )
    update = render.test_run_closed("test-1", stopped, tmp_path)
    assert update.status == "completed"
    content = update.content[0].content if update.content else None
    assert isinstance(content, TextContentBlock) and content.text.startswith("stopped before it ended (Aider")


@pytest.mark.parametrize(
    ("run", "said"),
    [
        (CommandRun(command="pytest", exit_code=0, stdout="1 passed"), "passed"),
        (CommandRun(command="pytest", exit_code=1), "failed (exit code 1)"),
        (
            CommandRun(
                command="pytest",
                timed_out=True,
                error=TaskError(reason=ErrorReason.EXECUTION_TIMEOUT, message="killed after 60 s"),
            ),
            "killed at the timeout",
        ),
        (
            CommandRun(
                command="pytset",
                error=TaskError(reason=ErrorReason.CONFIGURATION_ERROR, message="pytset: not found"),
            ),
            "could not run: pytset: not found",
        ),
    ],
)
def test_a_slash_test_run_is_worded_as_a_workflows(tmp_path: Path, run: CommandRun, said: str) -> None:
    update = render.test_run_closed("test-1", run, tmp_path)
    content = update.content[0].content if update.content else None
    assert isinstance(content, TextContentBlock) and content.text.split("\n")[0] == said
    assert update.status == ("completed" if said == "passed" else "failed")
