"""Open documents as the editor holds them: which are open, and which hold unsaved changes.

A buffer is unsaved when its text is neither what is on disk nor the last text it held in step
with the disk (at didOpen, didSave, or a didChange that left it equal to the disk, such as the
editor reloading a file changed on disk). So a buffer opened with text that is not on disk (a
restored unsaved editor) or typed into is unsaved, while a buffer that only lags behind the
disk is not: after an edit, an editor that has not reloaded the file yet (Neovim until
`:checktime`, VS Code for the moment its watcher takes) still holds the earlier text, and
refusing the next edit or undo for it would be wrong. Edits ask `unsaved_files` at each edit
and undo.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import unquote

from lsprotocol import types
from pygls.uris import to_fs_path

from . import indexing
from .folders import relative_in

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


def _may_equal_disk(text: str, path: Path) -> bool:
    """A cheap size check before reading the file (didChange comes with every keystroke)."""
    try:
        size = path.stat().st_size
    except OSError:
        return False
    encoded = len(text.removeprefix("\ufeff").encode("utf-8", errors="replace"))
    return size in (encoded, encoded + 3)  # + a UTF-8 BOM the buffer does not show


class OpenDocuments:
    """The editor's open documents (pygls's workspace) and the text each last held in step with the disk."""

    def __init__(self, server: AiderLanguageServer) -> None:
        self.server = server
        self.in_step_with_disk: dict[str, str] = {}  # keyed like pygls's workspace: unquoted URIs

    # -- the editor's notifications ------------------------------------------------------------
    def opened(self, item: types.TextDocumentItem) -> None:
        """A buffer opened with text that is not on disk holds unsaved work from the start."""
        self.in_step_with_disk.pop(unquote(item.uri), None)
        self._note_if_on_disk(item.uri, item.text)

    def changed(self, uri: str) -> None:
        """After pygls applied the change: a buffer now equal to the disk (a reload) is in step."""
        document = self.server.workspace.text_documents.get(unquote(uri))
        if document is not None:
            self._note_if_on_disk(uri, document.source)

    def saved(self, uri: str) -> None:
        document = self.server.workspace.text_documents.get(unquote(uri))
        if document is not None:
            self.in_step_with_disk[unquote(uri)] = document.source

    def closed(self, uri: str) -> None:
        self.in_step_with_disk.pop(unquote(uri), None)

    def _note_if_on_disk(self, uri: str, text: str) -> None:
        path = self.path_of(uri)
        if path is not None and _may_equal_disk(text, path) and not differs_from_disk(text, path):
            self.in_step_with_disk[unquote(uri)] = text

    # -- what the Application asks ---------------------------------------------------------------
    def locate(self, uri: str) -> tuple[Path, str] | None:
        """(workspace folder, folder-relative path) of a document URI; None outside every folder."""
        path = to_fs_path(uri)
        return None if path is None else self.server.folders.locate(path)

    def path_of(self, uri: str) -> Path | None:
        located = self.locate(uri)
        return None if located is None else located[0] / located[1]

    def unsaved_files(self, root: Path) -> list[str]:
        """Paths relative to the folder `root` of the open documents under it holding the
        editor's unsaved changes (a nested folder's too: an edit in `root` may reach them)."""
        unsaved: list[str] = []
        for key, document in list(self.server.workspace.text_documents.items()):
            if self.in_step_with_disk.get(key) == document.source:
                continue  # the editor's text was on disk: at most it lags behind a later write
            # the document's own URI: pygls keys documents by an already-unquoted URI, which a
            # second decoding would turn `p%2520.py` (file `p%20.py`) into `p .py`
            relative = self.relative_to(root, document.uri)
            if relative is not None and differs_from_disk(document.source, root / relative):
                unsaved.append(relative)
        return unsaved

    def open_files(self, root: Path) -> list[str]:
        """Paths relative to the folder `root` of its documents open in the editor."""
        documents = list(self.server.workspace.text_documents.values())
        paths = (self.relative_to(root, document.uri) for document in documents)
        return [path for path in paths if path is not None]

    @staticmethod
    def relative_to(root: Path, uri: str) -> str | None:
        """The document's path relative to `root` (a folder inside it included), None outside."""
        path = to_fs_path(uri)
        return None if path is None else relative_in(root, path)


def register(server: AiderLanguageServer) -> None:
    """didOpen/didChange/didSave/didClose: pygls keeps the text, we keep who changed it."""

    @server.feature(types.TEXT_DOCUMENT_DID_OPEN)
    def on_did_open(ls: AiderLanguageServer, params: types.DidOpenTextDocumentParams) -> None:
        ls.documents.opened(params.text_document)

    @server.feature(types.TEXT_DOCUMENT_DID_CHANGE)
    def on_did_change(ls: AiderLanguageServer, params: types.DidChangeTextDocumentParams) -> None:
        ls.documents.changed(params.text_document.uri)
        ls.diagnostic_store.follow_edits(params.text_document.uri, params.content_changes)

    @server.feature(types.TEXT_DOCUMENT_DID_SAVE)
    async def on_did_save(ls: AiderLanguageServer, params: types.DidSaveTextDocumentParams) -> None:
        ls.documents.saved(params.text_document.uri)
        await indexing.on_saved(ls, params.text_document.uri)

    @server.feature(types.TEXT_DOCUMENT_DID_CLOSE)
    def on_did_close(ls: AiderLanguageServer, params: types.DidCloseTextDocumentParams) -> None:
        ls.documents.closed(params.text_document.uri)
