"""A tiny misbehaving Aider MCP server (stdlib only, newline-delimited JSON-RPC on stdio).

`python fake_aider_mcp.py MODE` where MODE decides how `tools/call` answers:
  ok       {"success": true, "diff": "..."} and really appends a line to the first editable file
  liar     {"success": true, "diff": "..."} without touching any file (the public server's habit)
  nonjson  a TextContent that is not JSON
  error    {"error": "boom"}
  iserror  an MCP tool result with isError
  hang     never answers tools/call (the first time only when MODE is hang-once; only an
           edit, `aider_ai_code`, when MODE is hang-edit: the warm-up's call is answered)
  exit     exits the process in the middle of the call
Every call is appended to $FAKE_LOG (one JSON line) when set, so tests can count calls.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

MODE = sys.argv[1] if len(sys.argv) > 1 else "ok"
STATE = Path(os.environ.get("FAKE_STATE", "/nonexistent"))


def send(obj: dict) -> None:
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


def text_result(req_id: object, text: str, is_error: bool = False) -> None:
    send(
        {
            "jsonrpc": "2.0",
            "id": req_id,
            "result": {"content": [{"type": "text", "text": text}], "isError": is_error},
        }
    )


def log_call(params: dict) -> None:
    path = os.environ.get("FAKE_LOG")
    if path:
        with open(path, "a") as handle:
            handle.write(json.dumps({"pid": os.getpid(), "params": params}) + "\n")


def handle_call(req_id: object, params: dict) -> None:
    log_call(params)
    mode = MODE
    if mode == "hang-once":
        if STATE.exists():
            mode = "ok"
        else:
            STATE.write_text("hung")
            mode = "hang"
    if mode == "hang-edit":
        mode = "hang" if params.get("name") == "aider_ai_code" else "ok"
    arguments = params.get("arguments") or {}
    if mode == "hang":
        time.sleep(3600)
    if mode == "exit":
        os._exit(3)
    if mode == "nonjson":
        return text_result(req_id, "Edited the files, all good!")
    if mode == "error":
        return text_result(req_id, json.dumps({"error": "boom"}))
    if mode == "iserror":
        return text_result(req_id, "tool exploded", is_error=True)
    if params.get("name") == "aider_chat":
        return text_result(req_id, "Unknown tool: aider_chat", is_error=True)
    if params.get("name") == "list_models":
        return text_result(req_id, json.dumps({"models": ["openai/fake-1", "openai/fake-2"]}))
    files = arguments.get("relative_editable_files") or []
    if mode == "ok" and files:
        with open(files[0], "a") as handle:
            handle.write("# edited by fake\n")
    text_result(req_id, json.dumps({"success": True, "diff": "diff --git a/x b/x\n(cumulative)\n"}))


def main() -> None:
    for line in sys.stdin:
        if not line.strip():
            continue
        message = json.loads(line)
        method = message.get("method")
        req_id = message.get("id")
        if method == "initialize":
            send(
                {
                    "jsonrpc": "2.0",
                    "id": req_id,
                    "result": {
                        "protocolVersion": message["params"].get("protocolVersion", "2024-11-05")
                        if message["params"].get("protocolVersion")
                        in ("2024-11-05", "2025-03-26", "2025-06-18")
                        else "2024-11-05",
                        "capabilities": {"tools": {}},
                        "serverInfo": {"name": "fake-aider", "version": "0"},
                    },
                }
            )
        elif method == "tools/list":
            send({"jsonrpc": "2.0", "id": req_id, "result": {"tools": []}})
        elif method == "tools/call":
            handle_call(req_id, message.get("params") or {})
        elif method == "ping":
            send({"jsonrpc": "2.0", "id": req_id, "result": {}})
        elif req_id is not None:
            send({"jsonrpc": "2.0", "id": req_id, "error": {"code": -32601, "message": "no such method"}})


if __name__ == "__main__":
    main()
