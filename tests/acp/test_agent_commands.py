"""Slash commands, permission questions and editor buffers as the ACP client sees them,
in-process on a fake Application: `/test` asks about a detected command once (allow once runs
it this time, allow always remembers it, reject runs nothing) and shows the run as an
`execute` tool call; `/diff`, `/undo`, `/context`, `/budget`; a file whose buffer differs from
disk is edited only when allowed; a typed answer follows the option chosen, not its place."""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from pathlib import Path

import pytest
from acp.client.connection import ClientSideConnection
from acp.schema import (
    AvailableCommandsUpdate,
    ClientCapabilities,
    FileSystemCapabilities,
    ResourceContentBlock,
    ToolCallProgress,
    ToolCallStart,
)

from acp import resource_link_block, text_block
from aider_lsp.acp.permission import Asked, permission_asker
from aider_lsp.acp.session import AcpSession, Outbox
from aider_lsp.models import Answer, Choice, CommandRun, Finding, Question
from aider_lsp.suite.choose import remembered_path
from aider_lsp_testing.acp_client import RecordingClient, in_process_agent
from aider_lsp_testing.fake_app import EDIT, TESTS, FakeApplication, FakeApps, Turn, with_detected_tests
from aider_lsp_testing.waiting import eventually

RED = CommandRun(
    command="make test",
    exit_code=2,
    stdout="FAILED test_calc.py::test_add",
    findings=(Finding(path="test_calc.py", line=3, message="assert -1 == 3"),),
)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "calc.py").write_text("X = 1\n")
    return tmp_path


async def _run(
    conn: ClientSideConnection,
    session_id: str,
    text: str,
    client: RecordingClient,
    files: Sequence[ResourceContentBlock] = (),
) -> str:
    """One prompt's reply (the client's updates start empty for it)."""
    client.updates.clear()
    await conn.prompt(session_id=session_id, prompt=[text_block(text), *files])
    return client.reply()


async def test_a_detected_test_command_runs_only_as_the_user_allows(
    project: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="aider_lsp")
    command = with_detected_tests(project)
    fakes = FakeApps()
    fakes.app(project).test_runs.extend([RED, RED, RED])
    remembered = remembered_path(project)
    async with in_process_agent(fakes) as (conn, client, _):
        session_id = (await conn.new_session(cwd=str(project), mcp_servers=[])).session_id
        client.answers = ["reject_once", "allow_once", "allow_always"]
        rejected = await _run(conn, session_id, "/test", client)
        ran_without_remembering = not remembered.exists()
        once = await _run(conn, session_id, "/test", client)
        always = await _run(conn, session_id, "/test", client)
        asked_before = len(client.asked)
        await _run(conn, session_id, "/test", client)
    assert "Not allowed" in rejected and "AIDER_LSP_TEST_COMMAND" in rejected
    assert "The tests fail (exit code 2)." in once and "The tests fail" in always
    assert ran_without_remembering
    assert json.loads(remembered.read_text())["command"] == command  # allow always: kept for the workspace
    assert client.offered[0] == ["allow_once", "allow_always", "reject_once"]
    assert asked_before == 3 and len(client.asked) == 3  # remembered: not asked again
    assert command in client.asked[0].title
    runs = [call for name, call in fakes.built[0].calls if name == TESTS]
    assert runs == [command, command, command]  # the rejected one never ran
    said = caplog.text  # "allow once" is an answer: the log says so, not "no answer"
    assert "as allowed once" in said and "no answer about the test command" not in said


