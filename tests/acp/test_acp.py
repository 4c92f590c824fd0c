"""`aider-lsp acp` as an editor meets it: a real subprocess driven over its stdio by the ACP
SDK's client side, the scripted models over real HTTP, and (where marked) real Aider edits."""

from __future__ import annotations

import asyncio
import base64
import json
import os
import subprocess
import sys
import threading
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from itertools import pairwise
from pathlib import Path
from typing import Any

import pytest
from acp.schema import (
    AgentMessageChunk,
    AgentPlanUpdate,
    AgentThoughtChunk,
    ClientCapabilities,
    EnvVariable,
    FileSystemCapabilities,
    McpServerStdio,
    ToolCallProgress,
    ToolCallStart,
    UsageUpdate,
)
from hypothesis import given
from hypothesis import strategies as st

from acp import (
    RequestError,
    embedded_text_resource,
    image_block,
    resource_block,
    resource_link_block,
    spawn_agent_process,
    text_block,
)
from aider_lsp.acp.diffs import text_before
from aider_lsp.acp.prompt import parse_prompt, saved_images
from aider_lsp.acp.render import file_parts
from aider_lsp.app import Application
from aider_lsp.config.settings import load_settings
from aider_lsp.suite.choose import remembered_path
from aider_lsp_testing.acp_client import RecordingClient
from aider_lsp_testing.apps import scripted_environment, scripted_options
from aider_lsp_testing.calc_project import BUGGY, FIXED, HALF_FIXED, TEST_COMMAND, analysis_by_exit_code
from aider_lsp_testing.llm_server import (
    IS_AIDER,
    IS_ANALYSIS,
    IS_PLAN,
    aider_whole,
    all_of,
    dribbled,
    has_tool_result,
    held,
    json_output,
    last_user_contains,
    not_,
    text,
    tool_call,
)
from aider_lsp_testing.lsp_session import execute
from aider_lsp_testing.raw_lsp import children_of
from aider_lsp_testing.waiting import eventually
from aider_mcp.snapshots import unified_diff

AGENT = [sys.executable, "-m", "aider_lsp", "acp"]
# a 1×1 PNG (a screenshot's stand-in: the model sees bytes, never opens them here)
PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="
)
PLAN = {"instructions": "Fix subtract in calc.py", "files": ["calc.py"], "test_command": None}


def scripted_env(base_url: str, **extra: str) -> dict[str, str]:
    """The agent's environment: the scripted models, as a user's AIDER_LSP_* variables (the
    stories here are a failing iteration, then a green one; the acpx e2e runs the defaults)."""
    return scripted_environment(base_url, AIDER_LSP_TIMEOUTS=json.dumps({"aider": 90, "test": 60}), **extra)


@asynccontextmanager
async def acp_agent(
    env: dict[str, str], log: Path, capabilities: ClientCapabilities | None = None
) -> AsyncIterator[tuple[Any, RecordingClient, Any]]:
    """`aider-lsp acp` started and initialized: (the client connection, what it received, the process)."""
    client = RecordingClient()
    with log.open("wb") as stderr:
        async with spawn_agent_process(
            client, *AGENT, env=env, transport_kwargs={"stderr": stderr.fileno()}
        ) as (conn, process):
            await conn.initialize(
                protocol_version=1, client_capabilities=capabilities or ClientCapabilities()
            )
            yield conn, client, process


async def new_session(conn: Any, root: Path) -> str:
    return (await conn.new_session(cwd=str(root), mcp_servers=[])).session_id


def _option(option: Any) -> Any:
    """A config option as the client parsed it (the SDK may keep the union's root)."""
    return getattr(option, "root", option)


def link(path: Path) -> Any:
    return resource_link_block(path.name, path.as_uri())


async def test_initialize_answers_and_a_session_offers_three_modes(tmp_path: Path, llm_server: Any) -> None:
    client = RecordingClient()
    async with spawn_agent_process(client, *AGENT, env=scripted_env(llm_server.base_url)) as (conn, agent):
        answer = await asyncio.wait_for(
            conn.initialize(protocol_version=1, client_capabilities=ClientCapabilities()), 60
        )
        started_by_then = children_of(agent.pid)  # what initialize started (or waited for)
        session = await conn.new_session(cwd=str(tmp_path), mcp_servers=[])
    assert answer.protocol_version == 1 and answer.agent_info.name == "aider-lsp"
    assert answer.agent_capabilities.prompt_capabilities.embedded_context is True
    assert answer.agent_capabilities.load_session is True
    assert answer.agent_capabilities.session_capabilities.list is not None
    assert answer.agent_capabilities.mcp_capabilities.http and answer.agent_capabilities.mcp_capabilities.sse
    assert started_by_then == set(), started_by_then  # no Aider, no index: they start with a session
    assert [mode.id for mode in session.modes.available_modes] == ["ask", "edit", "workflow"]
    assert session.modes.current_mode_id == "edit"
    assert [_option(option).id for option in session.config_options] == [
        "mode",
        "aider_model",
        "max_retries",
        "isolation",
        "attempts",
        "choose",
    ]


