"""Isolated Workflow turns (#41) as the ACP client sees them, in-process on a fake Application:
the `isolation` option sends `worktree` in the run's request; the run's edits are shown on the
user's paths with the user's text before them while the user's files stay as they were; at the
end "Apply this change?" (apply / keep as a branch in git, else leave it ready / discard) and
the reply says what was done; an apply refused because the user changed the same lines names
them and offers "apply anyway"; no answer leaves the run ready and says how to apply it later;
`/apply` asks again."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from acp.client.connection import ClientSideConnection
from acp.schema import ClientCapabilities, FileSystemCapabilities, ToolCallProgress, ToolCallStart
from hypothesis import given
from hypothesis import strategies as st

from acp import RequestError, resource_link_block, text_block
from aider_lsp.acp.diffs import text_after
from aider_lsp.acp.render import file_parts
from aider_lsp.models import CommandRun, Isolation, JudgeProblem, WorkflowRequest
from aider_lsp_testing.acp_client import in_process_agent
from aider_lsp_testing.fake_app import RUN, SETTINGS, FakeApps, Iteration, Turn
from aider_lsp_testing.waiting import eventually
from aider_mcp.snapshots import unified_diff

BUGGY, FIXED = "def add(a, b):\n    return a - b\n", "def add(a, b):\n    return a + b\n"
HALF = BUGGY + "# looked at\n"
USERS = "def add(a, b):\n    return b - a  # the user's own\n"
RED = CommandRun(command="pytest", exit_code=1, stdout="FAILED test_calc.py::test_add")
GREEN = CommandRun(command="pytest", exit_code=0, stdout="1 passed")
TESTED = SETTINGS.model_copy(update={"test_command": "pytest"})


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "calc"
    root.mkdir()
    (root / "calc.py").write_text(BUGGY)
    return root


def _values(options: list[Any]) -> dict[str, str]:
    return {getattr(o, "root", o).id: getattr(o, "root", o).current_value for o in options}


def two_iterations(fakes: FakeApps, project: Path) -> None:
    fakes.app(project).runs.append(
        [Iteration(Turn(writes={"calc.py": HALF}), RED), Iteration(Turn(writes={"calc.py": FIXED}), GREEN)]
    )


async def isolated_session(conn: ClientSideConnection, project: Path) -> str:
    session_id = (await conn.new_session(cwd=str(project), mcp_servers=[])).session_id
    await conn.set_session_mode(session_id=session_id, mode_id="workflow")
    await conn.set_config_option(config_id="isolation", session_id=session_id, value="worktree")
    return session_id


async def test_the_isolation_option_defaults_to_the_setting_and_reaches_the_run(project: Path) -> None:
    fakes = FakeApps(TESTED.model_copy(update={"isolation": "worktree"}))
    fakes.app(project).runs.extend([[Iteration(Turn(), GREEN)], [Iteration(Turn(), GREEN)]])
    async with in_process_agent(fakes) as (conn, client, _):
        session = await conn.new_session(cwd=str(project), mcp_servers=[])
        await conn.set_session_mode(session_id=session.session_id, mode_id="workflow")
        await conn.prompt(session_id=session.session_id, prompt=[text_block("make the tests pass")])
        changed = await conn.set_config_option(
            config_id="isolation", session_id=session.session_id, value="none"
        )
        await conn.prompt(session_id=session.session_id, prompt=[text_block("again")])
        with pytest.raises(RequestError):
            await conn.set_config_option(config_id="isolation", session_id=session.session_id, value="docker")
    assert _values(session.config_options)["isolation"] == "worktree"  # the setting's
    assert _values(changed.config_options)["isolation"] == "none"
    requests = [call for name, call in fakes.built[0].calls if name == RUN]
    assert [request.isolation for request in requests] == [Isolation.WORKTREE, Isolation.NONE]
    assert "prepare_isolated" not in [name for name, _ in fakes.built[0].calls]  # "none" prepares nothing
    assert isinstance(requests[0], WorkflowRequest)
    # a run that changed nothing leaves nothing to decide: no question asked
    assert not client.asked and "nothing to apply" in client.reply()


async def test_an_isolated_turn_shows_its_edits_on_the_users_paths_and_applies_when_asked(
    project: Path,
) -> None:
    fakes = FakeApps(TESTED)
    two_iterations(fakes, project)
    calc = project / "calc.py"
    async with in_process_agent(fakes) as (conn, client, _):
        session_id = await isolated_session(conn, project)
        client.answers.append("allow_once")
        seen_before_answer: list[str] = []
        client.before_answer = lambda: seen_before_answer.append(calc.read_text())
        answer = await conn.prompt(session_id=session_id, prompt=[text_block("make the tests pass")])
    assert answer.stop_reason == "end_turn"
    assert seen_before_answer == [BUGGY]  # the user's file untouched until "apply"
    assert calc.read_text() == FIXED
    first, second, whole = client.diffs()  # each edit's own diff, then the run's (the question's)
    assert all(diff.path == str(calc) for diff in (first, second, whole))
    assert (first.old_text, first.new_text, second.old_text, second.new_text) == (BUGGY, HALF, HALF, FIXED)
    assert (whole.old_text, whole.new_text) == (BUGGY, FIXED)
    (question,) = client.asked
    # what the change is, in the title (a client may show the title alone)
    assert question.title == "Apply this change to calc.py (+1 -1)?" and question.kind == "edit"
    assert client.offered == [["allow_once", "reject_once", "reject_always"]]
    assert client.offered_names == [
        ["Apply to my files", "Leave it ready", "Discard"]
    ]  # not in git: no branch
    reply = client.reply()
    assert reply.count("The tests pass") == 1
    assert "Applied to your files: calc.py." in reply and "/undo" in reply
    assert ("apply_run", {"run_id": "run-1", "force": False}) in fakes.built[0].calls
    # choosing "worktree" made a spare worktree ready before the turn (it starts at once)
    names = [name for name, _ in fakes.built[0].calls]
    assert names.index("prepare_isolated") < names.index(RUN)


async def test_keep_as_a_branch_is_offered_in_git_and_discard_leaves_the_files(project: Path) -> None:
    (project / ".git").mkdir()
    fakes = FakeApps(TESTED)
    two_iterations(fakes, project)
    two_iterations(fakes, project)
    async with in_process_agent(fakes) as (conn, client, _):
        session_id = await isolated_session(conn, project)
        client.answers.extend(["reject_once", "reject_always"])
        await conn.prompt(session_id=session_id, prompt=[text_block("make the tests pass")])
        kept = client.reply()
        client.updates.clear()
        await conn.prompt(session_id=session_id, prompt=[text_block("make the tests pass")])
    assert client.offered == [["allow_once", "reject_once", "reject_always"]] * 2
    assert client.offered_names == [["Apply to my files", "Keep as a branch", "Discard"]] * 2
    assert "Kept on branch `aider-lsp/run-1`" in kept and "your files are untouched" in kept
    assert "Discarded “make the tests pass” (run run-2): its worktree is removed" in client.reply()
    assert (project / "calc.py").read_text() == BUGGY


@pytest.mark.parametrize("second_answer", ["allow_once", "reject_once"])
async def test_an_apply_over_the_users_lines_names_them_and_offers_apply_anyway(
    project: Path, second_answer: str
) -> None:
    fakes = FakeApps(TESTED)
    two_iterations(fakes, project)
    calc = project / "calc.py"
    async with in_process_agent(fakes) as (conn, client, _):
        session_id = await isolated_session(conn, project)
        client.answers.extend(["allow_once", second_answer])

        def user_edits_first() -> None:
            if not client.asked:
                calc.write_text(USERS)  # the user saves the same lines while the run is ready

        client.before_answer = user_edits_first
        await conn.prompt(session_id=session_id, prompt=[text_block("make the tests pass")])
    reply = client.reply()
    assert (
        "Not applied, nothing was written: calc.py: you changed the lines the run changed (line 1)" in reply
    )
    assert client.asked[1].title.startswith("Apply anyway? calc.py")
    assert client.offered[1] == ["allow_once", "reject_once"]
    if second_answer == "allow_once":
        assert calc.read_text() == FIXED and "Applied to your files: calc.py." in reply
    else:
        assert calc.read_text() == USERS
        assert "Run run-1 stays ready: `/apply run-1`" in reply and "aider-lsp apply run-1" in reply


async def test_a_file_kept_from_aider_in_the_turn_is_not_applied_over_its_buffer(project: Path) -> None:
    """The user kept calc.py from Aider (its buffer differs from disk); the run changed it in its
    worktree all the same: the apply writes nothing while the buffer is held, and says so."""
    (project / "notes.py").write_text("N = 1\n")
    fakes = FakeApps(TESTED)
    fakes.app(project).runs.append([Iteration(Turn(writes={"calc.py": FIXED, "notes.py": "N = 2\n"}), GREEN)])
    calc = project / "calc.py"
    reads = ClientCapabilities(fs=FileSystemCapabilities(read_text_file=True))
    async with in_process_agent(fakes, reads) as (conn, client, _):
        client.buffers[str(calc)] = BUGGY + "# the user's unsaved line\n"
        session_id = await isolated_session(conn, project)
        client.answers.extend(["reject_once", "allow_once", "reject_once"])
        links = [resource_link_block(name, (project / name).as_uri()) for name in ("calc.py", "notes.py")]
        await conn.prompt(session_id=session_id, prompt=[text_block("make the tests pass"), *links])
    reply = client.reply()
    assert "Not edited" in reply
    assert "Not applied, nothing was written: calc.py: unsaved in the editor" in reply
    assert calc.read_text() == BUGGY and (project / "notes.py").read_text() == "N = 1\n"
    assert "Run run-1 stays ready" in reply


async def test_no_answer_leaves_the_run_ready_and_apply_asks_again(project: Path) -> None:
    fakes = FakeApps(TESTED)
    two_iterations(fakes, project)
    async with in_process_agent(fakes) as (conn, client, _):
        session_id = await isolated_session(conn, project)
        await conn.prompt(session_id=session_id, prompt=[text_block("make the tests pass")])  # no answer
        unanswered = client.reply()
        client.updates.clear()
        client.answers.append("allow_once")
        await conn.prompt(session_id=session_id, prompt=[text_block("/apply")])
        again = client.reply()
        client.updates.clear()
        await conn.prompt(session_id=session_id, prompt=[text_block("/apply")])
    assert "Run run-1 stays ready" in unanswered and "aider-lsp apply run-1" in unanswered
    assert (project / "calc.py").read_text() == FIXED
    assert "Applied to your files: calc.py." in again
    assert client.reply() == "No isolated run is ready in this folder."
    assert [start.title for start in client.of(ToolCallStart)] == []


async def test_leave_it_ready_outside_git_keeps_the_run_for_apply(project: Path) -> None:
    fakes = FakeApps(TESTED)
    two_iterations(fakes, project)
    async with in_process_agent(fakes) as (conn, client, _):
        session_id = await isolated_session(conn, project)
        client.answers.extend(["reject_once", "reject_always"])
        await conn.prompt(session_id=session_id, prompt=[text_block("make the tests pass")])
        left = client.reply()
        await conn.prompt(session_id=session_id, prompt=[text_block("/apply")])
    assert "Run run-1 stays ready: `/apply run-1`" in left
    assert client.offered == [["allow_once", "reject_once", "reject_always"]] * 2  # /apply asks the same
    assert "Discarded “make the tests pass” (run run-1): its worktree is removed" in client.reply()
    assert (project / "calc.py").read_text() == BUGGY


async def test_a_client_without_a_key_for_discard_throws_the_run_away_with_discard(project: Path) -> None:
    """CodeCompanion keys no `reject_always`: the user leaves the question unanswered, the reply
    names `/discard`, and it throws the run away without asking again."""
    fakes = FakeApps(TESTED)
    two_iterations(fakes, project)
    async with in_process_agent(fakes) as (conn, client, _):
        session_id = await isolated_session(conn, project)
        await conn.prompt(session_id=session_id, prompt=[text_block("make the tests pass")])  # no answer
        left = client.reply()
        client.updates.clear()
        await conn.prompt(session_id=session_id, prompt=[text_block("/discard")])
        discarded = client.reply()
        client.updates.clear()
        await conn.prompt(session_id=session_id, prompt=[text_block("/discard run-1")])
    assert "`/discard run-1` throws it away" in left
    assert discarded.startswith("Discarded") and len(client.offered) == 1  # asked once, at the turn's end
    assert client.reply() == "No isolated run 'run-1' is ready: ready now: none."
    assert (project / "calc.py").read_text() == BUGGY
    assert [record.state.value for record in fakes.built[0].history()] == ["discarded"]


async def test_a_cancel_while_asked_leaves_the_run_ready(project: Path) -> None:
    fakes = FakeApps(TESTED)
    two_iterations(fakes, project)
    async with in_process_agent(fakes) as (conn, client, _):
        session_id = await isolated_session(conn, project)
        client.thinking = asyncio.Event()  # the user has not answered yet
        prompt = asyncio.create_task(conn.prompt(session_id=session_id, prompt=[text_block("make it pass")]))
        assert await eventually(lambda: client.asked)
        await conn.cancel(session_id=session_id)
        answer = await asyncio.wait_for(prompt, 60)  # a cap: the user never answers
        await asyncio.sleep(0.1)
    assert answer.stop_reason == "cancelled"
    (question,) = [start for start in client.of(ToolCallStart) if start.title.startswith("Apply this change")]
    end = [u for u in client.of(ToolCallProgress) if u.tool_call_id == question.tool_call_id][-1]
    said = end.content[-1].content.text
    assert end.status == "completed" and said.startswith("Not decided (the prompt was cancelled). Run run-1")
    assert (project / "calc.py").read_text() == BUGGY
    assert [record.state.value for record in fakes.built[0].history()] == ["ready"]


@pytest.mark.parametrize("isolated", [False, True])
async def test_tests_the_judge_refused_are_offered_to_undo_only_when_the_run_is_in_place(
    project: Path, isolated: bool
) -> None:
    """A run that emptied the tests: in place, `/undo test_calc.py` takes back only that; an
    isolated run's change waits in its worktree (undo reaches nothing there): its reply warns
    that applying it takes the tests' change too."""
    (project / "test_calc.py").write_text("def test_add():\n    assert add(1, 2) == 3\n")
    refused = JudgeProblem(message="the edits changed the tests", test_files=["test_calc.py"])
    fakes = FakeApps(TESTED)
    emptied = Iteration(Turn(writes={"calc.py": FIXED, "test_calc.py": ""}), GREEN, judge=refused)
    fakes.app(project).runs.append([emptied])
    async with in_process_agent(fakes) as (conn, client, _):
        if isolated:
            session_id = await isolated_session(conn, project)
            client.answers.append("reject_always")
        else:
            session_id = (await conn.new_session(cwd=str(project), mcp_servers=[])).session_id
            await conn.set_session_mode(session_id=session_id, mode_id="workflow")
        answer = await conn.prompt(session_id=session_id, prompt=[text_block("make the tests pass")])
    reply = client.reply()
    assert answer.stop_reason != "end_turn"  # not a success: the tests were changed
    if isolated:
        assert "/undo" not in reply
        assert "Its change to test_calc.py is part of what applying it takes" in reply
        assert (project / "test_calc.py").read_text().startswith("def test_add")  # discarded
    else:
        assert "`/undo test_calc.py` takes back only the run's changes to the tests." in reply


@given(
    before=st.lists(st.sampled_from(["a\n", "b\n", "c\n", "d"]), max_size=12).map("".join),
    after=st.lists(st.sampled_from(["a\n", "b\n", "x\n", "y"]), max_size=12).map("".join),
)
def test_the_text_after_an_edit_is_rebuilt_from_the_text_before_and_its_diff(before: str, after: str) -> None:
    """An isolated run's edit tool call: the run's text, from what it had and the edit's diff."""
    diff = unified_diff("m.py", before.encode(), after.encode()) + unified_diff("new.py", None, b"x\n")
    diff += unified_diff("gone.py", b"z\n", None)
    parts = file_parts(diff)
    if before != after:
        assert text_after(parts["m.py"], before) == after
    assert text_after(parts["new.py"], None) == "x\n"
    assert text_after(parts["gone.py"], "z\n") == ""
    assert text_after(file_parts(unified_diff("m.py", b"a\nb\n", b"a\nc\n"))["m.py"], "a\nmine\n") is None
