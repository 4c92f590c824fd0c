"""The window's workspace folders, and the Application of each folder in use.

One server serves every folder of a multi-root window (a `.code-workspace`: a monorepo's
packages, a library beside its app). Each folder gets its own Application (its own Aider server,
index, checkpoints, test command), made when the folder is first used, not at launch: ten
folders must not start ten Aider servers. At most `limit` stay alive (the `maxOpenFolders`
setting, read at `initialized`); opening one more closes the least recently used (its Aider
server and index stop; it opens again on its next use). A folder that a command is running in
is never the one closed.

A path belongs to the innermost open folder that holds it (a folder inside another is its own).
Pure bookkeeping: building an Application and closing one are the caller's (lsp/workspace.py).
"""

from __future__ import annotations

import os
from collections import OrderedDict
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..app import Application

MAX_OPEN_FOLDERS = 4  # Applications alive at once by default (as Settings.max_open_folders)


def real(path: str | os.PathLike[str]) -> Path:
    return Path(os.path.realpath(path))


def relative_in(root: Path, path: str | os.PathLike[str]) -> str | None:
    """POSIX path of `path` relative to `root` (lexically, then resolved), None when outside."""
    for form in (Path(os.path.normpath(os.path.abspath(path))), real(path)):
        if form != root and root in form.parents:
            return form.relative_to(root).as_posix()
    return None


class FolderApps:
    """The open folders (real paths, in the editor's order) and their Applications, least
    recently used first."""

    def __init__(self, limit: int = MAX_OPEN_FOLDERS) -> None:
        self.limit = max(1, limit)
        self.roots: list[Path] = []
        self.apps: OrderedDict[Path, Application] = OrderedDict()
        self.busy: dict[Path, int] = {}  # folder → commands running in it

    # -- the folders -------------------------------------------------------------------------
    def add(self, paths: Iterable[str | os.PathLike[str]]) -> None:
        for path in paths:
            root = real(path)
            if root not in self.roots:
                self.roots.append(root)

    def remove(self, path: str | os.PathLike[str]) -> Application | None:
        """Forget a folder; its Application (to close) when it had one."""
        root = real(path)
        if root in self.roots:
            self.roots.remove(root)
        return self.apps.pop(root, None)

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

    # -- their Applications ------------------------------------------------------------------
    def alive(self, root: Path) -> Application | None:
        return self.apps.get(root)

    def use(self, root: Path) -> Application | None:
        """The folder's Application, now the most recently used (None when it has none)."""
        app = self.apps.get(root)
        if app is not None:
            self.apps.move_to_end(root)
        return app

    def most_recent(self) -> Path | None:
        """The folder used last (a command about no folder in particular goes there)."""
        return next(reversed(self.apps), None) if self.apps else None

    def keep(self, root: Path, app: Application) -> list[Application]:
        """Hold a new Application; returns those closed to stay within the limit (to close)."""
        self.apps[root] = app
        self.apps.move_to_end(root)
        evicted: list[Application] = []
        for candidate in list(self.apps):
            if len(self.apps) <= self.limit:
                break
            if candidate != root and not self.busy.get(candidate):
                evicted.append(self.apps.pop(candidate))
        return evicted

    def started(self, root: Path) -> None:
        self.busy[root] = self.busy.get(root, 0) + 1

    def finished(self, root: Path) -> None:
        self.busy[root] = max(self.busy.get(root, 0) - 1, 0)

    def names(self) -> str:
        return ", ".join(root.name or str(root) for root in self.roots)