@pytest.mark.aider
async def test_edit_turn_changes_the_mentioned_file_and_shows_its_diff(
    calc_project: Path, llm_server: Any, tmp_path: Path
) -> None:
    llm_server.add_rule(IS_AIDER, aider_whole({"calc.py": FIXED}))
    calc = calc_project / "calc.py"
    async with acp_agent(scripted_env(llm_server.base_url), tmp_path / "agent.log") as (conn, client, _):
        session_id = await new_session(conn, calc_project)
        answer = await conn.prompt(
            session_id=session_id, prompt=[text_block("Fix subtract and multiply"), link(calc)]
        )
    assert answer.stop_reason == "end_turn"
    assert calc.read_text() == FIXED
    (started,) = client.of(ToolCallStart)
    assert started.kind == "edit" and started.status == "pending"
    assert [location.path for location in started.locations] == [str(calc)]
    (diff,) = client.diffs()
    assert diff.path == str(calc) and diff.new_text == FIXED and diff.old_text == BUGGY
    closing = [u for u in client.of(ToolCallProgress) if u.tool_call_id == started.tool_call_id]
    assert closing[-1].status == "completed"
    assert "Aider changed calc.py" in client.reply()
    assert client.read == [] and client.asked == []  # fs/* not advertised: never called
    aider_request = next(r for r in llm_server.chat_requests() if IS_AIDER(r))
    assert "Fix subtract and multiply" in json.dumps(aider_request)


@pytest.mark.aider
async def test_a_file_whose_buffer_differs_from_disk_is_edited_only_when_allowed(
    calc_project: Path, llm_server: Any, tmp_path: Path
) -> None:
    llm_server.add_rule(IS_AIDER, aider_whole({"calc.py": FIXED}))
    calc = calc_project / "calc.py"
    reads = ClientCapabilities(fs=FileSystemCapabilities(read_text_file=True))
    env = scripted_env(llm_server.base_url)
    async with acp_agent(env, tmp_path / "agent.log", reads) as (conn, client, _):
        client.buffers[str(calc)] = BUGGY + "# the user's unsaved line\n"
        session_id = await new_session(conn, calc_project)
        client.answers = ["reject_once"]
        rejected = await conn.prompt(session_id=session_id, prompt=[text_block("Fix it"), link(calc)])
        rejected_reply = client.reply()
        assert calc.read_text() == BUGGY and llm_server.chat_requests() == []  # Aider never ran
        client.answers = ["allow_once"]
        allowed = await conn.prompt(session_id=session_id, prompt=[text_block("Fix it"), link(calc)])
    assert rejected.stop_reason == allowed.stop_reason == "end_turn"
    assert "Not edited" in rejected_reply and "calc.py" in rejected_reply
    assert len(client.asked) == 2 and "calc.py" in client.asked[0].title
    assert [location.path for location in client.asked[0].locations] == [str(calc)]
    assert client.read == [str(calc), str(calc)]
    assert calc.read_text() == FIXED and "Aider changed calc.py" in client.reply()


@pytest.mark.aider
async def test_ask_turn_answers_and_edits_nothing(
    calc_project: Path, llm_server: Any, tmp_path: Path
) -> None:
    # the scripted model answers with a whole file: an ask turn must not write it
    preface = "multiply adds its arguments instead of multiplying them"
    llm_server.add_rule(IS_AIDER, aider_whole({"calc.py": FIXED}, preface=preface))
    calc = calc_project / "calc.py"
    async with acp_agent(scripted_env(llm_server.base_url), tmp_path / "agent.log") as (conn, client, _):
        session_id = await new_session(conn, calc_project)
        await conn.set_config_option(config_id="mode", session_id=session_id, value="ask")
        answer = await conn.prompt(session_id=session_id, prompt=[text_block("What is wrong?"), link(calc)])
    assert answer.stop_reason == "end_turn"
    assert "multiply adds its arguments" in client.reply()
    assert calc.read_text() == BUGGY and not client.of(ToolCallStart)
    aider_request = json.dumps(next(r for r in llm_server.chat_requests() if IS_AIDER(r)))
    assert "Act as an expert code analyst" in aider_request  # Aider's ask format
    assert "return a + b" in aider_request  # the file was shown to Aider


@pytest.mark.aider
async def test_aiders_reply_arrives_in_pieces_while_it_is_written(
    calc_project: Path, llm_server: Any, tmp_path: Path
) -> None:
    # the model writes its answer in six pieces, 0.3 s apart: the editor shows them as they come
    preface = "multiply adds its arguments: it should multiply them. " * 3
    answer = aider_whole({"calc.py": FIXED}, preface=preface.strip())
    llm_server.add_rule(IS_AIDER, dribbled(answer, pieces=6, every=0.3))
    calc = calc_project / "calc.py"
    async with acp_agent(scripted_env(llm_server.base_url), tmp_path / "agent.log") as (conn, client, _):
        session_id = await new_session(conn, calc_project)
        prompt = asyncio.create_task(
            conn.prompt(session_id=session_id, prompt=[text_block("Fix multiply"), link(calc)])
        )
        while len(client.of(AgentMessageChunk)) < 2 and not prompt.done():
            await asyncio.sleep(0.02)
        pieces_before_the_answer = len(client.of(AgentMessageChunk))
        assert (await prompt).stop_reason == "end_turn"
    assert pieces_before_the_answer >= 2, client.reply()
    assert calc.read_text() == FIXED
    chunks = [chunk.content.text for chunk in client.of(AgentMessageChunk)]
    *streamed, closing = chunks
    assert closing.strip() == "Aider changed calc.py."  # the reply is not repeated at the end
    assert "".join(streamed).strip() == answer.content.strip()  # Aider's reply, whole and in order


