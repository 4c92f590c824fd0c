"""End-to-end: a real `aider-lsp serve` subprocess over stdio, driven by pytest-lsp."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from lsprotocol import types
from pygls.exceptions import JsonRpcInvalidParams

from aider_lsp.lsp.command_ids import CommandId
from aider_lsp_testing.lsp_session import execute

OUTSIDE_TEXT = "TOP-SECRET-OUTSIDE-THE-WORKSPACE"


@pytest.fixture
def tree(workspace: Path) -> Path:
    """The workspace plus a file outside it, a symlink leaking out, and key files inside."""
    outside = workspace.parent / "outside.txt"
    outside.write_text(OUTSIDE_TEXT)
    (workspace / "leak.txt").symlink_to(outside)
    (workspace / "keys").mkdir()
    (workspace / "keys" / "server.pem").write_text(f"-----BEGIN PRIVATE KEY----- {OUTSIDE_TEXT}")
    (workspace / "id_rsa").write_text(OUTSIDE_TEXT)
    return workspace


async def test_initialize_advertises_the_commands(lsp, workspace: Path) -> None:
    async with lsp(workspace) as client:
        capabilities = client.initialize_result.capabilities
        commands = set(capabilities.execute_command_provider.commands)
        assert {"aider-lsp.system.readFiles", "aider-lsp.tools.list"} <= commands
        assert commands == set(CommandId), "every command the server offers is in the one table"
        listed = await execute(client, "aider-lsp.tools.list", {})
        names = {tool["name"] for tool in listed["parsedContent"]}
        assert {"system:read_files", "system:execute_shell_command"} <= names
        aliases = {tool["alias"] for tool in listed["parsedContent"]}
        assert "system_read_files" in aliases


async def test_read_files_inside_the_workspace(lsp, workspace: Path) -> None:
    async with lsp(workspace) as client:
        result = await execute(
            client,
            "aider-lsp.system.readFiles",
            {"file_paths": ["pkg/calc.py", (workspace / "README.md").as_uri()]},
        )
    assert result["status"] == "COMPLETE"
    assert "def add(a, b)" in result["content"]
    assert "# demo" in result["content"]
    assert result["notes"]["files_read_count"] == 2
    assert result["notes"]["skipped_files"] == []


ESCAPES = [
    pytest.param("../outside.txt", id="dotdot"),
    pytest.param("pkg/../../outside.txt", id="nested-dotdot"),
    pytest.param("ABSOLUTE_OUTSIDE", id="absolute-outside"),
    pytest.param("/etc/passwd", id="absolute-system"),
    pytest.param("leak.txt", id="symlink-out"),
    pytest.param("pkg/calc.py\x00.txt", id="nul-byte"),
    pytest.param("https://example.com/x.py", id="non-file-uri"),
    pytest.param("file://otherhost/etc/passwd", id="remote-file-uri"),
    pytest.param("OUTSIDE_URI", id="file-uri-outside"),
    pytest.param(".env", id="dotenv-secret"),
    pytest.param("keys/server.pem", id="pem-secret"),
    pytest.param("id_rsa", id="ssh-key-secret"),
]


async def test_read_files_refuses_every_escape(lsp, tree: Path) -> None:
    outside = tree.parent / "outside.txt"
    substitutions = {"ABSOLUTE_OUTSIDE": str(outside), "OUTSIDE_URI": outside.as_uri()}
    async with lsp(tree) as client:
        for param in ESCAPES:
            path = substitutions.get(param.values[0], param.values[0])
            result = await execute(client, "aider-lsp.system.readFiles", {"file_paths": [path]})
            label = param.id
            assert result["status"] == "COMPLETE", label
            assert result["notes"]["files_read_count"] == 0, label
            assert result["notes"]["skipped_files"] == [path], label
            assert OUTSIDE_TEXT not in result["content"], label
            assert "sk-secret" not in result["content"], label
            reason = result["notes"]["skipped_reasons"][0]["reason"]
            assert reason, label


async def test_bad_arguments_are_invalid_params_and_the_server_goes_on(lsp, workspace: Path) -> None:
    async with lsp(workspace) as client:
        with pytest.raises(JsonRpcInvalidParams, match="file_paths"):
            await execute(client, "aider-lsp.system.readFiles", {"file_paths": "pkg/calc.py"})
        with pytest.raises(JsonRpcInvalidParams, match="file_paths"):
            await execute(client, "aider-lsp.system.readFiles", {})
        with pytest.raises(JsonRpcInvalidParams, match="bogus"):
            await execute(client, "aider-lsp.system.readFiles", {"file_paths": [], "bogus": 1})
        with pytest.raises(JsonRpcInvalidParams, match="one object argument"):
            await execute(client, "aider-lsp.system.readFiles", "pkg/calc.py")
        with pytest.raises(JsonRpcInvalidParams, match="one object argument"):
            await execute(client, "aider-lsp.tools.list", {}, {})
        result = await execute(client, "aider-lsp.system.readFiles", {"file_paths": ["pkg/calc.py"]})
        assert result["notes"]["files_read_count"] == 1


async def test_settings_come_from_init_options_configuration_and_environment(lsp, workspace: Path) -> None:
    """A bad setting is reported to the user by name, and the server keeps serving."""
    async with lsp(workspace, init_options={"maxRetries": "many"}) as client:
        await client.wait_for_notification(types.WINDOW_SHOW_MESSAGE)
        assert any("maxRetries" in message.message for message in client.messages)
        result = await execute(client, "aider-lsp.tools.list", {})
        assert result["status"] == "COMPLETE"


async def test_no_workspace_folder_gives_a_clear_failure(lsp, tmp_path: Path) -> None:
    from pytest_lsp import ClientServerConfig, client_capabilities

    from aider_lsp_testing.lsp_session import SERVER_COMMAND

    client = await ClientServerConfig(server_command=SERVER_COMMAND).start()
    try:
        await client.initialize_session(
            types.InitializeParams(capabilities=client_capabilities("visual-studio-code"))
        )
        result = await execute(client, "aider-lsp.system.readFiles", {"file_paths": ["a.py"]})
        assert result["status"] == "FAILED"
        assert result["notes"]["error"]["reason"] == "configuration_error"
        assert "open a folder" in result["content"]
        await client.shutdown_session()
    finally:
        await client.stop()


async def test_shutdown_and_exit_end_the_process(lsp, workspace: Path) -> None:
    async with lsp(workspace) as client:
        pass
    process = client.exited_process
    assert process is not None
    assert process.returncode == 0
    assert os.path.isdir(workspace)


def test_answering_initialize_loads_no_application() -> None:
    """The initialize answer needs only pygls: the Application, the settings and pydantic load
    once `initialized` arrives (bench/startup.py measures the time this saves)."""
    import subprocess
    import sys

    probe = (
        "import sys; import aider_lsp.cli.main, aider_lsp.cli.serve, aider_lsp.lsp.server; "
        "print(sorted(m for m in ('pydantic', 'aider_lsp.app', 'aider_lsp.models', "
        "'aider_lsp.config.settings') if m in sys.modules))"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"
