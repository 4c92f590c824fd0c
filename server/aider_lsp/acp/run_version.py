"""An isolated run's files as its edits left them, for its edit tool calls' diffs.

Why: an isolated run edits a tree of its own (isolation/) that the agent does not read, yet its
edit tool calls must look like a run's in place: the user's paths, the text before and after
each edit. The text before a file's first edit is the user's file (the run's tree started from
it); each edit's diff is laid on what the run had made of the file so far (diffs.text_after).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from .diffs import FileDiff, text_after

Sides = tuple[str | None, str]  # (the text before an edit, None: absent; the text after it)


@dataclass
class RunVersion:
    """The run's text of each file it edited so far (None: absent in the run)."""

    workspace: Path  # the user's
    texts: dict[str, str | None] = field(default_factory=dict)

    def advance(self, part: FileDiff) -> Sides | None:
        """The file's text before and after this edit, kept for the next; None when the diff
        does not lay on what is known (the user's file changed since the run started)."""
        rel = part.path
        before = self.texts[rel] if rel in self.texts else self._user_text(rel)
        after = text_after(part, before)
        if after is None:
            self.texts.pop(rel, None)
            return None
        self.texts[rel] = None if part.deleted else after
        return before, after

    def _user_text(self, rel: str) -> str | None:
        try:
            return (self.workspace / rel).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            return None