@pytest.mark.aider
async def test_an_ask_turn_cancelled_while_aider_answers_still_counts_what_it_cost(
    calc_project: Path, llm_server: Any, tmp_path: Path
) -> None:
    # the model answers slowly (20 pieces, 0.5 s apart): the user stops it after the first ones
    answer = text("multiply adds its arguments instead of multiplying them. " * 20)
    llm_server.add_rule(IS_AIDER, dribbled(answer, pieces=20, every=0.5))
    calc = calc_project / "calc.py"
    async with acp_agent(scripted_env(llm_server.base_url), tmp_path / "agent.log") as (conn, client, _):
        session_id = await new_session(conn, calc_project)
        await conn.set_config_option(config_id="mode", session_id=session_id, value="ask")
        prompt = asyncio.create_task(
            conn.prompt(session_id=session_id, prompt=[text_block("What is wrong?"), link(calc)])
        )
        while not client.of(AgentMessageChunk) and not prompt.done():
            await asyncio.sleep(0.02)
        await conn.cancel(session_id=session_id)
        stopped = await prompt
    assert stopped.stop_reason == "cancelled"
    # the model was paid for the prompt and the reply so far: estimated (Aider, stopped, reports
    # nothing), at least Aider's prompt and the file it was shown, never 0
    assert stopped.usage is not None and stopped.usage.total_tokens > len(calc.read_text()) // 4
    assert client.of(UsageUpdate)[-1].used == stopped.usage.total_tokens


def script_two_iterations(llm_server: Any, retry_after: threading.Event | None = None) -> None:
    """The plan fixes subtract; the failing test's output sent back to Aider fixes multiply,
    once the analysis of iteration 1 beside it has answered (an order of events, not a delay:
    a green run would not wait for it), or once `retry_after` is set (the test's own event)."""
    analysed = threading.Event()

    def analysis(request: dict[str, Any]) -> Any:
        answer = analysis_by_exit_code(request)
        analysed.set()
        return answer

    llm_server.add_rule(IS_PLAN, json_output(PLAN))
    llm_server.add_rule(IS_ANALYSIS, analysis)
    # the first edit starts on the goal and the failing output of the tests run before it (the
    # plan runs beside it); it fixes half
    llm_server.add_rule(
        all_of(IS_AIDER, last_user_contains("make the tests pass")),
        aider_whole({"calc.py": HALF_FIXED}),
        times=1,
    )
    llm_server.add_rule(
        all_of(IS_AIDER, last_user_contains("I ran this command")),
        held(retry_after or analysed, aider_whole({"calc.py": FIXED})),
    )
    llm_server.add_rule(
        all_of(IS_AIDER, last_user_contains("Fix subtract")), aider_whole({"calc.py": HALF_FIXED})
    )


@pytest.mark.aider
async def test_workflow_turn_goes_from_red_to_green(
    calc_project: Path, llm_server: Any, tmp_path: Path
) -> None:
    shown = threading.Event()  # the second edit answers once the client shows the analysis
    script_two_iterations(llm_server, retry_after=shown)
    env = scripted_env(llm_server.base_url, AIDER_LSP_TEST_COMMAND=TEST_COMMAND)
    async with acp_agent(env, tmp_path / "agent.log") as (conn, client, _):
        session_id = await new_session(conn, calc_project)
        await conn.set_session_mode(session_id=session_id, mode_id="workflow")

        def thought() -> str:
            return "".join(u.content.text for u in client.of(AgentThoughtChunk))

        async def when_the_analysis_is_shown() -> None:
            await eventually(lambda: "Analysis of iteration 1" in thought())
            shown.set()  # (or at the cap: the assertion below says what was missing)

        watching = asyncio.create_task(when_the_analysis_is_shown())
        answer = await conn.prompt(session_id=session_id, prompt=[text_block("make the tests pass")])
        watching.cancel()
    assert answer.stop_reason == "end_turn", client.reply()
    assert (calc_project / "calc.py").read_text() == FIXED
    plans = client.of(AgentPlanUpdate)
    # the first edit starts at once (a plan, where one helps, runs beside it)
    assert plans[0].entries[0].content.startswith(("Planning", "Iteration 1"))
    assert len(plans[-1].entries) >= len(plans[-2].entries)  # the full list every time
    assert all(entry.status == "completed" for entry in plans[-1].entries)
    # shown as they happened, one step after the other: each call closed before the next opens
    started = client.of(ToolCallStart)
    closed = {u.tool_call_id: u for u in client.of(ToolCallProgress)}
    opened_at = [client.updates.index(u) for u in started]
    closed_at = [client.updates.index(closed[u.tool_call_id]) for u in started]
    assert all(closed_at[i] < opened_at[i + 1] for i in range(len(started) - 1)), started
    edits = [u for u in started if u.kind == "edit"]
    runs = [u for u in started if u.kind == "execute"]
    assert started[-1].kind == "execute" and closed[runs[-1].tool_call_id].status == "completed"  # green
    red = closed[runs[0].tool_call_id]
    assert red.status == "failed" and runs[0].title.startswith(TEST_COMMAND)  # red first
    assert not red.locations and "test_calc.py:" in red.content[0].content.text  # titled by its command
    assert "FAIL" in red.content[0].content.text
    changed = [u for u in edits if closed[u.tool_call_id].status == "completed"]
    assert len(changed) == 2 and all(u.title.startswith("Iteration") for u in edits)
    first, second = client.diffs()  # each edit's own diff: together they rebuild the file
    assert (first.old_text, first.new_text, second.old_text, second.new_text) == (
        BUGGY,
        HALF_FIXED,
        HALF_FIXED,
        FIXED,
    )
    thoughts = "".join(u.content.text for u in client.of(AgentThoughtChunk))
    assert "Analysis of iteration 1: RETRY" in thoughts
    # Aider's reply of each edit was shown while it was written, between its call's start and end
    for edit in changed:
        during = client.updates[client.updates.index(edit) : client.updates.index(closed[edit.tool_call_id])]
        assert "calc.py" in "".join(u.content.text for u in during if isinstance(u, AgentMessageChunk))
    assert "The tests pass" in client.reply()
    assert client.reply().lower().count("the tests pass") == 1  # the outcome is said once
    assert len(client.diffs()) == 2  # the run's diff is not shown again at the end
    assert answer.usage is not None and answer.usage.total_tokens > 0
    # where the run's spend went, by kind of call, beside the session's total
    usage = client.of(UsageUpdate)[-1]
    run = (usage.field_meta or {})["aider-lsp"]["run"]
    assert run["calls"]["edit"]["calls"] == 2 and run["calls"]["analysis"]["calls"] >= 1
    assert "Aider: 2 edit(s)" in run["spent"] and usage.used == answer.usage.total_tokens


