"""AiderBridge against a tiny misbehaving MCP server (real subprocess, real stdio JSON-RPC)."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

import pytest

from aider_lsp.aider.bridge import AiderBridge
from aider_lsp.aider.launch import aider_model_for, launch_spec, server_environment
from aider_lsp.config.settings import Settings, load_settings
from aider_lsp.guards.files import FileAccessManager
from aider_lsp.history.checkpoints import CheckpointStore, run_checkpoint
from aider_lsp.models import TaskStatus
from aider_lsp.tools.aider import AiderExecutors
from aider_lsp_testing import FAKE_AIDER_MCP
from aider_lsp_testing.waiting import eventually

FAKE = FAKE_AIDER_MCP


def fake_settings(mode: str, tmp_path: Path, aider_timeout: float = 30.0) -> Settings:
    return load_settings(
        {
            "aiderServer": {
                "command": sys.executable,
                "args": [FAKE, mode],
                "env": {"FAKE_LOG": str(tmp_path / "calls.log"), "FAKE_STATE": str(tmp_path / "state")},
            },
            "timeouts": {"aider": aider_timeout},
        },
        environ={},
    )


def executors_over(
    workspace: Path, settings: Settings
) -> tuple[AiderBridge, CheckpointStore, AiderExecutors]:
    """The Aider executors as the Application wires them: one bridge, one checkpoint store."""
    files = FileAccessManager(workspace)
    bridge = AiderBridge(files, lambda: settings)
    store = CheckpointStore(files)
    return bridge, store, AiderExecutors(bridge, files, store)


def make_bridge(workspace: Path, settings: Settings) -> AiderBridge:
    return AiderBridge(FileAccessManager(workspace), lambda: settings)


def edit_params(*files: str) -> dict[str, Any]:
    return {"ai_coding_prompt": "change it", "relative_editable_files": list(files)}


def error_reason(result: Any) -> str:
    return result.notes["error"]["reason"]


async def test_foreign_success_is_checked_against_the_files(workspace: Path, tmp_path: Path) -> None:
    bridge = make_bridge(workspace, fake_settings("ok", tmp_path))
    try:
        result = await bridge.call_aider_tool("aider_ai_code", edit_params("pkg/calc.py"))
        assert result.status is TaskStatus.COMPLETE, result.content
        assert "# edited by fake" in (workspace / "pkg" / "calc.py").read_text()
        # the bridge computes its own diff: the foreign git diff was cumulative
        assert "+# edited by fake" in result.notes["diff"]
        assert result.notes["changed_files"] == ["pkg/calc.py"]
    finally:
        await bridge.aclose()


async def test_success_claim_without_a_change_is_a_failure(workspace: Path, tmp_path: Path) -> None:
    bridge = make_bridge(workspace, fake_settings("liar", tmp_path))
    try:
        result = await bridge.call_aider_tool("aider_ai_code", edit_params("pkg/calc.py"))
        assert result.status is TaskStatus.FAILED
        assert error_reason(result) == "tool_execution_error"
        assert "no editable file changed" in result.content
        assert result.notes["success"] is False
    finally:
        await bridge.aclose()


@pytest.mark.parametrize(
    ("mode", "reason"),
    [
        ("nonjson", "output_format_failure"),
        ("error", "tool_execution_error"),
        ("iserror", "tool_execution_error"),
    ],
)
async def test_bad_replies_are_failures(workspace: Path, tmp_path: Path, mode: str, reason: str) -> None:
    bridge = make_bridge(workspace, fake_settings(mode, tmp_path))
    try:
        result = await bridge.call_aider_tool("aider_ai_code", edit_params("pkg/calc.py"))
        assert result.status is TaskStatus.FAILED
        assert error_reason(result) == reason
        if mode == "error":
            assert "boom" in result.content
    finally:
        await bridge.aclose()


async def test_hang_times_out_within_the_deadline_and_the_next_call_works(
    workspace: Path, tmp_path: Path
) -> None:
    """An edit the server never answers (the fake sleeps an hour) ends at `timeouts.aider`: only
    that deadline can end it within the test's cap. Its server is killed, and the next call
    starts a new one. The server is warmed up first under a generous deadline, so that the short
    one covers the hung edit alone, not a start a busy machine slows."""
    settings = {"now": fake_settings("hang-edit", tmp_path, aider_timeout=60)}
    bridge = AiderBridge(FileAccessManager(workspace), lambda: settings["now"])
    try:
        assert await bridge.warm_up()
        warm = bridge.server_pid
        settings["now"] = fake_settings("hang-edit", tmp_path, aider_timeout=3)
        result = await asyncio.wait_for(
            bridge.call_aider_tool("aider_ai_code", edit_params("pkg/calc.py")), 60
        )
        assert result.status is TaskStatus.FAILED
        assert error_reason(result) == "execution_timeout"
        calls = [json.loads(line) for line in (tmp_path / "calls.log").read_text().splitlines()]
        (hung,) = [call["pid"] for call in calls if call["params"].get("name") == "aider_ai_code"]
        assert hung == warm  # the edit reached the warm server, which never answered it
        assert not Path(f"/proc/{hung}").exists() or "zombie" in Path(f"/proc/{hung}/status").read_text()

        settings["now"] = fake_settings("ok", tmp_path)
        again = await bridge.call_aider_tool("aider_ai_code", edit_params("pkg/calc.py"))
        assert again.status is TaskStatus.COMPLETE, again.content
        assert bridge.starts == 2
    finally:
        await bridge.aclose()


async def test_server_exit_mid_call_is_a_connection_error_then_restart(
    workspace: Path, tmp_path: Path
) -> None:
    bridge = make_bridge(workspace, fake_settings("exit", tmp_path))
    try:
        result = await bridge.call_aider_tool("aider_ai_code", edit_params("pkg/calc.py"))
        assert result.status is TaskStatus.FAILED
        assert error_reason(result) == "connection_error"
        assert bridge.server_pid is None
    finally:
        await bridge.aclose()


async def test_one_persistent_session_and_aclose_stops_it(workspace: Path, tmp_path: Path) -> None:
    bridge = make_bridge(workspace, fake_settings("ok", tmp_path))
    for _ in range(3):
        result = await bridge.call_aider_tool("list_models", {"substring": "fake"})
        assert result.parsed_content == ["openai/fake-1", "openai/fake-2"]
    pid = bridge.server_pid
    assert bridge.starts == 1 and pid is not None
    pids = {json.loads(line)["pid"] for line in (tmp_path / "calls.log").read_text().splitlines()}
    assert pids == {pid}
    await bridge.aclose()
    assert bridge.server_pid is None
    assert not Path(f"/proc/{pid}").exists()


async def test_missing_command_is_a_configuration_error(workspace: Path) -> None:
    settings = load_settings({"aiderServer": {"command": "/nonexistent/aider-mcp"}}, environ={})
    bridge = make_bridge(workspace, settings)
    result = await bridge.call_aider_tool("list_models", {})
    assert result.status is TaskStatus.FAILED
    assert error_reason(result) == "configuration_error"
    assert "aiderServer" in result.content


async def test_server_that_dies_at_start_reports_its_stderr(workspace: Path) -> None:
    settings = load_settings(
        {"aiderServer": {"command": sys.executable, "args": ["-c", "import sys; sys.exit('no luck here')"]}},
        environ={},
    )
    bridge = make_bridge(workspace, settings)
    result = await bridge.call_aider_tool("list_models", {})
    assert result.status is TaskStatus.FAILED
    assert error_reason(result) == "connection_error"
    assert "no luck here" in result.notes.get("server_stderr", "")
    # the message itself names the program that was started and what it said last
    assert sys.executable in result.content and "printed: no luck here" in result.content


async def test_no_model_is_a_configuration_error_naming_the_setting(workspace: Path) -> None:
    bridge = make_bridge(workspace, load_settings({}, environ={}))
    result = await bridge.call_aider_tool("aider_ai_code", edit_params("pkg/calc.py"))
    assert result.status is TaskStatus.FAILED
    assert error_reason(result) == "configuration_error"
    assert "aiderLsp.aiderModel" in result.content


def test_file_context_keeps_existing_confined_non_secret_files(workspace: Path) -> None:
    bridge = make_bridge(workspace, load_settings({}, environ={}))
    report = bridge.set_file_context(["pkg/calc.py", "missing.py", "../outside.py", ".env", "pkg/calc.py"])
    assert bridge.get_file_context() == ["pkg/calc.py"]
    assert {item["path"] for item in report["skipped"]} == {"missing.py", "../outside.py", ".env"}


async def test_context_for_query_without_memory_says_so(workspace: Path) -> None:
    bridge = make_bridge(workspace, load_settings({}, environ={}))
    result = await bridge.get_context_for_query("calc")
    assert result.error


def test_model_and_environment_mapping() -> None:
    assert aider_model_for(Settings(model="openai:gpt-4.1")) == "openai/gpt-4.1"
    assert aider_model_for(Settings(model="anthropic:claude-sonnet-4-5")) == "anthropic/claude-sonnet-4-5"
    assert aider_model_for(Settings(model="ollama:qwen2.5-coder")) == "ollama_chat/qwen2.5-coder"
    assert aider_model_for(Settings(model="openai:local", base_url="http://h/v1")) == "openai/local"
    assert aider_model_for(Settings(model="x:y", aider_model="openai/z")) == "openai/z"
    env = server_environment(
        Settings(base_url="http://127.0.0.1:9/v1"), environ={"ANTHROPIC_API_KEY": "k", "SECRET": "s"}
    )
    assert env["OPENAI_API_BASE"] == "http://127.0.0.1:9/v1"
    assert env["ANTHROPIC_API_KEY"] == "k" and "SECRET" not in env
    assert "OPENAI_API_KEY" in env


def test_custom_server_args_expand_workspace_and_model(tmp_path: Path) -> None:
    settings = Settings.model_validate(
        {
            "aiderModel": "openai/m",
            "aiderServer": {
                "command": "aider-mcp-server",
                "args": ["--current-working-dir", "${workspace}", "--editor-model", "${model}"],
            },
        }
    )
    spec = launch_spec(settings, tmp_path)
    assert spec.args == ("--current-working-dir", str(tmp_path), "--editor-model", "openai/m")
    assert not spec.bundled


async def test_cancelled_call_stops_the_server(workspace: Path, tmp_path: Path) -> None:
    import asyncio

    bridge = make_bridge(workspace, fake_settings("hang", tmp_path))
    task = asyncio.create_task(bridge.call_aider_tool("aider_ai_code", edit_params("pkg/calc.py")))
    log = tmp_path / "calls.log"
    assert await eventually(lambda: log.exists() and log.read_text())
    pid = json.loads(log.read_text().splitlines()[0])["pid"]
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert bridge.server_pid is None
    assert not Path(f"/proc/{pid}").exists()
    await bridge.aclose()


async def test_concurrent_calls_run_one_at_a_time_on_one_server(workspace: Path, tmp_path: Path) -> None:
    import asyncio

    bridge = make_bridge(workspace, fake_settings("ok", tmp_path))
    try:
        results = await asyncio.gather(
            *(bridge.call_aider_tool("aider_ai_code", edit_params("pkg/calc.py")) for _ in range(3))
        )
        assert all(r.status is TaskStatus.COMPLETE for r in results), [r.content for r in results]
        assert (workspace / "pkg" / "calc.py").read_text().count("# edited by fake") == 3
        assert bridge.starts == 1
    finally:
        await bridge.aclose()


async def test_changed_server_settings_restart_the_session(workspace: Path, tmp_path: Path) -> None:
    current = {"settings": fake_settings("ok", tmp_path)}
    bridge = AiderBridge(FileAccessManager(workspace), lambda: current["settings"])
    try:
        await bridge.call_aider_tool("list_models", {})
        first = bridge.server_pid
        current["settings"] = fake_settings("error", tmp_path)
        result = await bridge.call_aider_tool("list_models", {})
        assert result.status is TaskStatus.FAILED and "boom" in result.content
        assert bridge.starts == 2 and bridge.server_pid != first
    finally:
        await bridge.aclose()


async def test_interactive_falls_back_to_one_edit_on_a_server_without_sessions(
    workspace: Path, tmp_path: Path
) -> None:
    bridge, store, executors = executors_over(workspace, fake_settings("ok", tmp_path))
    try:
        result = await executors.interactive({"query": "edit it", "file_context": ["pkg/calc.py"]})
        assert result.status is TaskStatus.COMPLETE, result.content
        assert result.notes["session_id"] is None and "fallback" in result.notes
        assert "# edited by fake" in (workspace / "pkg" / "calc.py").read_text()
        undo = store.restore()
        assert undo.restored == ("pkg/calc.py",) and not undo.skipped
        assert "# edited by fake" not in (workspace / "pkg" / "calc.py").read_text()
    finally:
        await bridge.aclose()


async def test_warm_up_starts_the_server_once(workspace: Path, tmp_path: Path) -> None:
    bridge = make_bridge(workspace, fake_settings("ok", tmp_path))
    try:
        assert await bridge.warm_up() is True
        pid = bridge.server_pid
        assert pid is not None
        result = await bridge.call_aider_tool("list_models", {})
        assert result.ok and bridge.server_pid == pid and bridge.starts == 1
    finally:
        await bridge.aclose()
    assert await make_bridge(workspace, load_settings({}, environ={})).warm_up() is False


async def test_warm_up_makes_the_first_tool_call_and_survives_a_server_slow_to_answer(
    workspace: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The warm-up's cheap call takes the server's first-call cost off the first edit; a server
    that never answers it is kept running for the edit's own deadline to judge."""
    from aider_lsp.aider import session

    bridge = make_bridge(workspace, fake_settings("ok", tmp_path))
    try:
        assert await bridge.warm_up() is True
        first = json.loads((tmp_path / "calls.log").read_text().splitlines()[0])
        assert first["params"]["name"] == "list_models"
    finally:
        await bridge.aclose()
    monkeypatch.setattr(session, "WARM_UP_CALL_SECONDS", 0.5)
    (tmp_path / "calls.log").unlink()
    bridge = make_bridge(workspace, fake_settings("hang-once", tmp_path))
    try:
        assert await bridge.warm_up() is True
        pid = bridge.server_pid
        assert pid is not None and bridge.starts == 1
    finally:
        await bridge.aclose()


