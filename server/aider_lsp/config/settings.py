"""User settings: `initializationOptions`, the `aiderLsp` configuration section, `AIDER_LSP_*`.

An explicit setting wins over the environment; the environment wins over the defaults.
Settings are camelCased in the editor (`baseUrl`) and snake_cased here (`base_url`); each
setting's variable is `AIDER_LSP_` + its snake name in capitals (`AIDER_LSP_BASE_URL`).
Structured settings take JSON in a variable (`AIDER_LSP_TIMEOUTS='{"llm": 7}'`) or one
variable per nested field (`AIDER_LSP_TIMEOUTS__LLM=7`); pydantic-settings reads them.
"""

from __future__ import annotations

import functools
import os
import re
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, create_model, field_validator
from pydantic.alias_generators import to_camel, to_snake

if TYPE_CHECKING:
    from pydantic_settings import EnvSettingsSource

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


class _Camel(BaseModel):
    """Settings objects accept `maxTokens` and `max_tokens` alike."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="ignore")


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


class OutputTokenSettings(_Camel):
    """The longest reply each model may write, in tokens: a model that never stops writing (a
    weak local one) is cut there instead of holding its server for minutes. The planner's
    answers are short; Aider's may hold whole files."""

    planning: int = Field(default=4096, ge=64, le=1_000_000)
    aider: int = Field(default=16384, ge=256, le=1_000_000)


class BudgetSettings(_Camel):
    """Caps per workflow run; None = no cap."""

    max_tokens: int | None = Field(default=None, gt=0)
    max_cost: float | None = Field(default=None, gt=0)


class HistorySettings(_Camel):
    """How much of the run history (undo of any past run) `.aider-lsp/checkpoints/` keeps:
    the oldest runs are dropped first once either bound is passed."""

    max_runs: int = Field(default=50, ge=1, le=10_000)
    max_megabytes: int = Field(default=200, ge=1, le=100_000)


Names = Literal["editor", "environment"]
OutputMode = Literal["tool", "native", "prompted"]
OUTPUT_MODES: tuple[OutputMode, ...] = ("tool", "native", "prompted")


def setting_name(path: str, names: Names) -> str:
    """How a user of a front end sets `path` (snake or camel, dotted: `timeouts.llm`): the
    editor's settings (`aiderLsp.timeouts.llm`) or the environment (`AIDER_LSP_TIMEOUTS__LLM`),
    which is all the CLI and an ACP agent read."""
    parts = path.split(".")
    if names == "environment":
        return ENV_PREFIX + "__".join(to_snake(part).upper() for part in parts)
    return ".".join([SECTION, *(to_camel(to_snake(part)) for part in parts)])


