"""Each message a turn sends stands on its own as markdown, whatever came before it: a cancel
notice after Aider's reply stopped inside a code block is not rendered inside that block; a
test run we stopped on purpose is not shown as a failure.

And a turn ends as closed markdown, however it ends, before its answer, with nothing of it after
the answer: a client renders the turn's chunks up to the answer as one text and writes the
user's next prompt after it (CodeCompanion parsed a next prompt into a code block a cancelled
reply left open, and sent the cancelled prompt again instead of it)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from acp.schema import ResourceContentBlock, TextContentBlock, ToolCallProgress, ToolCallStart
from hypothesis import given
from hypothesis import strategies as st

from acp import RequestError, resource_link_block, text_block
from aider_lsp.acp import render
from aider_lsp.acp.said import HeldCode, SaidSoFar
from aider_lsp.acp.writing import CodeBeingWritten
from aider_lsp.models import CommandRun, ErrorReason, SuiteScope, TaskError, TestRunFinished
from aider_lsp_testing.acp_client import in_process_agent
from aider_lsp_testing.apps import scripted_environment
from aider_lsp_testing.calc_project import HALF_FIXED, TEST_COMMAND
from aider_lsp_testing.fake_app import FakeApps
from aider_lsp_testing.llm_server import IS_AIDER, ScriptedLLMServer, aider_whole, dribbled, text
from aider_lsp_testing.raw_acp import RawAcpClient

# what a turn shows (not the session's state: usage, modes, options, commands)
TURN_UPDATES = {"agent_message_chunk", "agent_thought_chunk", "tool_call", "tool_call_update", "plan"}
NO_DIFF_YET = "No edit or run in this session has changed a file yet."


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
    # a fence closes only on its own character, as long or longer, with nothing after it
    assert _said("~~~\nx\n```\n") == "~~~\n\n"
    assert _said("````md\n```py\nx\n```\n") == "````\n\n"
    assert _said("```\nx\n```py\n") == "```\n\n"
    assert _said("``` a`b\n") == "\n"  # not a fence: a backtick fence's info has no backtick


def _fences_before(text: str, end: int) -> int:
    return sum(1 for line in text[:end].split("\n") if line.lstrip().startswith("```"))


def rendered(updates: list[dict[str, Any]]) -> str:
    """The message chunks as a client renders them: one markdown text."""
    chunks = [u for u in updates if u.get("sessionUpdate") == "agent_message_chunk"]
    return "".join(chunk["content"].get("text", "") for chunk in chunks)


def closed(markdown: str) -> bool:
    """No code block is left open (the replies here fence with three backticks)."""
    return _fences_before(markdown, len(markdown)) % 2 == 0


def closed_all_along(updates: list[dict[str, Any]]) -> bool:
    """No code block is open after any chunk: a client that stops listening at any point (as
    CodeCompanion does when it sends session/cancel) keeps closed markdown."""
    chunks = [u for u in updates if u.get("sessionUpdate") == "agent_message_chunk"]
    return all(closed(rendered(chunks[: index + 1])) for index in range(len(chunks)))


def streaming(client: RawAcpClient) -> bool:
    """Aider's reply has begun (its preface is shown): its code block streams next."""
    return "updated files" in rendered(client.updates())


