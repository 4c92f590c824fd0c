"""Isolated workflow runs (#41) with REAL Aider edits in real git worktrees: several at once,
the user's files untouched until Apply, the user's own edits kept by the merge, a change on the
user's lines refused by name, discard and keep-as-branch, and a cancelled run leaving nothing."""

from __future__ import annotations

import asyncio
import os
import shutil
import sys
from pathlib import Path

import pytest

from aider_lsp.app import Application
from aider_lsp.isolation.trees import RunTree, TreeError, commit_all, sync_tree
from aider_lsp.models import Isolation, RequestContext, RunState, SkipReason, WorkflowRequest, WorkflowRun
from aider_lsp_testing.apps import scripted_app
from aider_lsp_testing.letters_project import (
    MODULES,
    USER_LINE,
    fixed,
    git,
    goal,
    module_test_command,
    script_fixes,
    worktree_branches,
    write_letters_project,
)
from aider_lsp_testing.llm_server import IS_AIDER, ScriptedLLMServer, aider_whole, slow

pytestmark = pytest.mark.aider


def isolated(name: str) -> WorkflowRequest:
    return WorkflowRequest(
        goal=goal(name),
        test_command=module_test_command(name),
        file_context=[f"{name}.py"],
        isolation=Isolation.WORKTREE,
        max_retries=0,
    )


async def test_three_runs_at_once_apply_keeping_the_users_edit(
    tmp_path: Path, llm_server: ScriptedLLMServer
) -> None:
    root = write_letters_project(tmp_path)
    script_fixes(llm_server)
    app = scripted_app(root, llm_server.base_url)
    try:
        runs = [asyncio.create_task(app.run_workflow(isolated(name), RequestContext())) for name in MODULES]
        await asyncio.sleep(0.5)
        beta = root / "beta.py"
        beta.write_text(USER_LINE + beta.read_text())  # the user saves an edit meanwhile
        done = await asyncio.gather(*runs)
        for run in done:
            assert run.ok, run.message
            assert run.isolated is not None and run.isolated.state is RunState.READY
        # nothing of the runs on the user's files; the user's edit alone on beta.py
        assert (root / "alpha.py").read_text() == MODULES["alpha"][0]
        assert beta.read_text() == USER_LINE + MODULES["beta"][0]
        listed = {record.id: record.state for record in app.history()}
        assert all(listed[run.isolated.run_id] is RunState.READY for run in done if run.isolated)
        for run in done:
            assert run.isolated is not None
            action = app.apply_run(run.isolated.run_id)
            assert action.done and action.state is RunState.APPLIED, action
        assert (root / "alpha.py").read_text() == fixed("alpha")
        assert beta.read_text() == USER_LINE + fixed("beta")
        assert (root / "gamma.py").read_text() == fixed("gamma")
        # an applied run is an ordinary run of the history: undo takes it back, the user's edit stays
        beta_run = done[1].isolated
        assert beta_run is not None
        undone = app.undo(beta_run.run_id)
        assert undone.status.value == "COMPLETE", undone.content
        assert beta.read_text() == USER_LINE + MODULES["beta"][0]
        assert not list((root.parent).glob("*tree*")), "no tree inside or beside the user's folder"
        assert not worktree_branches(root) & {
            f"aider-lsp/{run.isolated.run_id}" for run in done if run.isolated
        }
    finally:
        await app.aclose()
    assert not worktree_branches(root), "every worktree removed, the spare's too"
    assert "aider-lsp/" not in git(root, "branch")


async def test_a_change_on_the_users_lines_writes_nothing_until_forced(
    tmp_path: Path, llm_server: ScriptedLLMServer
) -> None:
    root = write_letters_project(tmp_path)
    script_fixes(llm_server)
    app = scripted_app(root, llm_server.base_url)
    try:
        run = await app.run_workflow(isolated("gamma"), RequestContext())
        assert run.isolated is not None and run.isolated.state is RunState.READY, run.message
        # what the run's own tree spent is the folder's spend too (an editor's session, /budget)
        assert run.outcome is not None and run.outcome.usage.all.total_tokens > 0
        assert app.spent().all.total_tokens == run.outcome.usage.all.total_tokens
        gamma = root / "gamma.py"
        mine = MODULES["gamma"][0].replace("return 'd'", "return 'mine'")
        gamma.write_text(mine)
        action = app.apply_run(run.isolated.run_id)
        assert not action.done and action.state is RunState.READY
        (skipped,) = action.skipped
        assert skipped.path == "gamma.py" and skipped.kind is SkipReason.CHANGED_SINCE
        assert skipped.lines == ((5, 5),)
        assert gamma.read_text() == mine, "nothing written"
        forced = app.apply_run(run.isolated.run_id, force=True)
        assert forced.done and gamma.read_text() == fixed("gamma")
        assert app.undo(run.isolated.run_id).status.value == "COMPLETE"
        assert gamma.read_text() == mine, "undo brings the user's version back"
    finally:
        await app.aclose()


