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


async def _index_with_progress(ls: AiderLanguageServer) -> None:
    app = ls.app
    if app is None:
        return
    async with work_done_progress(ls, "Indexing workspace", percentage=0) as progress:
        progress.outcome = "failed"
        stats = await app.index_workspace(progress.report if progress.shown else None)
        progress.outcome = f"{stats.scanned} files indexed, {stats.read} read"


def start_workspace_index(ls: AiderLanguageServer) -> None:
    """Start the first index in the background; `initialized` returns at once."""
    if ls.app is None:
        return
    ls.keep_task(asyncio.ensure_future(register_file_watchers(ls)))
    ls.keep_task(asyncio.ensure_future(_index_with_progress(ls)))


async def on_saved(ls: AiderLanguageServer, uri: str) -> None:
    if ls.app is None:
        return
    relative = ls.documents.workspace_relative(uri)
    if relative is not None:
        await ls.app.files_changed(updated=[relative])


def reindex_everything(ls: AiderLanguageServer) -> None:
    """Too many files changed at once to follow one by one (a checkout, a build): one index
    pass in the background, which reads only what really changed."""
    if ls.app is not None:
        ls.keep_task(asyncio.ensure_future(_index_with_progress(ls)))


async def on_watched_files_changed(ls: AiderLanguageServer, changes: Sequence[types.FileEvent]) -> None:
    if ls.app is None:
        return
    latest = {change.uri: change.type for change in changes}  # the last event of each file counts
    if len(latest) > MAX_WATCHED_EVENTS:
        reindex_everything(ls)
        return
    updated: list[str] = []
    deleted: list[str] = []
    for uri, kind in latest.items():
        relative = ls.documents.workspace_relative(uri)
        if relative is None:
            continue
        (deleted if kind == types.FileChangeType.Deleted else updated).append(relative)
    if updated or deleted:
        await ls.app.files_changed(updated=updated, deleted=deleted)


async def on_renamed(ls: AiderLanguageServer, uri_pairs: list[tuple[str, str]]) -> None:
    """workspace/didRenameFiles (renames made in the editor): old names leave, new ones come."""
    if ls.app is None:
        return
    pairs = [
        (old, new)
        for old_uri, new_uri in uri_pairs
        if (old := ls.documents.workspace_relative(old_uri)) is not None
        and (new := ls.documents.workspace_relative(new_uri)) is not None
    ]
    if pairs:
        await ls.app.files_renamed(pairs)


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