async def test_test_shows_the_run_as_an_execute_call_with_where_it_failed(project: Path) -> None:
    fakes = FakeApps(FakeApps().settings.model_copy(update={"test_command": "make test"}))
    fakes.app(project).test_runs.append(RED)
    async with in_process_agent(fakes) as (conn, client, _):
        session_id = (await conn.new_session(cwd=str(project), mcp_servers=[])).session_id
        reply = await _run(conn, session_id, "/test", client)
    (run,) = client.of(ToolCallStart)
    assert run.kind == "execute" and run.title == "make test" and not client.asked
    (closed,) = [update for update in client.of(ToolCallProgress) if update.tool_call_id == run.tool_call_id]
    assert closed.status == "failed" and closed.raw_output == {"exit_code": 2}
    text = closed.content[0].content.text
    assert text.startswith("failed (exit code 2)") and "FAILED test_calc.py::test_add" in text
    link = f"[test_calc.py:3]({(project / 'test_calc.py').as_uri()}#L3)"
    assert not closed.locations and text.endswith(f"Failing at: {link}")  # the title stays the command
    assert reply.endswith("The tests fail (exit code 2).")


async def test_diff_undo_context_and_budget(project: Path) -> None:
    fakes = FakeApps()
    app = fakes.app(project)
    app.edits.append(Turn(writes={"calc.py": "X = 2\n"}, tokens=1200))
    app.context = ["calc.py"]
    calc = project / "calc.py"
    async with in_process_agent(fakes) as (conn, client, _):
        session_id = (await conn.new_session(cwd=str(project), mcp_servers=[])).session_id
        nothing = await _run(conn, session_id, "/diff", client)
        await conn.prompt(session_id=session_id, prompt=[text_block("X = 2"), link(calc)])
        diff = await _run(conn, session_id, "/diff", client)
        undone = await _run(conn, session_id, "/undo calc.py", client)
        found = await _run(conn, session_id, "/context where is X", client)
        budget = await _run(conn, session_id, "/budget", client)
        no_query = await _run(conn, session_id, "/context", client)
    assert "No edit or run in this session has changed a file yet." in nothing
    assert diff.startswith("```diff\n") and "+X = 2" in diff and diff.endswith("```")
    assert undone == "Restored calc.py." and ("undo", ["calc.py"]) in app.calls
    assert "The files most relevant to 'where is X'" in found
    assert f"- [calc.py](<{calc.as_uri()}>)" in found  # a link any client shows (text)
    assert "1200 tokens" in budget and "Budget per run: none" in budget
    assert no_query == "Say what to look for: /context QUERY"


async def test_a_file_whose_buffer_differs_from_disk_is_edited_only_when_allowed(project: Path) -> None:
    fakes = FakeApps()
    app = fakes.app(project)
    app.edits.append(Turn(writes={"calc.py": "X = 2\n"}))
    calc = project / "calc.py"
    reads = ClientCapabilities(fs=FileSystemCapabilities(read_text_file=True))
    async with in_process_agent(fakes, reads) as (conn, client, _):
        client.buffers[str(calc)] = "X = 1  # the user's unsaved change\n"
        session_id = (await conn.new_session(cwd=str(project), mcp_servers=[])).session_id
        client.answers = ["reject_once", "allow_once"]
        rejected = await _run(conn, session_id, "set X", client, [link(calc)])
        edits_after_reject = [name for name, _ in app.calls if name == EDIT]
        allowed = await _run(conn, session_id, "set X", client, [link(calc)])
    assert "Not edited" in rejected and "calc.py" in rejected and "Nothing was run" in rejected
    assert edits_after_reject == []
    assert client.offered == [
        ["allow_once", "reject_once"],
        ["allow_once", "reject_once"],
    ]  # nothing to remember
    assert [location.path for location in client.asked[0].locations or []] == [str(calc)]
    assert client.read == [str(calc), str(calc)]
    assert "Aider changed calc.py." in allowed and calc.read_text() == "X = 2\n"


