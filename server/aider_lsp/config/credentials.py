"""The sign-in store: the model, endpoint and key a user gave `aider-lsp login`.

Kept outside every workspace. The key goes to the OS keyring where there is one (the Secret
Service on Linux desktops, the macOS Keychain, the Windows Credential Locker: the `keyring`
package's backends); the rest, and the key where no keyring answers (a server, a container, a
headless CI machine), to `$XDG_CONFIG_HOME/aider-lsp/credentials.json` (default
`~/.config/aider-lsp/`), readable by the user alone (mode 0600). Read as the lowest layer of the
settings: the environment and an editor's settings win over it (settings.py). A repository's
files never take part. `PYTHON_KEYRING_BACKEND=keyring.backends.null.Keyring` keeps the key out
of the keyring (the `keyring` package's own switch).
"""

from __future__ import annotations

import json
import logging
import os
import tempfile
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)

FIELDS = ("model", "aider_model", "base_url", "api_key")
KEY_STORE = "key_store"  # in the file: "keyring" when the key is in the OS keyring
KEYRING = "keyring"
SERVICE = "aider-lsp"
ACCOUNT = "api_key"


def store_path() -> Path:
    base = os.environ.get("XDG_CONFIG_HOME") or os.path.join(os.path.expanduser("~"), ".config")
    return Path(base) / "aider-lsp" / "credentials.json"


def _stored_file() -> dict[str, Any]:
    try:
        data = json.loads(store_path().read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def load() -> dict[str, str]:
    """What the sign-in stored ({} when nothing was, or the file cannot be read); the key from
    the keyring when it was put there (absent when the keyring does not answer now)."""
    data = _stored_file()
    found = {key: value for key, value in data.items() if key in FIELDS and isinstance(value, str) and value}
    if data.get(KEY_STORE) == KEYRING:
        key = _keyring_get()
        if key:
            found["api_key"] = key
    return found


def key_location() -> str | None:
    """Where the stored key is, for the user (never the key): the keyring's name or the file."""
    data = _stored_file()
    if data.get(KEY_STORE) == KEYRING:
        return f"the OS keyring ({_backend_name()}, service {SERVICE!r})"
    return str(store_path()) if data.get("api_key") else None


def save(values: dict[str, str]) -> str:
    """Replace the stored sign-in with `values`: the key in the OS keyring when there is one,
    else in the file (written whole, then moved: never half a file; 0600). Returns where the key
    went (or the file's path when there is no key)."""
    kept = {key: value for key, value in values.items() if key in FIELDS and value}
    key = kept.pop("api_key", None)
    in_keyring = key is not None and _keyring_set(key)
    if in_keyring:
        kept[KEY_STORE] = KEYRING
    elif key is not None:
        kept["api_key"] = key
    if not in_keyring:
        _keyring_delete()  # an older sign-in's key never outlives the new one
    path = _write(kept)
    return f"{path}, the key in {key_location()}" if in_keyring else str(path)


def _write(kept: dict[str, str]) -> Path:
    path = store_path()
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
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


def _backend() -> Any | None:
    """The OS keyring when one answers here; None where there is none (priority ≤ 0 is the
    `keyring` package's "fail" or "null" backend: no keyring on this machine, or switched off)."""
    try:
        import keyring
        from keyring.errors import KeyringError

        backend = keyring.get_keyring()
        return backend if backend.priority > 0 else None
    except (ImportError, KeyringError, RuntimeError, OSError):
        return None


def _backend_name() -> str:
    backend = _backend()
    return getattr(backend, "name", type(backend).__name__) if backend is not None else "not available now"


def _keyring_get() -> str | None:
    backend = _backend()
    try:
        return backend.get_password(SERVICE, ACCOUNT) if backend is not None else None
    except Exception as exc:  # a locked or broken keyring reads as no key, never a crash
        log.warning("the OS keyring did not give the stored key: %s", exc)
        return None


def _keyring_set(key: str) -> bool:
    backend = _backend()
    try:
        if backend is None:
            return False
        backend.set_password(SERVICE, ACCOUNT, key)
        return True
    except Exception as exc:  # a refused keyring falls back to the 0600 file
        log.info("the OS keyring refused the key (%s): it goes to the 0600 file", exc)
        return False


def _keyring_delete() -> None:
    backend = _backend()
    try:
        if backend is not None and backend.get_password(SERVICE, ACCOUNT) is not None:
            backend.delete_password(SERVICE, ACCOUNT)
    except Exception as exc:  # nothing to remove, or a keyring that refuses: the file rules
        log.debug("the OS keyring entry was not removed: %s", exc)
