"""A prompt turn in each mode as the ACP client sees it, in-process on a fake Application: the
Edit turn's tool calls with their diffs and Aider's reply as it is written, the Ask turn that
edits nothing, the Workflow turn's plan, steps and outcome said once, the stop reasons, a
cancel answered at once with the open tool calls closed, and the refusals said by name."""

from __future__ import annotations

import asyncio
import base64
from pathlib import Path

import pytest
from acp.schema import AgentPlanUpdate, ResourceContentBlock, ToolCallProgress, ToolCallStart

from acp import image_block, resource_link_block, text_block
from aider_lsp.acp.prompt import current_request
from aider_lsp.models import CommandRun, Finding
from aider_lsp_testing.acp_client import in_process_agent
from aider_lsp_testing.fake_app import EDIT, RUN, SETTINGS, TESTS, FakeApps, Iteration, Turn
from aider_lsp_testing.waiting import eventually

BUGGY, FIXED = "def add(a, b):\n    return a - b\n", "def add(a, b):\n    return a + b\n"
RED = CommandRun(
    command="pytest",
    exit_code=1,
    stdout="FAILED test_calc.py::test_add",
    findings=(Finding(path="test_calc.py", line=3, message="assert -1 == 3"),),
)
GREEN = CommandRun(command="pytest", exit_code=0, stdout="1 passed")


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "calc.py").write_text(BUGGY)
    (tmp_path / ".env").write_text("OPENAI_API_KEY=sk-secret\n")
    return tmp_path


def link(path: Path) -> ResourceContentBlock:
    return resource_link_block(path.name, path.as_uri())


def closing(updates: list[ToolCallProgress], call: ToolCallStart) -> ToolCallProgress:
    """The last update of a tool call (how the client shows it in the end)."""
    return [update for update in updates if update.tool_call_id == call.tool_call_id][-1]


async def test_an_edit_turn_shows_the_file_pending_then_its_diff_and_keeps_the_chat(project: Path) -> None:
    fakes = FakeApps()
    app = fakes.app(project)
    app.edits.extend([Turn(writes={"calc.py": FIXED}, reply="add subtracted: fixed.", pieces=3), Turn()])
    calc = project / "calc.py"
    async with in_process_agent(fakes) as (conn, client, _):
        session_id = (await conn.new_session(cwd=str(project), mcp_servers=[])).session_id
        answer = await conn.prompt(session_id=session_id, prompt=[text_block("Fix add"), link(calc)])
        first_reply = client.reply()
        client.updates.clear()
        again = await conn.prompt(session_id=session_id, prompt=[text_block("Now add a docstring")])
    assert answer.stop_reason == again.stop_reason == "end_turn"
    (started,) = client.of(ToolCallStart)  # the second turn's file is the first's: updates cleared
    assert started.kind == "edit" and started.status == "pending"
    assert calc.read_text() == FIXED
    assert first_reply.startswith("add subtracted: fixed.")  # streamed, then what changed: once
    assert first_reply.count("add subtracted") == 1 and first_reply.endswith("Aider changed calc.py.")
    assert "Aider changed no file." in client.reply()
    edits = [call for name, call in app.calls if name == EDIT]
    assert edits[0]["files"] == ["calc.py"] and edits[0]["session_id"] is None
    assert edits[1]["files"] == ["calc.py"] and edits[1]["session_id"] == "chat-1"  # the same chat, its files


async def test_an_edit_turn_closes_each_file_with_its_diff(project: Path) -> None:
    fakes = FakeApps()
    fakes.app(project).edits.append(Turn(writes={"calc.py": FIXED, "notes.md": "# notes\n"}))
    calc = project / "calc.py"
    async with in_process_agent(fakes) as (conn, client, _):
        session_id = (await conn.new_session(cwd=str(project), mcp_servers=[])).session_id
        await conn.prompt(session_id=session_id, prompt=[text_block("Fix add"), link(calc)])
    starts = client.of(ToolCallStart)
    assert [start.title for start in starts] == ["Edit calc.py", "Edit notes.md"]  # Aider's own pick too
    assert all(closing(client.of(ToolCallProgress), start).status == "completed" for start in starts)
    diffs = {Path(diff.path).name: diff for diff in client.diffs()}
    assert diffs["calc.py"].old_text == BUGGY and diffs["calc.py"].new_text == FIXED
    assert diffs["notes.md"].old_text is None and diffs["notes.md"].new_text == "# notes\n"  # created


