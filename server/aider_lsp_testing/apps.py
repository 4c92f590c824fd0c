"""An Application wired to the scripted models, as the tests of the real paths build it.

The planner and Aider's coder are the scripted server's (`llm_server.py`); Aider edits in the
`whole` format, which the scripted server writes most simply. Extra settings (camelCase, as an
editor sends them) are added or replace these.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from aider_lsp.app import Application
from aider_lsp.config.settings import load_settings
from aider_lsp.models import RequestContext, TaskResult, WorkflowRequest
from aider_lsp.results import workflow_run_result


def scripted_options(base_url: str, *, edit_format: str = "whole", **extra: Any) -> dict[str, Any]:
    """The settings for the scripted models at `base_url` (no environment is read)."""
    return {
        "model": "openai:scripted-planner",
        "baseUrl": base_url,
        "apiKey": "test-key",
        "aiderModel": "openai/scripted-coder",
        "aiderServer": {"args": ["--edit-format", edit_format]},
        "timeouts": {"aider": 300, "test": 120},  # caps for a busy machine, never what a test waits for
        **extra,
    }


def scripted_app(root: Path, base_url: str, *, edit_format: str = "whole", **extra: Any) -> Application:
    """An Application on `root` whose models are the scripted server's."""
    options = scripted_options(base_url, edit_format=edit_format, **extra)
    return Application.for_server(root, load_settings(options, environ={}))


def scripted_environment(base_url: str, **extra: str) -> dict[str, str]:
    """This process's environment as a user's who named the scripted models at `base_url` in
    AIDER_LSP_* variables (the CLI's and an ACP agent's only settings), the rest the defaults;
    `extra` on top."""
    env = {key: value for key, value in os.environ.items() if not key.startswith("AIDER_LSP_")}
    env.update(
        AIDER_LSP_MODEL="openai:scripted-planner",
        AIDER_LSP_BASE_URL=base_url,
        AIDER_LSP_API_KEY="test-key",
        AIDER_LSP_AIDER_MODEL="openai/scripted-coder",
        AIDER_LSP_AIDER_SERVER=json.dumps({"args": ["--edit-format", "whole"]}),
    )
    env.update(extra)
    return env


async def run_workflow_on_wire(app: Application, request: WorkflowRequest, ctx: RequestContext) -> TaskResult:
    """A workflow run as the LSP answers it (results.py: `aider-lsp.workflow.run`), for the
    tests that check what an editor reads of it."""
    return workflow_run_result(await app.run_workflow(request, ctx))
