"""Sign-in over ACP: the ways `initialize` offers, and the refusal a session without a model gets.

An editor shows its own sign-in from `authMethods`: a Terminal Auth method (the client runs
this agent's command with `login` in a terminal: `aider-lsp login` asks provider, model and key,
checks the key and stores it outside every workspace) where the client says it can, and the
environment variables that do the same. A `session/new` with no model answers the protocol's
auth-required error, so the client offers them; once signed in, the next `session/new` (or
`authenticate`) reads the stored sign-in: no restart.
"""

from __future__ import annotations

from typing import Any

from acp.schema import AuthEnvVar, EnvVarAuthMethod, TerminalAuthMethod

from acp import RequestError

LOGIN_METHOD = "aider-lsp-login"
ENVIRONMENT_METHOD = "environment"
SIGN_IN_FIELDS = ("model", "aider_model", "base_url", "api_key")  # what a sign-in decides


def runs_terminal_auth(capabilities: Any) -> bool:
    """Whether the client runs Terminal Auth, declared either way: `auth.terminal` (the schema
    now) or `_meta["terminal-auth"]` (the older way, which the ACP Registry's validator uses)."""
    if getattr(getattr(capabilities, "auth", None), "terminal", False):
        return True
    meta = getattr(capabilities, "field_meta", None)
    return isinstance(meta, dict) and bool(meta.get("terminal-auth"))


def auth_methods(terminal: bool) -> list[EnvVarAuthMethod | TerminalAuthMethod]:
    """The sign-ins this agent offers: the terminal one where the client runs them."""
    variables = EnvVarAuthMethod(
        type="env_var",
        id=ENVIRONMENT_METHOD,
        name="Environment variables",
        description="Start the agent with the model (and key) in its environment.",
        vars=[
            AuthEnvVar(name="AIDER_LSP_MODEL", label="Planning model (e.g. anthropic:claude-sonnet-4-5)"),
            AuthEnvVar(
                name="AIDER_LSP_AIDER_MODEL", label="Aider's model (default: the same)", optional=True
            ),
            AuthEnvVar(name="AIDER_LSP_API_KEY", label="API key", secret=True, optional=True),
            AuthEnvVar(name="AIDER_LSP_BASE_URL", label="OpenAI-compatible base URL", optional=True),
        ],
    )
    if not terminal:
        return [variables]
    login = TerminalAuthMethod(
        type="terminal",
        id=LOGIN_METHOD,
        name="Sign in (aider-lsp login)",
        description="Choose the provider and model, paste the key: checked, kept outside every workspace.",
        args=["login"],
    )
    return [login, variables]


def sign_in_required() -> RequestError:
    """The refusal of a session that could not run a model: sign in first."""
    data: dict[str, Any] = {
        "message": "no model: sign in (`aider-lsp login`, or the editor's sign-in) or start the agent "
        "with AIDER_LSP_MODEL (and the provider's key) in its environment",
        "authMethods": [LOGIN_METHOD, ENVIRONMENT_METHOD],
    }
    return RequestError.auth_required(data)
