"""`aider-lsp doctor`: what is configured and what is missing (model, key, endpoint, workspace,
the Aider environment, the test command), one line each."""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from .. import __version__
from ..config.settings import Settings, SettingsError, env_var_for, load_settings


@dataclass(frozen=True)
class Check:
    """One line; an `optional` check that fails is shown as `none`, not counted as missing
    (a workspace without a test suite can still be tested with a command given to the run);
    a `warning` is shown as `warn`, not counted either (what may still work: a server that
    serves one model whatever name it is asked for)."""

    name: str
    ok: bool
    detail: str
    optional: bool = False
    warning: bool = False

    @property
    def label(self) -> str:
        if self.ok:
            return "ok"
        return "none" if self.optional else "warn" if self.warning else "MISSING"


def check_model(settings: Settings) -> list[Check]:
    """Is an LLM configured, is its key there, and is a configured endpoint reachable?"""
    from .. import preflight

    config = preflight.model_config(settings)
    if config.model_id is None:
        return [Check("model", False, config.problem or f"not set: set {env_var_for('model')}")]
    if config.base_url is None and config.problem:
        if config.provider is None:
            return [Check("model", False, config.problem)]
        return [
            Check("model", True, config.model_id),
            Check("api key", False, config.problem),
        ]
    checks = [Check("model", True, f"{config.model_id} (served as {config.model_name!r})")]
    if config.base_url:
        checks.extend(check_endpoint(settings, config.base_url, config.model_name or config.model_id))
    if config.api_key_source == "provider default":
        # a provider this table does not know: let pydantic-ai say whether it exists / has a key
        problem = preflight.model_problem(settings, config.model_id)
        if problem is not None:
            return [Check("model", False, problem)]
    if config.api_key_source:
        checks.append(Check("api key", True, f"from {config.api_key_source}"))
    return checks


def check_endpoint(settings: Settings, base_url: str, model: str) -> list[Check]:
    """The OpenAI-compatible endpoint, asked for its models with the key a call sends: does it
    answer, take the key, and have the planning model and Aider's (when Aider goes there)?"""
    from .. import preflight
    from ..config.endpoints import ModelRole, probe, probe_problem

    name = settings.name
    key = settings.api_key or os.environ.get("OPENAI_API_KEY")
    found = probe(base_url, key)
    planning = ModelRole("the planning model", model, name("model"), name("baseUrl"), name("apiKey"))
    what = f"OpenAI-compatible (chat completions) {base_url}"
    if found.status is None or found.status in (401, 403, 404):  # no answer, the key, the URL
        problem = probe_problem(found, planning)
        return [Check("endpoint", False, f"{what}: {problem.message if problem else found.error}")]
    listed = f"; models: {', '.join(found.models[:8])}" if found.models else ""
    status = (
        f"reachable{listed}" if found.status == 200 else f"reachable ({found.url} answered {found.status})"
    )
    checks = [Check("endpoint", True, f"{what}: {status}")]
    roles = [planning]
    aider_model = preflight.aider_model(settings) or ""
    if aider_model.startswith("openai/"):  # Aider's calls go to the same endpoint
        aider = aider_model.removeprefix("openai/")
        roles.append(ModelRole("Aider's model", aider, name("aiderModel"), name("baseUrl"), name("apiKey")))
    for role in roles:
        missing = probe_problem(found, role)
        if missing is not None:
            checks.append(
                Check(
                    f"{role.label.removeprefix('the ')} on the endpoint", False, missing.message, warning=True
                )
            )
    return checks


def check_workspace(workspace: Path) -> list[Check]:
    ok = workspace.is_dir()
    return [Check("workspace", ok, str(workspace) if ok else f"not a directory: {workspace}")]


def check_aider_env(settings: Settings) -> list[Check]:
    """Is the Aider environment there (or is a custom Aider MCP server configured)?"""
    from ..config import aider_env

    if settings.aider_server.command:
        import shutil

        command = settings.aider_server.command
        found = shutil.which(command)
        detail = (
            f"custom: {command}"
            if found
            else (
                f"custom command not found: {command} (aiderLsp.aiderServer.command / AIDER_LSP_AIDER_SERVER)"
            )
        )
        return [Check("aider server", found is not None, detail)]
    return [Check("aider environment", aider_env.is_ready(), aider_env.describe())]


def check_test_command(settings: Settings, workspace: Path) -> list[Check]:
    """The command a run would test the workspace with, and why (set, confirmed or detected)."""
    from .. import preflight

    if not workspace.is_dir():
        return []
    choice = preflight.chosen_test_command(workspace, settings)
    if choice is None:
        return [Check("test command", False, preflight.no_suite_message(), optional=True)]
    return [Check("test command", True, choice.describe())]


