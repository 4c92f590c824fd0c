"""Isolated runs from a terminal (#41), as a user runs them: `aider-lsp run --isolated`, then
`history`, `apply [--force]`, `discard` and `keep` as separate processes, the real bundled Aider
answered by the scripted model, a real git repository with its worktrees."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from aider_lsp_testing.llm_server import (
    IS_AIDER,
    IS_ANALYSIS,
    ScriptedLLMServer,
    aider_whole,
    all_of,
    json_output,
    last_user_contains,
    slow,
)
from aider_lsp_testing.waiting import wait_until

pytestmark = [pytest.mark.aider, pytest.mark.timeout(400)]

CLI = [sys.executable, "-m", "aider_lsp"]
# one bug per module; blank lines between the comment and the bug, so that an edit of the
# first line and the run's fix of the last merge apart
MODULES = {
    name: (f"def {name}():\n    # letter {name}\n\n\n    return 'wrong'\n", f"return {name!r}")
    for name in ("alpha", "beta", "gamma")
}
USER_LINE = "# edited by the user meanwhile\n"


def source(name: str) -> str:
    return MODULES[name][0]


def fixed(name: str) -> str:
    return source(name).replace("return 'wrong'", MODULES[name][1])


def git(root: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=root, check=True, capture_output=True, text=True).stdout


@pytest.fixture
def letters(tmp_path: Path) -> Path:
    """A git repository: three modules, a unittest each, committed."""
    root = tmp_path / "letters"
    root.mkdir()
    for name in MODULES:
        (root / f"{name}.py").write_text(source(name))
        (root / f"test_{name}.py").write_text(
            f"import unittest\n\nfrom {name} import {name}\n\n\nclass T(unittest.TestCase):\n"
            f"    def test_{name}(self):\n        self.assertEqual({name}(), {name!r})\n"
        )
    git(root, "init", "-q")
    git(root, "add", "-A")
    git(root, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "letters")
    return root


def model_env(llm_server: ScriptedLLMServer) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AIDER_LSP_", "OPENAI_", "ANTHROPIC_"))}
    env.update(
        AIDER_LSP_MODEL="openai:scripted-planner",
        AIDER_LSP_BASE_URL=llm_server.base_url,
        AIDER_LSP_API_KEY="test-key",
        AIDER_LSP_AIDER_MODEL="openai/scripted-coder",
        AIDER_LSP_AIDER_SERVER=json.dumps({"args": ["--edit-format", "whole"]}),
    )
    return env


def script_fixes(llm_server: ScriptedLLMServer, *names: str) -> None:
    for name in names:
        llm_server.add_rule(
            all_of(IS_AIDER, last_user_contains(f"fix {name}")), aider_whole({f"{name}.py": fixed(name)})
        )
    llm_server.add_rule(IS_ANALYSIS, json_output({"verdict": "SUCCESS", "message": "done"}))


def run_args(root: Path, name: str, *flags: str) -> list[str]:
    """`aider-lsp run --isolated` fixing one module."""
    return [
        *CLI,
        "run",
        "--isolated",
        "--workspace",
        str(root),
        "--goal",
        f"fix {name} so that its test passes",
        "--files",
        f"{name}.py",
        "--max-retries",
        "0",
        "--test",
        f"{sys.executable} -m unittest test_{name}",
        *flags,
    ]


def cli(root: Path, *args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """An `aider-lsp` command run from the workspace's folder (no --workspace: the current one)."""
    return subprocess.run([*CLI, *args], cwd=root, env=env, capture_output=True, text=True, timeout=240)


def history_states(root: Path, env: dict[str, str]) -> dict[str, str]:
    listed = cli(root, "history", "--json", env=env)
    assert listed.returncode == 0, listed.stderr
    return {run["id"]: run["state"] for run in json.loads(listed.stdout)["notes"]["runs"]}


def worktrees(root: Path) -> int:
    return git(root, "worktree", "list").count("\n")


