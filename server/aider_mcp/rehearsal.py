"""The first model call's one-time costs, paid during the warm-up instead of by the first edit.

The engine's chat rehearsal (litellm's `mock_response`) stops before litellm reaches the
provider's SDK, so the first real edit still paid the SDK's first use: the OpenAI client's
request transform and response models are built on first use, and litellm imports its
service logger (about 40 ms together, measured; a warm edit takes 12-30 ms). Here one
completion goes through that very path, answered in memory by an httpx mock transport:
no socket, no network, no cost, and the user's key is never sent.
"""

from __future__ import annotations

import logging
from typing import Any

log = logging.getLogger("aider_mcp")

# The providers litellm serves through the OpenAI SDK with a caller-given `client`.
OPENAI_SDK_PROVIDERS = frozenset({"openai", "custom_openai"})
REHEARSAL_BASE = "http://aider-lsp-warm-up.invalid/v1"
CANNED_REPLY: dict[str, Any] = {
    "id": "aider-lsp-warm-up",
    "object": "chat.completion",
    "created": 0,
    "model": "warm-up",
    "choices": [
        {
            "index": 0,
            "finish_reason": "stop",
            "message": {"role": "assistant", "content": "Nothing to change."},
        }
    ],
    "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
}


def provider_of(litellm: Any, model: str) -> str | None:
    """The provider litellm routes `model` to, or None when it cannot tell."""
    try:
        return str(litellm.get_llm_provider(model)[1])
    except Exception as exc:  # an unknown model: the real edit will say so
        log.debug("litellm knows no provider for %s: %s", model, exc)
        return None


def rehearse_provider_call(litellm: Any, model: str) -> bool:
    """One in-memory completion through litellm and the OpenAI SDK; False when the model's
    provider does not go through that SDK (its own first-use costs stay with the first edit)."""
    if provider_of(litellm, model) not in OPENAI_SDK_PROVIDERS:
        return False
    import httpx
    import openai

    transport = httpx.MockTransport(lambda request: httpx.Response(200, json=CANNED_REPLY))
    client = openai.OpenAI(
        api_key="warm-up", base_url=REHEARSAL_BASE, http_client=httpx.Client(transport=transport)
    )
    try:
        litellm.completion(
            model=model,
            messages=[{"role": "user", "content": "Reply: nothing to change."}],
            client=client,
            # should litellm ever ignore `client`, the call fails on a name that cannot resolve
            api_base=REHEARSAL_BASE,
            api_key="warm-up",
            num_retries=0,
        )
    except Exception as exc:  # a rehearsal only: the real edit will say what is wrong
        log.warning("warm-up provider rehearsal failed: %s", exc)
        return False
    finally:
        client.close()
    return True
