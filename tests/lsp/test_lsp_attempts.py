"""Several attempts and a note for a run under way, over a real `aider-lsp serve` (#52): the
bundled Aider answered by the scripted model, the letters project in a git repository."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path
from typing import Any

import pytest
from lsprotocol import types

from aider_lsp_testing.letters_project import (
    MODULES,
    USER_LINE,
    fixed,
    goal,
    module_test_command,
    worktree_branches,
    write_letters_project,
)
from aider_lsp_testing.llm_server import (
    IS_AIDER,
    IS_ANALYSIS,
    aider_whole,
    all_of,
    any_message_contains,
    held,
    json_output,
    model_is,
    not_,
    text,
)
from aider_lsp_testing.lsp_session import execute, start_command
from aider_lsp_testing.waiting import eventually

pytestmark = [pytest.mark.aider, pytest.mark.timeout(400)]

NOTE = "keep the comment line as it is"
BROKEN = MODULES["alpha"][0].replace("return 'b'", "return 'still b'")
RETRY = {"verdict": "RETRY", "message": "still red", "next_prompt": "make the test pass"}


def options(llm_server: Any, **more: Any) -> dict[str, Any]:
    return {
        "model": "openai:scripted-planner",
        "baseUrl": llm_server.base_url,
        "apiKey": "test-key",
        "aiderModel": "openai/scripted-coder",
        "aiderServer": {"args": ["--edit-format", "whole"]},
        "timeouts": {"aider": 120, "test": 60},
        **more,
    }


async def test_a_note_added_to_a_running_run_reaches_its_next_edit_and_its_history(
    lsp: Any, tmp_path: Path, llm_server: Any
) -> None:
    root = write_letters_project(tmp_path)
    gate = threading.Event()
    with_note = all_of(IS_AIDER, any_message_contains(NOTE))
    llm_server.add_rule(with_note, aider_whole({"alpha.py": fixed("alpha")}))
    llm_server.add_rule(all_of(IS_AIDER, not_(with_note)), held(gate, aider_whole({"alpha.py": BROKEN})))
    llm_server.add_rule(IS_ANALYSIS, json_output(RETRY))
    request = {
        "goal": goal("alpha"),
        "test_command": module_test_command("alpha"),
        "file_context": ["alpha.py"],
    }
    async with lsp(root, init_options=options(llm_server)) as client:
        nothing = await execute(client, "aider-lsp.workflow.steer", {"note": NOTE})
        assert nothing["status"] == "FAILED" and "no workflow run is under way" in nothing["content"]
        _, pending = start_command(client, "aider-lsp.workflow.run", {**request, "max_retries": 2})
        try:
            first_edit = await eventually(lambda: any(map(IS_AIDER, llm_server.chat_requests())), 120)
            assert first_edit, "the first edit never began"
            steered = await execute(client, "aider-lsp.workflow.steer", {"note": NOTE})
            assert steered["status"] == "COMPLETE", steered["content"]
        finally:
            gate.set()
        result = await pending
        assert result["status"] == "COMPLETE", result["content"]
        first, second = result["notes"]["workflow"]["iterations"]
        assert "notes" not in first and second["notes"] == [NOTE]  # the wire keeps its keys without one
        assert NOTE not in first["prompt"] and NOTE in second["prompt"]
        listed = await execute(client, "aider-lsp.history.list", {})
        (run,) = [run for run in listed["notes"]["runs"] if run["kind"] == "workflow"]
        assert [step["notes"] for step in run["steps"]] == [[], [NOTE]]
    assert (root / "alpha.py").read_text() == fixed("alpha")


async def test_three_attempts_first_green_names_the_fixing_one_and_apply_takes_it(
    lsp: Any, tmp_path: Path, llm_server: Any
) -> None:
    root = write_letters_project(tmp_path)
    gate = threading.Event()
    llm_server.add_rule(all_of(IS_AIDER, model_is("fixes")), aider_whole({"alpha.py": fixed("alpha")}))
    llm_server.add_rule(all_of(IS_AIDER, model_is("breaks")), held(gate, aider_whole({"alpha.py": BROKEN})))
    llm_server.add_rule(all_of(IS_AIDER, model_is("idle")), held(gate, text("I would leave it.")))
    llm_server.add_rule(IS_ANALYSIS, json_output(RETRY))
    request = {
        "goal": goal("alpha"),
        "test_command": module_test_command("alpha"),
        "file_context": ["alpha.py"],
        "max_retries": 0,
        "attempts": 3,
        "choose": "first-green",
        "aider_models": ["openai/breaks", "openai/fixes", "openai/idle"],
    }
    async with lsp(root, init_options=options(llm_server, maxIsolatedRuns=3)) as client:
        try:
            result = await execute(client, "aider-lsp.workflow.run", request)
        finally:
            gate.set()
        assert result["status"] == "COMPLETE", result["content"]
        group = result["notes"]["group"]
        breaks, fixes, idle = group["attempts"]
        assert group["winner"] == fixes["run_id"] == result["notes"]["run_id"]
        assert fixes["green"] and fixes["aider_model"] == "openai/fixes"
        assert breaks["stopped"] and idle["stopped"] and breaks["state"] == idle["state"] == "discarded"
        assert "attempt 2 wins" in result["content"]
        alpha = root / "alpha.py"
        alpha.write_text(USER_LINE + alpha.read_text())  # the user's edit while they ran
        applied = await execute(client, "aider-lsp.runs.apply", {"run_id": group["group_id"]})
        assert applied["status"] == "COMPLETE", applied["content"]
        assert alpha.read_text() == USER_LINE + fixed("alpha")
        listed = await execute(client, "aider-lsp.history.list", {})
        runs = {run["id"]: run for run in listed["notes"]["runs"]}
        assert runs[fixes["run_id"]]["state"] == "applied"
        assert {runs[a["run_id"]]["group_id"] for a in (breaks, idle)} == {group["group_id"]}
    assert not worktree_branches(root), "no attempt's tree is left"


async def test_a_group_cancelled_from_its_progress_answers_each_attempt_stopped_and_leaves_nothing(
    lsp: Any, tmp_path: Path, llm_server: Any
) -> None:
    root = write_letters_project(tmp_path)
    gate = threading.Event()  # every attempt's first edit is under way when the user cancels
    llm_server.add_rule(IS_AIDER, held(gate, aider_whole({"alpha.py": BROKEN})))
    request = {
        "goal": goal("alpha"),
        "test_command": module_test_command("alpha"),
        "file_context": ["alpha.py"],
        "max_retries": 0,
        "attempts": 3,
        "aider_models": ["openai/one", "openai/two", "openai/three"],
    }
    async with lsp(root, init_options=options(llm_server, maxIsolatedRuns=3)) as client:
        try:
            _, pending = start_command(client, "aider-lsp.workflow.run", request)

            def all_editing() -> bool:
                return len([r for r in llm_server.chat_requests() if IS_AIDER(r)]) == 3

            assert await eventually(all_editing, 180), "the three attempts never all began their edit"
            token = next(
                token
                for token, reports in client.progress_reports.items()
                if reports and getattr(reports[0], "title", None) == "Aider workflow"
            )
            client.protocol.notify(
                types.WINDOW_WORK_DONE_PROGRESS_CANCEL, types.WorkDoneProgressCancelParams(token=token)
            )
            result = await asyncio.wait_for(pending, 120)
        finally:
            gate.set()
        listed = await execute(client, "aider-lsp.history.list", {})
    assert result["status"] == "FAILED" and result["notes"]["error"]["reason"] == "cancelled"
    group = result["notes"]["group"]
    assert group["winner"] is None and group["reason"] == "the group was cancelled"
    assert [a["stopped"] for a in group["attempts"]] == ["the group was cancelled"] * 3
    assert result["content"].startswith("Cancelled: 3 attempt(s)")
    assert (root / "alpha.py").read_text() == MODULES["alpha"][0], "nothing applied"
    runs = [run for run in listed["notes"]["runs"] if run.get("group_id") == group["group_id"]]
    assert {run["state"] for run in runs} <= {"discarded"}
    assert not worktree_branches(root), "no attempt's tree or branch is left"
