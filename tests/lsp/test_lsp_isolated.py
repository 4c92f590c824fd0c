"""Isolated runs over LSP (#41): a real `aider-lsp serve`, real Aider in real git worktrees.

Three runs with different goals started at once while the user saves an edit to one of the
files, and a fourth on the user's lines: the user's file holds only the user's edit until
Apply, then each change lands beside it; the fourth is refused with its lines, writing nothing;
its failing test is on the run, not in the Problems panel. A SIGKILLed server leaves a run the
next start finds and cleans."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

from aider_lsp_testing.letters_project import (
    MODULES,
    USER_LINE,
    fixed,
    git,
    goal,
    module_test_command,
    script_fixes,
    worktree_branches,
    worktree_paths,
    write_letters_project,
)
from aider_lsp_testing.llm_server import IS_AIDER, aider_whole, all_of, held, last_user_contains
from aider_lsp_testing.lsp_session import cancel_command, execute, start_command
from aider_lsp_testing.waiting import eventually

pytestmark = pytest.mark.aider

FOURTH = "give beta a docstring on its first line"
FOURTH_VERSION = MODULES["beta"][0].replace("def beta():\n", "def beta():  # the fourth run's\n")


def options(llm_server: Any) -> dict[str, Any]:
    return {
        "model": "openai:scripted-planner",
        "baseUrl": llm_server.base_url,
        "apiKey": "test-key",
        "aiderModel": "openai/scripted-coder",
        "aiderServer": {"args": ["--edit-format", "whole"]},
        "timeouts": {"aider": 120, "test": 60},
        "maxIsolatedRuns": 4,
    }


async def running_runs(client: Any, count: int) -> bool:
    """Whether the history lists `count` isolated runs running (their trees made)."""
    listed = await execute(client, "aider-lsp.history.list", {})
    return [run["state"] for run in listed["notes"]["runs"]].count("running") == count


def isolated(name: str, the_goal: str | None = None) -> dict[str, Any]:
    return {
        "goal": the_goal or goal(name),
        "test_command": module_test_command(name),
        "file_context": [f"{name}.py"],
        "isolation": "worktree",
        "max_retries": 0,
    }


async def test_four_runs_side_by_side_then_apply(lsp: Any, tmp_path: Path, llm_server: Any) -> None:
    root = write_letters_project(tmp_path)
    script_fixes(llm_server)
    llm_server.add_rule(
        all_of(IS_AIDER, last_user_contains(FOURTH)), aider_whole({"beta.py": FOURTH_VERSION})
    )
    beta = root / "beta.py"
    async with lsp(root, init_options=options(llm_server)) as client:
        requests = [isolated(name) for name in MODULES] + [isolated("beta", FOURTH)]
        runs = [asyncio.ensure_future(execute(client, "aider-lsp.workflow.run", arg)) for arg in requests]
        assert await eventually(lambda: running_runs(client, 4), 90), "four runs under way in their trees"
        beta.write_text(USER_LINE + beta.read_text())  # the user saves an edit meanwhile
        *fixes, fourth = await asyncio.gather(*runs)
        for result in fixes:
            assert result["status"] == "COMPLETE", result["content"]
            assert result["notes"]["state"] == "ready" and result["notes"]["isolation"] == "worktree"
            assert "is ready in its worktree" in result["content"]
        # the fourth's test fails: on the run, never in the user's Problems panel
        assert fourth["status"] == "FAILED" and fourth["notes"]["state"] == "ready"
        assert any(f["path"] == "test_beta.py" for f in fourth["notes"]["findings"]), fourth["notes"]
        assert all(not found for found in client.diagnostics.values())
        assert beta.read_text() == USER_LINE + MODULES["beta"][0], "only the user's edit until Apply"
        listed = await execute(client, "aider-lsp.history.list", {})
        states = {run["id"]: run["state"] for run in listed["notes"]["runs"]}
        assert all(states[result["notes"]["run_id"]] == "ready" for result in [*fixes, fourth])
        for result in fixes:
            applied = await execute(client, "aider-lsp.runs.apply", {"run_id": result["notes"]["run_id"]})
            assert applied["status"] == "COMPLETE", applied["content"]
        for name in ("alpha", "gamma"):
            assert (root / f"{name}.py").read_text() == fixed(name)
        assert beta.read_text() == USER_LINE + fixed("beta"), "the change landed, the user's edit stayed"
        refused = await execute(client, "aider-lsp.runs.apply", {"run_id": fourth["notes"]["run_id"]})
        assert refused["status"] == "FAILED"
        (skipped,) = refused["notes"]["skipped"]
        assert skipped["path"] == "beta.py" and skipped["kind"] == "changed_since" and skipped["lines"]
        assert "beta.py" in refused["content"] and "line" in refused["content"]
        assert beta.read_text() == USER_LINE + fixed("beta"), "nothing written"
        discarded = await execute(client, "aider-lsp.runs.discard", {"run_id": fourth["notes"]["run_id"]})
        assert discarded["notes"]["state"] == "discarded"
        listed = await execute(client, "aider-lsp.history.list", {})
        states = {run["id"]: run["state"] for run in listed["notes"]["runs"]}
        assert sorted(states.values()) == ["applied", "applied", "applied", "discarded"]
        assert not worktree_branches(root) & {f"aider-lsp/{run_id}" for run_id in states}, (
            "the runs' trees gone"
        )
    assert not worktree_branches(root), "the spare tree gone with the server"
    assert "aider-lsp/" not in git(root, "branch")


async def test_a_killed_server_leaves_runs_the_next_start_cleans_or_keeps_ready(
    lsp: Any, tmp_path: Path, llm_server: Any, user_state: Path
) -> None:
    """alpha's Aider never answers before the kill (nothing changed: cleaned); beta's edit is
    made and its tests hang (a change: ready, and it applies)."""
    root = write_letters_project(tmp_path)
    never = threading.Event()  # alpha's model answers after the test (its own server's next run)
    llm_server.add_rule(all_of(IS_AIDER, last_user_contains("fix alpha")), held(never, aider_whole({})))
    llm_server.add_rule(
        all_of(IS_AIDER, last_user_contains("fix beta")), aider_whole({"beta.py": fixed("beta")})
    )
    hanging = {**isolated("beta"), "test_command": f"{sys.executable} -c 'import time; time.sleep(600)'"}
    async with lsp(root, init_options=options(llm_server)) as client:
        running = [
            asyncio.ensure_future(execute(client, "aider-lsp.workflow.run", arg))
            for arg in (isolated("alpha"), hanging)
        ]
        trees = "aider-lsp/workspaces/*/runs/*/tree-*/beta.py"
        edited = lambda: any(path.read_text() == fixed("beta") for path in user_state.glob(trees))  # noqa: E731
        assert await eventually(edited, 120), "beta's edit made in its tree"
        server = client.server_process
        assert server is not None
        os.kill(server.pid, signal.SIGKILL)
        await asyncio.wait_for(server.wait(), 60)
        client.shutdown_sent, client.exited_process = True, server  # nothing left to shut down
        for request in running:
            request.cancel()
    never.set()
    assert len(worktree_branches(root)) >= 2, "the killed runs' worktrees are left"
    async with lsp(root, init_options=options(llm_server)) as client:
        listed = await execute(client, "aider-lsp.history.list", {})
        runs = {run["label"].split()[1]: run for run in listed["notes"]["runs"]}
        assert runs["alpha"]["state"] == "discarded" and runs["alpha"]["status"] == "INTERRUPTED"
        assert runs["beta"]["state"] == "ready" and runs["beta"]["files"] == ["beta.py"]
        assert worktree_branches(root) == {f"aider-lsp/{runs['beta']['id']}"}, "alpha's (and a spare) cleaned"
        assert (root / "beta.py").read_text() == MODULES["beta"][0]
        applied = await execute(client, "aider-lsp.runs.apply", {"run_id": runs["beta"]["id"]})
        assert applied["status"] == "COMPLETE", applied["content"]
    assert (root / "beta.py").read_text() == fixed("beta")
    assert not worktree_branches(root)
    assert "aider-lsp/" not in git(root, "branch")


async def test_a_cancelled_isolated_run_leaves_nothing(lsp: Any, tmp_path: Path, llm_server: Any) -> None:
    """$/cancelRequest on an isolated run while Aider works: its worktree and branch go, the
    user's file is untouched, and the server answers the next request."""
    root = write_letters_project(tmp_path)
    never = threading.Event()  # the model answers only after the test
    llm_server.add_rule(IS_AIDER, held(never, aider_whole({"alpha.py": fixed("alpha")})))
    async with lsp(root, init_options=options(llm_server)) as client:
        msg_id, pending = start_command(client, "aider-lsp.workflow.run", isolated("alpha"))
        assert await eventually(lambda: running_runs(client, 1), 60), "the run under way in its tree"
        assert await eventually(lambda: len(llm_server.requests) > 0, 90), "Aider asked its model"
        await cancel_command(client, msg_id, pending)

        async def discarded() -> bool:  # the answer comes first; the run's Aider then closes
            listed = await execute(client, "aider-lsp.history.list", {})
            return [run["state"] for run in listed["notes"]["runs"]] == ["discarded"]

        assert await eventually(discarded, 30), "the cancelled run discarded"
        (run,) = (await execute(client, "aider-lsp.history.list", {}))["notes"]["runs"]
        assert run["status"] == "CANCELLED"
        assert f"aider-lsp/{run['id']}" not in git(root, "branch")
    never.set()
    assert (root / "alpha.py").read_text() == MODULES["alpha"][0]
    assert not worktree_branches(root)


