"""The ACP agent's sessions as a client meets them, in-process over the SDK's memory transport
and on fake Applications (milliseconds a test): new, load and list, modes and config options
in step, one Application per workspace in the pool both front ends share, sign-in refusals."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from acp.schema import AvailableCommandsUpdate, ConfigOptionUpdate, CurrentModeUpdate, SessionInfoUpdate

from acp import RequestError, resource_link_block, text_block
from aider_lsp.config.settings import Settings
from aider_lsp_testing.acp_client import in_process_agent
from aider_lsp_testing.fake_app import EDIT, SETTINGS, FakeApps, Turn
from aider_lsp_testing.waiting import eventually


def _option(option: Any) -> Any:
    """A config option as the client parsed it (the SDK may keep the union's root)."""
    return getattr(option, "root", option)


def _values(options: list[Any]) -> dict[str, str]:
    return {_option(option).id: _option(option).current_value for option in options}


async def test_a_new_session_offers_the_modes_the_options_and_the_commands(tmp_path: Path) -> None:
    fakes = FakeApps()
    async with in_process_agent(fakes) as (conn, client, _):
        session = await conn.new_session(cwd=str(tmp_path), mcp_servers=[])
        assert await eventually(lambda: client.of(AvailableCommandsUpdate))  # sent after the answer
    assert [mode.id for mode in session.modes.available_modes] == ["ask", "edit", "workflow"]
    assert session.modes.current_mode_id == "edit"
    assert _values(session.config_options) == {
        "mode": "edit",
        "aider_model": "openai/fake-coder",
        "max_retries": "3",
        "isolation": "none",
        "attempts": "1",
        "choose": "first-green",
    }
    (commands,) = client.of(AvailableCommandsUpdate)
    assert [command.name for command in commands.available_commands] == [
        "undo",
        "diff",
        "test",
        "context",
        "budget",
        "apply",
        "discard",
    ]
    (app,) = fakes.built
    assert ("warm_up", None) in app.calls and app.closed  # warmed up at the start, closed at the end


async def test_the_mode_and_its_option_stay_in_step(tmp_path: Path) -> None:
    fakes = FakeApps()
    async with in_process_agent(fakes) as (conn, client, _):
        session_id = (await conn.new_session(cwd=str(tmp_path), mcp_servers=[])).session_id
        await conn.set_session_mode(session_id=session_id, mode_id="workflow")
        changed = await conn.set_config_option(config_id="mode", session_id=session_id, value="ask")
        model = await conn.set_config_option(config_id="aider_model", session_id=session_id, value="sonnet")
        retries = await conn.set_config_option(config_id="max_retries", session_id=session_id, value="1")
        attempts = await conn.set_config_option(config_id="attempts", session_id=session_id, value="3")
        refused = []
        for config_id, value in (
            ("mode", "draw"),
            ("max_retries", "many"),
            ("aider_model", "gpt-9"),
            ("colour", "red"),
            ("attempts", "9"),
            ("choose", "best"),
        ):
            with pytest.raises(RequestError) as error:
                await conn.set_config_option(config_id=config_id, session_id=session_id, value=value)
            refused.append(error.value)
        with pytest.raises(RequestError) as bad_mode:
            await conn.set_session_mode(session_id=session_id, mode_id="draw")
    (as_option,) = client.of(ConfigOptionUpdate)
    assert _values(as_option.config_options)["mode"] == "workflow"  # set_session_mode → the option
    assert [update.current_mode_id for update in client.of(CurrentModeUpdate)] == ["ask"]  # and back
    assert _values(changed.config_options)["mode"] == "ask"
    assert _values(model.config_options)["aider_model"] == "sonnet"
    assert fakes.built[0].settings.aider_model == "sonnet"  # the workspace's Aider model
    assert _values(retries.config_options)["max_retries"] == "1"
    assert all(error.code == -32602 for error in [*refused, bad_mode.value])
    assert "AIDER_LSP_AIDER_MODEL" in str(refused[2]) and "max_retries" in str(refused[3])
    assert _values(attempts.config_options)["attempts"] == "3"
    assert "from 1 to 8" in str(refused[4]) and "first-green or compare" in str(refused[5])


async def test_sessions_in_one_workspace_share_its_application(tmp_path: Path) -> None:
    fakes = FakeApps()
    async with in_process_agent(fakes) as (conn, _, _):
        for _ in range(3):
            await conn.new_session(cwd=str(tmp_path), mcp_servers=[])
    assert len(fakes.built) == 1


async def test_beyond_the_bound_the_least_recently_used_workspace_closes_and_reopens_on_use(
    tmp_path: Path,
) -> None:
    fakes = FakeApps(SETTINGS.model_copy(update={"max_open_folders": 2}))
    a, b, c = (tmp_path / name for name in "abc")
    for root in (a, b, c):
        root.mkdir()
    async with in_process_agent(fakes) as (conn, client, _):
        in_a = (await conn.new_session(cwd=str(a), mcp_servers=[])).session_id
        await conn.new_session(cwd=str(b), mcp_servers=[])
        await conn.new_session(cwd=str(c), mcp_servers=[])  # a is the least recently used: closed
        first_a, app_b, app_c = fakes.built
        closed_after_c = (first_a.closed, app_b.closed, app_c.closed)
        fakes.app(a).answers.append(Turn(reply="It adds."))
        await conn.set_config_option(config_id="mode", session_id=in_a, value="ask")
        answer = await conn.prompt(session_id=in_a, prompt=[text_block("What does it do?")])
        closed_after_a = (app_b.closed, app_c.closed)
    assert closed_after_c == (True, False, False)
    assert closed_after_a == (True, False)  # a reopened: b, now the least recently used, closed
    assert answer.stop_reason == "end_turn" and "It adds." in client.reply()
    assert [app.workspace for app in fakes.built] == [a, b, c, a]


async def test_a_session_is_listed_and_loaded_with_its_conversation(tmp_path: Path) -> None:
    fakes = FakeApps()
    fakes.app(tmp_path).edits.append(Turn(writes={"calc.py": "X = 2\n"}, reply="Done."))
    (tmp_path / "calc.py").write_text("X = 1\n")
    async with in_process_agent(fakes) as (conn, first, _):
        session_id = (await conn.new_session(cwd=str(tmp_path), mcp_servers=[])).session_id
        await conn.set_session_mode(session_id=session_id, mode_id="edit")
        await conn.prompt(session_id=session_id, prompt=[text_block("Set X to 2 in calc.py")])
    async with in_process_agent(FakeApps()) as (conn, replayed, _):
        listed = await conn.list_sessions(cwd=str(tmp_path))
        loaded = await conn.load_session(cwd=str(tmp_path), session_id=session_id, mcp_servers=[])
        with pytest.raises(RequestError) as unknown:
            await conn.load_session(cwd=str(tmp_path), session_id="../../etc/passwd", mcp_servers=[])
    (info,) = listed.sessions
    assert info.session_id == session_id and info.title == "Set X to 2 in calc.py"
    (titled,) = first.of(SessionInfoUpdate)  # the client was told the title when it was given
    assert titled.title == info.title and titled.updated_at
    assert loaded.modes.current_mode_id == "edit"
    assert replayed.reply() == first.reply() and "Aider changed calc.py." in replayed.reply()
    assert [diff.new_text for diff in replayed.diffs()] == ["X = 2\n"]
    assert unknown.value.code == -32602


async def test_a_session_is_resumed_without_a_replay_and_closed_with_its_turn(tmp_path: Path) -> None:
    fakes = FakeApps()
    fakes.app(tmp_path).edits.append(Turn(writes={"calc.py": "X = 2\n"}, reply="Done."))
    (tmp_path / "calc.py").write_text("X = 1\n")
    async with in_process_agent(fakes) as (conn, first, _):
        session_id = (await conn.new_session(cwd=str(tmp_path), mcp_servers=[])).session_id
        await conn.set_session_mode(session_id=session_id, mode_id="edit")
        await conn.prompt(session_id=session_id, prompt=[text_block("Set X to 2 in calc.py")])
    assert "Aider changed calc.py." in first.reply()
    again = FakeApps()
    again.app(tmp_path).edits.append(Turn(writes={"calc.py": "X = 3\n"}, reply="Done."))
    again.app(tmp_path).hold.add(EDIT)  # the next edit runs until it is stopped
    async with in_process_agent(again) as (conn, resumed, agent):
        answer = await conn.resume_session(cwd=str(tmp_path), session_id=session_id, mcp_servers=[])
        assert answer.modes is not None and answer.modes.current_mode_id == "edit"
        assert resumed.reply() == ""  # the client keeps its own copy: nothing replayed
        turn = asyncio.create_task(conn.prompt(session_id=session_id, prompt=[text_block("Set X to 3")]))
        assert await eventually(lambda: agent.sessions[session_id].running is not None)
        await conn.close_session(session_id=session_id)  # the tab closed mid-turn
        assert (await asyncio.wait_for(turn, 30)).stop_reason == "cancelled"
        with pytest.raises(RequestError) as closed:
            await conn.prompt(session_id=session_id, prompt=[text_block("Set X to 4")])
        listed = await conn.list_sessions(cwd=str(tmp_path))
    assert closed.value.code == -32602 and "unknown session" in str(closed.value)
    assert session_id in [info.session_id for info in listed.sessions]  # closed, still kept


async def test_a_session_needs_a_model_and_an_existing_folder(tmp_path: Path) -> None:
    async with in_process_agent(FakeApps(Settings())) as (conn, _, _):
        with pytest.raises(RequestError) as no_model:
            await conn.new_session(cwd=str(tmp_path), mcp_servers=[])
        with pytest.raises(RequestError) as relative:
            await conn.new_session(cwd="project", mcp_servers=[])
        with pytest.raises(RequestError) as missing:
            await conn.new_session(cwd=str(tmp_path / "gone"), mcp_servers=[])
        with pytest.raises(RequestError) as unknown:
            await conn.prompt(session_id="nope", prompt=[text_block("hi")])
    assert no_model.value.code == -32000  # auth required: the client offers its sign-in
    assert "AIDER_LSP_MODEL" in str(no_model.value.data)
    assert relative.value.code == missing.value.code == unknown.value.code == -32602
    assert "absolute" in str(relative.value) and "session/new" in str(unknown.value)


async def test_a_home_folder_or_the_root_is_refused_as_a_workspace(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # avante sends the folder Neovim started in when the project lies below it (often `~`)
    home = tmp_path / "home"
    (home / "project").mkdir(parents=True)
    monkeypatch.setenv("HOME", str(home))
    fakes = FakeApps()
    async with in_process_agent(fakes) as (conn, _, _):
        with pytest.raises(RequestError) as at_home:
            await conn.new_session(cwd=str(home), mcp_servers=[])
        with pytest.raises(RequestError) as at_root:
            await conn.new_session(cwd="/", mcp_servers=[])
        opened = await conn.new_session(cwd=str(home / "project"), mcp_servers=[])
    assert at_home.value.code == at_root.value.code == -32602
    assert "your home folder" in str(at_home.value) and "open the project's folder" in str(at_home.value)
    assert "file system root" in str(at_root.value)
    assert opened.session_id and not (home / ".aider-lsp").exists()


async def test_a_loaded_session_gives_its_new_tool_calls_ids_the_old_ones_never_had(tmp_path: Path) -> None:
    # avante keeps its own copy of the chat across restarts, keyed by tool call id: a new call
    # with an old call's id would replace that entry, higher up in the chat
    (tmp_path / "calc.py").write_text("X = 1\n")
    ids: list[set[str]] = []
    for reply in ("First.", "Second."):
        fakes = FakeApps()
        fakes.app(tmp_path).edits.append(Turn(writes={"calc.py": f"X = {len(ids) + 2}\n"}, reply=reply))
        async with in_process_agent(fakes) as (conn, client, _):
            if not ids:
                session_id = (await conn.new_session(cwd=str(tmp_path), mcp_servers=[])).session_id
            else:
                await conn.load_session(cwd=str(tmp_path), session_id=session_id, mcp_servers=[])
                client.updates.clear()
            await conn.prompt(
                session_id=session_id, prompt=[text_block("Set X"), _link(tmp_path / "calc.py")]
            )
        ids.append({u.tool_call_id for u in client.updates if hasattr(u, "tool_call_id")})
    assert ids[0] and ids[1] and not ids[0] & ids[1]


def _link(path: Path) -> Any:
    return resource_link_block(path.name, path.as_uri())
