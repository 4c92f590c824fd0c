"""A repository never runs code inside our processes (process_start.py).

The workspace here holds packages named like what our processes import (Aider's dependencies,
the mcp SDK, our own packages, standard modules a Python child loads at its start), each
writing a marker file when imported. Every process kind is started as a user starts it, from
inside that workspace: the bundled Aider server (an edit, undo), `aider-lsp run` and `undo`,
`aider-lsp acp`, `aider-lsp serve` indexing in its child and worker processes. Each works, and
no marker appears. The user's test command is the exception the user confirmed: the commands
here do not run Python, so a marker can only come from a process of ours.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from acp.schema import ClientCapabilities

from acp import resource_link_block, spawn_agent_process, text_block
from aider_lsp.config import aider_env
from aider_lsp.models import TaskStatus
from aider_lsp.processes.process_start import ISOLATED, SAFE_PATH
from aider_lsp_testing.apps import scripted_app, scripted_environment
from aider_lsp_testing.calc_project import BUGGY, FIXED, TESTS
from aider_lsp_testing.llm_server import IS_AIDER, aider_whole
from aider_lsp_testing.lsp_session import execute, lsp_session
from aider_lsp_testing.waiting import eventually

# what a process of ours would import from a workspace put on its path
SHADOWS = (
    "httpx/__init__.py",  # Aider's and the mcp SDK's HTTP client
    "mcp/__init__.py",
    "pydantic/__init__.py",
    "aider_mcp/__init__.py",  # the bundled server itself
    "aider_lsp/__init__.py",
    "litellm.py",
    "yaml.py",
    "openai/__init__.py",
    "selectors.py",  # standard modules a child started with `-c` loads before anything else
    "signal.py",
    "socket.py",
)
INSTALLED = Path(sys.executable).parent  # the console scripts a user runs: aider-lsp
TEST_GREEN = "grep -q 'return a [*] b' calc.py"  # a test command that runs no Python


def shadowing_workspace(parent: Path) -> tuple[Path, Path]:
    """(the calc project with the shadowing modules, the folder their markers land in)."""
    root = parent / "calcproj"
    markers = parent / "markers"
    markers.mkdir()
    root.mkdir()
    (root / "calc.py").write_text(BUGGY)
    (root / "test_calc.py").write_text(TESTS)
    for relative in SHADOWS:
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        name = relative.split("/")[0].removesuffix(".py")
        path.write_text(f"open({str(markers / name)!r}, 'w').write('imported')\n")
    return root, markers


def scripted_env(base_url: str) -> dict[str, str]:
    """A user's environment naming the scripted models (and no PYTHONPATH of this process's)."""
    env = scripted_environment(base_url)
    env.pop("PYTHONPATH", None)
    return env


def imported(markers: Path) -> list[str]:
    return sorted(path.name for path in markers.iterdir())


def test_our_python_children_start_without_the_workspace_on_their_path() -> None:
    command, args, _ = aider_env.server_command()
    assert args[:3] == [SAFE_PATH, "-m", "aider_mcp"] and command == str(aider_env.aider_python())
    # the Python of this test is the one our processes run on: -P means what we rely on
    probe = subprocess.run(
        [sys.executable, SAFE_PATH, "-c", "import sys; print('' in sys.path)"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert probe.stdout.strip() == "False"


def test_setup_aider_runs_pip_isolated_outside_the_workspace(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`setup-aider` started from inside a workspace: pip and the check run isolated (-I),
    from a neutral folder."""
    workspace, _ = shadowing_workspace(tmp_path)
    monkeypatch.chdir(workspace)
    seen: list[tuple[list[str], str]] = []

    def stream(command: list[str], log: Any, keep: int = 30) -> subprocess.CompletedProcess[str]:
        seen.append((command, "pip"))
        return subprocess.CompletedProcess(command, 0, stdout="", stderr="")

    def run(command: list[str], **kwargs: Any) -> subprocess.CompletedProcess[str]:
        seen.append((command, str(kwargs.get("cwd"))))
        return subprocess.CompletedProcess(command, 0, stdout="0.86.2\n", stderr="")

    monkeypatch.setattr(aider_env, "stream_command", stream)
    monkeypatch.setattr(aider_env.subprocess, "run", run)
    root = tmp_path / "env"
    (root / "bin").mkdir(parents=True)
    (root / "bin" / "python").write_text("")
    (root / aider_env.CREATED_NAME).write_text("")
    aider_env.setup(root=root, log=lambda line: None)
    (pip, _), (check, cwd) = seen
    assert pip[1:4] == [ISOLATED, "-m", "pip"]
    assert check[1] == ISOLATED and Path(cwd) != workspace and workspace not in Path(cwd).parents