async def test_an_edit_that_failed_closes_its_calls_as_failed_and_says_why(project: Path) -> None:
    fakes = FakeApps()
    fakes.app(project).edits.append(Turn(error="Aider's server stopped"))
    async with in_process_agent(fakes) as (conn, client, _):
        session_id = (await conn.new_session(cwd=str(project), mcp_servers=[])).session_id
        answer = await conn.prompt(
            session_id=session_id, prompt=[text_block("Fix"), link(project / "calc.py")]
        )
    (started,) = client.of(ToolCallStart)
    assert closing(client.of(ToolCallProgress), started).status == "failed"
    assert answer.stop_reason == "end_turn" and "The edit failed: Aider's server stopped" in client.reply()


async def test_an_ask_turn_answers_in_its_own_chat_and_edits_nothing(project: Path) -> None:
    fakes = FakeApps()
    app = fakes.app(project)
    app.answers.extend([Turn(reply="add subtracts its arguments.", pieces=2), Turn(reply="Yes.")])
    async with in_process_agent(fakes) as (conn, client, _):
        session_id = (await conn.new_session(cwd=str(project), mcp_servers=[])).session_id
        await conn.set_session_mode(session_id=session_id, mode_id="ask")
        answer = await conn.prompt(
            session_id=session_id, prompt=[text_block("What is wrong?"), link(project / "calc.py")]
        )
        await conn.prompt(session_id=session_id, prompt=[text_block("Sure?")])
    assert answer.stop_reason == "end_turn"
    assert client.reply() == "add subtracts its arguments.Yes."
    assert (project / "calc.py").read_text() == BUGGY and not client.of(ToolCallStart)
    asks = [call for name, call in app.calls if name == "ask"]
    assert [ask["session_id"] for ask in asks] == [None, "chat-1"] and asks[0]["files"] == ["calc.py"]


async def test_a_workflow_turn_shows_its_steps_and_says_its_outcome_once(project: Path) -> None:
    fakes = FakeApps(SETTINGS.model_copy(update={"test_command": "pytest"}))
    fakes.app(project).runs.append(
        [
            Iteration(Turn(writes={"calc.py": BUGGY + "# 1\n"}), RED),
            Iteration(Turn(writes={"calc.py": FIXED}), GREEN),
        ]
    )
    async with in_process_agent(fakes) as (conn, client, _):
        session_id = (await conn.new_session(cwd=str(project), mcp_servers=[])).session_id
        await conn.set_session_mode(session_id=session_id, mode_id="workflow")
        answer = await conn.prompt(session_id=session_id, prompt=[text_block("make the tests pass")])
    assert answer.stop_reason == "end_turn"
    plans = client.of(AgentPlanUpdate)
    assert [entry.content for entry in plans[-1].entries] == [
        "Iteration 1: Aider edits",
        "Iteration 1: testing",
        "Iteration 2: Aider edits",
        "Iteration 2: testing",
    ]
    assert all(entry.status == "completed" for entry in plans[-1].entries)
    assert plans[0].entries[-1].status == "in_progress"
    starts = client.of(ToolCallStart)
    assert [start.kind for start in starts] == ["edit", "execute", "edit", "execute"]
    ends = [closing(client.of(ToolCallProgress), start) for start in starts]
    assert [end.status for end in ends] == ["completed", "failed", "completed", "completed"]
    assert not ends[1].locations and (project / "test_calc.py").as_uri() in ends[1].content[0].content.text
    assert client.reply().count("The tests pass") == 1  # the outcome, said once
    assert (project / "calc.py").read_text() == FIXED