@pytest.mark.aider
async def test_an_isolated_workflow_turn_leaves_the_file_alone_until_applied(
    calc_project: Path, llm_server: Any, tmp_path: Path
) -> None:
    """The run works in a git worktree of its own: its edits shown on the user's file, which
    holds the change only once "Apply this change?" is answered "apply"."""
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "calc"]):
        subprocess.run(
            ["git", "-c", "user.name=t", "-c", "user.email=t@t", *args], cwd=calc_project, check=True
        )
    script_two_iterations(llm_server)
    calc = calc_project / "calc.py"
    env = scripted_env(llm_server.base_url, AIDER_LSP_TEST_COMMAND=TEST_COMMAND)
    async with acp_agent(env, tmp_path / "agent.log") as (conn, client, _):
        session_id = await new_session(conn, calc_project)
        await conn.set_session_mode(session_id=session_id, mode_id="workflow")
        await conn.set_config_option(config_id="isolation", session_id=session_id, value="worktree")
        seen_before_answer: list[str] = []
        client.before_answer = lambda: seen_before_answer.append(calc.read_text())
        client.answers.append("allow_once")
        answer = await conn.prompt(session_id=session_id, prompt=[text_block("make the tests pass")])
    assert answer.stop_reason == "end_turn", client.reply()
    assert seen_before_answer == [BUGGY]  # the run's edits were in its worktree
    assert calc.read_text() == FIXED  # applied
    *edits, asked = client.diffs()  # each edit on the user's path; the run's change asked about
    assert {diff.path for diff in client.diffs()} == {str(calc)}
    assert edits[0].old_text == BUGGY and edits[-1].new_text == FIXED
    assert all(edit.old_text == before.new_text for before, edit in pairwise(edits))
    assert (asked.old_text, asked.new_text) == (BUGGY, FIXED)
    assert client.offered == [["allow_once", "reject_once", "reject_always"]]
    assert "The tests pass" in client.reply() and "Applied to your files: calc.py." in client.reply()


@pytest.mark.aider
async def test_cancel_during_a_slow_model_answer_is_answered_at_once(
    calc_project: Path, llm_server: Any, tmp_path: Path
) -> None:
    let_go = threading.Event()  # the model's answer to the first prompt never comes in time
    llm_server.add_rule(IS_AIDER, held(let_go, aider_whole({"calc.py": FIXED})))
    calc = calc_project / "calc.py"
    try:
        async with acp_agent(scripted_env(llm_server.base_url), tmp_path / "agent.log") as (conn, client, _):
            session_id = await new_session(conn, calc_project)
            pending = asyncio.ensure_future(
                conn.prompt(session_id=session_id, prompt=[text_block("Fix it"), link(calc)])
            )
            assert await asyncio.to_thread(llm_server.wait_for_requests, 1, 60)  # Aider is waiting
            await conn.cancel(session_id=session_id)
            # a cap: a turn that waited for the held answer would never be answered
            answer = await asyncio.wait_for(pending, 60)
            assert calc.read_text() == BUGGY  # the held edit never landed
            # the session takes a new prompt after the cancel
            llm_server.clear_rules()
            llm_server.add_rule(IS_AIDER, aider_whole({"calc.py": FIXED}))
            again = await conn.prompt(session_id=session_id, prompt=[text_block("Fix it"), link(calc)])
    finally:
        let_go.set()
    assert answer.stop_reason == "cancelled"
    (first, *_) = client.of(ToolCallStart)
    first_closing = [u for u in client.of(ToolCallProgress) if u.tool_call_id == first.tool_call_id]
    assert first_closing and first_closing[0].status == "failed"
    assert again.stop_reason == "end_turn" and calc.read_text() == FIXED


async def test_bad_input_gets_errors_or_a_clear_reply(
    workspace: Path, llm_server: Any, tmp_path: Path
) -> None:
    outside = tmp_path / "outside.py"
    outside.write_text("x = 1\n")
    async with acp_agent(scripted_env(llm_server.base_url), tmp_path / "agent.log") as (
        conn,
        client,
        process,
    ):
        with pytest.raises(RequestError) as unknown:
            await conn.prompt(session_id="no-such-session", prompt=[text_block("hi")])
        with pytest.raises(RequestError) as relative:
            await conn.new_session(cwd="project", mcp_servers=[])
        with pytest.raises(RequestError) as missing:
            await conn.new_session(cwd=str(tmp_path / "nowhere"), mcp_servers=[])
        session_id = await new_session(conn, workspace)
        with pytest.raises(RequestError) as bad_mode:
            await conn.set_session_mode(session_id=session_id, mode_id="yolo")
        answer = await conn.prompt(
            session_id=session_id,
            prompt=[text_block("edit these"), link(workspace / ".env"), link(outside)],
        )
        assert process.returncode is None  # still serving
    assert unknown.value.code == -32602 and "unknown session" in str(unknown.value)
    assert relative.value.code == -32602 and "absolute" in str(relative.value)
    assert missing.value.code == -32602 and "not an existing folder" in str(missing.value)
    assert bad_mode.value.code == -32602 and "unknown mode" in str(bad_mode.value)
    assert answer.stop_reason == "end_turn"
    reply = client.reply()
    assert ".env" in reply and "outside.py" in reply and "Nothing was run" in reply
    assert "sk-secret-do-not-leak" not in reply
    assert llm_server.chat_requests() == []  # no model saw anything