def writing_calls(updates: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The tool calls that show a code block Aider is writing (writing.py)."""
    return [
        u
        for u in updates
        if u.get("sessionUpdate") == "tool_call" and u["title"].startswith("Aider is writing")
    ]


def of_turns(updates: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [u for u in updates if u.get("sessionUpdate") in TURN_UPDATES]


def link(path: Path) -> dict[str, str]:
    return {"type": "resource_link", "name": path.name, "uri": path.as_uri()}


def link_block(path: Path) -> ResourceContentBlock:
    return resource_link_block(path.name, path.as_uri())


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

        client.wait_for(lambda _: streaming(client), timeout=120)
        client.send({"method": "session/cancel", "params": {"sessionId": session}})
        assert client.wait_response(turn, timeout=30)["result"]["stopReason"] == "cancelled"
    finally:
        client.close()
    before, after = client.around(turn)
    text = rendered(before)  # the notice comes before the answer, or never
    notice = text.lower().find("cancelled")
    assert notice > 0, text
    assert _fences_before(text, notice) % 2 == 0, f"the notice is inside a code block:\n{text}"
    assert closed_all_along(before) and not of_turns(after), after
    assert "Traceback" not in client.stderr_text()


@pytest.mark.aider
def test_a_cancel_inside_a_code_block_closes_it_before_the_answer_and_the_next_prompt_is_the_one_run(
    calc_project: Path, llm_server: ScriptedLLMServer, tmp_path: Path
) -> None:
    """An Edit turn cancelled while Aider's reply streams a code block: what the client renders
    is closed markdown after every chunk (the block is held until it closes: a client that
    stops listening at its cancel never keeps an open one), nothing of the turn follows the
    answer, and the prompt the user sends right after it is the one answered (not refused
    while the cancelled turn still stops Aider). The block being written shows as a tool call
    counting its lines, closed (failed) before the answer."""
    llm_server.add_rule(IS_AIDER, dribbled(aider_whole({"calc.py": HALF_FIXED}), pieces=40, every=0.25))
    client = RawAcpClient(tmp_path / "agent.log", scripted_environment(llm_server.base_url))
    try:
        session = client.open_session(calc_project, mode="edit")
        prompt = [{"type": "text", "text": "Fix subtract"}, link(calc_project / "calc.py")]
        turn = client.start_request("session/prompt", {"sessionId": session, "prompt": prompt})
        client.wait_for(lambda _: bool(writing_calls(client.updates())), timeout=120)
        client.send({"method": "session/cancel", "params": {"sessionId": session}})
        assert client.wait_response(turn, timeout=30)["result"]["stopReason"] == "cancelled"
        next_prompt = {"sessionId": session, "prompt": [{"type": "text", "text": "/diff"}]}
        following = client.start_request("session/prompt", next_prompt)
        answer = client.wait_response(following, timeout=60)
    finally:
        client.close()
    before, _ = client.around(turn)
    assert closed_all_along(before), rendered(before)
    (writing,) = writing_calls(before)
    assert writing["title"].startswith("Aider is writing calc.py") and writing["status"] == "in_progress"
    last = [u for u in before if u.get("toolCallId") == writing["toolCallId"]][-1]
    assert last["status"] == "failed"  # closed with the turn, before its answer
    assert answer.get("result", {}).get("stopReason") == "end_turn", answer
    between, _ = client.around(following)
    shown = of_turns(between[len(before) :])  # after the cancelled turn's answer, up to the next's
    assert rendered(shown) == NO_DIFF_YET and len(shown) == 1, shown  # only the next prompt's reply
    assert "Traceback" not in client.stderr_text()


@pytest.mark.aider
def test_a_reply_that_ends_inside_a_code_block_is_closed_before_the_answer(
    calc_project: Path, llm_server: ScriptedLLMServer, tmp_path: Path
) -> None:
    """Aider's answer stops inside a code block (the model never closed it): the turn ends
    normally, its text closed before the answer."""
    unclosed = "Make subtract return a - b:\n\n```python\ndef subtract(a, b):\n    return a - b\n"
    llm_server.add_rule(IS_AIDER, text(unclosed))
    client = RawAcpClient(tmp_path / "agent.log", scripted_environment(llm_server.base_url))
    try:
        session = client.open_session(calc_project, mode="ask")
        prompt = [{"type": "text", "text": "How do I fix subtract?"}, link(calc_project / "calc.py")]
        turn = client.start_request("session/prompt", {"sessionId": session, "prompt": prompt})
        assert client.wait_response(turn, timeout=120)["result"]["stopReason"] == "end_turn"
    finally:
        client.close()
    before, after = client.around(turn)
    assert "def subtract" in rendered(before) and closed(rendered(before)), rendered(before)
    assert not of_turns(after), after


async def test_a_turn_that_failed_is_closed_before_its_error_answer(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An unexpected error ends the turn with a JSON-RPC error: what it showed is closed first
    (the code block its reply left open, the file's tool call), nothing of it after. In-process:
    the SDK's pair carries the JSON-RPC a client reads, and a fake Application can break."""
    calc = tmp_path / "calc.py"
    calc.write_text("x = 0\n")
    fakes = FakeApps()

    async def breaks(*args: Any, on_reply: Any = None, **kwargs: Any) -> None:
        on_reply("Here:\n```python\nx = 1\n")
        raise RuntimeError("a bug in the agent")

    monkeypatch.setattr(fakes.app(tmp_path), "edit", breaks)
    async with in_process_agent(fakes) as (conn, client, _):
        session_id = (await conn.new_session(cwd=str(tmp_path), mcp_servers=[])).session_id
        with pytest.raises(RequestError):
            await conn.prompt(session_id=session_id, prompt=[text_block("Fix"), link_block(calc)])
        answered = len(client.updates)
        await asyncio.sleep(0.1)
    assert closed(client.reply()) and client.reply().startswith("Here:"), client.reply()
    (started,) = client.of(ToolCallStart)
    ends = [u for u in client.of(ToolCallProgress) if u.tool_call_id == started.tool_call_id]
    assert ends and ends[-1].status == "failed"
    assert len(client.updates) == answered


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


REPLIES = [
    "Here are the updated files.\n\ncalc.py\n```python\ndef f():\n    return 1\n```\nDone.\n",
    "Inline `code` and ``more``\nno block at all",
    "A\n~~~~\ncode ``` inside\n~~~~\nB\n```js\nnever closed",
    "````\n```\n````\nafter a longer fence",
]


@given(st.sampled_from(REPLIES), st.lists(st.integers(min_value=1, max_value=9), min_size=1, max_size=60))
def test_a_reply_streamed_in_any_pieces_never_shows_an_open_code_block(reply: str, sizes: list[int]) -> None:
    """However the reply is cut into pieces, what is sent after each is closed markdown, and all
    of it is sent by the end (an unclosed block closed then)."""
    held, shown, sent, start = HeldCode(), SaidSoFar(), "", 0
    for size in sizes * (len(reply) // len(sizes) + 1):
        if start >= len(reply):
            break
        piece = held.take(reply[start : start + size])
        start += size
        sent += piece
        shown.feed(piece)
        assert shown.closing() == "", sent
    sent += held.take(reply[start:]) + held.flush()
    whole = SaidSoFar()
    whole.feed(sent)
    assert sent.startswith(reply) and whole.closing() == ""


def test_a_code_block_written_for_a_while_shows_its_lines_as_a_tool_call_until_sent() -> None:
    held, writing = HeldCode(), CodeBeingWritten()
    shown: list[Any] = []

    def piece(text: str, at: float) -> str:
        sent = held.take(text)
        shown.extend(writing.follow(held, at))
        return sent

    assert piece("Here it is, calc.py:\n", 0.0) == "Here it is, calc.py:\n" and shown == []
    piece("```python\ndef add(a, b):\n", 0.1)
    piece("    return a + b\n", 0.5)
    assert shown == []  # held under a second: nothing shown (most blocks)
    piece("\n", 1.2)
    (started,) = shown
    assert isinstance(started, ToolCallStart) and started.status == "in_progress"
    assert started.title == "Aider is writing python (3 lines)"
    piece("def sub(a, b):\n", 1.5)
    assert len(shown) == 1  # at most one title a second
    piece("    return a - b\n", 2.3)
    assert shown[-1].title == "Aider is writing python (5 lines)" and shown[-1].status is None
    sent = piece("```\nDone.", 2.4)
    assert sent.startswith("```python\ndef add") and sent.endswith("```\nDone.")
    assert shown[-1].status == "completed" and shown[-1].title == "Aider wrote python"
    assert {update.tool_call_id for update in shown} == {started.tool_call_id}
    piece("\n```\nquick\n```\n", 3.0)  # a second block, sent within the second: no call
    assert len(shown) == 3
    piece("**src/calc.py**\n```\nx = 1\n", 4.0)  # Aider's formats name the file before its block
    piece("y = 2\n", 5.5)
    assert shown[-1].title == "Aider is writing src/calc.py (2 lines)"
