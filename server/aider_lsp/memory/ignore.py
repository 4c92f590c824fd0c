"""Which workspace files the index may hold.

A file is indexed only when git would not ignore it (every `.gitignore` from the root down,
negations included), it matches none of the user's `contextExcludes` (gitignore syntax), it
is not a secret (FileAccessManager.is_secret), not binary and not larger than the cap.
Directories are pruned during the walk so `node_modules/` and friends cost nothing.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from stat import S_ISREG

import pathspec

from ..guards.files import BINARY_SNIFF_BYTES, AccessDenied, FileAccessManager, looks_binary

log = logging.getLogger(__name__)

# Never worth indexing, whatever .gitignore says (tool state, caches, dependencies).
# Virtualenvs are recognised by their pyvenv.cfg, not by name (`venv/` may be a package).
ALWAYS_EXCLUDED_DIRS: frozenset[str] = frozenset(
    {
        ".git",
        ".hg",
        ".svn",
        ".aider-lsp",
        ".venv",
        "node_modules",
        "__pycache__",
        ".mypy_cache",
        ".pytest_cache",
        ".ruff_cache",
        ".tox",
        ".nox",
        ".hypothesis",
        ".idea",
        ".eggs",
    }
)
ALWAYS_EXCLUDED_PREFIXES: tuple[str, ...] = (".aider",)  # .aider.chat.history.md, .aider.tags…


@dataclass(frozen=True)
class Candidate:
    """A file the walk found and the rules allow; its stat as seen during the walk."""

    path: str
    size: int
    mtime: float


class IgnoreRules:
    """The workspace's ignore rules, loaded once and reloaded when a .gitignore changes."""

    def __init__(
        self,
        files: FileAccessManager,
        *,
        excludes: list[str] | tuple[str, ...] = (),
        max_file_bytes: int = 1_000_000,
    ) -> None:
        self.files = files
        self.root = files.root
        self.max_file_bytes = max_file_bytes
        self.excludes = pathspec.GitIgnoreSpec.from_lines(list(excludes))
        self._gitignores: dict[str, pathspec.GitIgnoreSpec | None] = {}

    # -- loading -------------------------------------------------------------------------
    def _spec_for(self, directory: str) -> pathspec.GitIgnoreSpec | None:
        """The rules of `directory/.gitignore` ('' is the root), read once and cached."""
        if directory in self._gitignores:
            return self._gitignores.get(directory)
        spec: pathspec.GitIgnoreSpec | None = None
        try:
            text = (self.root / directory / ".gitignore").read_text(encoding="utf-8", errors="replace")
        except OSError:
            pass
        else:
            spec = pathspec.GitIgnoreSpec.from_lines(text.splitlines())
        self._gitignores[directory] = spec  # (a concurrent reload() may clear it: harmless)
        return spec

    def reload(self) -> None:
        """A .gitignore changed: forget the cached rules (they are re-read on demand)."""
        self._gitignores.clear()

    # -- decisions -----------------------------------------------------------------------
    def _git_ignored(self, rel: str, is_dir: bool) -> bool:
        """Apply every .gitignore from the root down to the path's parent; deeper ones win."""
        probe = rel + "/" if is_dir else rel
        parts = rel.split("/")[:-1]
        verdict: bool | None = None
        for depth in range(len(parts) + 1):
            directory = "/".join(parts[:depth])
            spec = self._spec_for(directory)
            if spec is None:
                continue
            local = probe[len(directory) + 1 :] if directory else probe
            result = spec.check_file(local).include
            if result is not None:
                verdict = result
        return bool(verdict)

    def _dir_ignored(self, rel_dir: str) -> bool:
        name = rel_dir.rsplit("/", 1)[-1]
        if name in ALWAYS_EXCLUDED_DIRS or name.startswith(ALWAYS_EXCLUDED_PREFIXES):
            return True
        if (self.root / rel_dir / "pyvenv.cfg").is_file():  # a virtualenv, whatever its name
            return True
        if self.excludes.check_file(rel_dir + "/").include:
            return True
        return self._git_ignored(rel_dir, is_dir=True)

    def _parents_ignored(self, rel: str) -> bool:
        parts = rel.split("/")[:-1]
        return any(self._dir_ignored("/".join(parts[: i + 1])) for i in range(len(parts)))

    def left_out(self, rel: str, is_dir: bool) -> bool:
        """Whether a copy of the workspace (an isolated run's, without git) leaves `rel` out:
        the ignore rules alone. Secrets are copied: the run's tests may read them, and the
        model never does (the tree's file rules are the workspace's)."""
        if is_dir:
            return self._dir_ignored(rel)
        name = rel.rsplit("/", 1)[-1]
        if name.startswith(ALWAYS_EXCLUDED_PREFIXES) or self.excludes.check_file(rel).include:
            return True
        return self._git_ignored(rel, is_dir=False)

    def path_allowed(self, rel: str) -> bool:
        """Name-based rules only (no disk access): gitignore, excludes, secrets."""
        name = rel.rsplit("/", 1)[-1]
        if name.startswith(ALWAYS_EXCLUDED_PREFIXES) or self._parents_ignored(rel):
            return False
        if self.excludes.check_file(rel).include or self._git_ignored(rel, is_dir=False):
            return False
        return not self.files.is_secret(rel)

    def check(self, rel: str) -> Candidate | None:
        """The file as a Candidate if the index may hold it (rules, size, binary), else None."""
        try:
            real = self.files.resolve(rel)
            rel = self.files.relative(real)
        except AccessDenied:
            return None
        if not self.path_allowed(rel) or self.files.is_secret(real):
            return None
        return self._stat_candidate(real, rel)

    def _stat_candidate(self, real: Path, rel: str) -> Candidate | None:
        try:
            stat = os.stat(real)
            if not S_ISREG(stat.st_mode) or stat.st_size > self.max_file_bytes:
                return None
            with real.open("rb") as handle:
                head = handle.read(BINARY_SNIFF_BYTES)
        except OSError:
            return None
        if looks_binary(head):
            return None
        return Candidate(rel, stat.st_size, stat.st_mtime)

    def walk(self, start: str = "") -> Iterator[Candidate]:
        """Every indexable file of the workspace (or of folder `start`), pruning ignored folders."""
        if start and (self._parents_ignored(start + "/_") or self._dir_ignored(start)):
            return
        for current, dirnames, filenames in os.walk(self.root / start):
            rel_dir = Path(current).relative_to(self.root).as_posix()
            rel_dir = "" if rel_dir == "." else rel_dir
            dirnames[:] = sorted(d for d in dirnames if not self._dir_ignored(_join(rel_dir, d)))
            for name in sorted(filenames):
                rel = _join(rel_dir, name)
                if name.startswith(ALWAYS_EXCLUDED_PREFIXES):
                    continue
                if self.excludes.check_file(rel).include or self._git_ignored(rel, False):
                    continue
                if self.files.is_secret_in_tree(rel):
                    continue
                full = Path(current) / name
                if full.is_symlink():
                    try:
                        real = self.files.resolve(rel)  # a link out of the workspace: skip
                    except AccessDenied:
                        continue
                    if self.files.is_secret(real):
                        continue
                candidate = self._stat_candidate(full, rel)
                if candidate is not None:
                    yield candidate


def _join(directory: str, name: str) -> str:
    return f"{directory}/{name}" if directory else name
