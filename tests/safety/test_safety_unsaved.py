"""Unsaved-buffer detection: exact, whatever the line endings or a BOM (no Aider needed).

Why: a buffer counted as unsaved makes Aider refuse the file; a changed buffer counted as
saved would let Aider write under the user's unsaved work.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from lsprotocol import types

from aider_lsp_testing.lsp_session import execute


def _open(client: Any, path: Path, text: str) -> None:
    client.text_document_did_open(
        types.DidOpenTextDocumentParams(
            types.TextDocumentItem(uri=path.as_uri(), language_id="python", version=1, text=text)
        )
    )


async def test_crlf_and_bom_files_open_unchanged_are_not_unsaved(lsp: Any, tmp_path: Path) -> None:
    root = tmp_path / "ws"
    root.mkdir()
    crlf, bom, lf = root / "crlf.py", root / "bom.py", root / "lf.py"
    crlf.write_bytes(b"A = 1\r\nB = 2\r\n")
    bom.write_bytes(b"\xef\xbb\xbfC = 3\n")
    lf.write_bytes(b"D = 4\n")
    async with lsp(root, init_options={}, env={"AIDER_LSP_AIDER_MODEL": ""}) as client:
        _open(client, crlf, "A = 1\r\nB = 2\r\n")  # what an editor holds for an unchanged file
        _open(client, bom, "C = 3\n")
        _open(client, lf, "D = 4\r\n")  # really different from the disk
        for name in ("crlf.py", "bom.py"):
            result = await execute(
                client, "aider-lsp.aider.automatic", {"prompt": "x", "file_context": [name]}
            )
            assert result["notes"]["error"]["reason"] == "configuration_error", result  # got past the guard
        changed = await execute(
            client, "aider-lsp.aider.automatic", {"prompt": "x", "file_context": ["lf.py"]}
        )
        assert "unsaved changes" in changed["content"], changed
        client.text_document_did_change(
            types.DidChangeTextDocumentParams(
                text_document=types.VersionedTextDocumentIdentifier(uri=crlf.as_uri(), version=2),
                content_changes=[types.TextDocumentContentChangeWholeDocument(text="A = 1\r\nB = 22\r\n")],
            )
        )
        edited = await execute(
            client, "aider-lsp.aider.automatic", {"prompt": "x", "file_context": ["crlf.py"]}
        )
        assert "unsaved changes" in edited["content"], edited
