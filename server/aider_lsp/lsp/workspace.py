"""The folders the editor opens, each with its Application: made on first use, closed when the
folder leaves the window (workspace/didChangeWorkspaceFolders), when it is the least recently
used beyond the bound (the pool of workspaces.py, through lsp/folders.py), and at shutdown.

The first folder's Application is made at `initialized` (a one-folder window gets its index and
Aider's warm-up at once, as before); every other folder's when a command first goes there, with
that folder's own settings (workspace/configuration with its scopeUri).
"""

from __future__ import annotations

import asyncio
import logging
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

from lsprotocol import types
from pygls.uris import to_fs_path

from ..workspaces import settle
from . import configuration, indexing

if TYPE_CHECKING:
    from ..app import Application
    from ..config.settings import Settings
    from .language_server import AiderLanguageServer

log = logging.getLogger(__name__)


def initial_folders(params: types.InitializeParams) -> list[str]:
    """The folders initialize names: its workspaceFolders, else the older rootUri / rootPath."""
    if params.workspace_folders:
        paths = [to_fs_path(folder.uri) for folder in params.workspace_folders]
        return [path for path in paths if path]
    if params.root_uri:
        path = to_fs_path(params.root_uri)
        return [path] if path else []
    return [params.root_path] if params.root_path else []


def build(ls: AiderLanguageServer, root: Path, settings: Settings) -> Application | None:
    """The folder's Application (imported here: see lifecycle.py), None when it cannot open
    (`ls.workspace_problem` says why)."""
    from ..app import Application

    try:
        app = Application.for_server(root, settings, partial(ls.documents.unsaved_files, root))
    except (OSError, ValueError) as exc:
        log.error("cannot open workspace folder %s: %s", root, exc)
        ls.workspace_problem = f"aider-lsp cannot open the workspace folder {root}: {exc}"
        return None
    ls.folders.apps.keep(root, app)
    return app


def open_first_folder(ls: AiderLanguageServer) -> None:
    """At `initialized`: the first folder's Application, with the settings known so far."""
    assert ls.settings is not None  # applied just before
    if ls.folders.roots:
        build(ls, ls.folders.roots[0], ls.settings)
    else:
        log.warning("no workspace folder: commands will ask the user to open one")


def start_services(ls: AiderLanguageServer, app: Application) -> None:
    """The folder's first index and Aider's start-up, in the background."""
    indexing.start_index(ls, app)
    ls.keep_task(asyncio.create_task(app.warm_up(), name=f"aider-warm-up {app.workspace.name}"))


async def application(ls: AiderLanguageServer, root: Path) -> Application | None:
    """The folder's Application, made now (with the folder's settings) when it has none."""
    app = ls.folders.apps.use(root)
    if app is not None:
        return app
    settings = await configuration.folder_settings(ls, root)
    app = ls.folders.apps.use(root)  # made meanwhile by another request
    if app is not None:
        return app
    app = build(ls, root, settings)
    if app is not None:
        log.info("opened workspace folder %s", root)
        start_services(ls, app)
    return app


async def close_all(ls: AiderLanguageServer) -> None:
    """Shutdown: every folder's Aider server and index, while the commands that were still
    running (cancelled by then: lsp/protocol.py) settle, e.g. a workflow records its run.
    Bounded by the pool's close time either way: the editor is waiting for the answer."""
    pool = ls.folders.apps
    await asyncio.gather(settle(ls.running_commands, pool.close_seconds), pool.aclose())


def folders_changed(ls: AiderLanguageServer, event: types.WorkspaceFoldersChangeEvent) -> None:
    """Removed folders close their Application now; added ones open on first use."""
    for folder in event.removed:
        path = to_fs_path(folder.uri)
        if path:
            ls.folders.remove(path)
    ls.folders.add(path for folder in event.added if (path := to_fs_path(folder.uri)))


def register(server: AiderLanguageServer) -> None:
    @server.feature(types.WORKSPACE_DID_CHANGE_WORKSPACE_FOLDERS)
    def on_folders_changed(ls: AiderLanguageServer, params: types.DidChangeWorkspaceFoldersParams) -> None:
        folders_changed(ls, params.event)