@pytest.mark.aider
async def test_an_aider_edit_and_its_undo_import_nothing_of_the_workspace(
    tmp_path: Path, llm_server: Any
) -> None:
    workspace, markers = shadowing_workspace(tmp_path)
    llm_server.add_rule(IS_AIDER, aider_whole({"calc.py": FIXED}))
    app = scripted_app(workspace, llm_server.base_url)
    try:
        edited = await app.handle_task_command(
            "aider:automatic", {"prompt": "fix subtract and multiply", "file_context": ["calc.py"]}
        )
        assert edited.status is TaskStatus.COMPLETE, edited.content
        assert (workspace / "calc.py").read_text() == FIXED
        undone = app.undo()
        assert (workspace / "calc.py").read_text() == BUGGY, undone
    finally:
        await app.aclose()
    assert imported(markers) == []


@pytest.mark.aider
def test_a_workflow_run_and_undo_started_inside_the_workspace_import_nothing_of_it(
    tmp_path: Path, llm_server: Any
) -> None:
    workspace, markers = shadowing_workspace(tmp_path)
    llm_server.add_rule(IS_AIDER, aider_whole({"calc.py": FIXED}))
    env = scripted_env(llm_server.base_url)
    run = subprocess.run(
        [
            str(INSTALLED / "aider-lsp"),
            "run",
            "--goal",
            "fix multiply",
            "--files",
            "calc.py",
            "--test",
            TEST_GREEN,
        ],
        cwd=workspace,
        env=env,
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    assert "SUCCESS" in run.stdout and (workspace / "calc.py").read_text() == FIXED
    undo = subprocess.run(
        [str(INSTALLED / "aider-lsp"), "undo"],
        cwd=workspace,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert undo.returncode == 0, undo.stderr
    assert (workspace / "calc.py").read_text() == BUGGY
    assert imported(markers) == []


class _Editor:
    """The ACP client's side: keeps the agent's updates."""

    def __init__(self) -> None:
        self.updates: list[Any] = []

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        self.updates.append(update)

    def on_connect(self, conn: Any) -> None:
        """Nothing to keep."""


@pytest.mark.aider
async def test_an_acp_turn_started_inside_the_workspace_imports_nothing_of_it(
    tmp_path: Path, llm_server: Any
) -> None:
    workspace, markers = shadowing_workspace(tmp_path)
    llm_server.add_rule(IS_AIDER, aider_whole({"calc.py": FIXED}))
    calc = workspace / "calc.py"
    with (tmp_path / "agent.log").open("wb") as stderr:
        async with spawn_agent_process(
            _Editor(),
            str(INSTALLED / "aider-lsp"),
            "acp",
            env=scripted_env(llm_server.base_url),
            cwd=workspace,
            transport_kwargs={"stderr": stderr.fileno()},
        ) as (conn, _):
            await conn.initialize(protocol_version=1, client_capabilities=ClientCapabilities())
            session = await conn.new_session(cwd=str(workspace), mcp_servers=[])
            answer = await conn.prompt(
                session_id=session.session_id,
                prompt=[text_block("Fix multiply"), resource_link_block(calc.name, calc.as_uri())],
            )
    assert answer.stop_reason == "end_turn"
    assert calc.read_text() == FIXED, (tmp_path / "agent.log").read_text()[-3000:]
    assert imported(markers) == []


async def test_indexing_started_inside_the_workspace_imports_nothing_of_it(tmp_path: Path) -> None:
    """`aider-lsp serve` from inside the workspace (as an editor may start it): the first index
    runs in a child process, its reading in worker processes (enough files for them)."""
    workspace, markers = shadowing_workspace(tmp_path)
    for number in range(450):
        (workspace / "generated" / f"module_{number:03}.py").parent.mkdir(exist_ok=True)
        (workspace / "generated" / f"module_{number:03}.py").write_text(f"VALUE_{number} = {number}\n")
    async with lsp_session(
        workspace, command=[str(INSTALLED / "aider-lsp"), "serve"], cwd=workspace
    ) as client:

        async def multiply_found() -> bool:
            result = await execute(client, "aider-lsp.system.getContext", {"query": "multiply subtract calc"})
            return result["status"] == "COMPLETE" and "calc.py" in result["notes"]["file_paths"]

        assert await eventually(multiply_found, 60)
    assert imported(markers) == []