async def test_prepare_makes_the_first_isolated_run_start_from_a_ready_worktree(
    lsp: Any, tmp_path: Path, llm_server: Any
) -> None:
    """The editor sends `runs.prepare` while the user types the goal of a first run in a
    worktree: a spare tree (its Aider started) is made at once, and the run takes it."""
    root = write_letters_project(tmp_path)
    script_fixes(llm_server)
    async with lsp(root, init_options=options(llm_server)) as client:
        assert not worktree_paths(root), "no spare before it is asked for (isolation: none)"
        prepared = await execute(client, "aider-lsp.runs.prepare", {})
        assert prepared["status"] == "COMPLETE" and "being made ready" in prepared["content"], prepared
        assert await eventually(lambda: bool(worktree_paths(root)), 60), "a spare worktree made"
        ((spare, branch),) = worktree_paths(root).items()
        assert branch is None and "aider-lsp/" not in git(root, "branch"), "no branch until a run takes it"
        result = await execute(client, "aider-lsp.workflow.run", isolated("alpha"))
        assert result["notes"]["state"] == "ready", result["content"]
        taken = f"aider-lsp/{result['notes']['run_id']}"
        assert worktree_paths(root).get(spare) == taken, "the run took the prepared tree, on its branch"
        assert (root / "alpha.py").read_text() == MODULES["alpha"][0]  # ready, not applied