async def test_a_workflow_that_ran_out_of_retries_stops_with_max_turn_requests(project: Path) -> None:
    fakes = FakeApps(SETTINGS.model_copy(update={"test_command": "pytest"}))
    fakes.app(project).runs.append([Iteration(Turn(writes={"calc.py": BUGGY + "# 1\n"}), RED)])
    async with in_process_agent(fakes) as (conn, client, _):
        session_id = (await conn.new_session(cwd=str(project), mcp_servers=[])).session_id
        await conn.set_config_option(config_id="mode", session_id=session_id, value="workflow")
        answer = await conn.prompt(session_id=session_id, prompt=[text_block("make the tests pass")])
    assert answer.stop_reason == "max_turn_requests"
    assert "still fail" in client.reply()


async def test_a_cancelled_edit_is_answered_at_once_and_its_calls_closed(project: Path) -> None:
    fakes = FakeApps()
    app = fakes.app(project)
    app.edits.append(Turn(writes={"calc.py": FIXED}))
    app.hold.add(EDIT)
    async with in_process_agent(fakes) as (conn, client, _):
        session_id = (await conn.new_session(cwd=str(project), mcp_servers=[])).session_id
        prompt = asyncio.create_task(
            conn.prompt(session_id=session_id, prompt=[text_block("Fix"), link(project / "calc.py")])
        )
        assert await eventually(lambda: client.of(ToolCallStart))
        await conn.cancel(session_id=session_id)
        answer = await asyncio.wait_for(prompt, 60)  # a cap: the held step never answers
    assert answer.stop_reason == "cancelled"
    (started,) = client.of(ToolCallStart)
    end = closing(client.of(ToolCallProgress), started)
    assert end.status == "failed" and "cancelled" in end.content[0].content.text
    assert (project / "calc.py").read_text() == BUGGY


async def test_a_cancelled_prompt_sent_again_before_the_next_one_does_not_run_again(project: Path) -> None:
    """CodeCompanion sends the cancelled prompt again in front of the user's next one: only the
    next one runs; the same prompt sent alone is a retry, and runs."""
    fakes = FakeApps()
    app = fakes.app(project)
    app.edits.extend([Turn(writes={"calc.py": FIXED}), Turn(reply="x"), Turn(reply="y")])
    app.hold.add(EDIT)
    cancelled = [text_block("Fix add"), link(project / "calc.py")]
    async with in_process_agent(fakes) as (conn, client, _):
        session_id = (await conn.new_session(cwd=str(project), mcp_servers=[])).session_id
        prompt = asyncio.create_task(conn.prompt(session_id=session_id, prompt=cancelled))
        assert await eventually(lambda: client.of(ToolCallStart))
        await conn.cancel(session_id=session_id)
        assert (await asyncio.wait_for(prompt, 60)).stop_reason == "cancelled"
        app.hold.clear()
        await conn.prompt(session_id=session_id, prompt=[*cancelled, text_block("What does add return?")])
        await conn.prompt(session_id=session_id, prompt=cancelled)  # a retry, asked for
    edits = [call["prompt"] for name, call in app.calls if name == EDIT]
    assert len(edits) == 3 and "Fix add" not in edits[1] and "What does add return?" in edits[1]
    assert "Fix add" in edits[2]


@pytest.mark.parametrize(("isolation", "steered"), [("none", None), ("worktree", "run-1")])
async def test_a_prompt_sent_while_a_workflow_runs_is_a_note_for_its_run(
    project: Path, isolation: str, steered: str | None
) -> None:
    """#52: the user steers a run under way by writing to it (in place, or the isolated run the
    turn started); the running turn says it was noted."""
    fakes = FakeApps(SETTINGS.model_copy(update={"test_command": "pytest"}))
    app = fakes.app(project)
    app.runs.append([Iteration(Turn(writes={"calc.py": FIXED}), GREEN)])
    app.hold.add(RUN)  # the run's edit goes on until the turn is cancelled
    async with in_process_agent(fakes) as (conn, client, _):
        session_id = (await conn.new_session(cwd=str(project), mcp_servers=[])).session_id
        await conn.set_session_mode(session_id=session_id, mode_id="workflow")
        await conn.set_config_option(config_id="isolation", session_id=session_id, value=isolation)
        turn = asyncio.create_task(conn.prompt(session_id=session_id, prompt=[text_block("make it pass")]))
        assert await eventually(lambda: client.of(ToolCallStart))
        noted = await conn.prompt(session_id=session_id, prompt=[text_block("negative numbers too")])
        assert noted.stop_reason == "end_turn" and app.notes == ["negative numbers too"]
        assert app.steered == [steered]
        assert "Noted for the run's next edit: “negative numbers too”." in client.reply()
        await conn.cancel(session_id=session_id)
        assert (await asyncio.wait_for(turn, 60)).stop_reason == "cancelled"


