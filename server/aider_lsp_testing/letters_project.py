"""The letters project for isolated runs (#41): three modules, one bug each, a test file each,
in a git repository; the scripted Aider fixes the module a goal names ("fix beta …").

Why shared: the core, LSP, CLI and ACP stories of isolated runs walk it, and the benchmark too.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from .llm_server import (
    IS_AIDER,
    IS_ANALYSIS,
    ScriptedLLMServer,
    aider_whole,
    all_of,
    json_output,
    last_user_contains,
)

BODY = "def {name}():\n    # a letter\n\n\n    return '{wrong}'\n"
MODULES = {  # name: (source, the bug, its fix, what the test expects)
    name: (BODY.format(name=name, wrong=wrong), f"return '{wrong}'", f"return '{right}'", f"'{right}'")
    for name, wrong, right in (("alpha", "b", "a"), ("beta", "c", "b"), ("gamma", "d", "g"))
}
USER_LINE = "# edited by the user while the runs worked\n"


def git(root: Path, *args: str) -> str:
    """One git command in `root`, its stdout (a failure raises)."""
    done = subprocess.run(["git", *args], cwd=root, check=True, capture_output=True, text=True)
    return done.stdout


def worktree_branches(root: Path) -> set[str]:
    """The branches of the repository's worktrees other than the main one (a run's, a spare's)."""
    listed = git(root, "worktree", "list", "--porcelain").split("\n\n")[1:]
    return {
        line.removeprefix("branch refs/heads/")
        for entry in listed
        for line in entry.splitlines()
        if line.startswith("branch ")
    }


def worktree_paths(root: Path) -> dict[str, str | None]:
    """Each worktree other than the main one: its path and its branch (None: detached)."""
    found: dict[str, str | None] = {}
    for entry in git(root, "worktree", "list", "--porcelain").split("\n\n")[1:]:
        lines = entry.splitlines()
        if not lines:
            continue
        branch = next(
            (line.removeprefix("branch refs/heads/") for line in lines if line.startswith("branch ")), None
        )
        found[lines[0].removeprefix("worktree ")] = branch
    return found


def write_letters_project(parent: Path) -> Path:
    """The project committed in a new git repository at `parent`/letters."""
    root = parent / "letters"
    root.mkdir()
    for name, (source, _, _, expected) in MODULES.items():
        (root / f"{name}.py").write_text(source)
        (root / f"test_{name}.py").write_text(
            f"import unittest\n\nfrom {name} import {name}\n\n\nclass T(unittest.TestCase):\n"
            f"    def test_{name}(self):\n        self.assertEqual({name}(), {expected})\n"
        )
    identity = ("-c", "user.name=t", "-c", "user.email=t@t")
    git(root, "init", "-q")
    git(root, *identity, "add", "-A")
    git(root, *identity, "commit", "-qm", "letters")
    return root


def fixed(name: str) -> str:
    """The module with its bug fixed."""
    source, bug, fix, _ = MODULES[name]
    return source.replace(bug, fix)


def goal(name: str) -> str:
    return f"fix {name} so that its test passes"


def module_test_command(name: str) -> str:
    """The command that runs the module's own test file."""
    return f"{sys.executable} -m unittest test_{name}"


def script_fixes(llm_server: ScriptedLLMServer) -> None:
    """Aider fixes the module a goal names; the analysis says SUCCESS."""
    for name in MODULES:
        llm_server.add_rule(
            all_of(IS_AIDER, last_user_contains(f"fix {name}")), aider_whole({f"{name}.py": fixed(name)})
        )
    llm_server.add_rule(IS_ANALYSIS, json_output({"verdict": "SUCCESS", "message": "done"}))
