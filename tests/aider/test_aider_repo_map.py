"""Aider's repository map (`aiderMapTokens`): on where the workspace is a git repository, with
a REAL Aider edit through the bundled server and the scripted model. Secret files are never in
the map, and Aider's tags cache lives in `.aider-lsp/`, never in the user's tree."""

from __future__ import annotations

import os
import sqlite3
import subprocess
from pathlib import Path
from typing import Any

import pytest

from aider_lsp.aider.launch import repo_map_args
from aider_lsp.app import Application
from aider_lsp.config.settings import load_settings
from aider_lsp.models import TaskStatus
from aider_lsp_testing.apps import scripted_app
from aider_lsp_testing.llm_server import aider_whole, any_request, last_user_contains
from aider_lsp_testing.waiting import eventually

EDITED = "def add(a, b):\n    return a + b + 0\n"
SECRETS = {
    ".env": "ENVSECRET111",
    "config/secrets.yaml": "YAMLSECRET555",
    "keys/server.pem": "PEMSECRET333",
    "config/prod.yaml": "PRODSECRET666",  # secret through secretPatterns only
}
USER_SECRET_CODE = "private_helpers.py"  # code (with tags for the map), secret by secretPatterns


def git_project(root: Path) -> Path:
    """A committed git repository: the edited file, a file the map should show, and secrets."""
    (root / "pkg").mkdir(parents=True)
    (root / "pkg" / "calc.py").write_text("def add(a, b):\n    return a + b\n")
    (root / "pkg" / "shapes.py").write_text("def area_of_circle(radius):\n    return 3.14159 * radius**2\n")
    (root / USER_SECRET_CODE).write_text("def leak_me_please(token):\n    return 'PYSECRET999' + token\n")
    for rel, value in SECRETS.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(f"password: {value}\n")
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@example.com", "-c", "init.defaultBranch=main"]
    subprocess.run([*git, "init", "-q"], cwd=root, check=True)
    subprocess.run([*git, "add", "-A"], cwd=root, check=True)
    subprocess.run([*git, "commit", "-qm", "start"], cwd=root, check=True)
    return root


def make_app(root: Path, base_url: str, **extra: Any) -> Application:
    return scripted_app(root, base_url, secretPatterns=["config/prod.yaml", USER_SECRET_CODE], **extra)


async def edit_once(app: Application, llm_server: Any) -> str:
    """One edit of pkg/calc.py; returns what Aider sent the model."""
    llm_server.add_rule(any_request, aider_whole({"pkg/calc.py": EDITED}))
    try:
        result = await app.handle_task_command(
            "aider:automatic", {"prompt": "make add return a + b + 0", "file_context": ["pkg/calc.py"]}
        )
    finally:
        await app.aclose()
    assert result.status is TaskStatus.COMPLETE, result.content
    return str(llm_server.chat_requests()[-1]["messages"])


@pytest.mark.aider
async def test_the_repo_map_shows_the_repository_but_never_a_secret_file(
    tmp_path: Path, llm_server: Any
) -> None:
    root = git_project(tmp_path / "repo")
    sent = await edit_once(make_app(root, llm_server.base_url), llm_server)
    assert "area_of_circle" in sent and "pkg/shapes.py" in sent  # the map is on by default
    for rel, value in SECRETS.items():
        assert value not in sent and rel not in sent, rel
    assert USER_SECRET_CODE not in sent and "leak_me_please" not in sent and "PYSECRET999" not in sent
    # Aider's tags cache is in aider-lsp's state folder (git-ignored), not in the user's tree
    assert not [p.name for p in root.iterdir() if p.name.startswith(".aider.")]
    assert (root / ".aider-lsp" / "aider.tags.cache.v4").is_dir()
    status = subprocess.run(["git", "status", "--porcelain"], cwd=root, capture_output=True, text=True)
    assert status.stdout.strip() == "M pkg/calc.py"  # nothing else appeared for git