async def test_a_cancel_during_a_runs_test_run_closes_the_open_call(project: Path) -> None:
    fakes = FakeApps(SETTINGS.model_copy(update={"test_command": "pytest"}))
    app = fakes.app(project)
    app.runs.append([Iteration(Turn(writes={"calc.py": FIXED}), GREEN)])
    app.hold.add(TESTS)
    async with in_process_agent(fakes) as (conn, client, _):
        session_id = (await conn.new_session(cwd=str(project), mcp_servers=[])).session_id
        await conn.set_session_mode(session_id=session_id, mode_id="workflow")
        prompt = asyncio.create_task(conn.prompt(session_id=session_id, prompt=[text_block("make it pass")]))
        assert await eventually(lambda: [s for s in client.of(ToolCallStart) if s.kind == "execute"])
        await conn.cancel(session_id=session_id)
        answer = await asyncio.wait_for(prompt, 60)  # a cap: the held step never answers
    assert answer.stop_reason == "cancelled"
    (tests,) = [start for start in client.of(ToolCallStart) if start.kind == "execute"]
    assert closing(client.of(ToolCallProgress), tests).status == "failed"


async def test_refused_files_are_named_and_a_prompt_of_only_those_runs_nothing(project: Path) -> None:
    fakes = FakeApps()
    async with in_process_agent(fakes) as (conn, client, _):
        session_id = (await conn.new_session(cwd=str(project), mcp_servers=[])).session_id
        answer = await conn.prompt(
            session_id=session_id, prompt=[text_block("Read it"), link(project / ".env")]
        )
        empty = await conn.prompt(session_id=session_id, prompt=[link(project / "calc.py")])
    assert answer.stop_reason == empty.stop_reason == "end_turn"
    assert "Not given to Aider: .env" in client.reply() and "Nothing was run" in client.reply()
    assert "The prompt has no text" in client.reply()
    assert not [name for name, _ in fakes.built[0].calls if name == EDIT]


async def test_a_first_prompt_sets_aider_up_and_a_failed_set_up_runs_nothing(project: Path) -> None:
    fakes = FakeApps()
    app = fakes.app(project)
    app.needs_setup, app.setup_problem = True, "no network: run `aider-lsp setup-aider` again"
    async with in_process_agent(fakes) as (conn, client, _):
        session_id = (await conn.new_session(cwd=str(project), mcp_servers=[])).session_id
        answer = await conn.prompt(session_id=session_id, prompt=[text_block("Fix add")])
    assert answer.stop_reason == "end_turn"
    (setup,) = client.of(ToolCallStart)
    assert setup.kind == "execute" and "Setting up Aider" in setup.title
    assert closing(client.of(ToolCallProgress), setup).status == "failed"
    assert "Nothing was run: no network" in client.reply()
    assert not [name for name, _ in app.calls if name == EDIT]


async def test_a_pasted_image_goes_with_each_modes_turn_and_is_gone_after_it(project: Path) -> None:
    fakes = FakeApps(SETTINGS.model_copy(update={"test_command": "pytest"}))
    app = fakes.app(project)
    app.answers.append(Turn(reply="A red button."))
    app.edits.append(Turn(writes={"calc.py": FIXED}))
    app.runs.append([Iteration(Turn(writes={"calc.py": FIXED + "# 2\n"}), GREEN)])
    pasted = image_block(base64.b64encode(b"\x89PNG fake").decode(), "image/png")
    async with in_process_agent(fakes) as (conn, _, _):
        session_id = (await conn.new_session(cwd=str(project), mcp_servers=[])).session_id
        for mode in ("ask", "edit", "workflow"):
            await conn.set_session_mode(session_id=session_id, mode_id=mode)
            await conn.prompt(
                session_id=session_id, prompt=[text_block("Like this"), pasted, link(project / "calc.py")]
            )
    images = [_images_of(call) for name, call in app.calls if name in ("ask", EDIT, RUN)]
    assert [len(paths) for paths in images] == [1, 1, 1] and app.images_seen == [[b"\x89PNG fake"]] * 3
    assert all(not Path(paths[0]).exists() and not Path(paths[0]).is_relative_to(project) for paths in images)