def check_provider(settings: Settings, workspace: Path) -> list[Check]:
    """The provider the planning and analysis calls go to, as the LLM layer names it in each
    call's result and log (`notes.model`): the same words the user will read there."""
    from .. import preflight

    config = preflight.model_config(settings)
    if not workspace.is_dir() or config.model_id is None or (config.problem and not config.base_url):
        return []  # the model line says what to set
    from ..app import Application  # only now: the lines above answer without it

    return [Check("provider", True, Application.for_lookup(workspace, settings).provider_identifier())]


def check_acp_launch(settings: Settings) -> list[Check]:
    """What `aider-lsp acp` started by an editor with this environment would use: it reads the
    same AIDER_LSP_* variables as this command (never a workspace's files, never an editor's
    settings), so one line says it, each key named by the variable it comes from."""
    from .. import preflight
    from ..config import aider_env

    config = preflight.model_config(settings)
    model = config.model_id or f"none (set {env_var_for('model')})"
    key = f", key {_launch_key(config.api_key_source)}" if config.model_id and config.api_key_source else ""
    aider_model = preflight.aider_model(settings)
    unset = f"none (set {env_var_for('aider_model')})"
    aider = f"{aider_model}, key {_aider_key(settings, aider_model)}" if aider_model else unset
    server = (
        f"custom {settings.aider_server.command}" if settings.aider_server.command else aider_env.describe()
    )
    detail = f"model {model}{key}; Aider model {aider}; Aider: {server}"
    ready = config.model_id is not None and aider_model is not None
    return [Check("acp launch", ready, detail, optional=True)]


def _launch_key(source: str) -> str:
    """Where the planning model's key comes from in an ACP launch: only the environment (the
    settings' apiKey is AIDER_LSP_API_KEY there)."""
    if source == "aiderLsp.apiKey":  # an editor's setting, as the doctor's settings never name it
        return f"from {env_var_for('api_key')}"
    if source.startswith("placeholder"):
        return "not needed (a local server)"
    if source == "provider default":
        return "as the provider's own client finds it"
    return f"from {source}"


def _aider_key(settings: Settings, aider_model: str) -> str:
    """Where Aider's key comes from: AIDER_LSP_API_KEY (given to Aider as its provider's
    variable), else the provider's own variable, else none needed for a local server."""
    from ..config.providers import PROVIDER_KEY_VARS

    provider = aider_model.split("/", 1)[0] if "/" in aider_model else "openai"
    if settings.api_key:
        return f"from {env_var_for('api_key')} (as {provider.upper()}_API_KEY)"
    key_vars = PROVIDER_KEY_VARS.get(provider, ())
    found = next((var for var in key_vars if os.environ.get(var)), None)
    if found is not None:
        return f"from {found}"
    if settings.base_url and provider == "openai":
        return "not needed (a local server)"
    return f"missing (set {key_vars[0]})" if key_vars else "as Aider's own provider finds it"


def check_sign_in(settings: Settings) -> list[Check]:
    """Whether `aider-lsp login` stored a sign-in, and where (its key is never printed)."""
    from .login import where_from

    path = where_from()
    if path is None:
        return [
            Check(
                "sign-in",
                False,
                "none (`aider-lsp login` stores one; or the AIDER_LSP_* variables)",
                optional=True,
            )
        ]
    return [
        Check("sign-in", True, f"stored by `aider-lsp login` in {path}; AIDER_LSP_* variables win over it")
    ]


DOCTOR_CHECKS: list[Callable[[Settings, Path], list[Check]]] = [
    lambda settings, workspace: check_sign_in(settings),
    lambda settings, workspace: check_model(settings),
    check_provider,
    lambda settings, workspace: check_workspace(workspace),
    lambda settings, workspace: check_aider_env(settings),
    check_test_command,
    lambda settings, workspace: check_acp_launch(settings),
]


def doctor(workspace: Path) -> int:
    """Print what is configured and what is missing; exit 1 when something is missing."""
    try:
        settings = load_settings()
    except SettingsError as exc:
        print(f"settings: FAILED {exc}")
        return 1
    checks = [check for run in DOCTOR_CHECKS for check in run(settings, workspace)]
    print(f"aider-lsp {__version__}")
    for check in checks:
        print(f"  [{check.label}] {check.name}: {check.detail}")
    return 0 if all(check.ok or check.optional or check.warning for check in checks) else 1
