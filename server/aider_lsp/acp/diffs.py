"""An edit's unified diff (the bundled server's format, one `diff --git a/X b/X` part
per file) → each file's text before and after, for ACP's `diff` tool-call content.

Why from the diff: the Application answers an edit or a run with its diff and the files are
on disk now, so the text before is the file now with each hunk taken back. A part that cannot
be taken back (binary, too large, the file changed since) gives no old text: the client shows
the file as new rather than a wrong diff. An isolated run edits a tree the agent does not
read: there the text after is the text before with each hunk laid on (`text_after`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

_HEADER = re.compile(r"^diff --\S+ a/(.+) b/(.+)$")
_HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")


@dataclass
class Hunk:
    new_start: int
    new_count: int
    old_start: int = 0
    old_lines: list[str] = field(default_factory=list)  # with their line ends
    new_lines: list[str] = field(default_factory=list)


@dataclass
class FileDiff:
    """One file's part of a diff."""

    path: str  # workspace-relative
    created: bool = False
    deleted: bool = False
    readable: bool = True  # False: "Binary files differ" / a large file: no hunks to undo
    hunks: list[Hunk] = field(default_factory=list)


def split_diff(diff: str) -> list[FileDiff]:
    """The diff's files, in order."""
    files: list[FileDiff] = []
    hunk: Hunk | None = None
    last: list[list[str]] = []  # the lists the previous line went to (for "\ No newline")
    for line in diff.splitlines(keepends=True):
        header = _HEADER.match(line.rstrip("\n"))
        if header:
            files.append(FileDiff(path=header.group(2)))
            hunk = None
            continue
        if not files:
            continue
        current = files[-1]
        hunk, last = _read_line(current, hunk, last, line)
    return files


def _read_line(
    current: FileDiff, hunk: Hunk | None, last: list[list[str]], line: str
) -> tuple[Hunk | None, list[list[str]]]:
    """One line of a file's part: a marker, a hunk header or a hunk line."""
    text = line.rstrip("\n")
    found = _HUNK.match(text)
    if found:
        count = found.group(4)
        hunk = Hunk(
            new_start=int(found.group(3)),
            new_count=1 if count is None else int(count),
            old_start=int(found.group(1)),
        )
        current.hunks.append(hunk)
        return hunk, []
    if hunk is None:
        if text.startswith("new file"):  # `new file mode 100644` (older diffs: `new file`)
            current.created = True
        elif text.startswith("deleted file"):
            current.deleted = True
        elif text.startswith(("Binary", "Binary or large")):
            current.readable = False
        return None, []
    if line.startswith("\\"):  # "\ No newline at end of file": the line before has no end
        for lines in last:
            lines[-1] = lines[-1].removesuffix("\n")
        return hunk, []
    body = line[1:]
    if line.startswith(" "):
        hunk.old_lines.append(body)
        hunk.new_lines.append(body)
        return hunk, [hunk.old_lines, hunk.new_lines]
    if line.startswith("-"):
        hunk.old_lines.append(body)
        return hunk, [hunk.old_lines]
    if line.startswith("+"):
        hunk.new_lines.append(body)
        return hunk, [hunk.new_lines]
    return hunk, []


def text_before(part: FileDiff, text_now: str) -> str | None:
    """The file's text before the edit, from its text now and its part of the diff; None when
    it did not exist before or the hunks do not match the file as it is now."""
    if part.created or not part.readable:
        return None
    lines = text_now.splitlines(keepends=True)
    out: list[str] = []
    position = 0
    for hunk in part.hunks:
        start = hunk.new_start if hunk.new_count == 0 else hunk.new_start - 1
        if start < position or lines[start : start + hunk.new_count] != hunk.new_lines:
            return None
        out.extend(lines[position:start])
        out.extend(hunk.old_lines)
        position = start + hunk.new_count
    out.extend(lines[position:])
    return "".join(out)


def text_after(part: FileDiff, text_before: str | None) -> str | None:
    """The file's text after the edit, from its text before (None: it did not exist) and its
    part of the diff; "" for a deleted file; None when the hunks do not match the text before."""
    if not part.readable or part.created != (text_before is None):
        return None
    if part.deleted:
        return ""
    lines = (text_before or "").splitlines(keepends=True)
    out: list[str] = []
    position = 0
    for hunk in part.hunks:
        count = len(hunk.old_lines)
        start = hunk.old_start if count == 0 else hunk.old_start - 1
        if start < position or lines[start : start + count] != hunk.old_lines:
            return None
        out.extend(lines[position:start])
        out.extend(hunk.new_lines)
        position = start + count
    out.extend(lines[position:])
    return "".join(out)