class Settings(_Camel):
    """Every setting with its default; `Settings()` is the defaults alone (see `load_settings`).
    `names` says where they came from, so that a message names a setting the way its reader
    sets it (`name`): an editor's settings, or the environment (the CLI, an ACP agent)."""

    model: str | None = None
    base_url: str | None = None
    api_key: str | None = None
    output_mode: OutputMode = Field(
        default="tool",
        description="How structured output is asked of the model: a tool call (default), the "
        "server's JSON-schema response format, or JSON in the answer text (local models without tools).",
    )
    aider_model: str | None = None
    aider_server: AiderServerSettings = Field(default_factory=AiderServerSettings)
    aider_map_tokens: int = Field(
        default=1024,
        ge=0,
        le=65_536,
        description="Size of Aider's repository map in tokens (0 = off; Aider's default is 1024). "
        "Used where the workspace is the root of a git repository, by the bundled Aider server.",
    )
    test_command: str | None = None
    test_shell: bool = Field(
        default=False,
        description="Run testCommand through /bin/sh (pipes, &&) instead of as a plain argv.",
    )
    python_interpreter: str | None = Field(
        default=None,
        description="The project's Python, for a detected Python test command when the workspace "
        "has no .venv/ or venv/ (the editor's Python extension's pick); default: the server's.",
    )
    max_retries: int = Field(default=3, ge=0, le=20)
    isolation: Literal["none", "worktree"] = Field(
        default="none",
        description="Where a workflow run edits when its request does not say: the user's files "
        "(none), or a git worktree of its own (a copy without git) whose change the user applies, "
        "discards or keeps as a branch once it is ready.",
    )
    max_isolated_runs: int = Field(
        default=3,
        ge=1,
        le=16,
        description="Isolated runs under way at once per workspace (each has its own Aider server, "
        "about 330 MB, measured), besides at most one run in place.",
    )
    attempts: int = Field(
        default=1,
        ge=1,
        le=8,
        description="How many attempts a workflow run makes at its goal when its request does not say: "
        "more than one runs that many isolated runs at once from the same files, and the tests choose.",
    )
    choose_attempt: Literal["first-green", "compare"] = Field(
        default="first-green",
        description="How the tests choose among attempts: the first that passes wins and the others "
        "stop (first-green), or all finish and are ranked: green, the smaller change, the cheaper (compare).",
    )
    attempt_models: list[str] = Field(
        default_factory=list,
        description="The Aider models the attempts edit with, in turn (empty: aiderModel for each, "
        "the first edit's context differing: every other attempt plans first).",
    )
    analyse_green_tests: bool = Field(
        default=False,
        description="Ask the analysis model to confirm the goal when the tests pass (one more model "
        "call); by default passing tests end a workflow run.",
    )
    tests_before_first_edit: bool = Field(
        default=True,
        description="Run the test command when a workflow starts, beside Aider's start: its failing "
        "output joins the first edit's message (waited for at most a second once Aider is ready).",
    )
    failing_tests_first: bool = Field(
        default=True,
        description="After an edit, run only the tests that failed before (pytest, unittest, node --test, "
        "cargo, go), then the whole suite once they pass (a suite that takes under 3 s runs whole); "
        "false: the whole suite every time.",
    )
    timeouts: TimeoutSettings = Field(default_factory=TimeoutSettings)
    max_output_tokens: OutputTokenSettings = Field(default_factory=OutputTokenSettings)
    context_excludes: list[str] = Field(default_factory=list)
    context_rerank: bool = Field(
        default=False, description="Let the model re-rank the index's top files (slower)."
    )
    context_rerank_top_n: int = Field(default=20, ge=2, le=100)
    context_history_commits: int = Field(
        default=5000,
        ge=0,
        le=100_000,
        description="How many of the workspace's latest git commits the index reads to rank the files "
        "that changes like the query touched; 0: none.",
    )
    context_index_path: str | None = Field(
        default=None, description="SQLite index file; default <workspace>/.aider-lsp/index.sqlite3."
    )
    secret_patterns: list[str] = Field(default_factory=list)
    budget: BudgetSettings = Field(default_factory=BudgetSettings)
    max_open_folders: int = Field(
        default=4,
        ge=1,
        le=64,
        description="How many workspace folders of a multi-root window keep their Aider server and "
        "index alive at once (the least recently used closes first); read when the server starts.",
    )
    history: HistorySettings = Field(default_factory=HistorySettings)
    max_file_bytes: int = Field(default=1_000_000, gt=0, le=MAX_BYTES)
    output_cap_bytes: int = Field(default=64_000, gt=256, le=MAX_BYTES)
    debug: bool = False
    names: Names = Field(default="editor", exclude=True)

    _check_nul = field_validator(
        "model",
        "base_url",
        "api_key",
        "aider_model",
        "test_command",
        "python_interpreter",
        "context_index_path",
        "context_excludes",
        "secret_patterns",
    )(_no_nul)

    def isolation_for(self, requested: str | None) -> Literal["none", "worktree"]:
        """Where a workflow run edits: the request's choice, else this setting's (the
        Application dispatches on it; `aider-lsp run` asks it before the Application exists, to
        start no Aider in the user's folder for a run that will have its own)."""
        return "worktree" if (requested or self.isolation) == "worktree" else "none"

    def name(self, path: str) -> str:
        """`path` (`timeouts.llm`) as this front end's user sets it (`setting_name`)."""
        return setting_name(path, self.names)

    def sign_in_hint(self) -> str:
        """For a missing model: the sign-in, where this front end's user has it (the terminal
        and ACP agents read `aider-lsp login`'s store; an editor has its own settings)."""
        return ", or sign in with `aider-lsp login`" if self.names == "environment" else ""


# The settings in force now, read at each use: the Application owns them and replaces them when
# the editor changes them; a service never holds a copy (settings flow one way, by this provider).
SettingsProvider = Callable[[], "Settings"]


class SettingsError(ValueError):
    """A setting has a value of the wrong shape; the message names the setting.

    `setting` is the top-level snake_case name of the bad explicit setting (None when the
    bad value came from the environment), so a caller can drop just that one and keep the rest.
    """

    def __init__(self, message: str, setting: str | None = None) -> None:
        super().__init__(message)
        self.setting = setting


_NESTED_MODELS = (Settings, AiderServerSettings, TimeoutSettings, BudgetSettings, OutputTokenSettings)


def setting_path(loc: tuple[Any, ...]) -> str:
    """`('aider_server', 'env', 'MY_VAR')` → `aiderServer.env.MY_VAR`: only field names are camelCased."""
    fields = {name for model in _NESTED_MODELS for name in model.model_fields}
    return ".".join(to_camel(part) if part in fields else str(part) for part in loc)


