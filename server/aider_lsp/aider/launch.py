"""Launch configuration: which command, arguments and environment start the Aider MCP server.

Everything here is derived from Settings and the process environment alone (no process is
started, no mcp import): the bridge compares the resulting LaunchSpec with the running
server's and restarts the session when the settings changed it.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from pathlib import Path

from ..config import aider_env
from ..config.providers import PROVIDER_KEY_VARS, split_model_id
from ..config.settings import Settings
from ..guards.files import DEFAULT_SECRET_PATTERNS, SECRET_DIRECTORIES

PASS_ENV_SUFFIXES = ("_API_KEY", "_API_BASE", "_BASE_URL", "_API_VERSION")
PASS_ENV_NAMES = (
    "XDG_CACHE_HOME",
    "LANG",
    "LC_ALL",
    "TMPDIR",
    "SSL_CERT_FILE",
    "REQUESTS_CA_BUNDLE",
    "HTTP_PROXY",
    "HTTPS_PROXY",
    "NO_PROXY",
    "http_proxy",
    "https_proxy",
    "no_proxy",
    "AIDER_LSP_AIDER_ENV",
)
KEYLESS_TOOLS = frozenset({"list_models"})  # listing models calls no LLM: no key needed
# what each request of an edit carries before the user's message, files and map: Aider's
# system prompt and its edit format's examples, about (for a choice of files, an estimate)
AIDER_PROMPT_TOKENS = 2_000


class ConfigurationProblem(Exception):
    """The server cannot be started as configured; the message names the setting to fill."""


@dataclass(frozen=True)
class LaunchSpec:
    """How to start the server; a changed spec restarts the session."""

    command: str
    args: tuple[str, ...]
    env: tuple[tuple[str, str], ...]
    cwd: str
    bundled: bool


def aider_model_for(settings: Settings) -> str | None:
    """Aider's model name: `aiderModel`, else derived from `model` (`openai:gpt-4.1` → `openai/gpt-4.1`).

    With `baseUrl` set the endpoint is OpenAI-compatible, so the name becomes `openai/<name>`.
    """
    if settings.aider_model:
        return settings.aider_model
    if not settings.model:
        return None
    provider, name = split_model_id(settings.model)
    if settings.base_url:
        return f"openai/{name.split('/', 1)[1] if name.startswith('openai/') else name}"
    mapping = {"ollama": "ollama_chat", "google-gla": "gemini", "google-vertex": "vertex_ai"}
    if not provider:
        return name
    return f"{mapping.get(provider, provider)}/{name}"


def server_environment(settings: Settings, environ: dict[str, str] | None = None) -> dict[str, str]:
    """Keys and endpoints for the server: provider keys pass through; baseUrl → OPENAI_API_BASE."""
    environ = dict(os.environ if environ is None else environ)
    env = {
        key: value
        for key, value in environ.items()
        if key.endswith(PASS_ENV_SUFFIXES) or key in PASS_ENV_NAMES
    }
    if settings.base_url:
        env["OPENAI_API_BASE"] = settings.base_url
        env["OPENAI_BASE_URL"] = settings.base_url
        env.setdefault("OPENAI_API_KEY", "sk-no-key-needed")
    if settings.api_key:
        model = aider_model_for(settings) or ""
        provider = model.split("/", 1)[0] if "/" in model else "openai"
        env[f"{provider.upper()}_API_KEY"] = settings.api_key
    env.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    env["PYTHONUNBUFFERED"] = "1"
    # the bundled server keeps secret files out of Aider's repo map and mention offers
    env["AIDER_MCP_SECRET_PATTERNS"] = json.dumps(
        [*DEFAULT_SECRET_PATTERNS, *settings.secret_patterns, *(f"{name}/" for name in SECRET_DIRECTORIES)]
    )
    return env


def missing_provider_key(model: str, env: dict[str, str], settings: Settings | None = None) -> str | None:
    """Without its key Aider retries for a minute, then blames "the provider's servers":
    say which variable is missing instead (only for providers whose key variable is known)."""
    provider, sep, _ = model.partition("/")
    key_vars = PROVIDER_KEY_VARS.get(provider) if sep else None
    if not key_vars or any(env.get(var) for var in key_vars):
        return None
    if provider == "openai" and env.get("OPENAI_API_BASE"):
        return None  # an OpenAI-compatible proxy may take no key
    name = (settings or Settings()).name
    return (
        f"{' or '.join(key_vars)} is not set: Aider's model {model!r} needs it "
        f"(set {key_vars[0]}, or {name('apiKey')}, or point {name('baseUrl')} at a local server)"
    )


def _expand(arg: str, values: dict[str, str]) -> str:
    return re.sub(r"\$\{(\w+)\}", lambda m: values.get(m.group(1), m.group(0)), arg)


def repo_map_args(settings: Settings, workspace: Path) -> tuple[str, ...]:
    """`--map-tokens N` where the workspace is the root of a git repository (Aider's repo map
    lists the tracked files; in a folder inside a larger repository it would list files
    outside the workspace, so it stays off there), `aiderMapTokens` > 0."""
    tokens = settings.aider_map_tokens
    if tokens <= 0 or not (workspace / ".git").exists():
        return ()
    return ("--map-tokens", str(tokens))


def launch_spec(settings: Settings, workspace: Path) -> LaunchSpec:
    """The server command: `aiderServer` if set (args may use ${workspace} and ${model}),
    else the bundled server in the Aider environment."""
    model = aider_model_for(settings)
    env = server_environment(settings)
    custom = settings.aider_server
    if custom.command:
        values = {"workspace": str(workspace), "model": model or ""}
        env.update(custom.env)
        return LaunchSpec(
            command=custom.command,
            args=tuple(_expand(arg, values) for arg in custom.args),
            env=tuple(sorted(env.items())),
            cwd=str(workspace),
            bundled=False,
        )
    if not model:
        raise ConfigurationProblem(
            f"no Aider model: set {settings.name('aiderModel')} (or {settings.name('model')})"
            f"{settings.sign_in_hint()}"
        )
    if not aider_env.is_ready():
        raise ConfigurationProblem(
            f"the Aider environment is missing ({aider_env.env_dir()}): run `aider-lsp setup-aider`,"
            f" or point {settings.name('aiderServer')} at another Aider MCP server"
        )
    command, args, extra = aider_env.server_command()
    env.update(extra)
    env.update(custom.env)
    return LaunchSpec(
        command=command,
        args=(
            *args,
            "--cwd",
            str(workspace),
            "--model",
            model,
            "--max-output-tokens",
            str(settings.max_output_tokens.aider),
            *repo_map_args(settings, workspace),
            *custom.args,
        ),
        env=tuple(sorted(env.items())),
        cwd=str(workspace),
        bundled=True,
    )


def launch_spec_for_tool(settings: Settings, workspace: Path, tool_name: str) -> LaunchSpec:
    """The spec for calling one tool; ConfigurationProblem also when the bundled server's model
    lacks its provider key (a tool that calls no LLM goes ahead without it)."""
    spec = launch_spec(settings, workspace)
    if spec.bundled and tool_name not in KEYLESS_TOOLS:
        missing = missing_provider_key(aider_model_for(settings) or "", dict(spec.env), settings)
        if missing:
            raise ConfigurationProblem(missing)
    return spec
