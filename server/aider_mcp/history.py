"""A chat's history summarized when it is about to be sent again, and what that costs counted.

Why: Aider summarizes a chat's earlier messages in a background thread after each reply once
they pass the model's history limit (1,024 tokens for a model litellm does not know, up to
8,192 for the large ones). That request is the size of the history, and it is paid even when
no turn follows: a workflow run that ends green, a one-shot edit, the last turn of every chat.
In a short chat it also costs more than it saves (the summary is sent once, in place of a
history sent once). Here a chat's history is summarized at the start of the next turn, only
then, and the summary's request is counted in that turn's usage (Aider's own count leaves
it out). The cost: that turn waits for the summary instead of the gap before it hiding it.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

log = logging.getLogger("aider_mcp")


@dataclass
class SummarySpend:
    """The summary requests a chat made: tokens sent and received, cost, requests."""

    sent: int = 0
    received: int = 0
    cost: float = 0.0
    requests: int = 0


class CountedModel:
    """One of the summarizer's models, its requests counted on the chat's `SummarySpend`.

    Aider's `simple_send_with_retries` reads the answer's text only: this sends the same
    request (one attempt; the summarizer then tries its next model, and a chat whose summary
    failed keeps its history whole) and keeps the answer's usage."""

    def __init__(self, model: Any, spend: SummarySpend) -> None:
        self._model = model
        self._spend = spend

    def __getattr__(self, name: str) -> Any:
        return getattr(self._model, name)

    def simple_send_with_retries(self, messages: list[dict[str, Any]]) -> str | None:
        """The summary's text, its usage added to the chat's spend."""
        from aider.reasoning_tags import remove_reasoning_content

        self._spend.requests += 1
        try:
            _hash, response = self._model.send_completion(messages=messages, functions=None, stream=False)
        except Exception as exc:  # litellm's errors: the summarizer tries its next model
            log.warning("summarizing the chat with %s failed: %s", self._model.name, exc)
            return None
        self._count(getattr(response, "usage", None))
        choices = getattr(response, "choices", None)
        if not choices:
            return None
        return remove_reasoning_content(choices[0].message.content, self._model.reasoning_tag)

    def _count(self, usage: Any) -> None:
        prompt = int(getattr(usage, "prompt_tokens", 0) or 0)
        completion = int(getattr(usage, "completion_tokens", 0) or 0)
        info = self._model.info
        self._spend.sent += prompt
        self._spend.received += completion
        self._spend.cost += prompt * float(info.get("input_cost_per_token") or 0) + completion * float(
            info.get("output_cost_per_token") or 0
        )


def summarize_on_next_turn(coder: Any) -> SummarySpend:
    """Aider's summary after each reply off; the summarizer's requests counted (`before_turn`
    summarizes). Returns the chat's summary spend."""
    spend = SummarySpend()
    coder.summarize_start = lambda: None  # Aider calls it after each reply
    coder.summarizer.models = [CountedModel(model, spend) for model in coder.summarizer.models]
    return spend


def before_turn(coder: Any) -> None:
    """The chat's earlier messages summarized when they pass the model's limit, before they
    are sent again; a failed summary leaves them whole (as Aider does)."""
    if not coder.done_messages or not coder.summarizer.too_big(coder.done_messages):
        return
    try:
        coder.done_messages = coder.summarizer.summarize(coder.done_messages)
    except ValueError as exc:
        coder.io.tool_warning(str(exc))
