"""User settings: `initializationOptions`, the `aiderLsp` configuration section, `AIDER_LSP_*`.

An explicit setting wins over the environment; the environment wins over the defaults.
Each setting's variable is its name in SCREAMING_SNAKE_CASE (`baseUrl` → `AIDER_LSP_BASE_URL`).
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from typing import Any, Literal

from pydantic import AliasChoices, BaseModel, ConfigDict, Field, ValidationError

ENV_PREFIX = "AIDER_LSP_"
SECTION = "aiderLsp"


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part.title() for part in rest)


class _Camel(BaseModel):
    model_config = ConfigDict(alias_generator=_camel, populate_by_name=True, extra="ignore")


class AiderServerSettings(_Camel):
    """How to start the Aider MCP server; empty command = the bundled server."""

    command: str | None = None
    args: list[str] = Field(default_factory=list)
    env: dict[str, str] = Field(default_factory=dict)


class TimeoutSettings(_Camel):
    """Deadlines in seconds."""

    llm: float = Field(default=120.0, gt=0)
    aider: float = Field(default=300.0, gt=0)
    test: float = Field(default=300.0, gt=0)
    shell: float = Field(default=60.0, gt=0)


class BudgetSettings(_Camel):
    """Caps per workflow run; None = no cap."""

    max_tokens: int | None = Field(default=None, gt=0)
    max_cost: float | None = Field(default=None, gt=0)


class Settings(_Camel):
    model: str | None = None
    base_url: str | None = None
    api_key: str | None = None
    output_mode: Literal["tool", "native", "prompted"] = Field(
        default="tool",
        description="How structured output is asked of the model: a tool call (default), the "
        "server's JSON-schema response format, or JSON in the answer text (local models without tools).",
    )
    aider_model: str | None = None
    aider_server: AiderServerSettings = Field(default_factory=AiderServerSettings)
    test_command: str | None = None
    test_shell: bool = Field(
        default=False,
        description="Run testCommand through /bin/sh (pipes, &&) instead of as a plain argv.",
    )
    max_retries: int = Field(default=3, ge=0, le=20)
    timeouts: TimeoutSettings = Field(default_factory=TimeoutSettings)
    context_excludes: list[str] = Field(default_factory=list)
    context_rerank: bool = Field(
        default=False, description="Let the model re-rank the index's top files (slower)."
    )
    context_rerank_top_n: int = Field(default=20, ge=2, le=100)
    context_index_path: str | None = Field(
        default=None, description="SQLite index file; default <workspace>/.aider-lsp/index.sqlite3."
    )
    secret_patterns: list[str] = Field(default_factory=list)
    budget: BudgetSettings = Field(default_factory=BudgetSettings)
    max_file_bytes: int = Field(default=1_000_000, gt=0)
    output_cap_bytes: int = Field(default=64_000, gt=256)
    debug: bool = Field(default=False, validation_alias=AliasChoices("debug"))


class SettingsError(ValueError):
    """A setting has a value of the wrong shape; the message names the setting."""


def env_var_for(field_name: str) -> str:
    return ENV_PREFIX + re.sub(r"(?<!^)(?=[A-Z])", "_", _camel(field_name)).upper()


def _from_environment(environ: Mapping[str, str]) -> dict[str, Any]:
    values: dict[str, Any] = {}
    for name, field in Settings.model_fields.items():
        raw = environ.get(env_var_for(name))
        if raw is None or raw == "":
            continue
        annotation = str(field.annotation)
        structured = any(word in annotation for word in ("list", "dict", "Settings"))
        values[name] = json.loads(raw) if structured else raw
    return values


def _deep_merge(base: dict[str, Any], override: Mapping[str, Any]) -> dict[str, Any]:
    merged = dict(base)
    for key, value in override.items():
        if isinstance(value, Mapping) and isinstance(merged.get(key), dict):
            merged[key] = _deep_merge(merged[key], value)
        elif value is not None:
            merged[key] = value
    return merged


def _snake_keys(options: Mapping[str, Any]) -> dict[str, Any]:
    by_alias = {_camel(name): name for name in Settings.model_fields}
    return {by_alias.get(key, key): value for key, value in options.items()}


def load_settings(
    explicit: Mapping[str, Any] | None = None, environ: Mapping[str, str] | None = None
) -> Settings:
    """Defaults < `AIDER_LSP_*` environment < explicit settings (init options / configuration)."""
    environ = os.environ if environ is None else environ
    try:
        layered = _deep_merge(_from_environment(environ), _snake_keys(explicit or {}))
        return Settings.model_validate(layered)
    except json.JSONDecodeError as exc:
        raise SettingsError(f"an AIDER_LSP_* variable holds invalid JSON: {exc}") from exc
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(part) for part in first["loc"])
        raise SettingsError(f"setting '{SECTION}.{_camel(where)}': {first['msg']}") from exc
