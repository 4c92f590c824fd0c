"""With an Aider model configured the Aider server starts in the background after `initialized`,
so the first edit finds it running."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from aider_lsp.config import aider_env
from aider_lsp_testing.llm_server import aider_whole, any_request
from aider_lsp_testing.lsp_session import execute
from aider_lsp_testing.waiting import eventually

pytestmark = pytest.mark.aider

EDITED = "def add(a: int, b: int) -> int:\n    return a + b\n"


def aider_servers(workspace: Path) -> set[int]:
    """Live Aider MCP server processes serving this workspace (from /proc)."""
    found: set[int] = set()
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            argv = Path(f"/proc/{entry}/cmdline").read_bytes().split(b"\0")
            state = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[-1].split()[0]
        except OSError:
            continue
        if state != "Z" and b"aider_mcp" in argv and os.fsencode(workspace) in argv:
            found.add(int(entry))
    return found


async def wait_for_servers(workspace: Path, seconds: float = 30.0) -> set[int]:
    await eventually(lambda: aider_servers(workspace), seconds)
    return aider_servers(workspace)


async def test_aider_server_starts_after_initialized_and_serves_the_first_edit(
    lsp: Any, workspace: Path, llm_server: Any
) -> None:
    llm_server.add_rule(any_request, aider_whole({"pkg/calc.py": EDITED}))
    options = {
        "baseUrl": llm_server.base_url,
        "aiderModel": "openai/scripted-coder",
        "aiderServer": {"args": ["--edit-format", "whole"]},
    }
    async with lsp(workspace, init_options=options) as client:
        warm = await wait_for_servers(workspace)
        assert len(warm) == 1, "no Aider server started after initialized"
        assert llm_server.chat_requests() == []  # started, not used
        result = await execute(
            client, "aider-lsp.aider.automatic", {"prompt": "add type hints", "file_context": ["pkg/calc.py"]}
        )
        assert result["status"] == "COMPLETE", result["content"]
        assert (workspace / "pkg" / "calc.py").read_text() == EDITED
        assert aider_servers(workspace) == warm, "the first edit started another Aider server"
    assert aider_servers(workspace) == set(), "the Aider server outlived the language server"


REHEARSAL = """
import json, os, sys
sys.path.insert(0, sys.argv[1])
from aider.llm import litellm
from aider_mcp.rehearsal import rehearse_provider_call
litellm._load_litellm()
print(json.dumps({model: rehearse_provider_call(litellm, model) for model in sys.argv[2:]}))
"""


def test_the_warm_up_rehearses_the_provider_call_without_sending_anything(llm_server: Any) -> None:
    """The first edit's one-time SDK costs are paid in memory: the user's endpoint (and key)
    see no request, and a provider the rehearsal cannot serve in memory is left alone."""
    environ = {**os.environ, "OPENAI_API_BASE": llm_server.base_url, "OPENAI_API_KEY": "sk-user-secret"}
    done = subprocess.run(
        [
            str(aider_env.aider_python()),
            "-c",
            REHEARSAL,
            str(aider_env.package_parent()),
            "openai/scripted-coder",
            "anthropic/claude-3-5-sonnet-20241022",
        ],
        capture_output=True,
        text=True,
        env=environ,
        timeout=120,
        check=True,
    )
    rehearsed = json.loads(done.stdout.strip().splitlines()[-1])
    assert rehearsed == {"openai/scripted-coder": True, "anthropic/claude-3-5-sonnet-20241022": False}
    assert llm_server.chat_requests() == []
