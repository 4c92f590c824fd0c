"""Sign-in as an ACP editor's user meets it: `initialize` offers the terminal sign-in and the
variables, a session without a model is refused as auth-required, `aider-lsp login` (run as the
editor's terminal runs it, its answers given without a prompt) checks and stores the key outside
every workspace, and the next session works without a restart."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from acp.schema import AuthCapabilities, ClientCapabilities

from acp import RequestError, spawn_agent_process
from aider_lsp_testing.file_keyring import BACKEND
from aider_lsp_testing.llm_server import ScriptedLLMServer
from aider_lsp_testing.status_server import answering

CLI = [sys.executable, "-m", "aider_lsp"]
SECRET = "sk-local-test-key-123"


def user_env(config: Path, **extra: str) -> dict[str, str]:
    """A user's environment with no model set: only the sign-in store (in `config`) can give one."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AIDER_LSP_", "OPENAI_", "ANTHROPIC_"))}
    env.update(XDG_CONFIG_HOME=str(config), **extra)
    return env


def login(
    config: Path, *args: str, key: str = SECRET, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*CLI, "login", *args, "--with-key"],
        input=key,
        env=env or user_env(config),
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_login_checks_the_key_and_stores_it_for_the_user_alone(
    tmp_path: Path, llm_server: ScriptedLLMServer
) -> None:
    config = tmp_path / "config"
    done = login(config, "--base-url", llm_server.base_url, "--model", "scripted-model")
    assert done.returncode == 0, done.stderr
    store = config / "aider-lsp" / "credentials.json"
    assert stat.S_IMODE(store.stat().st_mode) == 0o600 and str(store) in done.stdout
    assert json.loads(store.read_text()) == {
        "model": "openai:scripted-model",
        "aider_model": "openai/scripted-model",
        "base_url": llm_server.base_url,
        "api_key": SECRET,
    }
    assert SECRET not in done.stdout + done.stderr
    doctor = subprocess.run(
        [*CLI, "doctor", "--workspace", str(tmp_path)],
        env=user_env(config),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert f"[ok] sign-in: stored by `aider-lsp login` in {store}" in doctor.stdout
    assert "[ok] model: openai:scripted-model" in doctor.stdout and "[ok] endpoint" in doctor.stdout
    assert SECRET not in doctor.stdout + doctor.stderr


def test_a_model_typed_with_its_prefix_is_stored_once_and_one_the_server_lacks_is_refused(
    tmp_path: Path, llm_server: ScriptedLLMServer
) -> None:
    config = tmp_path / "config"
    # typed as the README's variables spell it: not stored as openai:openai:scripted-model
    done = login(config, "--base-url", llm_server.base_url, "--model", "openai:scripted-model")
    assert done.returncode == 0, done.stderr
    stored = json.loads((config / "aider-lsp" / "credentials.json").read_text())
    assert (stored["model"], stored["aider_model"]) == ("openai:scripted-model", "openai/scripted-model")
    # a model the server does not list: named with what it lists, not stored
    missing = login(tmp_path / "other", "--base-url", llm_server.base_url, "--model", "no-such-model")
    assert (
        missing.returncode == 1 and "does not list" in missing.stderr and "scripted-model" in missing.stderr
    )
    assert not (tmp_path / "other" / "aider-lsp" / "credentials.json").exists()


def test_where_there_is_an_os_keyring_the_key_goes_there_and_every_front_end_reads_it(
    tmp_path: Path, llm_server: ScriptedLLMServer
) -> None:
    config, keyring_file = tmp_path / "config", tmp_path / "keyring.json"
    env = user_env(config, PYTHON_KEYRING_BACKEND=BACKEND, AIDER_LSP_TEST_KEYRING=str(keyring_file))
    done = login(config, "--base-url", llm_server.base_url, "--model", "scripted-model", env=env)
    assert done.returncode == 0, done.stderr
    assert "the key in the OS keyring" in done.stdout and SECRET not in done.stdout
    store = json.loads((config / "aider-lsp" / "credentials.json").read_text())
    assert "api_key" not in store and store["key_store"] == "keyring"
    assert SECRET in keyring_file.read_text()
    settings = subprocess.run(
        [
            sys.executable,
            "-c",
            "from aider_lsp.config.settings import load_settings; print(load_settings().api_key)",
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert settings.stdout.strip() == SECRET  # the servers' settings read it from the keyring
    doctor = subprocess.run(
        [*CLI, "doctor", "--workspace", str(tmp_path)], env=env, capture_output=True, text=True, timeout=60
    )
    assert "the key in the OS keyring" in doctor.stdout and "[ok] endpoint" in doctor.stdout
    # a new sign-in where no keyring answers (switched off): the key goes to the 0600 file
    off = env | {"PYTHON_KEYRING_BACKEND": "keyring.backends.null.Keyring"}
    again = login(config, "--base-url", llm_server.base_url, "--model", "scripted-model", env=off)
    assert again.returncode == 0, again.stderr
    assert json.loads((config / "aider-lsp" / "credentials.json").read_text())["api_key"] == SECRET


def test_a_refused_key_is_not_stored_and_a_missing_answer_is_named(tmp_path: Path) -> None:
    config = tmp_path / "config"
    with answering(401, {"error": {"message": "invalid key"}}) as url:
        refused = login(config, "--base-url", f"{url}/v1", "--model", "m")
    assert refused.returncode == 1 and "refused the key" in refused.stderr
    assert not (config / "aider-lsp" / "credentials.json").exists()
    unnamed = login(config, "--provider", "anthropic")
    assert unnamed.returncode == 2 and "--model" in unnamed.stderr and "Traceback" not in unnamed.stderr


async def test_an_acp_session_asks_for_sign_in_then_works_after_it_without_a_restart(
    tmp_path: Path, llm_server: ScriptedLLMServer
) -> None:
    config = tmp_path / "config"
    workspace = tmp_path / "project"
    workspace.mkdir()
    (workspace / "calc.py").write_text("def add(a, b):\n    return a + b\n")
    client = _Editor()
    terminal = ClientCapabilities(auth=AuthCapabilities(terminal=True))
    with (tmp_path / "agent.log").open("wb") as stderr:
        async with spawn_agent_process(
            client, *CLI, "acp", env=user_env(config), transport_kwargs={"stderr": stderr.fileno()}
        ) as (conn, _):
            started = await conn.initialize(protocol_version=1, client_capabilities=terminal)
            methods = {method.id: method for method in started.auth_methods or []}
            assert (
                methods["aider-lsp-login"].args == ["login"] and methods["aider-lsp-login"].type == "terminal"
            )
            assert "AIDER_LSP_MODEL" in [var.name for var in methods["environment"].vars]
            with pytest.raises(RequestError) as refused:
                await conn.new_session(cwd=str(workspace), mcp_servers=[])
            refusal = (refused.value.code, json.dumps(refused.value.data))
            assert refusal[0] == -32000 and "aider-lsp login" in refusal[1], refusal
            # the editor runs the terminal sign-in (its answers given here without a prompt)
            assert (
                login(config, "--base-url", llm_server.base_url, "--model", "scripted-model").returncode == 0
            )
            await conn.authenticate(method_id="aider-lsp-login")
            session = await conn.new_session(cwd=str(workspace), mcp_servers=[])
    options = json.dumps([option.model_dump(mode="json") for option in session.config_options or []])
    assert session.session_id and "openai/scripted-model" in options  # Aider's model, from the sign-in
    assert "Traceback" not in (tmp_path / "agent.log").read_text()


@pytest.mark.parametrize(
    ("capabilities", "offered"),
    [
        (ClientCapabilities(), ["environment"]),
        # the ACP Registry's validator declares Terminal Auth the older way, in `_meta`
        (ClientCapabilities(field_meta={"terminal-auth": True}), ["aider-lsp-login", "environment"]),
    ],
)
async def test_the_terminal_sign_in_is_offered_to_clients_that_declare_it_either_way(
    tmp_path: Path, capabilities: ClientCapabilities, offered: list[str]
) -> None:
    with (tmp_path / "agent.log").open("wb") as stderr:
        async with spawn_agent_process(
            _Editor(),
            *CLI,
            "acp",
            env=user_env(tmp_path / "config"),
            transport_kwargs={"stderr": stderr.fileno()},
        ) as (conn, _):
            started = await conn.initialize(protocol_version=1, client_capabilities=capabilities)
    assert [method.id for method in started.auth_methods or []] == offered


class _Editor:
    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        """Nothing to keep."""

    def on_connect(self, conn: Any) -> None:
        """Nothing to keep."""