async def test_stdout_holds_only_json_whatever_comes_in(workspace: Path, llm_server: Any) -> None:
    process = await asyncio.create_subprocess_exec(
        *AGENT,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.DEVNULL,
        env=scripted_env(llm_server.base_url),
    )
    assert process.stdin is not None and process.stdout is not None
    lines = [
        "this is not json",
        "[1, 2, 3]",
        json.dumps({"jsonrpc": "2.0", "id": 1, "method": "session/prompt", "params": {"sessionId": 7}}),
        json.dumps({"jsonrpc": "2.0", "id": 2, "method": "session/new", "params": {"cwd": 42}}),
        json.dumps({"jsonrpc": "2.0", "id": 3, "method": "no/such/method", "params": {}}),
        json.dumps({"jsonrpc": "2.0", "id": 4, "method": "initialize", "params": {"protocolVersion": 1}}),
    ]
    process.stdin.write(("\n".join(lines) + "\n").encode())
    await process.stdin.drain()
    answers: dict[Any, Any] = {}
    unnamed: list[int] = []  # answers to lines that had no usable id
    while 4 not in answers:
        line = await asyncio.wait_for(process.stdout.readline(), 30)
        assert line, "the agent closed stdout"
        message = json.loads(line)  # every line on stdout is JSON
        answers[message.get("id")] = message
        if message.get("id") is None:
            unnamed.append(message["error"]["code"])
    process.stdin.close()
    await asyncio.wait_for(process.wait(), 30)
    assert answers[1]["error"]["code"] == -32602 and answers[2]["error"]["code"] == -32602
    assert answers[3]["error"]["code"] == -32601
    assert unnamed == [-32700, -32600]  # not JSON; a batch
    assert answers[4]["result"]["protocolVersion"] == 1
    assert process.returncode == 0


@given(
    before=st.lists(st.sampled_from(["a\n", "b\n", "c\n", "d"]), max_size=12).map("".join),
    after=st.lists(st.sampled_from(["a\n", "b\n", "x\n", "y"]), max_size=12).map("".join),
)
def test_the_text_before_an_edit_is_rebuilt_from_its_diff(before: str, after: str) -> None:
    """What an `edit` tool call shows as oldText: the file now with the edit's hunks taken back."""
    diff = unified_diff("pkg/m.py", before.encode(), after.encode()) + unified_diff("new.py", None, b"x\n")
    parts = file_parts(diff)
    if before == after:
        assert "pkg/m.py" not in parts
        return
    assert text_before(parts["pkg/m.py"], after) == before
    assert parts["new.py"].created and text_before(parts["new.py"], "x\n") is None


def test_a_file_changed_since_its_edit_gives_no_wrong_old_text() -> None:
    part = file_parts(unified_diff("m.py", b"a\nb\n", b"a\nc\n"))["m.py"]
    assert text_before(part, "a\nc\n") == "a\nb\n"
    assert text_before(part, "a\nsomeone else's line\n") is None  # the client shows it as new


def test_prompt_content_becomes_text_and_model_safe_files(workspace: Path, tmp_path: Path) -> None:
    app = Application(workspace, load_settings({}, environ={}))
    calc = workspace / "pkg" / "calc.py"
    blocks = [
        text_block("Make add subtract"),
        resource_link_block("calc.py", calc.as_uri()),
        resource_block(embedded_text_resource(calc.as_uri(), "    return a + b")),  # a selection
        resource_link_block(".env", (workspace / ".env").as_uri()),
        resource_link_block("elsewhere", (tmp_path / "elsewhere.py").as_uri()),
        resource_link_block("docs", "https://example.com/docs"),
        image_block(base64.b64encode(PNG).decode(), "image/png", uri="file:///home/me/Screen Shot.png"),
        image_block("PHN2Zz4=", "image/svg+xml"),  # a type Aider does not send
        image_block("not base64!", "image/jpeg"),
    ]
    parsed = parse_prompt(blocks, app.workspace, app.model_safe_files)
    assert parsed.files == ["pkg/calc.py"]
    assert parsed.text.startswith("Make add subtract") and "From pkg/calc.py:" in parsed.text
    assert "return a + b" in parsed.text
    assert [(image.name, image.data) for image in parsed.images] == [("Screen-Shot.png", PNG)]
    refused = "\n".join(parsed.refused)
    assert ".env" in refused and "elsewhere" in refused and "https://example.com/docs" in refused
    assert (
        "image-2 (image/svg+xml): Aider sends" in refused and "image-3.jpg: its data is not base64" in refused
    )
    assert not parsed.all_refused
    (workspace / "mockup.PNG").write_bytes(PNG)  # a picture in the workspace is shown, not edited
    pointed = parse_prompt(
        [text_block("x"), link(workspace / "mockup.PNG")], app.workspace, app.model_safe_files
    )
    assert pointed.files == [] and [image.name for image in pointed.images] == ["mockup.png"]
    assert not pointed.all_refused
    with saved_images(pointed.images) as paths:
        assert [Path(path).read_bytes() for path in paths] == [PNG] and Path(paths[0]).name == "mockup.png"
        assert not Path(paths[0]).is_relative_to(workspace)
    assert not Path(paths[0]).exists()  # gone with the turn
    whole_file = resource_block(embedded_text_resource(calc.as_uri(), calc.read_text()))
    assert "From" not in parse_prompt([text_block("x"), whole_file], app.workspace, app.model_safe_files).text


