"""Before/after file snapshots: the diff and `success` of an edit come from the files themselves.

Which files: only those this edit wrote (Aider's IO reports each write through `mark_written`).
A file another program created or changed meanwhile (a log, a build output) is not the edit's:
it is neither in the diff nor in `created`, so undo never deletes or reverts it.
What changed: judged by content, before against after. Aider's own view (`aider_edited_files`,
`git diff`) is not trusted: it lists files whose edit failed, and `git diff` is cumulative and
blind to new files or non-git directories.
Pure standard library, so it is testable without Aider installed.
"""

from __future__ import annotations

import difflib
import os
import re
from dataclasses import dataclass, field
from pathlib import Path

MAX_DIFF_BYTES = 2_000_000


def read_bytes(path: Path) -> bytes | None:
    """File content, or None when it does not exist (or is not a regular file)."""
    try:
        return path.read_bytes() if path.is_file() else None
    except OSError:
        return None


def unified_diff(rel: str, before: bytes | None, after: bytes | None) -> str:
    """A git-style unified diff of one file (git's own header, so every diff viewer and
    markdown renderer reads it as one); new and deleted files diff against /dev/null."""
    if before == after:
        return ""
    if (before and len(before) > MAX_DIFF_BYTES) or (after and len(after) > MAX_DIFF_BYTES):
        return f"diff --git a/{rel} b/{rel}\nBinary or large file changed\n"
    try:
        old = before.decode("utf-8") if before is not None else ""
        new = after.decode("utf-8") if after is not None else ""
    except UnicodeDecodeError:
        return f"diff --git a/{rel} b/{rel}\nBinary files differ\n"
    from_name = f"a/{rel}" if before is not None else "/dev/null"
    to_name = f"b/{rel}" if after is not None else "/dev/null"
    header = f"diff --git a/{rel} b/{rel}\n"
    if before is None:
        header += "new file mode 100644\n"
    elif after is None:
        header += "deleted file mode 100644\n"
    lines = difflib.unified_diff(
        old.splitlines(keepends=True), new.splitlines(keepends=True), from_name, to_name
    )
    body = "".join(
        line if line.endswith("\n") else line + "\n\\ No newline at end of file\n" for line in lines
    )
    return header + body


# A comment that stands for code the model did not write out: "# ... existing code ...",
# "// rest of the file unchanged", "/* ... */". With the whole-file format Aider writes the
# reply as the file's new content, so such a line means the elided code is gone.
_ELISION = re.compile(
    r"^\s*(?:#|//|/\*|<!--|--|;+|\*)\s*"
    r"(?:(?:\.\.\.|…)|(?:\[?\s*)?(?:rest|remainder|remaining|existing|other|previous|unchanged)\b)"
    r"(?:.*\b(?:code|unchanged|same|here|file|methods?|functions?|lines?|implementation|before|omitted)\b|\s*(?:\*/|-->)?\s*$)",
    re.IGNORECASE,
)
MIN_LINES_LOST = 3


def elision_marker(before: bytes | None, after: bytes | None) -> str | None:
    """The new "... existing code ..." line when an edit shrank a file with one, else None."""
    if not before or after is None:
        return None
    try:
        old, new = before.decode("utf-8"), after.decode("utf-8")
    except UnicodeDecodeError:
        return None
    if len(new.splitlines()) > len(old.splitlines()) - MIN_LINES_LOST:
        return None
    existing = {line.strip() for line in old.splitlines()}
    for line in new.splitlines():
        if line.strip() not in existing and _ELISION.match(line):
            return line.strip()
    return None


@dataclass
class EditOutcome:
    """What an edit really did to the files."""

    changed_editable: list[str] = field(default_factory=list)
    outside: list[str] = field(default_factory=list)
    created: list[str] = field(default_factory=list)
    diff: str = ""

    @property
    def success(self) -> bool:
        return bool(self.changed_editable)


