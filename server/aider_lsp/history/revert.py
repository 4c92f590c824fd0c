"""Reverting one edit's change to a file as it is now: a three-way merge that keeps everyone
else's work.

Why a merge and not a restore: putting a file back as it was before an edit discards every
change made since by anyone else (the user, another program, a later run). Undoing an edit is
applying the reverse of its own change to the file as it is now, as `git revert` does: base =
the edit's after, theirs = the file now, ours = the edit's before (merge3, breezy's
implementation). Where the edit's change and a later one touch the same lines, nothing is
decided here: the caller is told the lines (in the file as it is now) and writes nothing.

All of it is bytes: CRLF, a BOM and any encoding go through unchanged, line by line (a line
ends at b"\\n"). A binary file (a NUL byte) is reverted only when it is exactly as the edit
left it; otherwise it is refused by name.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import cast

from merge3 import Merge3


@dataclass(frozen=True)
class Reverted:
    """The file's content after the revert (None: it must not exist)."""

    content: bytes | None


@dataclass(frozen=True)
class Overlap:
    """The edit's change and a later one touch the same lines: `lines` are 1-based ranges in
    the file as it is now; `why` is the sentence a user reads."""

    lines: tuple[tuple[int, int], ...]
    why: str


def revert_change(now: bytes | None, before: bytes | None, after: bytes | None) -> Reverted | Overlap:
    """The reverse of one edit's change (`before` → `after`) applied to the file `now`."""
    if now in (after, before):  # as the edit left it, or its change already taken back
        return Reverted(before)
    if before is None:  # the edit created the file, and it changed since: theirs now
        return Overlap((), "created by the edit and changed since")
    if after is None:  # the edit deleted the file, and it exists again
        return Overlap((), "deleted by the edit and created again since")
    if now is None:
        return Overlap((), "deleted since the edit")
    if any(b"\0" in data for data in (now, before, after)):
        return Overlap((), "a binary file changed since the edit")
    return _merge(now, before, after)


def apply_change(now: bytes | None, base: bytes | None, final: bytes | None) -> Reverted | Overlap:
    """An isolated run's change (`base` → `final`) laid on the user's file `now` as it is: the
    same merge, forwards (base = the run's start, theirs = the user's file, ours = the run's);
    where both changed the same lines nothing is decided here either."""
    if now in (base, final):  # untouched by the user since, or already holding the change
        return Reverted(final)
    if base is None:
        return Overlap((), "the run created it, and so did you since the run started")
    if final is None:
        return Overlap((), "the run deleted it, and you changed it since the run started")
    if now is None:
        return Overlap((), "you deleted it since the run started, and the run changed it")
    if any(b"\0" in data for data in (now, base, final)):
        return Overlap((), "a binary file that both you and the run changed")
    return _merge(now, final, base, "you changed the lines the run changed")


def _merge(
    now: bytes, before: bytes, after: bytes, why: str = "changed since the edit on the lines it changed"
) -> Reverted | Overlap:
    """merge3 over lines: base = after, a = now (theirs), b = before (the edit undone); `why`
    starts the sentence naming the overlapping lines."""
    base, theirs, ours = (data.splitlines(keepends=True) for data in (after, now, before))
    merged: list[bytes] = []
    conflicts: list[tuple[int, int]] = []
    for region in Merge3(base, theirs, ours).merge_regions():
        kind = region[0]
        if kind == "unchanged":
            merged.extend(base[region[1] : region[2]])
        elif kind in ("a", "same"):
            merged.extend(theirs[region[1] : region[2]])
        elif kind == "b":
            merged.extend(ours[region[1] : region[2]])
        else:  # conflict: (kind, base start, end, a start, a end, b start, b end)
            start, end = cast("tuple[str, int, int, int, int, int, int]", region)[3:5]
            conflicts.append((start + 1, max(start + 1, end)))
    if conflicts:
        where = ", ".join(f"{a}" if a == b else f"{a}-{b}" for a, b in conflicts)
        noun = "line" if len(conflicts) == 1 and conflicts[0][0] == conflicts[0][1] else "lines"
        return Overlap(tuple(conflicts), f"{why} ({noun} {where})")
    return Reverted(b"".join(merged))
