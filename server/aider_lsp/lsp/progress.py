"""Work-done progress: one helper for every long job (commands, the workspace index, workflows).

`work_done_progress` opens a progress bar on the client when the client supports it (read with
pygls's `get_capability`), reports messages into it, and always ends it, however the job ends.
A token the client passed with its request (`workDoneToken`) is used as it is; otherwise a fresh
uuid token is created with `window/workDoneProgress/create`. A cancellable progress cancels the
job's task when the user presses cancel (`window/workDoneProgress/cancel`).
`LatestLine` shows Aider's reply, as it is written, as the progress message: its latest line,
which is what VS Code's progress notification has room for.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING

from lsprotocol import types
from pygls.capabilities import get_capability
from pygls.lsp.server import LanguageServer

if TYPE_CHECKING:
    from ..models import ProgressCallback

log = logging.getLogger(__name__)

LINE_CHARS = 200  # a progress message is one short line
KEPT_CHARS = 4000  # of the reply so far: enough to hold its latest line


class WorkDone:
    """One progress shown by the client; `report` fits the Application's ProgressCallback.

    `outcome` is the message the progress ends with (set it when the job's result is known)."""

    def __init__(
        self, server: LanguageServer | None, token: types.ProgressToken | None, cancellable: bool
    ) -> None:
        self.server = server
        self.token = token
        self.cancellable = cancellable
        self.outcome = "cancelled"

    @property
    def shown(self) -> bool:
        """False when the client has no progress UI: reports then go nowhere."""
        return self.server is not None and self.token is not None

    def report(self, message: str, percentage: int | None = None) -> None:
        if self.server is None or self.token is None:
            return
        value = types.WorkDoneProgressReport(
            message=message, percentage=percentage, cancellable=self.cancellable or None
        )
        self.server.work_done_progress.report(self.token, value)


class LatestLine:
    """Aider's reply as it is written (the Application's `on_reply`), reported as its latest
    line (the one being written, growing) whenever it changes; blank lines and code fences
    say nothing and are skipped."""

    def __init__(self, report: ProgressCallback) -> None:
        self.report = report
        self._text = ""
        self._shown = ""

    def __call__(self, text: str) -> None:
        self._text = (self._text + text)[-KEPT_CHARS:]
        lines = [line.strip() for line in self._text.splitlines() if line.strip().strip("`~")]
        latest = lines[-1][:LINE_CHARS] if lines else ""
        if latest and latest != self._shown:
            self._shown = latest
            self.report(latest, None)


def client_shows_progress(server: LanguageServer) -> bool:
    return bool(get_capability(server.client_capabilities, "window.work_done_progress", False))


async def _create_token(server: LanguageServer) -> types.ProgressToken | None:
    token = str(uuid.uuid4())
    try:
        await server.work_done_progress.create_async(token)
    except Exception as exc:  # a client may refuse; the job runs without a progress bar
        log.warning("client refused a progress token: %s", exc)
        return None
    return token


def _cancel_on_client_cancel(server: LanguageServer, token: types.ProgressToken) -> None:
    """The client's cancel button cancels the future pygls keeps for the token: cancel our task."""
    task = asyncio.current_task()
    cancel = server.work_done_progress.tokens.get(token)
    if task is not None and cancel is not None:
        cancel.add_done_callback(lambda future: future.cancelled() and task.cancel())


@asynccontextmanager
async def work_done_progress(
    server: LanguageServer,
    title: str,
    *,
    token: types.ProgressToken | None = None,
    cancellable: bool = False,
    percentage: int | None = None,
) -> AsyncIterator[WorkDone]:
    """`async with work_done_progress(ls, "Indexing") as progress: progress.report("…")`.

    `token` is the client's own `workDoneToken`, when its request carried one."""
    if token is None and client_shows_progress(server):
        token = await _create_token(server)
    if token is None:
        yield WorkDone(None, None, cancellable)
        return
    progress = server.work_done_progress
    begin = types.WorkDoneProgressBegin(title=title, cancellable=cancellable or None, percentage=percentage)
    progress.begin(token, begin)  # registers the token's cancel future when the client made it
    if cancellable:
        _cancel_on_client_cancel(server, token)
    work = WorkDone(server, token, cancellable)
    try:
        yield work
    finally:
        progress.end(token, types.WorkDoneProgressEnd(message=work.outcome))
        progress.tokens.pop(token, None)