async def test_the_answer_follows_the_option_chosen_not_its_place(tmp_path: Path) -> None:
    """Choices in another order (decline first) still map "allow always" onto ACCEPT,
    "reject_once" onto DECLINE and "allow once" onto ONCE; a question without ACCEPT offers nothing
    to remember."""
    client = RecordingClient()
    sent: list[object] = []

    async def send(session_id: str, update: object) -> None:
        sent.append(update)

    session = AcpSession(
        id="s", root=tmp_path, app=FakeApplication(tmp_path), outbox=Outbox("s", send), client=client
    )
    reversed_choices = (Choice(answer=Answer.DECLINE, label="No"), Choice(answer=Answer.ACCEPT, label="Yes"))
    question = Question(message="Run `make test`?", choices=reversed_choices)
    only_decline = Question(message="Go on?", choices=(Choice(answer=Answer.DECLINE, label="Stop"),))
    asked = Asked()
    ask = permission_asker(client, session, asked)
    client.answers = ["allow_always", "reject_once", "allow_once", "allow_once"]
    answers = [await ask(question), await ask(question), await ask(question), await ask(only_decline)]
    assert answers == [Answer.ACCEPT, Answer.DECLINE, Answer.ONCE, Answer.ONCE]
    assert asked.rejected == "Run `make test`?"
    assert client.offered[-1] == ["allow_once", "reject_once"]


def link(path: Path) -> ResourceContentBlock:
    return resource_link_block(path.name, path.as_uri())


async def test_each_command_picked_from_a_slash_popup_is_sent_and_runs(project: Path) -> None:
    # the VS Code ACP client's popup: a command with `input` becomes "/name " waiting for it (the
    # prompt is not sent); one without is sent at once. Only a required argument is an input.
    fakes = FakeApps()
    app = fakes.app(project)
    app.edits.append(Turn(writes={"calc.py": "X = 2\n"}))
    async with in_process_agent(fakes) as (conn, client, _):
        session_id = (await conn.new_session(cwd=str(project), mcp_servers=[])).session_id
        assert await eventually(lambda: client.of(AvailableCommandsUpdate))
        (offered,) = client.of(AvailableCommandsUpdate)
        waiting = {command.name for command in offered.available_commands if command.input is not None}
        await conn.prompt(session_id=session_id, prompt=[text_block("X = 2"), link(project / "calc.py")])
        picked = {}
        for command in offered.available_commands:
            if command.name not in waiting and command.name != "test":  # /test: its own stories
                picked[command.name] = await _run(conn, session_id, f"/{command.name}", client)
    assert waiting == {"context"}  # the one command that cannot run without its argument
    assert picked["diff"].startswith("```diff") and picked["undo"].startswith("Restored")
    assert "Budget per run" in picked["budget"] and "No isolated run is ready" in picked["apply"]
    assert "No isolated run is ready" in picked["discard"]
    assert "undo" in [name for name, _ in app.calls]  # the Application was asked to take it back


async def test_a_buffer_that_differs_only_by_its_final_newline_or_line_endings_is_not_asked_about(
    project: Path,
) -> None:
    # avante gives a loaded buffer's lines joined, without the newline the file ends with; a
    # CRLF file's buffer reads LF: neither is a change of the user's
    fakes = FakeApps()
    fakes.app(project).edits.extend(
        [Turn(writes={"calc.py": "X = 2\n"}), Turn(writes={"crlf.py": "Y = 2\n"})]
    )
    (project / "crlf.py").write_bytes(b"Y = 1\r\nZ = 0\r\n")
    reads = ClientCapabilities(fs=FileSystemCapabilities(read_text_file=True))
    async with in_process_agent(fakes, reads) as (conn, client, _):
        client.buffers[str(project / "calc.py")] = "X = 1"
        client.buffers[str(project / "crlf.py")] = "Y = 1\nZ = 0"
        session_id = (await conn.new_session(cwd=str(project), mcp_servers=[])).session_id
        first = await _run(conn, session_id, "set X", client, [link(project / "calc.py")])
        client.buffers[str(project / "calc.py")] = "X = 2"  # the editor follows the edit
        second = await _run(conn, session_id, "set Y", client, [link(project / "crlf.py")])
    assert client.asked == [] and "Not edited" not in first + second
    assert client.read == [str(project / "calc.py"), str(project / "calc.py"), str(project / "crlf.py")]
