"""What a turn's reply says so far, as far as the next message's markdown cares.

Why: a client renders a turn's message chunks as one markdown text. Aider's streamed reply may
stop anywhere, inside a code block included (a cancel mid-answer, a reply cut at its token
cap); a message posted after it ("the workflow was cancelled…", the run's outcome) would then
render inside that block, cut off, and so would whatever the client writes after the turn
(CodeCompanion parses the user's next prompt into it). Each message that stands on its own
starts with the separator this gives (a blank line, the open code block closed first), and the
turn ends with `closing()`.

Fences as CommonMark reads them: three or more backticks or tildes open a block; only a line of
the same character, at least as long, with nothing after it, closes it.
"""

from __future__ import annotations

import re

_FENCE = re.compile(r"(`{3,}|~{3,})(.*)")


def _fence_after(line: str, fence: str | None) -> str | None:
    """The fence open after `line`, given the one open before it (None: no code block)."""
    found = _FENCE.match(line.lstrip())
    if found is None:
        return fence
    marker, rest = found.groups()
    if fence is None:
        return None if marker[0] == "`" and "`" in rest else marker  # a backtick's info has none
    closes = marker[0] == fence[0] and len(marker) >= len(fence) and not rest.strip()
    return None if closes else fence


class SaidSoFar:
    """The reply's text of one turn, reduced to what decides the next separator."""

    def __init__(self) -> None:
        self.reset()

    def reset(self) -> None:
        """A new turn: nothing said yet."""
        self.any = False
        self.fence: str | None = None  # the open code block's fence, up to the last full line
        self.partial = ""  # the last line, still without its newline
        self.tail = ""  # the last two characters

    def feed(self, text: str) -> None:
        if not text:
            return
        self.any = True
        self.tail = (self.tail + text)[-2:]
        *lines, self.partial = (self.partial + text).split("\n")
        for line in lines:
            self.fence = _fence_after(line, self.fence)

    def separator(self) -> str:
        """What goes before a message that stands on its own."""
        if not self.any:
            return ""
        closing = self.closing()
        if closing:
            return closing + "\n"
        if self.tail.endswith("\n\n"):
            return ""
        return "\n" if self.tail.endswith("\n") else "\n\n"

    def closing(self) -> str:
        """What ends the reply as closed markdown: the open code block's fence on a line of its
        own ("" when none is open)."""
        fence = _fence_after(self.partial, self.fence)
        if fence is None:
            return ""
        newline = "" if not self.partial else "\n"
        return f"{newline}{fence}\n"
