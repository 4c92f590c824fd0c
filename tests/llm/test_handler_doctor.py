"""`aider-lsp doctor` (real subprocess): its model section against the scripted LLM server,
and the test command it reports."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from aider_lsp_testing.llm_server import ScriptedLLMServer
from aider_lsp_testing.status_server import answering


def _doctor(tmp_path: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    clean = {
        k: v for k, v in os.environ.items() if not k.startswith("AIDER_LSP_") and not k.endswith("_API_KEY")
    }
    return subprocess.run(
        [sys.executable, "-m", "aider_lsp", "doctor", "--workspace", str(tmp_path)],
        capture_output=True,
        text=True,
        env={**clean, **env},
        timeout=60,
    )


def test_doctor_reports_a_reachable_openai_compatible_endpoint(
    tmp_path: Path, llm_server: ScriptedLLMServer
) -> None:
    result = _doctor(
        tmp_path, {"AIDER_LSP_MODEL": "openai:scripted-model", "AIDER_LSP_BASE_URL": llm_server.base_url}
    )
    out = result.stdout
    assert "[ok] model: openai:scripted-model (served as 'scripted-model')" in out
    assert "[ok] endpoint: OpenAI-compatible (chat completions)" in out and "scripted-model" in out
    assert "placeholder" in out  # no key needed for a local server
    # the words each call's result and the log use for the model (notes.model)
    assert f"[ok] provider: openai-compatible:scripted-model@{llm_server.base_url}" in out
    assert "Traceback" not in out + result.stderr


def test_doctor_reports_an_unreachable_endpoint_and_a_prefixless_model(tmp_path: Path) -> None:
    result = _doctor(tmp_path, {"AIDER_LSP_MODEL": "m", "AIDER_LSP_BASE_URL": "http://127.0.0.1:9/v1"})
    assert (
        result.returncode == 1 and "[MISSING] endpoint" in result.stdout and "cannot reach" in result.stdout
    )
    result = _doctor(tmp_path, {"AIDER_LSP_MODEL": "gpt-4.1"})
    assert (
        result.returncode == 1
        and "no provider prefix" in result.stdout
        and "AIDER_LSP_BASE_URL" in result.stdout
    )


def test_doctor_shows_the_test_command_and_why(tmp_path: Path) -> None:
    (tmp_path / "go.mod").write_text("module x\n")
    result = _doctor(tmp_path, {})
    assert "[ok] test command: `go test ./...` (found: go.mod)" in result.stdout
    result = _doctor(tmp_path, {"AIDER_LSP_TEST_COMMAND": "make check"})
    assert "[ok] test command: `make check` (the testCommand setting)" in result.stdout


def test_doctor_names_the_setting_when_no_suite_is_found(tmp_path: Path) -> None:
    """Shown, but not missing: a run can still be given its command (test_robustness_config
    holds that a workspace without tests and a complete configuration exits 0)."""
    result = _doctor(tmp_path, {})
    assert "[none] test command: no test command" in result.stdout
    assert "AIDER_LSP_TEST_COMMAND" in result.stdout


# -- endpoint mistakes named before any run (endpoints.py) ---------------------------------------
def test_doctor_names_a_base_url_without_v1_and_a_refused_key(tmp_path: Path) -> None:
    with answering(404) as url:
        done = _doctor(tmp_path, {"AIDER_LSP_MODEL": "openai:m", "AIDER_LSP_BASE_URL": url})
    assert done.returncode == 1
    assert "[MISSING] endpoint" in done.stdout and "answered 404" in done.stdout
    assert "AIDER_LSP_BASE_URL must be the API's root" in done.stdout and "/v1" in done.stdout
    with answering(401, {"error": {"message": "invalid key"}}) as url:
        done = _doctor(
            tmp_path, {"AIDER_LSP_MODEL": "openai:m", "AIDER_LSP_BASE_URL": url, "AIDER_LSP_API_KEY": "wrong"}
        )
    assert done.returncode == 1 and "refused the key" in done.stdout and "AIDER_LSP_API_KEY" in done.stdout
    assert "Traceback" not in done.stdout + done.stderr


def test_doctor_warns_of_models_the_endpoint_does_not_list(
    tmp_path: Path, llm_server: ScriptedLLMServer
) -> None:
    done = _doctor(
        tmp_path,
        {
            "AIDER_LSP_MODEL": "openai:scripted-model",
            "AIDER_LSP_AIDER_MODEL": "openai/no-such-coder",
            "AIDER_LSP_BASE_URL": llm_server.base_url,
        },
    )
    assert "[ok] endpoint" in done.stdout
    assert "[warn] Aider's model on the endpoint" in done.stdout and "'no-such-coder'" in done.stdout
    assert "AIDER_LSP_AIDER_MODEL" in done.stdout and "planning model on the endpoint" not in done.stdout
