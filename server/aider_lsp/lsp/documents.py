"""Open documents as the editor holds them: which are open, and which hold unsaved changes.

A buffer is unsaved when the editor changed it since it was opened or saved (didChange after
didOpen/didSave) and its text is not what is on disk, or when it was opened with text that is
not on disk (a restored unsaved editor). A buffer the editor has not changed is not unsaved,
even when the file changed on disk under it: after an edit, an editor that has not reloaded
the file yet (Neovim until `:checktime`) still holds the old text, and refusing the next edit
or undo for it would be wrong. Edits ask `unsaved_files` at each edit and undo.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import unquote

from lsprotocol import types
from pygls.uris import to_fs_path

from . import indexing

if TYPE_CHECKING:
    from .language_server import AiderLanguageServer


def differs_from_disk(buffer_text: str, path: Path) -> bool:
    """Is the buffer's text not what is on disk?

    The disk bytes are decoded as they are (no newline translation: a CRLF file's buffer holds
    CRLF) and a UTF-8 BOM, which editors do not show in the buffer, is ignored; otherwise every
    open CRLF or BOM file would count as unsaved and Aider would refuse it."""
    try:
        disk = path.read_bytes().decode("utf-8", errors="replace")
    except OSError:
        return True  # an unsaved new file
    return disk.removeprefix("\ufeff") != buffer_text.removeprefix("\ufeff")


class OpenDocuments:
    """The editor's open documents (pygls's workspace) and which of them the editor changed."""

    def __init__(self, server: AiderLanguageServer) -> None:
        self.server = server
        self.changed_by_editor: set[str] = set()  # keyed like pygls's workspace: unquoted URIs

    # -- the editor's notifications ------------------------------------------------------------
    def opened(self, item: types.TextDocumentItem) -> None:
        """A buffer opened with text that is not on disk holds unsaved work from the start."""
        path = self.path_of(item.uri)
        if path is not None and differs_from_disk(item.text, path):
            self.changed_by_editor.add(unquote(item.uri))
        else:
            self.changed_by_editor.discard(unquote(item.uri))

    def changed(self, uri: str) -> None:
        self.changed_by_editor.add(unquote(uri))

    def saved_or_closed(self, uri: str) -> None:
        self.changed_by_editor.discard(unquote(uri))

    # -- what the Application asks ---------------------------------------------------------------
    def workspace_relative(self, uri: str) -> str | None:
        """Workspace-relative path of a document URI, or None when it is outside."""
        app = self.server.app
        path = to_fs_path(uri)
        if app is None or path is None:
            return None
        try:
            return app.files.relative(path)
        except ValueError:
            return None

    def path_of(self, uri: str) -> Path | None:
        relative = self.workspace_relative(uri)
        app = self.server.app
        return None if relative is None or app is None else app.workspace / relative

    def unsaved_files(self) -> list[str]:
        """Workspace-relative paths of the open documents holding the editor's unsaved changes."""
        unsaved: list[str] = []
        for key, document in list(self.server.workspace.text_documents.items()):
            if key not in self.changed_by_editor:
                continue
            # the document's own URI: pygls keys documents by an already-unquoted URI, which a
            # second decoding would turn `p%2520.py` (file `p%20.py`) into `p .py`
            relative = self.workspace_relative(document.uri)
            path = self.path_of(document.uri)
            if relative is not None and path is not None and differs_from_disk(document.source, path):
                unsaved.append(relative)
        return unsaved

    def open_files(self) -> list[str]:
        """Workspace-relative paths of the documents open in the editor."""
        documents = list(self.server.workspace.text_documents.values())
        paths = (self.workspace_relative(document.uri) for document in documents)
        return [path for path in paths if path is not None]


def register(server: AiderLanguageServer) -> None:
    """didOpen/didChange/didSave/didClose: pygls keeps the text, we keep who changed it."""

    @server.feature(types.TEXT_DOCUMENT_DID_OPEN)
    def on_did_open(ls: AiderLanguageServer, params: types.DidOpenTextDocumentParams) -> None:
        ls.documents.opened(params.text_document)

    @server.feature(types.TEXT_DOCUMENT_DID_CHANGE)
    def on_did_change(ls: AiderLanguageServer, params: types.DidChangeTextDocumentParams) -> None:
        ls.documents.changed(params.text_document.uri)

    @server.feature(types.TEXT_DOCUMENT_DID_SAVE)
    async def on_did_save(ls: AiderLanguageServer, params: types.DidSaveTextDocumentParams) -> None:
        ls.documents.saved_or_closed(params.text_document.uri)
        await indexing.on_saved(ls, params.text_document.uri)

    @server.feature(types.TEXT_DOCUMENT_DID_CLOSE)
    def on_did_close(ls: AiderLanguageServer, params: types.DidCloseTextDocumentParams) -> None:
        ls.documents.saved_or_closed(params.text_document.uri)