def env_var_for(field_name: str) -> str:
    """The variable of a top-level setting: `base_url` → `AIDER_LSP_BASE_URL`."""
    return ENV_PREFIX + to_snake(field_name).upper()


@functools.cache
def _environment_reader() -> Callable[[Mapping[str, str]], EnvSettingsSource]:
    """pydantic-settings' reading of `AIDER_LSP_*` (JSON values, `__` nesting) for Settings'
    fields, from a given mapping. Imported only when such a variable exists: it costs a
    noticeable part of the server's start-up."""
    from pydantic_settings import BaseSettings, EnvSettingsSource, SettingsConfigDict
    from pydantic_settings.sources.utils import parse_env_vars

    class _Environment(BaseSettings):
        model_config = SettingsConfigDict(
            env_prefix=ENV_PREFIX, env_nested_delimiter="__", env_ignore_empty=True, extra="ignore"
        )

    fields: dict[str, Any] = {name: (info.annotation, None) for name, info in Settings.model_fields.items()}
    environment_settings = create_model("EnvironmentSettings", __base__=_Environment, **fields)

    class Reader(EnvSettingsSource):
        def __init__(self, environ: Mapping[str, str]) -> None:
            super().__init__(environment_settings)
            self.env_vars = parse_env_vars(
                environ, self.case_sensitive, self.env_ignore_empty, self.env_parse_none_str
            )

    return Reader


def _from_environment(environ: Mapping[str, str]) -> dict[str, Any]:
    if not any(name.upper().startswith(ENV_PREFIX) for name in environ):
        return {}
    from pydantic_settings import SettingsError as EnvironmentSettingsError

    try:
        return _environment_reader()(environ)()
    except EnvironmentSettingsError as exc:
        field = re.search(r'field "(\w+)"', str(exc))
        variable = env_var_for(field.group(1)) if field else f"an {ENV_PREFIX}* variable"
        raise SettingsError(f"{variable} holds invalid JSON: {exc.__cause__ or exc}") from exc


def _deep_merge(base: dict[str, Any], override: Mapping[str, Any]) -> dict[str, Any]:
    """`override` over `base`, nested objects merged key by key; a None in `override` means unset."""
    merged = dict(base)
    for key, value in override.items():
        if isinstance(value, Mapping) and isinstance(merged.get(key), dict):
            merged[key] = _deep_merge(merged[key], value)
        elif value is not None:
            merged[key] = value
    return merged


def snake_keys(options: Mapping[str, Any]) -> dict[str, Any]:
    """Top-level keys as field names: `maxFileBytes` and `max_file_bytes` both → `max_file_bytes`."""
    return {to_snake(key): value for key, value in options.items() if isinstance(key, str)}


def load_settings(
    explicit: Mapping[str, Any] | None = None,
    environ: Mapping[str, str] | None = None,
    names: Names | None = None,
) -> Settings:
    """Defaults < the sign-in store (`aider-lsp login`; read with the process's own environment
    only) < `AIDER_LSP_*` environment < explicit settings (init options / configuration).
    `names`: how messages name the settings (default: the editor's when `explicit` is given,
    else the environment's)."""
    from . import credentials

    stored: dict[str, Any] = credentials.load() if environ is None else {}
    environ = os.environ if environ is None else environ
    explicit_keys = snake_keys(explicit or {})
    layered = _deep_merge(_deep_merge(stored, _from_environment(environ)), explicit_keys)
    layered["names"] = names or ("editor" if explicit is not None else "environment")
    try:
        return Settings.model_validate(layered)
    except ValidationError as exc:
        first = exc.errors()[0]
        top = str(first["loc"][0]) if first["loc"] else None
        where = f"setting '{SECTION}.{setting_path(first['loc'])}': {first['msg']}"
        if top in explicit_keys:
            raise SettingsError(where, top) from exc
        raise SettingsError(f"{where} (from {env_var_for(top or '')})", None) from exc


def settings_over(
    explicit: Mapping[str, Any], previous: Settings | None
) -> tuple[Settings | None, list[str]]:
    """Settings from `explicit` over the environment, dropping each bad explicit value in turn
    (a bad one falls back to its `previous` value when that was not the default). The problems
    are one message per bad value, for the user."""
    remaining = snake_keys(explicit)
    kept = previous.model_dump() if previous is not None else {}
    defaults = Settings().model_dump()
    problems: list[str] = []
    for _ in range(len(remaining) + 1):
        try:
            return load_settings(remaining), problems
        except SettingsError as exc:
            problems.append(str(exc))
            name = exc.setting
            if name is None or name not in remaining:
                return None, problems
            del remaining[name]
            if name in kept and kept[name] != defaults.get(name):
                remaining[name] = kept[name]
    return None, problems
