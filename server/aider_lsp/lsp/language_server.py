"""The one language server object: what the features share (the Application, the settings,
the open documents, background tasks)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from lsprotocol import types
from pygls.capabilities import get_capability
from pygls.exceptions import FeatureRequestError
from pygls.lsp.server import LanguageServer

from .. import __version__
from .diagnostics import WORKFLOW as WORKFLOW_FINDINGS
from .diagnostics import DiagnosticStore
from .documents import OpenDocuments
from .folders import FolderApps
from .protocol import AiderProtocol

if TYPE_CHECKING:  # loaded once the client is initialized (lifecycle.py), not before initialize
    from pathlib import Path

    from ..app import Application
    from ..config.settings import Settings
    from ..models import Answer, ProgressCallback, Question, RequestContext, WorkflowRun

log = logging.getLogger(__name__)


class AiderLanguageServer(LanguageServer):
    """`settings` (the window's) exist once the client is initialized; each workspace folder's
    Application once it is used (`folders`, lsp/workspace.py)."""

    protocol: AiderProtocol

    def __init__(self) -> None:
        super().__init__("aider-lsp", __version__, protocol_cls=AiderProtocol)
        self.folders = FolderApps()  # the window's folders (from initialize) and their Applications
        self.init_options: dict[str, Any] = {}
        self.window_section: dict[str, Any] = {}  # the `aiderLsp` section as last sent or read
        self.settings: Settings | None = None
        self.settings_problem: str | None = None  # what is wrong in the settings now
        self.settings_problem_shown: str | None = None  # the last settings problem shown to the user
        self.configured = asyncio.Event()  # set once workspace/configuration has been read
        self.background_tasks: set[asyncio.Task[Any]] = set()
        self.running_commands: set[asyncio.Task[Any]] = set()  # executeCommand tasks (shutdown waits)
        self.workspace_problem: str | None = None  # why the workspace folder could not be opened
        self.documents = OpenDocuments(self)
        self.diagnostic_store = DiagnosticStore(self)  # the aider-lsp diagnostics, by producer

    def report_server_error(self, error: Exception, source: Any) -> None:
        """A malformed notification has no answer to carry the error: log it to the client's
        output channel in one line instead of pygls' "Error in server" pop-up."""
        if source is FeatureRequestError:
            return  # already in the request's error answer
        text = f"aider-lsp ignored a malformed message from the client: {error}"
        log.warning("%s", text)
        try:
            self.window_log_message(types.LogMessageParams(types.MessageType.Warning, text))
        except Exception as exc:  # no transport yet / any more: the stderr line above stays
            log.debug("window/logMessage not sent: %s", exc)

    def keep_task(self, task: asyncio.Task[Any]) -> None:
        """Hold a reference to a background task until it ends (asyncio keeps only weak ones)."""
        self.background_tasks.add(task)
        task.add_done_callback(self.background_tasks.discard)

    async def wait_configured(self, timeout: float = 5.0) -> None:
        """Commands wait for the client's settings, but never hang on a silent client."""
        try:
            await asyncio.wait_for(self.configured.wait(), timeout)
        except TimeoutError:
            log.warning("no workspace/configuration answer within %.0f s; using what is known", timeout)
            self.configured.set()

    def request_context(
        self,
        app: Application,
        report: ProgressCallback | None = None,
        answer_cancelled: Callable[[WorkflowRun], None] | None = None,
    ) -> RequestContext:
        """What a request needs to know of the editor: open documents, where progress goes,
        and (`answer_cancelled`) where a cancelled command's own answer goes."""
        from ..models import RequestContext  # a request comes after initialized: already loaded
        from .progress import LatestLine

        root: Path = app.workspace
        context = RequestContext(open_files=self.documents.open_files(root))
        if answer_cancelled is not None:
            context.answer_cancelled = answer_cancelled
        # each folder's findings are its own: a run in one folder leaves another's diagnostics
        context.report_findings = self.diagnostic_store.sink(f"{WORKFLOW_FINDINGS}:{root}", app.resolve_path)
        context.clear_findings = self.diagnostic_store.clear
        if report is not None:
            context.report_progress = report
            context.report_reply = LatestLine(report)  # Aider's reply as it is written
        if get_capability(self.client_capabilities, "window.show_message") is not None:
            context.ask = self.ask
        return context

    async def ask(self, question: Question) -> Answer | None:
        """window/showMessageRequest with the choices' labels as its actions: the answer whose
        label the user chose, or None when the question was dismissed or the client failed it
        (logged; the caller goes on without)."""
        try:
            chosen = await self.window_show_message_request_async(
                types.ShowMessageRequestParams(
                    type=types.MessageType.Info,
                    message=question.message,
                    actions=[types.MessageActionItem(title=label) for label in question.labels],
                )
            )
        except Exception as exc:  # a client that cannot show it: not fatal
            log.warning("the client did not answer window/showMessageRequest: %s", exc)
            return None
        return question.answer_labelled(chosen.title if chosen is not None else None)