async def test_warm_up_adopts_a_server_spawned_ahead_and_discards_one_for_other_settings(
    workspace: Path, tmp_path: Path
) -> None:
    """`aider-lsp run` spawns the server before the rest of the client starts: the bridge's
    session speaks MCP with that very process; one spawned for another launch is killed."""
    from aider_lsp.aider.spawn import spawn

    settings = fake_settings("ok", tmp_path)
    bridge = make_bridge(workspace, settings)
    early = await spawn(launch_spec(settings, workspace))
    try:
        assert await bridge.warm_up(early) is True
        assert bridge.server_pid == early.process.pid and bridge.starts == 1
        assert (await bridge.call_aider_tool("list_models", {})).ok
    finally:
        await bridge.aclose()
    other = await spawn(launch_spec(fake_settings("hang-once", tmp_path), workspace))
    bridge = make_bridge(workspace, settings)
    try:
        assert await bridge.warm_up(other) is True
        assert bridge.server_pid != other.process.pid
        assert await eventually(lambda: other.process.returncode is not None)
        assert not other.stderr_path.exists()
    finally:
        await bridge.aclose()


def test_a_server_spawned_ahead_inherits_what_the_mcp_sdk_gives_a_server() -> None:
    from mcp.client.stdio import get_default_environment

    from aider_lsp.aider.spawn import inherited_environment

    assert inherited_environment() == get_default_environment()


