"""The Aider environment helpers: paths, readiness, and the server package copy."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from aider_lsp.cli.main import main as cli_main
from aider_lsp.config import aider_env


def test_env_dir_follows_override_and_xdg(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv(aider_env.ENV_OVERRIDE, raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    assert aider_env.env_dir() == tmp_path / "cache" / "aider-lsp" / f"aider-env-{aider_env.AIDER_VERSION}"
    monkeypatch.setenv(aider_env.ENV_OVERRIDE, str(tmp_path / "mine"))
    assert aider_env.env_dir() == tmp_path / "mine"
    assert not aider_env.is_ready()
    assert "aider-lsp setup-aider" in aider_env.describe()


def test_ready_needs_the_stamp_of_the_current_requirements(tmp_path: Path) -> None:
    python = aider_env.aider_python(tmp_path)
    python.parent.mkdir(parents=True)
    python.symlink_to(sys.executable)
    assert not aider_env.is_ready(tmp_path)
    (tmp_path / aider_env.STAMP_NAME).write_text("aider-chat==0.0.1\n")
    assert not aider_env.is_ready(tmp_path)
    (tmp_path / aider_env.STAMP_NAME).write_text(aider_env._stamp_text())
    assert aider_env.is_ready(tmp_path)
    # a ready env is not reinstalled: setup returns at once
    lines: list[str] = []
    assert aider_env.setup(root=tmp_path, log=lines.append) == tmp_path
    assert "already set up" in lines[0]


def test_a_creation_cut_short_is_created_again(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """A venv whose creation was interrupted (a python, no pip, no marker) is rebuilt whole,
    never completed in place; a complete venv whose install was cut short is only completed."""
    python = aider_env.aider_python(tmp_path)
    python.parent.mkdir(parents=True)
    python.symlink_to(sys.executable)  # what an interrupted `venv` leaves: the interpreter only
    created: list[Path] = []

    def create(self: object, root: Path) -> None:
        created.append(Path(root))

    monkeypatch.setattr(aider_env.venv.EnvBuilder, "create", create)
    commands: list[list[str]] = []

    def run(command: list[str], **kwargs: object) -> subprocess.CompletedProcess[str]:
        commands.append(command)
        return subprocess.CompletedProcess(command, 0, stdout="0.86.2\n", stderr="")

    def stream(command: list[str], log: object) -> subprocess.CompletedProcess[str]:
        commands.append(command)
        return subprocess.CompletedProcess(command, 0, stdout="", stderr="")

    monkeypatch.setattr(aider_env.subprocess, "run", run)
    monkeypatch.setattr(aider_env, "stream_command", stream)
    monkeypatch.setattr(aider_env, "sync_server_package", lambda root=None: tmp_path)
    aider_env.setup(root=tmp_path, log=lambda line: None)
    assert created == [tmp_path]
    assert any("pip" in command for command in commands)
    assert aider_env.is_ready(tmp_path)
    # the install was cut short after the venv was complete: the venv is kept
    (tmp_path / aider_env.STAMP_NAME).unlink()
    aider_env.setup(root=tmp_path, log=lambda line: None)
    assert created == [tmp_path]
    assert aider_env.is_ready(tmp_path)


def test_server_package_is_copied_without_our_site_packages(tmp_path: Path) -> None:
    command, args, env = aider_env.server_command(tmp_path)
    copied = Path(env["PYTHONPATH"])
    assert copied.is_relative_to(tmp_path)
    assert {p.name for p in (copied / "aider_mcp").glob("*.py")} >= {"__main__.py", "engine.py", "server.py"}
    assert not (copied / "aider_lsp").exists()
    assert args == ["-P", "-m", "aider_mcp"] and command == str(aider_env.aider_python(tmp_path))


def test_two_versions_of_the_server_package_keep_their_own_copies(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """A second checkout (or version) sharing the Aider env never replaces a running server."""
    first = aider_env.sync_server_package(tmp_path / "env")
    assert first == aider_env.sync_server_package(tmp_path / "env")
    other = tmp_path / "other" / "aider_mcp"
    other.mkdir(parents=True)
    (other / "__main__.py").write_text("print('another version')\n")
    monkeypatch.setattr(aider_env, "package_parent", lambda: other.parent)
    second = aider_env.sync_server_package(tmp_path / "env")
    assert second != first
    assert (first / "aider_mcp" / "engine.py").is_file()
    assert [p.name for p in (second / "aider_mcp").iterdir()] == ["__main__.py"]


def test_aider_mcp_imports_nothing_from_aider_lsp() -> None:
    source = Path(aider_env.package_parent()) / "aider_mcp"
    for path in source.glob("*.py"):
        for line in path.read_text().splitlines():
            if line.lstrip().startswith(("import ", "from ")):
                assert "aider_lsp" not in line, (path, line)


def test_setup_aider_subcommand_is_instant_when_ready(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = tmp_path / "env"
    python = aider_env.aider_python(root)
    python.parent.mkdir(parents=True)
    python.symlink_to(sys.executable)
    (root / aider_env.STAMP_NAME).write_text(aider_env._stamp_text())
    monkeypatch.setenv(aider_env.ENV_OVERRIDE, str(root))
    assert cli_main(["setup-aider"]) == 0
    assert "already set up" in capsys.readouterr().out


def test_the_install_reports_each_line_as_it_comes(tmp_path: Path) -> None:
    """pip's minutes of output reach the log line by line (the editor shows them as progress);
    a failure keeps the last lines for its message."""
    script = "import sys\nfor n in range(40): print(f'Collecting pkg{n}', flush=True)\nsys.exit(3)\n"
    lines: list[str] = []
    done = aider_env.stream_command([sys.executable, "-c", script], lines.append)
    assert lines == [f"Collecting pkg{n}" for n in range(40)]
    assert done.returncode == 3 and done.stdout.splitlines() == lines[-30:]