async def test_discard_and_keep_as_branch(tmp_path: Path, llm_server: ScriptedLLMServer) -> None:
    root = write_letters_project(tmp_path)
    script_fixes(llm_server)
    (root / "notes.txt").write_text("uncommitted, untracked\n")
    app = scripted_app(root, llm_server.base_url)
    try:
        first, second = await asyncio.gather(
            app.run_workflow(isolated("alpha"), RequestContext()),
            app.run_workflow(isolated("beta"), RequestContext()),
        )
        assert first.isolated and second.isolated
        discarded = app.discard_run(first.isolated.run_id)
        assert discarded.state is RunState.DISCARDED and discarded.done
        assert not app.apply_run(first.isolated.run_id).done, "a discarded run cannot be applied"
        kept = app.keep_run(second.isolated.run_id)
        assert kept.done and kept.branch == f"aider-lsp/{second.isolated.run_id}", kept
        assert git(root, "show", f"{kept.branch}:beta.py") == fixed("beta")
        assert git(root, "show", f"{kept.branch}:notes.txt") == "uncommitted, untracked\n"
        assert "the files as they were" in git(root, "log", "--format=%s", "-2", kept.branch)
        assert (root / "alpha.py").read_text() == MODULES["alpha"][0]
        assert (root / "beta.py").read_text() == MODULES["beta"][0]
        states = {record.id: record.state for record in app.history()}
        assert states[first.isolated.run_id] is RunState.DISCARDED
        assert states[second.isolated.run_id] is RunState.KEPT
        # read from disk without an Application (a folder an editor has not opened): the same
        assert {record.id: record.state for record in Application.stored_history(root)} == states
        assert f"aider-lsp/{first.isolated.run_id}" not in git(root, "branch")
    finally:
        await app.aclose()


async def test_a_cancelled_run_leaves_nothing(tmp_path: Path, llm_server: ScriptedLLMServer) -> None:
    root = write_letters_project(tmp_path)
    llm_server.add_rule(IS_AIDER, slow(30, aider_whole({"alpha.py": fixed("alpha")})))
    app: Application = scripted_app(root, llm_server.base_url)
    answered: list[WorkflowRun] = []
    ctx = RequestContext(answer_cancelled=answered.append)
    try:
        task = asyncio.create_task(app.run_workflow(isolated("alpha"), ctx))
        for _ in range(200):
            await asyncio.sleep(0.1)
            if "aider-lsp/" in git(root, "branch"):
                break
        await asyncio.sleep(1.0)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        (said,) = answered
        assert said.isolated is not None and said.isolated.state is RunState.DISCARDED
        assert "your files untouched" in said.message
        assert f"aider-lsp/{said.isolated.run_id}" not in git(root, "branch"), "its tree and branch gone"
        assert (root / "alpha.py").read_text() == MODULES["alpha"][0]
    finally:
        await app.aclose()


async def test_a_folder_without_git_runs_in_a_copy(tmp_path: Path, llm_server: ScriptedLLMServer) -> None:
    root = write_letters_project(tmp_path)
    shutil.rmtree(root / ".git")
    (root / ".gitignore").write_text("build/\n")
    (root / "build").mkdir()
    (root / "build" / "huge.bin").write_bytes(b"\0" * 1024)
    script_fixes(llm_server)
    app = scripted_app(root, llm_server.base_url)
    try:
        run = await app.run_workflow(isolated("alpha"), RequestContext())
        assert run.ok and run.isolated is not None and run.isolated.state is RunState.READY, run.message
        assert (root / "alpha.py").read_text() == MODULES["alpha"][0]
        copies = list(Path(os.environ["XDG_STATE_HOME"]).glob("aider-lsp/workspaces/*/runs/*/tree-*"))
        assert copies and not any((copy / "build").exists() for copy in copies), "ignored files left out"
        kept = app.keep_run(run.isolated.run_id)
        assert kept.refused is not None and "git" in kept.refused.message
        assert app.apply_run(run.isolated.run_id).done
        assert (root / "alpha.py").read_text() == fixed("alpha")
    finally:
        await app.aclose()
    assert not list(Path(os.environ["XDG_STATE_HOME"]).glob("aider-lsp/workspaces/*/runs/*/tree-*"))


async def test_runs_beyond_the_limit_are_refused_by_name(
    tmp_path: Path, llm_server: ScriptedLLMServer
) -> None:
    root = write_letters_project(tmp_path)
    llm_server.add_rule(IS_AIDER, slow(30, aider_whole({})))
    app = scripted_app(root, llm_server.base_url, maxIsolatedRuns=1)
    try:
        first = asyncio.create_task(app.run_workflow(isolated("alpha"), RequestContext()))
        for _ in range(300):
            await asyncio.sleep(0.1)
            if app.isolated_runs.under_way:
                break
        second = await app.run_workflow(isolated("beta"), RequestContext())
        assert second.refused is not None and "maxIsolatedRuns" in second.refused.message
        in_place = await app.run_workflow(
            WorkflowRequest(goal="check", test_command=f"{sys.executable} -c pass", max_retries=0),
            RequestContext(),
        )
        assert in_place.refused is None, "a run in place goes beside the isolated one"
        first.cancel()
        with pytest.raises(asyncio.CancelledError):
            await first
    finally:
        await app.aclose()


def test_git_never_acts_on_an_enclosing_repository(tmp_path: Path) -> None:
    """A run's tree whose worktree is gone, inside another repository (a home folder kept in
    git): syncing or committing it is refused, the enclosing repository's files untouched."""
    home = write_letters_project(tmp_path)
    (home / "notes.txt").write_text("the user's untracked notes\n")
    (home / "alpha.py").write_text("the user's uncommitted work\n")
    lost = home / "state" / "runs" / "x" / "tree-x"
    lost.mkdir(parents=True)
    tree = RunTree(lost, lost, "aider-lsp/x")
    for act in (lambda: sync_tree(home, tree), lambda: commit_all(tree, "x")):
        with pytest.raises(TreeError, match="not the run's worktree"):
            act()
    assert (home / "notes.txt").read_text() == "the user's untracked notes\n"
    assert (home / "alpha.py").read_text() == "the user's uncommitted work\n"
    assert git(home, "log", "--format=%s") == "letters\n"
