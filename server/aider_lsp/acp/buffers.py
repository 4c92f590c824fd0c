"""The user's editor buffers before an Edit or Workflow turn: a file whose buffer differs from
the file on disk is edited only when the user allows it.

Why: Aider edits the files on disk; an ACP editor may hold unsaved text for one of them (the
LSP front end knows its buffers; ACP has no such notice). When the client offers
`fs/read_text_file`, each file of the turn is read through it and compared with the disk; a
difference asks `session/request_permission` (allow once / reject). A rejected file leaves the
turn and is held from Aider for it (the Application's unsaved-files provider: no edit, no
index pick, no write outside the chat's files). Without the capability nothing is read.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from .permission import may_edit

if TYPE_CHECKING:
    from acp.interfaces import Client

    from .session import AcpSession

log = logging.getLogger(__name__)


class HeldFiles:
    """The files each session's running turn keeps from Aider (workspace-relative, as every
    unsaved-files provider gives them), for one workspace's Application: its unsaved-files
    provider, asked at each edit, and at the apply of an isolated run (held: not written)."""

    def __init__(self) -> None:
        self._by_session: dict[str, set[str]] = {}

    def hold(self, session_id: str, paths: Sequence[str]) -> None:
        self._by_session.setdefault(session_id, set()).update(paths)

    def release(self, session_id: str) -> None:
        self._by_session.pop(session_id, None)

    def __call__(self) -> tuple[str, ...]:
        return tuple(sorted({path for paths in self._by_session.values() for path in paths}))


async def rejected_buffers(session: AcpSession, files: Sequence[str]) -> list[str]:
    """The turn's files the user did not allow to be edited (their buffer differs from disk)."""
    client = session.client
    if client is None or not session.reads_buffers:
        return []
    rejected = []
    for rel in files:
        path = session.app.workspace / rel
        if await _differs(client, session.id, path) and not await may_edit(client, session, rel, str(path)):
            rejected.append(rel)
    return rejected


async def _differs(client: Client, session_id: str, path: Path) -> bool:
    """The editor's text for the file is not the file on disk (a file the client cannot read,
    or one not on disk, is not asked about)."""
    try:
        disk = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return False
    try:
        buffer = await client.read_text_file(session_id=session_id, path=str(path))
    except Exception as exc:  # the client could not read it: nothing to compare
        log.info("fs/read_text_file %s failed: %s", path, exc)
        return False
    return same_text(buffer.content) != same_text(disk)


def same_text(text: str) -> str:
    """A file's text as an editor buffer holds it: line endings as LF, no final newline (a
    client's buffer gives its lines joined, without the newline the file ends with: avante
    does; a CRLF file's buffer reads LF). Only a change of the lines themselves differs."""
    return text.replace("\r\n", "\n").removesuffix("\n")
