"""The sign-in store: the model, endpoint and key a user gave `aider-lsp login`.

Kept outside every workspace, in `$XDG_CONFIG_HOME/aider-lsp/credentials.json` (default
`~/.config/aider-lsp/`), readable by the user alone (mode 0600), and read as the lowest layer of
the settings: the environment and an editor's settings win over it (settings.py). A
repository's files never take part (nothing in a workspace chooses a model, endpoint or key).
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

FIELDS = ("model", "aider_model", "base_url", "api_key")


def store_path() -> Path:
    base = os.environ.get("XDG_CONFIG_HOME") or os.path.join(os.path.expanduser("~"), ".config")
    return Path(base) / "aider-lsp" / "credentials.json"


def load() -> dict[str, str]:
    """What the sign-in stored ({} when nothing was, or the file cannot be read)."""
    try:
        data = json.loads(store_path().read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    if not isinstance(data, dict):
        return {}
    return {key: value for key, value in data.items() if key in FIELDS and isinstance(value, str) and value}


def save(values: dict[str, str]) -> Path:
    """Replace the store with `values` (written whole, then moved: never half a file), 0600."""
    path = store_path()
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    kept = {key: value for key, value in values.items() if key in FIELDS and value}
    fd, temporary = tempfile.mkstemp(prefix=".credentials-", dir=path.parent)
    try:
        os.fchmod(fd, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            json.dump(kept, handle, indent=1)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
    return path
