"""A question a service asks the user (through `RequestContext.ask`) and the typed answer.

Why typed: each front end shows a question its own way (the LSP as window/showMessageRequest
buttons with the choices' labels, ACP as session/request_permission options of its own
wording), and each maps what the user picked back onto an `Answer`, never onto a position in
a list, so reordering or rewording the choices cannot pick the wrong one. No answer (None)
means the user dismissed the question, or chose to go ahead this once: the asker's default.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from enum import StrEnum

from pydantic import BaseModel, ConfigDict


class Answer(StrEnum):
    """What the user decided, whatever the front end showed."""

    ACCEPT = "accept"  # yes, and remember it for the workspace
    ONCE = "once"  # yes, this time only (not remembered)
    DECLINE = "decline"  # no: nothing of what was asked runs


class Choice(BaseModel):
    """One answer a question offers, and its label where a front end shows the asker's words."""

    model_config = ConfigDict(frozen=True)

    answer: Answer
    label: str


class Question(BaseModel):
    """A message and the answers it offers (in the order an editor shows them)."""

    model_config = ConfigDict(frozen=True)

    message: str
    choices: tuple[Choice, ...]

    @property
    def labels(self) -> list[str]:
        return [choice.label for choice in self.choices]

    def offers(self, answer: Answer) -> bool:
        return any(choice.answer is answer for choice in self.choices)

    def answer_labelled(self, label: str | None) -> Answer | None:
        """The answer whose label the user picked (None: no label, or one not offered)."""
        return next((choice.answer for choice in self.choices if choice.label == label), None)


# Ask the user a question (the editor's window/showMessageRequest, ACP's permission request):
# the answer, or None when the user dismissed it, allowed it this once, or the editor could not ask.
AskCallback = Callable[[Question], Awaitable[Answer | None]]
