"""`aider-lsp login`: choose the provider and model, give the key, check it, store it.

The sign-in an ACP editor offers (the agent's Terminal Auth method runs this command) and a
terminal user runs once. The answers come from the options, else from questions when a person
is at the terminal; the key from standard input with `--with-key` (as `gh auth login
--with-token` takes it), else asked without echo. One cheap call checks the key before it is
kept (the endpoint's or the provider's model list); it is stored outside every workspace (the
key in the OS keyring where there is one, else a 0600 file: credentials.py) and the command says
where, never printing the key.

    aider-lsp login
    aider-lsp login --provider anthropic --model claude-sonnet-4-5 --with-key < key.txt
    aider-lsp login --base-url http://127.0.0.1:8080/v1 --model qwen2.5-coder
"""

from __future__ import annotations

import getpass
import sys
from collections.abc import Callable
from dataclasses import dataclass

from ..config import credentials
from ..config.endpoints import ModelRole, probe, probe_problem

EXIT_USAGE = 2
LOCAL = "local"
# provider → (what the user reads, a model to suggest); the prefix is pydantic-ai's and Aider's
PROVIDERS: dict[str, tuple[str, str]] = {
    "anthropic": ("Anthropic", "claude-sonnet-4-5"),
    "openai": ("OpenAI", "gpt-4.1"),
    "openrouter": ("OpenRouter", "anthropic/claude-sonnet-4.5"),
    "gemini": ("Google Gemini", "gemini-2.5-pro"),
    "deepseek": ("DeepSeek", "deepseek-chat"),
    LOCAL: ("an OpenAI-compatible server (llama.cpp, vLLM, LM Studio, Ollama, a proxy)", ""),
}
MODEL_PREFIX = {"gemini": "google-gla"}  # pydantic-ai's names where they differ from Aider's
AIDER_PREFIX = {LOCAL: "openai"}
# where a key is checked with one free call: the provider's model list and how it takes the key
CHECKS: dict[str, tuple[str, Callable[[str], dict[str, str]]]] = {
    "openai": ("https://api.openai.com/v1", lambda key: {"Authorization": f"Bearer {key}"}),
    "anthropic": (
        "https://api.anthropic.com/v1",
        lambda key: {"x-api-key": key, "anthropic-version": "2023-06-01"},
    ),
}


@dataclass
class Answers:
    provider: str
    model: str
    aider_model: str | None
    base_url: str | None
    key: str | None


class LoginError(Exception):
    """Why the sign-in stopped; the message says what to give."""


