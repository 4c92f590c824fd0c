"""A code block Aider is still writing, shown as it grows: a tool call whose title counts its
lines, closed when the block is sent.

Why: a reply's code blocks are held until they close (said.HeldCode), so a long one (a whole
file rewritten) showed nothing for as long as Aider wrote it: 29 s of a still chat in
CodeCompanion. A block that arrives within `QUIET_SECONDS` shows no call (most do); a longer
one gets a call "Aider is writing calc.py (40 lines)" (the file Aider's format names before
the fence, else the block's language), its title updated at most once a `QUIET_SECONDS`,
completed when the block is sent ("Aider wrote calc.py"). A tool
call is its own line in every client (CodeCompanion updates it in place, Zed as a card), so
what the chat shows stays closed markdown whenever the client stops listening.
"""

from __future__ import annotations

import uuid
from typing import Any

from acp import start_tool_call, update_tool_call

from .said import HeldCode

QUIET_SECONDS = 1.0


class CodeBeingWritten:
    """The tool call of the block held now (none until it has been held `QUIET_SECONDS`)."""

    def __init__(self) -> None:
        self.block = 0  # the held block followed (HeldCode.opened)
        self.since = 0.0  # when it was first seen held
        self.call_id: str | None = None  # its tool call, once shown
        self.shown_at = 0.0
        self.lines = 0  # the lines its title says
        self.what = "code"

    def follow(self, held: HeldCode, now: float) -> list[Any]:
        """The updates that show `held` as it is now: the followed block's call completed once
        the block was sent, a call started (or its title brought up to date) for one held."""
        sent = self.block and (held.fence is None or held.opened != self.block)
        updates = self.done() if sent else []
        if held.fence is None:
            return updates
        if held.opened != self.block:  # a block starts being held
            self.block, self.since = held.opened, now
        self.lines, self.what = held.lines_held(), held.label()
        if self.call_id is None and now - self.since >= QUIET_SECONDS:
            self.call_id, self.shown_at = f"writing-{uuid.uuid4().hex[:8]}", now
            title = self._title()
            updates.append(start_tool_call(self.call_id, title, kind="other", status="in_progress"))
        elif self.call_id is not None and now - self.shown_at >= QUIET_SECONDS:
            self.shown_at = now
            updates.append(update_tool_call(self.call_id, title=self._title()))
        return updates

    def done(self) -> list[Any]:
        """The shown call completed (the block was sent, or the turn ends); nothing followed."""
        updates = []
        if self.call_id is not None:
            # no count: the chunk that closed the block may have brought lines not counted yet
            updates.append(
                update_tool_call(self.call_id, title=f"Aider wrote {self.what}", status="completed")
            )
        self.block, self.call_id = 0, None
        return updates

    def _title(self) -> str:
        """ "Aider is writing calc.py (40 lines)": no colon (CodeCompanion shows a title up to
        its first one)."""
        if not self.lines:
            return f"Aider is writing {self.what}"
        lines = f"{self.lines} line" + ("" if self.lines == 1 else "s")
        return f"Aider is writing {self.what} ({lines})"
