"""What a turn's reply says so far, as far as the next message's markdown cares.

Why: a client renders a turn's message chunks as one markdown text. Aider's streamed reply may
stop anywhere, inside a code block included (a cancel mid-answer, a reply cut at its token
cap); a message posted after it ("the workflow was cancelled…", the run's outcome) would then
render inside that block, cut off, and so would whatever the client writes after the turn
(CodeCompanion parses the user's next prompt into it). Each message that stands on its own
starts with the separator this gives (a blank line, the open code block closed first), and the
turn ends with `closing()`. What is sent never leaves a block open in the first place: a code
block is held until it closes (`HeldCode`).

Fences as CommonMark reads them: three or more backticks or tildes open a block; only a line of
the same character, at least as long, with nothing after it, closes it.
"""

from __future__ import annotations

import re

_FENCE = re.compile(r"(`{3,}|~{3,})(.*)")
_FILE_NAME = re.compile(r"[\w./\\-]{1,160}\.\w{1,10}")  # a path with an extension, no spaces


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


_FENCE_CHARS = frozenset("`~")


def _may_open(line: str, complete: bool) -> bool:
    """Whether a line opens a code block (`complete`), or may once it is whole (a partial
    line: empty, a run of backticks or tildes so far, or a fence still getting its info)."""
    stripped = line.lstrip()  # as `_fence_after` reads a fence (indented ones too: the safe side)
    if complete:
        return _fence_after(line, None) is not None
    if not stripped:
        return True
    if stripped[0] not in _FENCE_CHARS:
        return False
    run = len(stripped) - len(stripped.lstrip(stripped[0]))
    return run >= 3 or run == len(stripped)


class HeldCode:
    """A reply's code blocks held back until they close: the text a client is sent never
    leaves a code block open.

    Why: a client that stops listening when it sends `session/cancel` (CodeCompanion) keeps
    what it had: a block left open there swallows the user's next prompt into it, whatever the
    agent closes after the cancel. Prose streams as it comes; a code block arrives whole once
    its fence closes (or, at the turn's end, closed by `flush`)."""

    def __init__(self) -> None:
        self.pending = ""  # held: from the start of a line that opens (or may open) a block
        self.fence: str | None = None  # the held block's fence, once its opening line is whole
        self.opened = 0  # how many blocks were opened so far (which block `fence` is)
        self.sent_tail = ""  # the end of what was sent: the lines before a held block

    def take(self, text: str) -> str:
        """The part of the reply so far that can be sent now, `text` included."""
        sendable = self._take(text)
        self.sent_tail = (self.sent_tail + sendable)[-400:]
        return sendable

    def _take(self, text: str) -> str:
        self.pending += text
        sendable = ""
        while self.pending:
            if self.fence is None:
                start = self._opening(self.pending)
                sendable, self.pending = sendable + self.pending[:start], self.pending[start:]
                if not self.pending or "\n" not in self.pending:
                    return sendable  # nothing held, or a fence line not whole yet
                line = self.pending.split("\n", 1)[0]
                self.fence = _fence_after(line, None)
                self.opened += self.fence is not None
                if self.fence is None:  # not a fence after all: sent, the rest looked at again
                    sendable, self.pending = sendable + line + "\n", self.pending[len(line) + 1 :]
                continue
            end = self._closing(self.pending, self.fence)
            if end is None:
                return sendable
            sendable, self.pending, self.fence = sendable + self.pending[:end], self.pending[end:], None
        return sendable

    def flush(self) -> str:
        """Everything held, an open block closed: the turn ends (or a message follows)."""
        held, self.pending, self.fence = self.pending, "", None
        said = SaidSoFar()
        said.feed(held)
        return held + said.closing()

    def lines_held(self) -> int:
        """The held block's lines so far (its opening fence left out); 0 when none is held."""
        return max(self.pending.count("\n") - 1, 0) if self.fence is not None else 0

    def label(self) -> str:
        """What the held block is: the file it is for (Aider's formats name it on the line
        before the fence), else its language ("python"), else "code"; "" when none is held."""
        if self.fence is None:
            return ""
        before = [line.strip().strip("*`") for line in self.sent_tail.split("\n") if line.strip()]
        if before and _FILE_NAME.fullmatch(before[-1]):
            return before[-1]
        opening = self.pending.split("\n", 1)[0].strip()
        info = opening[len(self.fence) :].strip().split(" ")[0] if opening.startswith(self.fence) else ""
        return info or "code"

    @staticmethod
    def _opening(text: str) -> int:
        """Where the first line that opens (or may open) a block starts; len(text) if none."""
        start = 0
        while start < len(text):
            end = text.find("\n", start)
            line = text[start:] if end < 0 else text[start:end]
            if _may_open(line, complete=end >= 0):
                return start
            if end < 0:
                return len(text)
            start = end + 1
        return len(text)

    @staticmethod
    def _closing(text: str, fence: str) -> int | None:
        """The end of the line that closes the block (after its newline), or None yet."""
        start = text.find("\n") + 1  # the opening line is not its own close
        while (end := text.find("\n", start)) >= 0:
            if _fence_after(text[start:end], fence) is None:
                return end + 1
            start = end + 1
        return None