async def test_a_run_checkpoint_undoes_all_edits_of_a_workflow_run_at_once(
    workspace: Path, tmp_path: Path
) -> None:
    bridge, store, executors = executors_over(workspace, fake_settings("ok", tmp_path))
    original = (workspace / "pkg" / "calc.py").read_text()
    try:
        with run_checkpoint(store, "goal: edit twice"):
            for _ in range(2):
                result = await executors.automatic({"prompt": "edit", "file_context": ["pkg/calc.py"]})
                assert result.ok, result.content
        assert (workspace / "pkg" / "calc.py").read_text().count("# edited by fake") == 2
        assert [cp.label for cp in store.saved()] == ["goal: edit twice"]
        undo = store.restore()
        assert not undo.skipped and (workspace / "pkg" / "calc.py").read_text() == original
        assert store.saved() == []
        with run_checkpoint(store, "nothing happens"):
            pass
        assert store.saved() == []
    finally:
        await bridge.aclose()


async def test_an_edit_without_files_edits_the_files_the_memory_finds(
    workspace: Path, tmp_path: Path
) -> None:
    """No file_context: the bridge asks the MemorySystem for the prompt's files and keeps the
    existing, confined, non-secret ones (a file deleted since it was indexed is dropped)."""
    from aider_lsp.memory import MemorySystem

    (workspace / "pkg" / "gone.py").write_text("def add_twice(a, b):\n    return add(add(a, b), b)\n")
    files = FileAccessManager(workspace)
    memory = MemorySystem(files, Settings(), db_path=tmp_path / "index.sqlite3")
    memory.index_all()
    (workspace / "pkg" / "gone.py").unlink()
    settings = fake_settings("ok", tmp_path)
    bridge = AiderBridge(files, lambda: settings, memory=memory)
    executors = AiderExecutors(bridge, files, CheckpointStore(files))
    try:
        result = await executors.automatic({"prompt": "make add return a + b + 0"})
        assert result.status is TaskStatus.COMPLETE, result.content
        assert result.notes["files"][0] == "pkg/calc.py", result.notes["files"]
        assert not {"pkg/gone.py", ".env"} & set(result.notes["files"])
        assert bridge.get_file_context() == result.notes["files"]
        editable = json.loads((tmp_path / "calls.log").read_text().splitlines()[0])["params"]["arguments"]
        assert editable["relative_editable_files"] == result.notes["files"]
        assert "# edited by fake" in (workspace / "pkg" / "calc.py").read_text()
    finally:
        await bridge.aclose()
        memory.close()


def test_an_answer_without_usage_reports_none_not_zero() -> None:
    from aider_lsp.aider.results import EditedFiles, ToolReply, edit_outcome

    files = EditedFiles(["a.py"], {"a.py": b"x = 1\n"}, {"a.py": b"x = 2\n"})
    answer = {"success": True, "diff": "d", "changed_files": ["a.py"]}
    silent = edit_outcome("aider_ai_code", ToolReply((json.dumps(answer),)), files, bundled=True)
    assert silent.success and silent.usage is None and "usage" not in silent.to_task_result().notes
    usage = {"prompt_tokens": 120, "completion_tokens": 30, "cost": 0.002}
    counted = edit_outcome(
        "aider_ai_code", ToolReply((json.dumps({**answer, "usage": usage}),)), files, bundled=True
    )
    assert counted.usage is not None and counted.usage.input_tokens == 120
    assert counted.to_task_result().notes["usage"] == usage
    foreign = edit_outcome("aider_ai_code", ToolReply((json.dumps(answer),)), files, bundled=False)
    assert foreign.diff.startswith("diff --git a/a.py") and "+x = 2" in foreign.diff
