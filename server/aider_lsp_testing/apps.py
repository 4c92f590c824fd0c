"""An Application wired to the scripted models, as the tests of the real paths build it.

The planner and Aider's coder are the scripted server's (`llm_server.py`); Aider edits in the
`whole` format, which the scripted server writes most simply. Extra settings (camelCase, as an
editor sends them) are added or replace these.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from aider_lsp.app import Application
from aider_lsp.settings import load_settings


def scripted_options(base_url: str, *, edit_format: str = "whole", **extra: Any) -> dict[str, Any]:
    """The settings for the scripted models at `base_url` (no environment is read)."""
    return {
        "model": "openai:scripted-planner",
        "baseUrl": base_url,
        "apiKey": "test-key",
        "aiderModel": "openai/scripted-coder",
        "aiderServer": {"args": ["--edit-format", edit_format]},
        "timeouts": {"aider": 90, "test": 60},
        # the stories here are about the loop's retries; the tests of the run before the
        # first edit turn it on
        "testsBeforeFirstEdit": False,
        **extra,
    }


def scripted_app(root: Path, base_url: str, *, edit_format: str = "whole", **extra: Any) -> Application:
    """An Application on `root` whose models are the scripted server's."""
    options = scripted_options(base_url, edit_format=edit_format, **extra)
    return Application(root, load_settings(options, environ={}))
