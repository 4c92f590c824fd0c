"""What a turn's reply says so far, as far as the next message's markdown cares.

Why: a client renders a turn's message chunks as one markdown text. Aider's streamed reply may
stop anywhere, inside a code block included (a cancel mid-answer); a message posted after it
("the workflow was cancelled…", the run's outcome) would then render inside that block, cut
off. Each message that stands on its own starts with the separator this gives: a blank line,
and the open code block closed first.
"""

from __future__ import annotations

FENCES = ("```", "~~~")


class SaidSoFar:
    """The reply's text of one turn, reduced to what decides the next separator."""

    def __init__(self) -> None:
        self.reset()

    def reset(self) -> None:
        """A new turn: nothing said yet."""
        self.any = False
        self.open_fence = False
        self.partial = ""  # the last line, still without its newline
        self.tail = ""  # the last two characters

    def feed(self, text: str) -> None:
        if not text:
            return
        self.any = True
        self.tail = (self.tail + text)[-2:]
        *lines, self.partial = (self.partial + text).split("\n")
        for line in lines:
            if line.lstrip().startswith(FENCES):
                self.open_fence = not self.open_fence

    def separator(self) -> str:
        """What goes before a message that stands on its own."""
        if not self.any:
            return ""
        fence_open = self.open_fence != self.partial.lstrip().startswith(FENCES)
        newline = "" if self.tail.endswith("\n") else "\n"
        if fence_open:
            return f"{newline}```\n\n"
        if self.tail.endswith("\n\n"):
            return ""
        return "\n" if self.tail.endswith("\n") else "\n\n"