def test_a_ready_run_waits_for_apply_which_keeps_the_users_edit_or_names_their_lines(
    letters: Path, llm_server: ScriptedLLMServer
) -> None:
    script_fixes(llm_server, "alpha", "beta")
    env = model_env(llm_server)
    done = subprocess.run(run_args(letters, "alpha"), env=env, capture_output=True, text=True, timeout=240)
    assert done.returncode == 0, done.stdout + done.stderr
    assert (letters / "alpha.py").read_text() == source("alpha"), "the user's file is untouched"
    found = re.search(r"Run (\S+) is ready in its worktree", done.stdout)
    assert found, done.stdout
    run_id = found.group(1)
    assert f"aider-lsp apply {run_id} --workspace {letters}" in done.stdout
    assert f"aider-lsp discard {run_id}" in done.stdout and "+    return 'alpha'" in done.stdout
    listed = cli(letters, "history", env=env)
    (line,) = [line for line in listed.stdout.splitlines() if line.startswith(run_id)]
    assert f"ready: aider-lsp apply {run_id}" in line, listed.stdout
    assert history_states(letters, env)[run_id] == "ready"

    alpha = letters / "alpha.py"
    alpha.write_text(USER_LINE + alpha.read_text())  # the user's edit elsewhere in the file
    applied = cli(letters, "apply", run_id, env=env)
    assert applied.returncode == 0, applied.stdout + applied.stderr
    assert applied.stdout.startswith("Applied") and "alpha.py" in applied.stdout
    assert alpha.read_text() == USER_LINE + fixed("alpha")
    assert history_states(letters, env)[run_id] == "applied"

    second = subprocess.run(
        run_args(letters, "beta", "--json"), env=env, capture_output=True, text=True, timeout=240
    )
    assert second.returncode == 0, second.stderr
    notes = json.loads(second.stdout)["notes"]
    assert notes["state"] == "ready" and notes["checkpoint_id"] is None
    beta = letters / "beta.py"
    mine = source("beta").replace("return 'wrong'", "return 'mine'")
    beta.write_text(mine)  # the user changes the line the run changed
    refused = cli(letters, "apply", notes["run_id"], env=env)
    assert refused.returncode == 1, refused.stdout + refused.stderr
    assert "beta.py" in refused.stdout and "line 5" in refused.stdout
    assert f"aider-lsp apply {notes['run_id']} --force" in refused.stdout
    assert beta.read_text() == mine, "nothing written"
    assert history_states(letters, env)[notes["run_id"]] == "ready"
    forced = cli(letters, "apply", notes["run_id"], "--force", "--json", env=env)
    assert forced.returncode == 0, forced.stdout + forced.stderr
    assert json.loads(forced.stdout)["notes"]["state"] == "applied"
    assert beta.read_text() == fixed("beta")
    assert worktrees(letters) == 1 and "aider-lsp/" not in git(letters, "branch")


def test_discard_keep_and_ctrl_c_leave_no_worktree_behind(
    letters: Path, llm_server: ScriptedLLMServer
) -> None:
    script_fixes(llm_server, "alpha", "beta")
    asked = all_of(IS_AIDER, last_user_contains("fix gamma"))
    llm_server.add_rule(asked, slow(120, aider_whole({"gamma.py": fixed("gamma")})))  # Ctrl-C'd meanwhile
    env = model_env(llm_server)
    pipes: dict[str, Any] = {"stdout": subprocess.PIPE, "stderr": subprocess.PIPE, "text": True, "env": env}
    runs = {name: subprocess.Popen(run_args(letters, name, "--json"), **pipes) for name in ("alpha", "beta")}
    cancelled = subprocess.Popen(run_args(letters, "gamma"), **pipes)
    try:
        began = wait_until(lambda: any(map(asked, llm_server.chat_requests())), 200)
        assert began, "gamma's edit never began"
        cancelled.send_signal(signal.SIGINT)
        _, stderr = cancelled.communicate(timeout=60)
        assert cancelled.returncode == 130, stderr
        assert "worktree removed" in stderr and "Traceback" not in stderr
        ids = {}
        for name, process in runs.items():
            stdout, stderr = process.communicate(timeout=240)
            assert process.returncode == 0, stderr
            ids[name] = json.loads(stdout)["notes"]["run_id"]
    finally:
        for process in (*runs.values(), cancelled):
            if process.poll() is None:
                process.kill()
    assert worktrees(letters) == 3, "the cancelled run's worktree is gone, the ready ones stay"
    assert git(letters, "branch").count("aider-lsp/") == 2

    discarded = cli(letters, "discard", ids["alpha"], "--json", env=env)
    assert discarded.returncode == 0, discarded.stdout
    assert json.loads(discarded.stdout)["notes"]["state"] == "discarded"
    assert worktrees(letters) == 2 and f"aider-lsp/{ids['alpha']}" not in git(letters, "branch")
    assert cli(letters, "apply", ids["alpha"], env=env).returncode == 1, "a discarded run cannot be applied"

    kept = cli(letters, "keep", ids["beta"], env=env)
    assert kept.returncode == 0, kept.stdout + kept.stderr
    assert f"aider-lsp/{ids['beta']}" in kept.stdout
    assert git(letters, "show", f"aider-lsp/{ids['beta']}:beta.py") == fixed("beta")
    assert worktrees(letters) == 1
    assert history_states(letters, env)[ids["beta"]] == "kept"
    for name in MODULES:
        assert (letters / f"{name}.py").read_text() == source(name), "the user's files untouched"