NOTES_SERVER = """
import os, sys
from pathlib import Path
from mcp.server.mcpserver import MCPServer

Path(os.environ["PID_FILE"]).write_text(str(os.getpid()))
server = MCPServer("notes")

@server.tool()
def team_rule(topic: str) -> str:
    \"\"\"The team's rule about a topic.\"\"\"
    return f"rule about {topic}: keep the PINEAPPLE convention"

server.run("stdio")
"""


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


@pytest.mark.aider
async def test_an_mcp_server_passed_in_is_a_tool_of_the_planner(
    calc_project: Path, llm_server: Any, tmp_path: Path
) -> None:
    script = tmp_path / "notes_server.py"
    script.write_text(NOTES_SERVER)
    pid_file = tmp_path / "notes.pid"
    notes = McpServerStdio(
        name="notes",
        command=sys.executable,
        args=[str(script)],
        env=[EnvVariable(name="PID_FILE", value=str(pid_file))],
    )
    broken = McpServerStdio(name="broken", command=str(tmp_path / "no-such-server"), args=[], env=[])
    llm_server.add_rule(
        all_of(IS_PLAN, not_(has_tool_result("notes_team_rule"))),
        tool_call("notes_team_rule", {"topic": "naming"}),
    )
    script_two_iterations(llm_server)
    env = scripted_env(llm_server.base_url, AIDER_LSP_TEST_COMMAND=TEST_COMMAND)
    async with acp_agent(env, tmp_path / "agent.log") as (conn, client, _):
        session = await conn.new_session(cwd=str(calc_project), mcp_servers=[notes, broken])
        await conn.set_session_mode(session_id=session.session_id, mode_id="workflow")
        answer = await conn.prompt(session_id=session.session_id, prompt=[text_block("make the tests pass")])
        pid = int(pid_file.read_text())
        assert _alive(pid)  # open for the session
    assert answer.stop_reason == "end_turn", client.reply()
    plan_requests = [json.dumps(r) for r in llm_server.chat_requests() if IS_PLAN(r)]
    assert any("notes_team_rule" in r and "keep the PINEAPPLE convention" in r for r in plan_requests)
    assert "broken" in client.reply() and "did not start" in client.reply()
    assert (calc_project / "calc.py").read_text() == FIXED
    assert await eventually(lambda: not _alive(pid)), "its process outlived the session"


@pytest.mark.aider
async def test_a_detected_test_command_runs_only_once_allowed(
    calc_project: Path, llm_server: Any, tmp_path: Path
) -> None:
    script_two_iterations(llm_server)
    remembered = remembered_path(calc_project)  # the user's own state folder, never the workspace
    async with acp_agent(scripted_env(llm_server.base_url), tmp_path / "agent.log") as (conn, client, _):
        session_id = await new_session(conn, calc_project)
        await conn.set_session_mode(session_id=session_id, mode_id="workflow")
        client.answers = ["reject_once"]
        rejected = await conn.prompt(session_id=session_id, prompt=[text_block("make the tests pass")])
        rejected_reply = client.reply()
        assert llm_server.chat_requests() == [] and not remembered.exists()  # nothing ran
        client.answers = ["allow_always"]
        allowed = await conn.prompt(session_id=session_id, prompt=[text_block("make the tests pass")])
    assert rejected.stop_reason == "end_turn" and "Not allowed" in rejected_reply
    assert "unittest" in client.asked[0].title and len(client.asked) == 2
    assert allowed.stop_reason == "end_turn" and "The tests pass" in client.reply()
    assert (calc_project / "calc.py").read_text() == FIXED
    assert "unittest" in json.loads(remembered.read_text())["command"]  # asked once per workspace
    executed = [u.title for u in client.of(ToolCallStart) if u.kind == "execute"]
    assert any(title.startswith(sys.executable) for title in executed)


@pytest.mark.aider
async def test_a_session_is_listed_and_replayed_after_a_restart(
    calc_project: Path, llm_server: Any, tmp_path: Path
) -> None:
    llm_server.add_rule(IS_AIDER, aider_whole({"calc.py": FIXED}))
    calc = calc_project / "calc.py"
    env = scripted_env(llm_server.base_url)
    async with acp_agent(env, tmp_path / "agent.log") as (conn, first, _):
        session_id = await new_session(conn, calc_project)
        await conn.prompt(session_id=session_id, prompt=[text_block("Fix subtract and multiply"), link(calc)])
    async with acp_agent(env, tmp_path / "agent2.log") as (conn, replayed, _):
        listed = await conn.list_sessions(cwd=str(calc_project))
        loaded = await conn.load_session(cwd=str(calc_project), session_id=session_id, mcp_servers=[])
        with pytest.raises(RequestError) as unknown:
            await conn.load_session(cwd=str(calc_project), session_id="../../etc/passwd", mcp_servers=[])
    (info,) = listed.sessions
    assert info.session_id == session_id and info.title == "Fix subtract and multiply"
    assert info.cwd == str(calc_project) and info.updated_at
    assert loaded.modes.current_mode_id == "edit"
    user = [u.content for u in replayed.updates if u.session_update == "user_message_chunk"]
    assert user[0].text == "Fix subtract and multiply" and user[1].uri == calc.as_uri()
    assert replayed.reply() == first.reply() and "Aider changed calc.py" in replayed.reply()
    (diff,) = replayed.diffs()
    assert diff.new_text == FIXED and diff.old_text == BUGGY  # the tool call as it was shown
    # not conversation: the session's state (its title, its spend, its commands)
    state = {"user_message_chunk", "usage_update", "available_commands_update", "session_info_update"}
    assert [type(u) for u in replayed.updates if u.session_update not in state] == [
        type(u) for u in first.updates if u.session_update not in state
    ]
    assert unknown.value.code == -32602


