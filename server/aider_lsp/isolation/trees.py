"""A run's own tree: a git worktree on a branch of its own (a copy without git), holding the
user's files as they are now, under the user's state folder.

Why a worktree and not a clone: it shares the repository's objects (no copy of the history),
checks out in the time git takes to write the files, and "keep as a branch" is a commit on its
branch. It starts from HEAD, then gets what `git status` says differs: the user's tracked
changes, deletions and untracked files git does not ignore (the run must see the code the user
sees, not the last commit). The user's hooks never run (core.hooksPath off). The ignored
environments a test command finds by relative path (`.venv/`, `node_modules/`) are linked, not
copied. A folder without git (or a repository without a commit) gets a copy that leaves out what
the ignore rules leave out.
"""

from __future__ import annotations

import contextlib
import logging
import shutil
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from ..config.state import STATE_DIR

log = logging.getLogger(__name__)

BRANCH_PREFIX = "aider-lsp/"
GIT_TIMEOUT_S = 120.0
LINKED_ENVIRONMENTS = (".venv", "venv", "node_modules")  # ignored, found by relative path
NO_HOOKS = ("-c", "core.hooksPath=/dev/null")
DEFAULT_IDENTITY = ("-c", "user.name=aider-lsp", "-c", "user.email=aider-lsp@localhost")  # none configured

# whether a workspace-relative path (a folder: True) is left out of a copy: the ignore rules' say
IgnoredCheck = Callable[[str, bool], bool]


class TreeError(Exception):
    """git could not make, commit or remove a run's tree; the message says what failed."""


@dataclass(frozen=True)
class RunTree:
    """Where a run works: `top` the tree's root (the worktree, or the copy), `workspace` the
    user's workspace inside it (a subfolder when the workspace is inside a larger repository),
    `branch` its git branch (None: a copy)."""

    top: Path
    workspace: Path
    branch: str | None = None

    @property
    def git(self) -> bool:
        return self.branch is not None


def git(cwd: Path, *args: str, check: bool = True) -> str:
    """One git command's stdout (TreeError naming the command when it fails and `check`)."""
    try:
        done = subprocess.run(
            ["git", *NO_HOOKS, *args],
            cwd=cwd,
            capture_output=True,
            text=True,
            timeout=GIT_TIMEOUT_S,
            check=False,
            stdin=subprocess.DEVNULL,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise TreeError(f"git {args[0]} failed: {exc}") from exc
    if check and done.returncode != 0:
        raise TreeError(f"git {' '.join(args[:2])} failed: {done.stderr.strip() or done.returncode}")
    return done.stdout


def repository_of(workspace: Path) -> Path | None:
    """The top of the git repository holding `workspace` with at least one commit, else None."""
    try:
        top = git(workspace, "rev-parse", "--show-toplevel").strip()
        git(workspace, "rev-parse", "--verify", "-q", "HEAD")
    except TreeError:
        return None
    return Path(top) if top else None


def make_tree(
    workspace: Path, dest: Path, branch: str, ignored: IgnoredCheck, *, detached: bool = False
) -> RunTree:
    """The user's files as they are now at `dest`: a worktree on `branch`, else a copy.
    `detached`: a spare's worktree, on no branch until a run takes it (`take_branch`): the
    user's `git branch` shows none for a run nobody started."""
    top = repository_of(workspace)
    if top is None:
        copy_folder(workspace, dest, ignored)
        return RunTree(dest, dest)
    inside = workspace.resolve().relative_to(top.resolve())
    on = ("--detach",) if detached else ("-b", branch)
    git(top, "worktree", "add", "--quiet", *on, str(dest), "HEAD")
    _overlay_status(top, dest)
    tree = RunTree(dest, dest / inside, branch)
    _link_environments(workspace, tree.workspace)
    return tree


def take_branch(tree: RunTree) -> None:
    """A spare's worktree taken by a run: on its branch from now on (its files as they are)."""
    if tree.branch is not None:
        _own_worktree(tree)
        git(tree.top, "switch", "--quiet", "-c", tree.branch)


def sync_tree(workspace: Path, tree: RunTree) -> None:
    """Bring a worktree made earlier (a spare, its Aider already up) to the user's files as
    they are now: reset to the user's HEAD, untracked files cleaned, then `git status`'s
    files overlaid. Files unchanged since keep their times (Aider's tags cache stays valid)."""
    top = repository_of(workspace)
    if top is None or not tree.git:
        raise TreeError("only a git worktree can be brought up to date")
    head = git(top, "rev-parse", "HEAD").strip()
    _own_worktree(tree)
    git(tree.top, "reset", "--hard", "--quiet", head)
    git(tree.top, "clean", "-fdq")
    _overlay_status(top, tree.top)
    _link_environments(workspace, tree.workspace)


def _overlay_status(top: Path, dest: Path) -> None:
    """Bring what `git status` lists (changed, deleted, untracked and not ignored) from the
    user's tree into the worktree, byte for byte."""
    out = git(top, "status", "--porcelain=v1", "-z", "--untracked-files=all", "--no-renames")
    for entry in filter(None, out.split("\0")):
        rel = entry[3:]
        if rel.startswith(STATE_DIR + "/"):
            continue
        source, target = top / rel, dest / rel
        if source.is_dir() and not source.is_symlink():
            continue  # a submodule: left as checked out
        with contextlib.suppress(FileNotFoundError):
            target.unlink()
        if source.is_symlink() or source.is_file():
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target, follow_symlinks=False)