def _images_of(call: object) -> list[str]:
    """The image files a fake call was given (an ask's or edit's record, a run's request)."""
    return list(call["images"]) if isinstance(call, dict) else list(getattr(call, "images", []))


def _avante(*earlier_user: str, recovering: bool = False) -> list[str]:
    """The text blocks avante.nvim sends with a prompt in a session: each user message wrapped,
    newest first (oldest first, with the assistant's, when it recovers a session), then a note."""
    if recovering:
        blocks = []
        for text in reversed(earlier_user):
            blocks += [f"<previous_user_message>{text}</previous_user_message>"]
            blocks += ["<previous_assistant_message>Done.</previous_assistant_message>"]
        note = (
            f"Continuing from previous ACP session with {len(blocks)} recent messages preserved for context"
        )
        return [*blocks[:-1], f"<system_context>{note}</system_context>"]
    wrapped = [f"<previous_user_message>{text}</previous_user_message>" for text in earlier_user]
    note = f"Continuing from previous session with {len(earlier_user)} recent user messages"
    return [*wrapped, f"<system_context>{note}</system_context>"]


def test_a_client_that_sends_its_history_with_each_prompt_gives_the_current_request_alone() -> None:
    newest_first = _avante("Now add a docstring", "Fix add")
    assert current_request(newest_first) == ["Now add a docstring"]
    assert current_request(_avante("/undo", "Fix add", recovering=True)) == ["/undo"]
    selected = "<selected_code>\n<path>calc.py</path>\n<snippet>return a - b</snippet>\n</selected_code>"
    assert current_request([selected, *_avante("Fix this")]) == [
        "Fix this",
        "From calc.py:\n```\nreturn a - b\n```",
    ]
    plain = ["Fix add", "and keep the tests"]
    assert current_request(plain) == plain  # any other client's blocks as they are


async def test_an_avante_prompt_runs_its_current_request_and_its_slash_command(project: Path) -> None:
    fakes = FakeApps()
    app = fakes.app(project)
    app.edits.extend([Turn(writes={"calc.py": FIXED}), Turn()])
    calc = project / "calc.py"
    async with in_process_agent(fakes) as (conn, client, _):
        session_id = (await conn.new_session(cwd=str(project), mcp_servers=[])).session_id
        prompt = [link(calc), *map(text_block, _avante("Fix add"))]
        await conn.prompt(session_id=session_id, prompt=prompt)
        client.updates.clear()
        await conn.prompt(
            session_id=session_id, prompt=[link(calc), *map(text_block, _avante("/diff", "Fix add"))]
        )
    edits = [call for name, call in app.calls if name == EDIT]
    assert [edit["prompt"] for edit in edits] == ["Fix add"]  # /diff was a command, not a prompt
    assert client.reply().startswith("```diff")


async def test_a_file_an_edit_turn_left_unchanged_is_said_so_by_its_title_not_its_place(
    project: Path,
) -> None:
    # CodeCompanion names a call by its first location: "Edit: calc.py" read as an edit made
    fakes = FakeApps()
    fakes.app(project).edits.append(Turn(reply="add is right as it is."))
    async with in_process_agent(fakes) as (conn, client, _):
        session_id = (await conn.new_session(cwd=str(project), mcp_servers=[])).session_id
        await conn.prompt(
            session_id=session_id, prompt=[text_block("Is add right?"), link(project / "calc.py")]
        )
    (started,) = client.of(ToolCallStart)
    end = closing(client.of(ToolCallProgress), started)
    assert end.status == "completed" and end.title == "calc.py unchanged" and end.locations == []
    assert "Aider changed no file." in client.reply()