async def test_slash_commands_are_offered_and_run(
    calc_project: Path, llm_server: Any, tmp_path: Path
) -> None:
    env = scripted_env(
        llm_server.base_url, AIDER_LSP_TEST_COMMAND=TEST_COMMAND, AIDER_LSP_BUDGET='{"maxTokens": 5000}'
    )
    async with acp_agent(env, tmp_path / "agent.log") as (conn, client, _):
        session_id = await new_session(conn, calc_project)
        tested = await conn.prompt(session_id=session_id, prompt=[text_block("/test")])
        test_reply = client.reply()
        client.updates.clear()
        budget = await conn.prompt(session_id=session_id, prompt=[text_block("/budget")])
        budget_reply = client.reply()
        client.updates.clear()
        await conn.prompt(session_id=session_id, prompt=[text_block("/diff")])
    assert tested.stop_reason == "end_turn" and budget.stop_reason == "end_turn"
    assert "The tests fail" in test_reply
    assert "5000 tokens" in budget_reply and "Spent" in budget_reply
    assert "No edit or run" in client.reply()
    assert llm_server.chat_requests() == []  # commands ask no model
    assert (calc_project / "calc.py").read_text() == BUGGY


async def test_test_command_shows_the_run_and_where_it_failed(
    calc_project: Path, llm_server: Any, tmp_path: Path
) -> None:
    env = scripted_env(llm_server.base_url, AIDER_LSP_TEST_COMMAND=TEST_COMMAND)
    async with acp_agent(env, tmp_path / "agent.log") as (conn, client, _):
        session_id = await new_session(conn, calc_project)
        await conn.prompt(session_id=session_id, prompt=[text_block("/test")])
    names = {
        command.name
        for u in client.updates
        if u.session_update == "available_commands_update"
        for command in u.available_commands
    }
    assert {"undo", "diff", "test", "context", "budget", "apply", "discard"} <= names
    (run,) = client.of(ToolCallStart)
    assert run.kind == "execute" and run.title == TEST_COMMAND
    (closed,) = [u for u in client.of(ToolCallProgress) if u.tool_call_id == run.tool_call_id]
    assert closed.status == "failed" and "FAIL" in closed.content[0].content.text
    # the failing place as a link, not a location (a client would title the call by it)
    assert not closed.locations and "[test_calc.py:" in closed.content[0].content.text


async def test_config_options_set_the_retries_and_refuse_unknown_values(
    workspace: Path, llm_server: Any, tmp_path: Path
) -> None:
    async with acp_agent(scripted_env(llm_server.base_url), tmp_path / "agent.log") as (conn, _, _):
        session = await conn.new_session(cwd=str(workspace), mcp_servers=[])
        changed = await conn.set_config_option(
            config_id="max_retries", session_id=session.session_id, value="1"
        )
        with pytest.raises(RequestError) as bad_retries:
            await conn.set_config_option(config_id="max_retries", session_id=session.session_id, value="many")
        with pytest.raises(RequestError) as bad_model:
            await conn.set_config_option(
                config_id="aider_model", session_id=session.session_id, value="gpt-9"
            )
        with pytest.raises(RequestError) as unknown:
            await conn.set_config_option(config_id="colour", session_id=session.session_id, value="red")
    options = {_option(option).id: _option(option) for option in session.config_options}
    assert options["aider_model"].current_value == "openai/scripted-coder"
    assert options["max_retries"].current_value == "3"  # the settings' default
    after = {_option(option).id: _option(option) for option in changed.config_options}
    assert after["max_retries"].current_value == "1"
    assert bad_retries.value.code == bad_model.value.code == unknown.value.code == -32602
    assert "AIDER_LSP_AIDER_MODEL" in str(bad_model.value) and "max_retries" in str(unknown.value)


def test_doctor_says_what_an_acp_launch_uses(tmp_path: Path, llm_server: Any) -> None:
    import subprocess

    def acp_line(env: dict[str, str]) -> str:
        done = subprocess.run(
            [sys.executable, "-m", "aider_lsp", "doctor", "--workspace", str(tmp_path)],
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )
        (line,) = [line for line in done.stdout.splitlines() if "acp launch" in line]
        return line

    env = scripted_env(llm_server.base_url)
    line = acp_line(env)
    assert "openai:scripted-planner, key from AIDER_LSP_API_KEY" in line  # the variable, not a setting
    assert "Aider model openai/scripted-coder, key from AIDER_LSP_API_KEY (as OPENAI_API_KEY)" in line
    del env["AIDER_LSP_API_KEY"]
    env.pop("OPENAI_API_KEY", None)
    env.update(AIDER_LSP_MODEL="anthropic:claude-sonnet-4-5", ANTHROPIC_API_KEY="sk-ant-test")
    env.pop("AIDER_LSP_BASE_URL")
    env.pop("AIDER_LSP_AIDER_MODEL")
    line = acp_line(env)
    assert "anthropic:claude-sonnet-4-5, key from ANTHROPIC_API_KEY" in line
    assert "Aider model anthropic/claude-sonnet-4-5, key from ANTHROPIC_API_KEY" in line
    assert "sk-ant-test" not in line