def login(
    provider: str | None,
    model: str | None,
    aider_model: str | None,
    base_url: str | None,
    *,
    with_key: bool = False,
    check: bool = True,
) -> int:
    """0 when the sign-in is stored, 1 when the check refused it, 2 when an answer is missing."""
    try:
        answers = _answers(provider, model, aider_model, base_url, with_key)
    except LoginError as exc:
        print(f"aider-lsp login: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except (KeyboardInterrupt, EOFError):  # the user left the questions: nothing stored
        print("\naider-lsp login: stopped, nothing stored", file=sys.stderr)
        return 130
    if check:
        problem = _check(answers)
        if problem is not None:
            print(f"aider-lsp login: not stored: {problem}", file=sys.stderr)
            return 1
    stored = _stored(answers)
    where = credentials.save(stored)
    aider = stored.get("aider_model") or "derived from it"
    key = "a key" if answers.key else "no key"
    print(f"Signed in: model {stored['model']} (Aider's: {aider}), {key},")
    print(f"kept in {where} (readable by you alone).")
    print("The environment's AIDER_LSP_* variables and an editor's settings still win over it.")
    return 0


def _answers(
    provider: str | None, model: str | None, aider_model: str | None, base_url: str | None, with_key: bool
) -> Answers:
    asking = sys.stdin.isatty() and not with_key
    provider = provider or (LOCAL if base_url else None) or (_ask_provider() if asking else None)
    if provider not in PROVIDERS:
        raise LoginError(f"give --provider, one of: {', '.join(PROVIDERS)}")
    if provider == LOCAL and not base_url:
        base_url = _ask("The server's base URL (e.g. http://127.0.0.1:8080/v1)") if asking else None
        if not base_url:
            raise LoginError(
                "give --base-url for an OpenAI-compatible server (e.g. http://127.0.0.1:8080/v1)"
            )
    suggested = PROVIDERS[provider][1]
    model = model or (_ask("Model", suggested) if asking else None)
    if not model:
        raise LoginError("give --model (the model's name at the provider)")
    model = bare_model(provider, model)
    key = sys.stdin.read().strip() if with_key else (_ask_key(provider) if asking else None)
    return Answers(provider, model, aider_model, base_url, key or None)


def _prefix(provider: str) -> str:
    """The provider's prefix in a model setting (`openai:gpt-4.1`), pydantic-ai's spelling."""
    return MODEL_PREFIX.get(provider, "openai" if provider == LOCAL else provider)


def bare_model(provider: str, model: str) -> str:
    """The model's name at the provider: typed as the variables spell it (`openai:fake-model`,
    `anthropic:claude-…`), its provider's prefix is not stored twice."""
    for prefix in dict.fromkeys((_prefix(provider), provider)):
        if model.startswith(f"{prefix}:"):
            return model[len(prefix) + 1 :]
    return model


def _ask(question: str, default: str = "") -> str:
    shown = f" [{default}]" if default else ""
    answer = input(f"{question}{shown}: ").strip()
    return answer or default


def _ask_provider() -> str:
    names = list(PROVIDERS)
    for number, name in enumerate(names, 1):
        print(f"  {number}. {PROVIDERS[name][0]}", file=sys.stderr)
    answer = _ask("Provider (number)", "1")
    return names[int(answer) - 1] if answer.isdigit() and 0 < int(answer) <= len(names) else answer


def _ask_key(provider: str) -> str:
    optional = " (Enter: none)" if provider == LOCAL else ""
    return getpass.getpass(f"API key{optional} (not shown): ").strip()


def _check(answers: Answers) -> str | None:
    """Why the key or endpoint is refused (None: accepted, or not checkable here)."""
    role = ModelRole("the model", answers.model, "--model", "--base-url", "the key")
    if answers.base_url:  # the key, the address, and the model among those the server lists
        found = probe(answers.base_url, answers.key)
        problem = probe_problem(found, role)
        return problem.message if problem else None
    check = CHECKS.get(answers.provider)
    if check is None:
        print(f"(the key for {PROVIDERS[answers.provider][0]} is not checked here)", file=sys.stderr)
        return None
    if not answers.key:
        return f"{PROVIDERS[answers.provider][0]} needs a key: give it on standard input with --with-key"
    url, headers = check
    found = probe(url, headers=headers(answers.key), timeout=10.0)
    if found.status in (401, 403):
        return f"{PROVIDERS[answers.provider][0]} refused the key (401/403)"
    if found.status is None:
        return f"cannot reach {url}: {found.error} (--no-check stores it unchecked)"
    return None


def _stored(answers: Answers) -> dict[str, str]:
    stored = {"model": f"{_prefix(answers.provider)}:{answers.model}"}
    if answers.aider_model:
        stored["aider_model"] = answers.aider_model
    elif answers.provider == LOCAL:
        stored["aider_model"] = f"{AIDER_PREFIX[LOCAL]}/{answers.model}"
    if answers.base_url:
        stored["base_url"] = answers.base_url
    if answers.key:
        stored["api_key"] = answers.key
    return stored


def where_from() -> str | None:
    """For `doctor`: where the sign-in is kept when there is one (never its key)."""
    if not credentials.load():
        return None
    key = credentials.key_location()
    path = credentials.store_path()
    return f"{path}, the key in {key}" if key and key != str(path) else str(path)
