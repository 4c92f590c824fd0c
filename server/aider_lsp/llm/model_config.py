"""Which model the settings name, and whether it can be reached: resolved without network or
imports for `doctor` and for each call, kept apart from running calls (interaction.py).

`resolve_model_config` checks the settings and names what to fill; `build_model` turns them
into a pydantic-ai Model (imported on first use). What an endpoint's refusal means is
endpoints.py's.
"""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..config.providers import PROVIDER_KEY_VARS, split_model_id
from ..config.settings import Settings

if TYPE_CHECKING:  # pragma: no cover - typing only
    from pydantic_ai.models import Model

DEFAULT_OLLAMA_URL = "http://localhost:11434/v1"
LOCAL_PLACEHOLDER_KEY = "not-needed"  # local OpenAI-compatible servers accept any key
MAX_REQUEST_SECONDS = 600.0  # the HTTP client's own limit; each call's `timeouts.llm` is shorter


class LLMConfigurationError(Exception):
    """The model cannot be built; the message names the setting or variable to fill."""


@dataclass(frozen=True)
class ModelConfig:
    """What the settings say about the model, resolved (no network, no imports)."""

    model_id: str | None
    base_url: str | None
    provider: str | None
    model_name: str | None
    api_key_source: str | None
    problem: str | None

    def describe(self) -> dict[str, Any]:
        """For `aider-lsp doctor`: never includes the key itself."""
        return {
            "model": self.model_id,
            "base_url": self.base_url,
            "provider": self.provider,
            "model_name": self.model_name,
            "api_key": self.api_key_source,
            "transport": "chat-completions" if self.base_url else (self.provider or None),
            "ok": self.problem is None,
            "problem": self.problem,
        }


def resolve_model_config(
    settings: Settings, model_override: str | None = None, environ: dict[str, str] | None = None
) -> ModelConfig:
    """Check the model settings without building anything; `problem` says what to fill."""
    env = os.environ if environ is None else environ
    model_id = (model_override or settings.model or "").strip() or None
    base_url = (settings.base_url or "").strip() or None
    if model_id is None:
        return ModelConfig(
            None,
            base_url,
            None,
            None,
            None,
            f"no model configured: set {settings.name('model')} (e.g. anthropic:claude-sonnet-4-5, "
            f"openai:gpt-4.1, ollama:qwen2.5-coder){settings.sign_in_hint()}",
        )
    prefix, name = split_model_id(model_id)
    if model_id == "test":
        return ModelConfig(model_id, None, "test", "test", None, None)
    if base_url:
        if settings.api_key:
            source = settings.name("apiKey")
        elif env.get("OPENAI_API_KEY"):
            source = "OPENAI_API_KEY"
        else:
            source = "placeholder (local server)"
        return ModelConfig(model_id, base_url, prefix or "openai", name, source, None)
    if prefix is None:
        return ModelConfig(
            model_id,
            None,
            None,
            name,
            None,
            f"model {model_id!r} has no provider prefix: use provider:name (e.g. openai:{name}) "
            f"in {settings.name('model')}, or set {settings.name('baseUrl')} "
            "for an OpenAI-compatible server",
        )
    if prefix == "ollama":
        url = env.get("OLLAMA_BASE_URL") or DEFAULT_OLLAMA_URL
        return ModelConfig(model_id, url, prefix, name, "placeholder (local server)", None)
    key_vars = PROVIDER_KEY_VARS.get(prefix)
    if key_vars is None:
        # pydantic-ai knows more providers than this table; let it check their keys.
        return ModelConfig(model_id, None, prefix, name, "provider default", None)
    if settings.api_key:
        return ModelConfig(model_id, None, prefix, name, settings.name("apiKey"), None)
    for var in key_vars:
        if env.get(var):
            return ModelConfig(model_id, None, prefix, name, var, None)
    return ModelConfig(
        model_id,
        None,
        prefix,
        name,
        None,
        f"{' or '.join(key_vars)} is not set: set {key_vars[0]} (or {settings.name('apiKey')}) "
        f"to use {prefix} models",
    )


# pydantic-ai and the provider SDKs are imported on first use, by the warm-up's worker thread
# or by a first call. Two threads importing them at once can meet a partially initialized
# module ("cannot import name 'Model' … (most likely due to a circular import)"): one lock.
LIBRARY_IMPORT_LOCK = threading.RLock()


def import_llm_libraries() -> None:
    """Import pydantic-ai's core under LIBRARY_IMPORT_LOCK (a dict lookup once imported)."""
    with LIBRARY_IMPORT_LOCK:
        import pydantic_ai
        import pydantic_ai.models  # noqa: F401


def build_model(settings: Settings, model_override: str | None = None) -> Model:
    """A pydantic-ai Model for the settings; LLMConfigurationError names what is missing."""
    config = resolve_model_config(settings, model_override)
    if config.problem:
        raise LLMConfigurationError(config.problem)
    with LIBRARY_IMPORT_LOCK:
        return _build_model(settings, config)


def _build_model(settings: Settings, config: ModelConfig) -> Model:
    assert config.model_id is not None
    from pydantic_ai.exceptions import UserError

    try:
        if config.model_id == "test":
            from pydantic_ai.models.test import TestModel

            return TestModel()
        if config.base_url:
            from pydantic_ai.models.openai import OpenAIChatModel
            from pydantic_ai.profiles.openai import OpenAIModelProfile
            from pydantic_ai.providers.openai import OpenAIProvider

            from .metering import metered_client

            api_key = settings.api_key or os.environ.get("OPENAI_API_KEY") or LOCAL_PLACEHOLDER_KEY
            # every request counted, answered or not (metering.py): local servers often report nothing
            client = metered_client(MAX_REQUEST_SECONDS)
            provider = OpenAIProvider(base_url=config.base_url, api_key=api_key, http_client=client)
            # the reply's cap as `max_tokens`, the field every OpenAI-compatible server reads
            # (llama.cpp's Python server, LM Studio and older vLLM ignore `max_completion_tokens`)
            profile = OpenAIModelProfile(openai_chat_supports_max_completion_tokens=False)
            return OpenAIChatModel(config.model_name or config.model_id, provider=provider, profile=profile)
        if settings.api_key and config.provider in ("openai", "openai-chat", "openai-responses"):
            from pydantic_ai.models.openai import OpenAIChatModel, OpenAIResponsesModel
            from pydantic_ai.providers.openai import OpenAIProvider

            cls = OpenAIChatModel if config.provider == "openai-chat" else OpenAIResponsesModel
            return cls(config.model_name or "", provider=OpenAIProvider(api_key=settings.api_key))
        if settings.api_key and config.provider == "anthropic":
            from pydantic_ai.models.anthropic import AnthropicModel
            from pydantic_ai.providers.anthropic import AnthropicProvider

            return AnthropicModel(
                config.model_name or "", provider=AnthropicProvider(api_key=settings.api_key)
            )
        from pydantic_ai.models import infer_model

        return infer_model(config.model_id)
    except UserError as exc:
        raise LLMConfigurationError(f"cannot use model {config.model_id!r}: {exc}") from exc
    except ImportError as exc:
        raise LLMConfigurationError(
            f"model {config.model_id!r} needs an optional package that is not installed: {exc}"
        ) from exc
