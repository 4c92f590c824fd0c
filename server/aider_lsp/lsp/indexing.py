"""Keeps the workspace index in step with the editor.

After `initialized`: ask the client to watch every file (dynamic registration of
workspace/didChangeWatchedFiles) and run the first full index in the background under a
$/progress token. Then didSave and watched-file events (create / change / delete; a
rename arrives as delete + create) update the index incrementally.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Sequence
from typing import TYPE_CHECKING

from lsprotocol import types
from pygls.capabilities import get_capability

from .progress import work_done_progress

if TYPE_CHECKING:
    from ..app import Application
    from .language_server import AiderLanguageServer

log = logging.getLogger(__name__)

MAX_WATCHED_EVENTS = 1000  # more files changed at once: one index pass instead of one by one


async def register_file_watchers(ls: AiderLanguageServer) -> None:
    """Ask the client to report file changes made outside the editor (git, Aider, tools)."""
    if not get_capability(
        ls.client_capabilities, "workspace.did_change_watched_files.dynamic_registration", False
    ):
        return
    registration = types.Registration(
        id=str(uuid.uuid4()),
        method=types.WORKSPACE_DID_CHANGE_WATCHED_FILES,
        register_options=types.DidChangeWatchedFilesRegistrationOptions(
            watchers=[types.FileSystemWatcher(glob_pattern="**/*")]
        ),
    )
    try:
        await ls.client_register_capability_async(types.RegistrationParams(registrations=[registration]))
    except Exception as exc:  # the index still follows didSave
        log.warning("client refused file watching: %s", exc)


async def _index_with_progress(ls: AiderLanguageServer, app: Application) -> None:
    title = "Indexing workspace"
    if len(ls.folders.roots) > 1:
        title += f" {app.workspace.name}"
    async with work_done_progress(ls, title, percentage=0) as progress:
        progress.outcome = "failed"
        stats = await app.index_workspace(progress.report if progress.shown else None)
        progress.outcome = f"{stats.scanned} files indexed, {stats.read} read"


def start_watching(ls: AiderLanguageServer) -> None:
    """Once, at start: file changes in every folder reach the server."""
    ls.keep_task(asyncio.ensure_future(register_file_watchers(ls)))


def start_index(ls: AiderLanguageServer, app: Application) -> None:
    """Start a folder's first index in the background (its Application was just made)."""
    ls.keep_task(asyncio.ensure_future(_index_with_progress(ls, app)))


def _by_folder(ls: AiderLanguageServer, uris: Sequence[str]) -> dict[Application, list[str]]:
    """The uris of folders whose Application is alive, as folder-relative paths: a folder not
    open yet catches up with its first index pass."""
    grouped: dict[Application, list[str]] = {}
    for uri in uris:
        located = ls.documents.locate(uri)
        app = ls.folders.apps.alive(located[0]) if located is not None else None
        if located is not None and app is not None:
            grouped.setdefault(app, []).append(located[1])
    return grouped


async def on_saved(ls: AiderLanguageServer, uri: str) -> None:
    for app, relative in _by_folder(ls, [uri]).items():
        await app.files_changed(updated=relative)


def reindex_everything(ls: AiderLanguageServer) -> None:
    """Too many files changed at once to follow one by one (a checkout, a build): one index
    pass in the background per open folder, which reads only what really changed."""
    for app in list(ls.folders.apps.values()):
        start_index(ls, app)


async def on_watched_files_changed(ls: AiderLanguageServer, changes: Sequence[types.FileEvent]) -> None:
    latest = {change.uri: change.type for change in changes}  # the last event of each file counts
    if len(latest) > MAX_WATCHED_EVENTS:
        reindex_everything(ls)
        return
    deleted = {uri for uri, kind in latest.items() if kind == types.FileChangeType.Deleted}
    gone = _by_folder(ls, sorted(deleted))
    for app, updated in _by_folder(ls, [uri for uri in latest if uri not in deleted]).items():
        await app.files_changed(updated=updated, deleted=gone.pop(app, []))
    for app, removed in gone.items():
        await app.files_changed(deleted=removed)


async def on_renamed(ls: AiderLanguageServer, uri_pairs: list[tuple[str, str]]) -> None:
    """workspace/didRenameFiles (renames made in the editor): old names leave, new ones come
    (a file moved to another folder leaves the one index and arrives in the other)."""
    for old_uri, new_uri in uri_pairs:
        old, new = ls.documents.locate(old_uri), ls.documents.locate(new_uri)
        if old is not None and new is not None and old[0] == new[0]:
            app = ls.folders.apps.alive(old[0])
            if app is not None:
                await app.files_renamed([(old[1], new[1])])
            continue
        await on_watched_files_changed(
            ls,
            [
                types.FileEvent(uri=old_uri, type=types.FileChangeType.Deleted),
                types.FileEvent(uri=new_uri, type=types.FileChangeType.Created),
            ],
        )


def register(server: AiderLanguageServer) -> None:
    """File changes reported by the client (saves arrive through lsp/documents.py)."""
    server.protocol.oversized_handlers[types.WORKSPACE_DID_CHANGE_WATCHED_FILES] = lambda: reindex_everything(
        server
    )

    @server.feature(types.WORKSPACE_DID_CHANGE_WATCHED_FILES)
    async def on_watched_files(ls: AiderLanguageServer, params: types.DidChangeWatchedFilesParams) -> None:
        await on_watched_files_changed(ls, params.changes)

    @server.feature(
        types.WORKSPACE_DID_RENAME_FILES,
        types.FileOperationRegistrationOptions(
            filters=[types.FileOperationFilter(pattern=types.FileOperationPattern(glob="**/*"))]
        ),
    )
    async def on_did_rename_files(ls: AiderLanguageServer, params: types.RenameFilesParams) -> None:
        await on_renamed(ls, [(item.old_uri, item.new_uri) for item in params.files])
