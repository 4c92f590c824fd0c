"""Which workspace folder a command is about, in a window with one folder or several.

Every command's argument may carry `folder` (the folder's URI or path; the VS Code extension
sends it: the folder of the files the user chose, else the one the user picked); its relative
paths are then relative to that folder. Without it, the folder is the one holding the files the
command names by absolute path or URI (`selection.uri`, absolute `file_context` entries…), else
the only folder of the window. A command that names no file in a window of several folders is
refused, saying to pass `folder`; so is a file in no open folder (by name; in a one-folder
window the Application refuses it, as each command does), or files from several folders at
once. Commands about no folder in particular (listing models or tools, clearing diagnostics) go
to the folder used last.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pygls.uris import to_fs_path

from .folders import FolderApps

FOLDER_FIELD = "folder"
PATH_FIELDS = ("file_context", "readonly_files", "file_paths", "target_files", "initial_files")


@dataclass(frozen=True)
class Refusal:
    """Why a command has no folder to run in: the message names the files or the folders."""

    message: str


def take_folder(raw: dict[str, Any]) -> tuple[dict[str, Any], Any]:
    """The argument without its `folder` field (the command's model never sees it), and that field."""
    rest = {key: value for key, value in raw.items() if key != FOLDER_FIELD}
    return rest, raw.get(FOLDER_FIELD)


def as_path(text: str) -> str | None:
    """A file URI or an absolute path as a path; None for anything else (a relative path)."""
    if text.startswith("file:"):
        return to_fs_path(text)
    return text if os.path.isabs(text) else None


def named_paths(raw: dict[str, Any]) -> list[str]:
    """The absolute paths a command's argument names: its selection's document, absolute file entries."""
    named: list[str] = []
    selection = raw.get("selection")
    if isinstance(selection, dict) and isinstance(selection.get("uri"), str):
        named.append(selection["uri"])
    for field in PATH_FIELDS:
        value = raw.get(field)
        if isinstance(value, list):
            named.extend(item for item in value if isinstance(item, str))
    return [path for text in named if (path := as_path(text)) is not None]


def _explicit(folders: FolderApps, folder: Any) -> Path | Refusal:
    path = as_path(folder) if isinstance(folder, str) else None
    root = folders.folder_of(path) if path is not None else None
    if root is None:
        return Refusal(
            f"the folder {folder!r} is not open in this window (open: {folders.names() or 'none'})"
        )
    return root


def _from_files(folders: FolderApps, paths: list[str]) -> Path | Refusal | None:
    """The one folder holding the files inside a folder (files outside every folder are the
    Application's to refuse, by name, each as its command does), None when none is inside."""
    roots = {root for path in paths if (root := folders.folder_of(path)) is not None}
    if len(roots) > 1:
        names = ", ".join(sorted(root.name for root in roots))
        return Refusal(f"the files named are in several workspace folders ({names}): one folder at a time")
    return next(iter(roots), None)


def route(
    folders: FolderApps, raw: dict[str, Any], folder: Any, *, any_folder: bool = False
) -> Path | Refusal:
    """The folder a command runs in (see the module's docstring)."""
    if not folders.roots:
        return Refusal("aider-lsp needs a workspace folder: open a folder in the editor")
    if folder is not None:
        return _explicit(folders, folder)
    paths = named_paths(raw)
    from_files = _from_files(folders, paths)
    if from_files is not None:
        return from_files
    if len(folders.roots) == 1:
        return folders.roots[0]
    if paths:
        return Refusal(f"{paths[0]} is in no workspace folder open in this window ({folders.names()})")
    recent = folders.apps.most_recent()
    if any_folder:
        return recent if recent is not None else folders.roots[0]
    return Refusal(
        f"this window has {len(folders.roots)} workspace folders ({folders.names()}) and the command "
        f"names no file: say which folder (the `{FOLDER_FIELD}` field: its URI)"
    )
