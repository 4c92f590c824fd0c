"""The command line a newcomer meets first: --version and doctor, with exit codes."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from aider_lsp import __version__


def _cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    clean = {
        k: v for k, v in os.environ.items() if not k.startswith("AIDER_LSP_") and not k.endswith("_API_KEY")
    }
    return subprocess.run(
        [sys.executable, "-m", "aider_lsp", *args],
        capture_output=True,
        text=True,
        env={**clean, **(env or {})},
        timeout=60,
    )


def test_version() -> None:
    result = _cli("--version")
    assert result.returncode == 0 and __version__ in result.stdout


def test_doctor_names_what_is_missing(tmp_path: Path) -> None:
    result = _cli("doctor", "--workspace", str(tmp_path))
    assert result.returncode == 1
    assert "AIDER_LSP_MODEL" in result.stdout
    assert "Traceback" not in result.stdout + result.stderr


def test_doctor_reports_a_missing_provider_key(tmp_path: Path) -> None:
    result = _cli(
        "doctor", "--workspace", str(tmp_path), env={"AIDER_LSP_MODEL": "anthropic:claude-sonnet-4-5"}
    )
    assert result.returncode == 1 and "ANTHROPIC_API_KEY is not set" in result.stdout


def test_doctor_bad_setting_is_a_message_not_a_traceback(tmp_path: Path) -> None:
    result = _cli("doctor", "--workspace", str(tmp_path), env={"AIDER_LSP_MAX_RETRIES": "lots"})
    assert result.returncode == 1 and "maxRetries" in result.stdout
    assert "Traceback" not in result.stderr


def test_run_from_the_process_entry_ends_the_process_at_once(monkeypatch: Any) -> None:
    """`aider-lsp run` as a command (main() without argv) ends through exit_now with its code:
    no interpreter teardown after the result; a caller passing argv gets the code back."""
    from aider_lsp.cli import main as cli_main

    ended: list[int] = []
    monkeypatch.setattr(cli_main, "_dispatch", lambda args: 1)
    monkeypatch.setattr(cli_main, "exit_now", ended.append)
    monkeypatch.setattr(sys, "argv", ["aider-lsp", "run", "--goal", "g"])
    cli_main.main()
    assert ended == [1]
    assert cli_main.main(["run", "--goal", "g"]) == 1 and ended == [1]
    assert cli_main.main(["history"]) == 1 and ended == [1]  # only `run` ends at once


def test_run_prints_its_whole_answer_before_ending_at_once(tmp_path: Path) -> None:
    """A usage error's message reaches a pipe although the process ends by os._exit."""
    result = _cli("run", "--workspace", str(tmp_path / "missing"), "--goal", "g", "--test", "true")
    assert result.returncode == 2 and "not a directory" in result.stderr
