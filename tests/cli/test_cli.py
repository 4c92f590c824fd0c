"""The command line a newcomer meets first: --version and doctor, with exit codes."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

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
