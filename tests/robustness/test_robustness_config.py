"""Misconfiguration as a user meets it: `aider-lsp doctor` names what to set (exit 1, no
traceback) for each kind of mistake, and commands over LSP answer configuration_error naming
the variable."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from aider_lsp_testing.lsp_session import execute
from aider_lsp_testing.raw_lsp import server_env

NO_KEYS = {"OPENAI_API_KEY": "", "GROQ_API_KEY": "", "ANTHROPIC_API_KEY": ""}


def _doctor(workspace: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "aider_lsp", "doctor", "--workspace", str(workspace)],
        capture_output=True,
        text=True,
        timeout=60,
        env=server_env({**NO_KEYS, **env}),
    )


@pytest.mark.parametrize(
    ("env", "says"),
    [
        pytest.param({}, "AIDER_LSP_MODEL", id="no-model"),
        pytest.param({"AIDER_LSP_MODEL": "openai:gpt-4.1"}, "OPENAI_API_KEY", id="no-key"),
        pytest.param({"AIDER_LSP_MODEL": "groq:llama"}, "GROQ_API_KEY", id="no-key-other-provider"),
        pytest.param({"AIDER_LSP_MODEL": "nosuchprovider:x"}, "Unknown model", id="unknown-provider"),
        pytest.param({"AIDER_LSP_MODEL": "gpt-4.1"}, "provider prefix", id="no-prefix"),
        pytest.param(
            {"AIDER_LSP_MODEL": "openai:m", "AIDER_LSP_BASE_URL": "http://127.0.0.1:1/v1"},
            "cannot reach",
            id="unreachable-endpoint",
        ),
        pytest.param({"AIDER_LSP_TIMEOUTS": "{not json"}, "AIDER_LSP_TIMEOUTS", id="bad-json-variable"),
        pytest.param({"AIDER_LSP_MAX_RETRIES": "many"}, "maxRetries", id="bad-value"),
        pytest.param(
            {"AIDER_LSP_AIDER_SERVER": '{"command": "/no/such/aider-server"}'},
            "custom command not found",
            id="missing-aider-command",
        ),
    ],
)
def test_doctor_names_each_misconfiguration(tmp_path: Path, env: dict[str, str], says: str) -> None:
    done = _doctor(tmp_path, env)
    output = done.stdout + done.stderr
    assert done.returncode == 1, output
    assert says in output, output
    assert "Traceback" not in output


def test_doctor_missing_workspace(tmp_path: Path) -> None:
    done = _doctor(tmp_path / "no such dir", {})
    assert done.returncode == 1 and "not a directory" in done.stdout and "Traceback" not in done.stderr


@pytest.mark.aider
def test_doctor_all_good_exits_zero(tmp_path: Path, llm_server: Any) -> None:
    done = _doctor(tmp_path, {"AIDER_LSP_MODEL": "openai:m", "AIDER_LSP_BASE_URL": llm_server.base_url})
    assert done.returncode == 0, done.stdout + done.stderr
    assert "MISSING" not in done.stdout


async def test_commands_name_the_missing_variable_over_lsp(lsp: Any, workspace: Path) -> None:
    """No Aider model, no API key: FAILED configuration_error that says what to set — not
    Aider retrying a keyless provider for a minute and then blaming its servers."""
    async with lsp(workspace, init_options={"maxRetries": 0}, env=NO_KEYS) as client:
        edit = await execute(
            client, "aider-lsp.aider.automatic", {"prompt": "x", "file_context": ["pkg/calc.py"]}
        )
        assert edit["status"] == "FAILED"
        assert edit["notes"]["error"]["reason"] == "configuration_error"
        assert "aiderLsp.aiderModel" in edit["content"]  # an editor's user sets it there
    async with lsp(
        workspace, init_options={"model": "openai:gpt-4.1", "maxRetries": 0}, env=NO_KEYS
    ) as client:
        edit = await execute(
            client, "aider-lsp.aider.automatic", {"prompt": "x", "file_context": ["pkg/calc.py"]}
        )
        assert edit["status"] == "FAILED", edit
        assert edit["notes"]["error"]["reason"] == "configuration_error", edit
        assert "OPENAI_API_KEY" in edit["content"]
        primed = await execute(client, "aider-lsp.handler.primeContext", {"query": "add numbers"})
        assert primed["status"] in ("COMPLETE", "FAILED")
        if primed["status"] == "FAILED":
            assert "OPENAI_API_KEY" in primed["content"], primed
