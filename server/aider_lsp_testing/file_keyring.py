"""An OS keyring stand-in for the tests: a `keyring` backend that keeps passwords in the JSON
file `$AIDER_LSP_TEST_KEYRING`, so the login, the agent and doctor (separate processes) share
it as they share a desktop's Secret Service. Chosen with
`PYTHON_KEYRING_BACKEND=aider_lsp_testing.file_keyring.FileKeyring` (the `keyring` package's
switch); never a developer's real keyring."""

from __future__ import annotations

import json
import os
from pathlib import Path

from keyring.backend import KeyringBackend
from keyring.errors import PasswordDeleteError

BACKEND = "aider_lsp_testing.file_keyring.FileKeyring"


class FileKeyring(KeyringBackend):
    priority = 1

    def _path(self) -> Path:
        return Path(os.environ["AIDER_LSP_TEST_KEYRING"])

    def _read(self) -> dict[str, str]:
        try:
            data = json.loads(self._path().read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}
        return data if isinstance(data, dict) else {}

    def get_password(self, service: str, username: str) -> str | None:
        return self._read().get(f"{service}/{username}")

    def set_password(self, service: str, username: str, password: str) -> None:
        data = self._read() | {f"{service}/{username}": password}
        self._path().write_text(json.dumps(data), encoding="utf-8")

    def delete_password(self, service: str, username: str) -> None:
        data = self._read()
        if data.pop(f"{service}/{username}", None) is None:
            raise PasswordDeleteError(username)
        self._path().write_text(json.dumps(data), encoding="utf-8")