@pytest.mark.aider
async def test_the_next_one_shot_edit_maps_the_repository_as_it_is_now(
    tmp_path: Path, llm_server: Any
) -> None:
    """One-shot edits share Aider's map caches: a file changed between two edits is mapped anew."""
    root = git_project(tmp_path / "repo")
    app = make_app(root, llm_server.base_url)
    llm_server.add_rule(last_user_contains("+ 0"), aider_whole({"pkg/calc.py": EDITED}))
    llm_server.add_rule(any_request, aider_whole({"pkg/calc.py": "def add(a, b):\n    return a + b\n"}))
    try:
        for prompt in ("make add return a + b + 0", "make add return a + b again"):
            if prompt.endswith("again"):
                shapes = root / "pkg" / "shapes.py"
                shapes.write_text(
                    shapes.read_text() + "\n\ndef perimeter_of_square(side):\n    return 4 * side\n"
                )
                os.utime(shapes, (shapes.stat().st_atime, shapes.stat().st_mtime + 5))
            result = await app.handle_task_command(
                "aider:automatic", {"prompt": prompt, "file_context": ["pkg/calc.py"]}
            )
            assert result.status is TaskStatus.COMPLETE, result.content
    finally:
        await app.aclose()
    first, second = (str(request["messages"]) for request in llm_server.chat_requests())
    assert "area_of_circle" in first and "perimeter_of_square" not in first
    assert "area_of_circle" in second and "perimeter_of_square" in second


def cached_tags(root: Path) -> set[str]:
    """The files Aider's tags cache (a diskcache: SQLite, keyed by absolute path) holds."""
    database = root / ".aider-lsp" / "aider.tags.cache.v4" / "cache.db"
    if not database.exists():
        return set()
    try:
        with sqlite3.connect(database, timeout=1) as connection:
            keys = [row[0] for row in connection.execute("SELECT key FROM Cache")]
    except sqlite3.Error:  # being created by the server right now
        return set()
    return {os.path.relpath(key, root) for key in keys if isinstance(key, str)}


@pytest.mark.aider
async def test_the_warm_up_fills_the_tags_cache_before_any_edit(tmp_path: Path, llm_server: Any) -> None:
    """The first edit of a new workspace finds the map's files parsed: the server's warm-up
    filled Aider's tags cache (never with a secret file, nothing written but the cache)."""
    root = git_project(tmp_path / "repo")
    app = make_app(root, llm_server.base_url)
    try:
        assert await app.start_aider()
        assert await eventually(lambda: cached_tags(root) >= {"pkg/calc.py", "pkg/shapes.py"}, timeout=60)
    finally:
        await app.aclose()
    assert USER_SECRET_CODE not in cached_tags(root) and not set(SECRETS) & cached_tags(root)
    assert llm_server.chat_requests() == []  # no model call to build it
    status = subprocess.run(["git", "status", "--porcelain"], cwd=root, capture_output=True, text=True)
    assert status.stdout.strip() == ""


@pytest.mark.aider
async def test_aider_map_tokens_0_turns_the_map_off(tmp_path: Path, llm_server: Any) -> None:
    root = git_project(tmp_path / "repo")
    sent = await edit_once(make_app(root, llm_server.base_url, aiderMapTokens=0), llm_server)
    assert "area_of_circle" not in sent
    assert not (root / ".aider-lsp" / "aider.tags.cache.v4").exists()


def test_the_map_is_asked_for_only_at_the_root_of_a_git_repository(tmp_path: Path) -> None:
    settings = load_settings({}, environ={})
    assert settings.aider_map_tokens == 1024  # Aider's default size
    assert repo_map_args(settings, tmp_path) == ()  # not a git repository
    (tmp_path / ".git").mkdir()
    assert repo_map_args(settings, tmp_path) == ("--map-tokens", "1024")
    assert repo_map_args(load_settings({"aiderMapTokens": 2048}, environ={}), tmp_path) == (
        "--map-tokens",
        "2048",
    )
    assert repo_map_args(load_settings({"aiderMapTokens": 0}, environ={}), tmp_path) == ()
