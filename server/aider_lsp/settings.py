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

from pydantic import AliasChoices, BaseModel, ConfigDict, Field, ValidationError, field_validator

ENV_PREFIX = "AIDER_LSP_"
SECTION = "aiderLsp"
MAX_TIMEOUT = 86_400.0  # a day: larger values overflow asyncio/select deadlines
MAX_BYTES = 1 << 30  # 1 GiB: larger values overflow read() sizes


def _no_nul(value: Any) -> Any:
    """A NUL byte in a path, command or URL fails deep inside the OS: refuse it here, by name."""
    texts = value if isinstance(value, list) else list(value.values()) if isinstance(value, dict) else [value]
    if any(isinstance(text, str) and "\x00" in text for text in texts):
        raise ValueError("must not contain a NUL byte")
    return value


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

    _check_nul = field_validator("command", "args", "env")(_no_nul)


class TimeoutSettings(_Camel):
    """Deadlines in seconds."""

    llm: float = Field(default=120.0, gt=0, le=MAX_TIMEOUT)
    aider: float = Field(default=300.0, gt=0, le=MAX_TIMEOUT)
    test: float = Field(default=300.0, gt=0, le=MAX_TIMEOUT)
    shell: float = Field(default=60.0, gt=0, le=MAX_TIMEOUT)


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
    max_file_bytes: int = Field(default=1_000_000, gt=0, le=MAX_BYTES)
    output_cap_bytes: int = Field(default=64_000, gt=256, le=MAX_BYTES)
    debug: bool = Field(default=False, validation_alias=AliasChoices("debug"))

    _check_nul = field_validator(
        "model", "base_url", "api_key", "aider_model", "test_command", "context_index_path",
        "context_excludes", "secret_patterns",
    )(_no_nul)


class SettingsError(ValueError):
    """A setting has a value of the wrong shape; the message names the setting.

    `setting` is the top-level snake_case name of the bad explicit setting (None when the
    bad value came from the environment), so a caller can drop just that one and keep the rest.
    """

    def __init__(self, message: str, setting: str | None = None) -> None:
        super().__init__(message)
        self.setting = setting


def _model_field_names() -> set[str]:
    names: set[str] = set()
    for model in (Settings, AiderServerSettings, TimeoutSettings, BudgetSettings):
        names.update(model.model_fields)
    return names


def _setting_path(loc: tuple[Any, ...]) -> str:
    """`('aider_server', 'env', 'MY_VAR')` → `aiderServer.env.MY_VAR`: only field names are camelCased."""
    fields = _model_field_names()
    return ".".join(_camel(part) if part in fields else str(part) for part in loc)


def env_var_for(field_name: str) -> str:
    return ENV_PREFIX + re.sub(r"(?<!^)(?=[A-Z])", "_", _camel(field_name)).upper()


def _from_environment(environ: Mapping[str, str]) -> dict[str, Any]:
    values: dict[str, Any] = {}
    for name, field in Settings.model_fields.items():
        variable = env_var_for(name)
        raw = environ.get(variable)
        if raw is None or raw == "":
            continue
        annotation = str(field.annotation)
        structured = any(word in annotation for word in ("list", "dict", "Settings"))
        try:
            values[name] = json.loads(raw) if structured else raw
        except json.JSONDecodeError as exc:
            raise SettingsError(f"{variable} holds invalid JSON: {exc}") from exc
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
    explicit_keys = _snake_keys(explicit or {})
    layered = _deep_merge(_from_environment(environ), explicit_keys)
    try:
        return Settings.model_validate(layered)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = _setting_path(first["loc"])
        top = str(first["loc"][0]) if first["loc"] else None
        raise SettingsError(
            f"setting '{SECTION}.{where}': {first['msg']}", top if top in explicit_keys else None
        ) from exc
