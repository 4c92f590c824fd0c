"""The window's workspace folders, and the Application of each folder in use.

One server serves every folder of a multi-root window (a `.code-workspace`: a monorepo's
packages, a library beside its app). Each folder gets its own Application (its own Aider server,
index, checkpoints, test command), made when the folder is first used, not at launch: ten
folders must not start ten Aider servers. The Applications live in the pool both front ends
share (workspaces.py): at most `limit` stay alive (the `maxOpenFolders` setting, read at
`initialized`); opening one more closes the least recently used (its Aider server and index
stop; it opens again on its next use). A folder that a command is running in is never the one
closed.

A path belongs to the innermost open folder that holds it (a folder inside another is its own).
Building an Application is the caller's (lsp/workspace.py); the pool closes them.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

from ..workspaces import ApplicationPool

if TYPE_CHECKING:
    from ..app import Application

log = logging.getLogger(__name__)


def real(path: str | os.PathLike[str]) -> Path:
    return Path(os.path.realpath(path))


def relative_in(root: Path, path: str | os.PathLike[str]) -> str | None:
    """POSIX path of `path` relative to `root` (lexically, then resolved), None when outside."""
    for form in (Path(os.path.normpath(os.path.abspath(path))), real(path)):
        if form != root and root in form.parents:
            return form.relative_to(root).as_posix()
    return None


class FolderApps:
    """The open folders (real paths, in the editor's order) and the pool of their Applications."""

    def __init__(self) -> None:
        self.roots: list[Path] = []
        self.apps: ApplicationPool[Application] = ApplicationPool()

    # -- the folders -------------------------------------------------------------------------
    def add(self, paths: Iterable[str | os.PathLike[str]]) -> None:
        for path in paths:
            root = real(path)
            if root not in self.roots:
                self.roots.append(root)

    def remove(self, path: str | os.PathLike[str]) -> None:
        """Forget a folder; its Application, when it has one, closes."""
        root = real(path)
        if root in self.roots:
            self.roots.remove(root)
        if self.apps.alive(root) is not None:
            log.info("workspace folder removed: closing %s", root)
        self.apps.drop(root)

    def folder_of(self, path: str | os.PathLike[str]) -> Path | None:
        """The innermost open folder holding `path` (a folder is its own)."""
        holders = [root for root in self.roots if real(path) == root or relative_in(root, path) is not None]
        return max(holders, key=lambda root: len(root.parts), default=None)

    def locate(self, path: str | os.PathLike[str]) -> tuple[Path, str] | None:
        """(folder, folder-relative path) of a file, None when no open folder holds it."""
        root = self.folder_of(path)
        if root is None:
            return None
        relative = relative_in(root, path)
        return None if relative is None else (root, relative)

    def names(self) -> str:
        return ", ".join(root.name or str(root) for root in self.roots)
