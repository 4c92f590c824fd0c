"""LLM providers: the `provider:model` spelling and the variable that holds each one's key.

One home for both, used by the LLM layer (llm/) and by the Aider bridge, which names
Aider's model `provider/model` and says which key is missing before Aider would retry.
"""

from __future__ import annotations

# Provider prefix → the variable that holds its key (None: no key needed).
PROVIDER_KEY_VARS: dict[str, tuple[str, ...]] = {
    "openai": ("OPENAI_API_KEY",),
    "openai-chat": ("OPENAI_API_KEY",),
    "openai-responses": ("OPENAI_API_KEY",),
    "anthropic": ("ANTHROPIC_API_KEY",),
    "google-gla": ("GOOGLE_API_KEY", "GEMINI_API_KEY"),
    "gemini": ("GOOGLE_API_KEY", "GEMINI_API_KEY"),
    "groq": ("GROQ_API_KEY",),
    "mistral": ("MISTRAL_API_KEY",),
    "deepseek": ("DEEPSEEK_API_KEY",),
    "openrouter": ("OPENROUTER_API_KEY",),
    "cohere": ("CO_API_KEY",),
    "xai": ("XAI_API_KEY",),
    "grok": ("XAI_API_KEY",),
}


def split_model_id(model_id: str) -> tuple[str | None, str]:
    """`openai:gpt-4.1` → ("openai", "gpt-4.1"); a name without a provider → (None, name)."""
    provider, sep, name = model_id.partition(":")
    return (provider, name) if sep else (None, model_id)