def _link_environments(workspace: Path, tree_workspace: Path) -> None:
    """Link the workspace's ignored environments (`.venv/`, `node_modules/`) into the tree."""
    for name in LINKED_ENVIRONMENTS:
        source, target = workspace / name, tree_workspace / name
        if source.is_dir() and not target.exists():
            with contextlib.suppress(OSError):
                target.symlink_to(source, target_is_directory=True)


def copy_folder(workspace: Path, dest: Path, ignored: IgnoredCheck) -> None:
    """A copy of the workspace without what the ignore rules leave out (nor its state folder)."""

    def skip(directory: str, names: list[str]) -> set[str]:
        rel_dir = Path(directory).relative_to(workspace).as_posix()
        left_out = set()
        for name in names:
            rel = name if rel_dir == "." else f"{rel_dir}/{name}"
            full = Path(directory) / name
            if name in (STATE_DIR, ".git") or ignored(rel, full.is_dir() and not full.is_symlink()):
                left_out.add(name)
        return left_out

    shutil.copytree(workspace, dest, symlinks=True, ignore=skip)
    _link_environments(workspace, dest)


def remove_tree(workspace: Path, tree: RunTree, *, keep_branch: bool = False) -> None:
    """Remove the run's tree (and its branch unless kept); what cannot be removed is logged."""
    top = repository_of(workspace) if tree.git else None
    if top is not None:
        with contextlib.suppress(TreeError):
            git(top, "worktree", "remove", "--force", str(tree.top))
    if tree.top.exists():
        shutil.rmtree(tree.top, ignore_errors=True)
    if top is not None:
        with contextlib.suppress(TreeError):
            git(top, "worktree", "prune")
        if not keep_branch and tree.branch:
            try:
                git(top, "branch", "-D", tree.branch)
            except TreeError as exc:
                if "not found" not in str(exc):  # a spare taken by no run never had its branch
                    log.info("the run's branch %s stays: %s", tree.branch, exc)


def commit_all(tree: RunTree, message: str) -> str | None:
    """Commit everything in the tree to its branch; the new commit (None: nothing to commit)."""
    _own_worktree(tree)
    git(tree.top, "add", "-A")
    if not git(tree.top, "diff", "--cached", "--name-only").strip():
        return None
    identity = () if _has_identity(tree.top) else DEFAULT_IDENTITY
    git(tree.top, *identity, "commit", "--quiet", "--no-verify", "-m", message)
    return git(tree.top, "rev-parse", "HEAD").strip()


def _own_worktree(tree: RunTree) -> None:
    """TreeError unless git in `tree.top` is the run's worktree itself. Why: in a folder whose
    worktree was removed, git walks up to an enclosing repository (a home folder kept in git),
    and a reset, clean or `add -A` there would act on the user's own files."""
    try:
        top = git(tree.top, "rev-parse", "--show-toplevel").strip()
    except (TreeError, OSError) as exc:
        raise TreeError(f"{tree.top} is not the run's worktree: {exc}") from exc
    if not top or Path(top).resolve() != tree.top.resolve():
        raise TreeError(f"{tree.top} is not the run's worktree (git answers for {top or 'nothing'})")


def _has_identity(cwd: Path) -> bool:
    return bool(git(cwd, "config", "user.email", check=False).strip())


def orphan_worktrees(workspace: Path, runs_dir: Path) -> list[Path]:
    """The repository's worktrees under `runs_dir` (a crashed server's runs among them)."""
    top = repository_of(workspace)
    if top is None:
        return []
    found = []
    for line in git(top, "worktree", "list", "--porcelain", check=False).splitlines():
        if line.startswith("worktree "):
            path = Path(line[len("worktree ") :])
            if runs_dir in path.parents:
                found.append(path)
    return found
