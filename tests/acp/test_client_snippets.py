"""The ACP clients' set-up snippets in docs/acp.md, held to what the agent offers.

A snippet that names a sign-in method the agent does not offer opens no session (CodeCompanion
stops at `authenticate` when the adapter's `auth_method` is not among `initialize`'s
`authMethods`); one that leaves out the model or the key starts an agent that refuses every
session. These checks read the snippets as a user copies them.
"""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path
from typing import Any

from acp.schema import ClientCapabilities, FileSystemCapabilities

from acp import spawn_agent_process

GUIDE = Path(__file__).resolve().parents[2] / "docs" / "acp.md"
CLI = [sys.executable, "-m", "aider_lsp"]


def snippets() -> dict[str, str]:
    """Each `### heading` of the guide and the first fenced block under it."""
    found: dict[str, str] = {}
    for section in re.split(r"^### ", GUIDE.read_text(), flags=re.M)[1:]:
        heading, _, body = section.partition("\n")
        block = re.search(r"^```[a-z]*\n(.*?)^```", body, flags=re.M | re.S)
        if block:
            found[heading.strip()] = block.group(1)
    return found


CLIENTS = (
    "Zed",
    "JetBrains IDEs",
    "Neovim, CodeCompanion",
    "Neovim, avante.nvim",
    "Emacs, agent-shell",
    "VS Code, ACP Client",
)


def test_every_client_snippet_names_the_model_aiders_model_and_a_key() -> None:
    found = snippets()
    for client in CLIENTS:
        text = found[client]
        for name in ("AIDER_LSP_MODEL", "AIDER_LSP_AIDER_MODEL", "ANTHROPIC_API_KEY"):
            assert name in text, f"{client}: {name} missing"
        assert '"acp"' in text, f"{client}: not the `acp` command"


def test_avante_passes_home_since_it_starts_the_agent_with_path_and_env_alone() -> None:
    assert 'HOME = os.getenv("HOME")' in snippets()["Neovim, avante.nvim"]


async def test_the_codecompanion_snippet_names_a_sign_in_method_initialize_offers_it(tmp_path: Path) -> None:
    text = snippets()["Neovim, CodeCompanion"]
    base = re.search(r'adapters"\)\.extend\("([a-z_]+)"', text)
    assert base and base.group(1) not in ("gemini_cli", "claude_code", "codex"), "a base with its own sign-in"
    wanted = re.search(r'auth_method = "([^"]+)"', text)
    assert wanted, "the snippet names no auth_method"
    # what CodeCompanion 19.22 sends in `initialize` (its adapters' `parameters`): no Terminal Auth
    codecompanion = ClientCapabilities(fs=FileSystemCapabilities(read_text_file=True, write_text_file=True))
    env = {k: v for k, v in os.environ.items() if not k.startswith("AIDER_LSP_")}
    env["XDG_CONFIG_HOME"] = str(tmp_path / "config")
    with (tmp_path / "agent.log").open("wb") as stderr:
        async with spawn_agent_process(
            _Editor(), *CLI, "acp", env=env, transport_kwargs={"stderr": stderr.fileno()}
        ) as (conn, _):
            started = await conn.initialize(protocol_version=1, client_capabilities=codecompanion)
            offered = [method.id for method in started.auth_methods or []]
            assert wanted.group(1) in offered, (wanted.group(1), offered)
            await conn.authenticate(method_id=wanted.group(1))  # answered, as CodeCompanion needs


class _Editor:
    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        """Nothing to keep."""

    def on_connect(self, conn: Any) -> None:
        """Nothing to keep."""