class Snapshot:
    """Contents of the files an edit may touch, taken before the edit.

    `remember()` adds a file lazily (called when Aider asks to edit a file outside the list,
    and before each write), `mark_written()` records each file the edit wrote.
    """

    def __init__(self, root: Path, editable: list[str], readonly: list[str]) -> None:
        self.root = root
        self.editable = list(dict.fromkeys(editable))
        self.contents: dict[str, bytes | None] = {}
        self.written: dict[str, bytes | None] = {}  # what this edit itself last wrote
        for rel in self.editable + list(readonly):
            self.remember(rel)

    def add_editable(self, rel: str) -> None:
        """Count a file as editable (its change is a success); snapshot it if new to us."""
        if rel not in self.editable:
            self.editable.append(rel)
        self.remember(rel)

    def relative(self, path: str | os.PathLike[str]) -> str:
        full = Path(path)
        if not full.is_absolute():
            full = self.root / full
        try:
            return os.path.relpath(full.resolve(), self.root.resolve())
        except ValueError:
            return str(full)

    def remember(self, path: str | os.PathLike[str]) -> None:
        """Record a file's current content unless it was recorded already."""
        rel = self.relative(path)
        if rel not in self.contents:
            self.contents[rel] = read_bytes(self.root / rel)

    def still_as_read(self, path: str | os.PathLike[str]) -> bool:
        """False when a file changed on disk since the edit began (the user saved meanwhile),
        apart from this edit's own writes: writing it now would discard the user's change."""
        rel = self.relative(path)
        if rel not in self.contents:
            return True
        expected = self.written.get(rel, self.contents[rel])
        now = read_bytes(self.root / rel)
        if expected is None:
            return now in (None, b"")  # Aider touches a new file into existence first
        return now == expected

    def mark_written(self, path: str | os.PathLike[str]) -> None:
        rel = self.relative(path)
        self.written[rel] = read_bytes(self.root / rel)

    def changed_after_write(self) -> list[str]:
        """Files another program changed after this edit wrote them (before it ended): the
        file now holds both changes, so restoring it to before the edit would lose theirs."""
        return [rel for rel, wrote in sorted(self.written.items()) if read_bytes(self.root / rel) != wrote]

    def compare(self) -> EditOutcome:
        """Diff the files this edit wrote against their content before it."""
        outcome = EditOutcome()
        editable = {self.relative(p) for p in self.editable}
        diffs: list[str] = []
        for rel in sorted(self.written):
            before = self.contents.get(rel)
            after = read_bytes(self.root / rel)
            if before == after:
                continue
            if before is None:
                outcome.created.append(rel)
            diffs.append(unified_diff(rel, before, after))
            if rel in editable:
                outcome.changed_editable.append(rel)
            else:
                outcome.outside.append(rel)
        outcome.diff = "".join(diffs)
        return outcome

    def revert_elisions(self) -> list[dict[str, str]]:
        """Put back editable files whose new content elides code ("... existing code ...")."""
        reverted: list[dict[str, str]] = []
        for rel in self.editable:
            key = self.relative(rel)
            if key not in self.written:
                continue
            before = self.contents.get(key)
            marker = elision_marker(before, read_bytes(self.root / key))
            if marker is None or before is None:
                continue
            try:
                (self.root / key).write_bytes(before)
            except OSError:
                continue
            self.written[key] = before  # its own write: not another program's change
            reverted.append({"path": key, "reason": f"the reply replaced code with {marker!r}"})
        return reverted

    def drop_empty_created(self) -> list[str]:
        """Remove editable files that did not exist before and are still empty.

        Aider touches every editable file into existence; an edit that wrote nothing must not
        leave empty files behind.
        """
        removed: list[str] = []
        for rel in self.editable:
            key = self.relative(rel)
            if self.contents.get(key, b"") is None:
                full = self.root / key
                try:
                    if full.is_file() and full.stat().st_size == 0:
                        full.unlink()
                        removed.append(key)
                        if key in self.written:
                            self.written[key] = None
                except OSError:
                    pass
        return removed
