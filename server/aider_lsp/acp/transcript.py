"""A session's conversation kept in the workspace's `.aider-lsp/acp-sessions/`, for
`session/load` (replayed after an agent restart) and `session/list`.

Two files a session: `<id>.json` (its title, mode, files and times, rewritten at each turn)
and `<id>.jsonl` (the conversation: the user's prompts and the agent's messages, thoughts,
tool calls and plans, one `session/update` a line, as sent). Bounded: a session's
conversation stops being kept at MAX_SESSION_BYTES (a last line says so) and a workspace keeps
its MAX_SESSIONS most recent sessions (older ones are deleted when a session starts). A file
that cannot be written only logs: the session goes on, unkept.
"""

from __future__ import annotations

import json
import logging
import re
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from acp.schema import SessionNotification

from acp import update_agent_message_text

from ..config.state import STATE_DIR, ensure_state_dir

log = logging.getLogger(__name__)

FOLDER = "acp-sessions"
MAX_SESSION_BYTES = 2 * 1024 * 1024  # a session's conversation: 2 MiB
MAX_SESSIONS = 50  # sessions kept per workspace
TITLE_CHARS = 80
# what a replay shows: the conversation, not the session's state of the moment
KEPT_UPDATES = frozenset(
    {
        "user_message_chunk",
        "agent_message_chunk",
        "agent_thought_chunk",
        "tool_call",
        "tool_call_update",
        "plan",
    }
)
_ID = re.compile(r"^[0-9a-f]{32}$")
CUT_NOTE = "\n\n(The rest of this session was not kept: a session keeps at most 2 MiB of conversation.)"


def valid_id(session_id: object) -> bool:
    """A session id this agent made (a uuid4 hex): nothing else names a file."""
    return isinstance(session_id, str) and bool(_ID.match(session_id))


def _folder(workspace: Path) -> Path:
    return workspace / STATE_DIR / FOLDER


@dataclass
class SessionMeta:
    """What session/list shows and session/load restores."""

    session_id: str
    cwd: str
    title: str | None = None
    mode: str | None = None
    files: list[str] = field(default_factory=list)
    updated_at: float = field(default_factory=time.time)

    @property
    def updated_iso(self) -> str:
        return datetime.fromtimestamp(self.updated_at, UTC).isoformat().replace("+00:00", "Z")


class Transcript:
    """The kept conversation of one session (appended as its updates are sent)."""

    def __init__(self, workspace: Path, session_id: str) -> None:
        self.workspace = workspace
        self.session_id = session_id
        self.size = 0
        self.cut = False
        path = self.path
        if path.exists():
            self.size = path.stat().st_size

    @property
    def path(self) -> Path:
        return _folder(self.workspace) / f"{self.session_id}.jsonl"

    def record(self, update: Any) -> None:
        """Keep one update when it is conversation and the bound allows."""
        if self.cut or getattr(update, "session_update", None) not in KEPT_UPDATES:
            return
        line = json.dumps(update.model_dump(mode="json", by_alias=True, exclude_none=True)) + "\n"
        if self.size + len(line) > MAX_SESSION_BYTES:
            self.cut = True
            note = update_agent_message_text(CUT_NOTE).model_dump(
                mode="json", by_alias=True, exclude_none=True
            )
            line = json.dumps(note) + "\n"
        self._append(line)

    def _append(self, line: str) -> None:
        try:
            ensure_state_dir(self.workspace)
            _folder(self.workspace).mkdir(exist_ok=True)
            with self.path.open("a", encoding="utf-8") as out:
                out.write(line)
            self.size += len(line.encode())
        except OSError as exc:
            log.warning("cannot keep session %s: %s", self.session_id, exc)
            self.cut = True

    def save_meta(self, meta: SessionMeta) -> None:
        meta.updated_at = time.time()
        try:
            ensure_state_dir(self.workspace)
            _folder(self.workspace).mkdir(exist_ok=True)
            (_folder(self.workspace) / f"{self.session_id}.json").write_text(
                json.dumps(meta.__dict__), encoding="utf-8"
            )
        except OSError as exc:
            log.warning("cannot keep session %s: %s", self.session_id, exc)


def read_meta(workspace: Path, session_id: str) -> SessionMeta | None:
    """A kept session's meta (None: not kept here, or unreadable)."""
    if not valid_id(session_id):
        return None
    try:
        data = json.loads((_folder(workspace) / f"{session_id}.json").read_text(encoding="utf-8"))
        return SessionMeta(**data)
    except (OSError, ValueError, TypeError) as exc:
        log.info("no kept session %s in %s: %s", session_id, workspace, exc)
        return None


def replay(workspace: Path, session_id: str) -> list[Any]:
    """A kept session's conversation, as the updates first sent (an unreadable line skipped)."""
    path = _folder(workspace) / f"{session_id}.jsonl"
    updates = []
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError:
        return []
    for line in lines:
        try:
            raw = json.loads(line)
            updates.append(
                SessionNotification.model_validate({"sessionId": session_id, "update": raw}).update
            )
        except ValueError as exc:
            log.info("a kept update of %s skipped: %s", session_id, exc)
    return updates


def listed(workspace: Path) -> list[SessionMeta]:
    """The workspace's kept sessions, newest first."""
    found = []
    for path in _folder(workspace).glob("*.json"):
        meta = read_meta(workspace, path.stem)
        if meta is not None:
            found.append(meta)
    return sorted(found, key=lambda meta: meta.updated_at, reverse=True)


def prune(workspace: Path, keep: int = MAX_SESSIONS) -> None:
    """Delete the oldest sessions beyond `keep` (a new one is about to start)."""
    for meta in listed(workspace)[keep:]:
        delete(workspace, meta.session_id)


def delete(workspace: Path, session_id: str) -> bool:
    """Forget a kept session (its meta and its conversation); whether one was kept."""
    if not valid_id(session_id):
        return False
    found = False
    for suffix in (".json", ".jsonl"):
        path = _folder(workspace) / f"{session_id}{suffix}"
        try:
            found = path.exists() or found
            path.unlink(missing_ok=True)
        except OSError as exc:
            log.info("cannot delete a kept session: %s", exc)
    return found


def title_of(text: str) -> str:
    """A session's title: its first prompt's first line, short."""
    first = text.strip().splitlines()[0] if text.strip() else "(no text)"
    return first if len(first) <= TITLE_CHARS else first[: TITLE_CHARS - 1] + "…"
