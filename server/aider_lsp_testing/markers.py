"""The `aider` marker's skip: a test that drives the real Aider needs its environment.

Why a marker (registered in pyproject.toml) rather than a skipif per file: `-m "not aider"`
selects the fast tests, and a run without the environment says once, per test, what it skipped
and how to get it (conftest.py applies `skip_without_aider` to the collected tests).
"""

from __future__ import annotations

from collections.abc import Iterable

import pytest

from aider_lsp.config import aider_env


def aider_missing_reason() -> str | None:
    """Why the `aider` tests cannot run here, or None when they can."""
    if aider_env.is_ready():
        return None
    return f"needs the Aider environment ({aider_env.env_dir()}): run `aider-lsp setup-aider`"


def skip_without_aider(items: Iterable[pytest.Item]) -> None:
    """Skip each test marked `aider` when the Aider environment is missing."""
    reason = aider_missing_reason()
    if reason is None:
        return
    for item in items:
        if item.get_closest_marker("aider") is not None:
            item.add_marker(pytest.mark.skip(reason=reason))