@pytest.mark.aider
async def test_the_lsp_and_acp_fronts_share_one_workspace(
    calc_project: Path, llm_server: Any, lsp: Any, tmp_path: Path
) -> None:
    """VS Code (LSP) and an ACP editor on one folder at once: both index it and find files in
    it, and each one's undo takes back the other's edit."""
    llm_server.add_rule(IS_AIDER, aider_whole({"calc.py": FIXED}))
    calc = calc_project / "calc.py"
    log = tmp_path / "agent.log"
    options = scripted_options(llm_server.base_url)
    fix = {"prompt": "Fix it", "file_context": ["calc.py"]}
    async with (
        lsp(calc_project, init_options=options) as editor,
        acp_agent(scripted_env(llm_server.base_url), log) as (conn, client, _),
    ):
        session_id = await new_session(conn, calc_project)
        await conn.prompt(session_id=session_id, prompt=[text_block("/context multiply")])
        links = client.reply()
        found = await execute(editor, "aider-lsp.system.getContext", {"query": "multiply"})
        edited = await conn.prompt(session_id=session_id, prompt=[text_block("Fix it"), link(calc)])
        assert edited.stop_reason == "end_turn" and calc.read_text() == FIXED
        undone_by_lsp = await execute(editor, "aider-lsp.workflow.undo", {})
        assert calc.read_text() == BUGGY, undone_by_lsp  # the LSP's undo took back ACP's edit
        again = await execute(editor, "aider-lsp.aider.automatic", fix)
        assert again["status"] == "COMPLETE" and calc.read_text() == FIXED, again
        client.updates.clear()
        await conn.prompt(session_id=session_id, prompt=[text_block("/undo")])
        undo_reply = client.reply()
    assert calc.as_uri() in links  # ACP's index answers
    assert found["status"] == "COMPLETE" and "calc.py" in found["content"]  # and the LSP's
    assert calc.read_text() == BUGGY, undo_reply  # ACP's /undo took back the LSP's edit
    assert "calc.py" in undo_reply
    problems = [line for line in log.read_text().splitlines() if "locked" in line or "Traceback" in line]
    assert problems == []


# -- the first prompt sets Aider up ------------------------------------------------------------
def _setup_calls(client: RecordingClient) -> list[Any]:
    return [u for u in client.of(ToolCallStart) if u.title.startswith("Setting up Aider")]


async def test_a_first_prompt_without_aiders_environment_sets_it_up_and_says_why_it_failed(
    calc_project: Path, llm_server: Any, tmp_path: Path
) -> None:
    """Installed from a package, the agent has no Aider environment: the first prompt that needs
    Aider makes it (a tool call shows it); one that cannot be made ends the turn saying why and
    how to retry, without a traceback."""
    blocked = tmp_path / "not-a-folder"
    blocked.write_text("")  # the environment's folder cannot be made under a file
    env = scripted_env(llm_server.base_url, AIDER_LSP_AIDER_ENV=str(blocked / "env"))
    async with acp_agent(env, tmp_path / "agent.log") as (conn, client, _):
        session_id = await new_session(conn, calc_project)
        answer = await conn.prompt(session_id=session_id, prompt=[text_block("Fix multiply")])
    assert answer.stop_reason == "end_turn"
    (started,) = _setup_calls(client)
    closed = [u for u in client.of(ToolCallProgress) if u.tool_call_id == started.tool_call_id]
    assert closed[-1].status == "failed"
    assert (
        "setting up Aider's environment failed" in client.reply()
        and "aider-lsp setup-aider" in client.reply()
    )
    assert llm_server.chat_requests() == [] and (calc_project / "calc.py").read_text() == BUGGY
    assert "Traceback" not in (tmp_path / "agent.log").read_text()


async def test_a_cancel_during_the_set_up_stops_it_and_leaves_it_not_ready(
    calc_project: Path, llm_server: Any, tmp_path: Path
) -> None:
    target = tmp_path / "new-env"
    env = scripted_env(llm_server.base_url, AIDER_LSP_AIDER_ENV=str(target))
    async with acp_agent(env, tmp_path / "agent.log") as (conn, client, _):
        session_id = await new_session(conn, calc_project)
        turn = asyncio.ensure_future(conn.prompt(session_id=session_id, prompt=[text_block("Fix multiply")]))
        assert await eventually(lambda: _setup_calls(client)), "the set-up never started"
        # the set-up is under way: a process of it works on the new environment
        assert await eventually(lambda: _setup_processes(target)), "no process of the set-up ran"
        await conn.cancel(session_id=session_id)
        answer = await asyncio.wait_for(turn, 60)  # a cap: the set-up would take minutes
    assert answer.stop_reason == "cancelled"
    (started,) = _setup_calls(client)
    closed = [u for u in client.of(ToolCallProgress) if u.tool_call_id == started.tool_call_id]
    assert closed[-1].status == "failed"
    from aider_lsp.config import aider_env

    assert not aider_env.is_ready(target)
    await eventually(lambda: not _setup_processes(target))
    assert _setup_processes(target) == []  # nothing of the set-up runs on


def _setup_processes(target: Path) -> list[str]:
    """Command lines of live processes working on `target` (the set-up, its venv, pip)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if str(target) in cmdline or ("setup-aider" in cmdline and "aider_lsp" in cmdline):
            found.append(cmdline)
    return found
