"""A session's whole life as an editor drives it over a real `aider-lsp acp` subprocess, in the
schema's words: `initialize` advertises list, resume, close and delete; a kept session is
resumed (nothing replayed), closed (a tab closed: still listed), and deleted (gone from
session/list, refused by name afterwards). `session/delete` has no route in the SDK: the agent
answers it before the SDK reads the line (screen.py)."""

from __future__ import annotations

from pathlib import Path

from aider_lsp_testing.apps import scripted_environment
from aider_lsp_testing.llm_server import ScriptedLLMServer
from aider_lsp_testing.raw_acp import RawAcpClient


def listed(client: RawAcpClient, cwd: Path) -> list[str]:
    answer = client.request("session/list", {"cwd": str(cwd)})
    return [info["sessionId"] for info in answer["result"]["sessions"]]


def test_a_session_is_resumed_closed_and_deleted_as_the_schema_says(
    calc_project: Path, llm_server: ScriptedLLMServer, tmp_path: Path
) -> None:
    client = RawAcpClient(tmp_path / "agent.log", scripted_environment(llm_server.base_url))
    try:
        started = client.request("initialize", {"protocolVersion": 1, "clientCapabilities": {}})
        session = client.request("session/new", {"cwd": str(calc_project), "mcpServers": []}, timeout=60)
        session_id = session["result"]["sessionId"]
        other = client.request("session/new", {"cwd": str(calc_project), "mcpServers": []}, timeout=60)
        mode = {"sessionId": session_id, "configId": "mode", "value": "edit"}
        assert "result" in client.request("session/set_config_option", mode)

        closed = client.request("session/close", {"sessionId": session_id})
        refused = client.request("session/prompt", {"sessionId": session_id, "prompt": []})
        kept_after_close = listed(client, calc_project)
        resumed = client.request(
            "session/resume", {"sessionId": session_id, "cwd": str(calc_project), "mcpServers": []}
        )
        deleted = client.request("session/delete", {"sessionId": session_id})
        after_delete = listed(client, calc_project)
        again = client.request("session/delete", {"sessionId": session_id})
        gone = client.request(
            "session/resume", {"sessionId": session_id, "cwd": str(calc_project), "mcpServers": []}
        )
    finally:
        client.close()
    capabilities = started["result"]["agentCapabilities"]["sessionCapabilities"]
    assert {"list", "resume", "close", "delete"} <= set(capabilities)
    assert closed == {"jsonrpc": "2.0", "id": closed["id"], "result": {}}
    assert refused["error"]["code"] == -32602 and "unknown session" in refused["error"]["message"]
    assert session_id in kept_after_close  # a closed session is still kept
    assert resumed["result"]["modes"]["currentModeId"] == "edit"  # as it was left
    assert "result" in deleted and deleted["result"] == {}
    assert session_id not in after_delete and other["result"]["sessionId"] in after_delete
    assert again["error"]["code"] == -32602 and session_id in again["error"]["message"]
    assert gone["error"]["code"] == -32602
    assert "Traceback" not in client.stderr_text()
