"""The pygls language server: settings, documents, commands, progress and cancellation.

This layer only translates LSP to Application calls. It owns no business logic.
"""

from __future__ import annotations

import asyncio
import logging
import os
import re
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from lsprotocol import types
from pydantic import ValidationError
from pygls.exceptions import (
    FeatureRequestError,
    JsonRpcException,
    JsonRpcInvalidParams,
    JsonRpcInvalidRequest,
)
from pygls.lsp.server import LanguageServer
from pygls.protocol import LanguageServerProtocol
from pygls.uris import to_fs_path

from .. import __version__
from ..app import Application, RequestContext
from ..models import ErrorReason, ProgressCallback, TaskResult, failed_result
from ..settings import SECTION, Settings, SettingsError, load_settings
from . import indexing
from .commands import COMMANDS, CommandParams, CommandSpec

log = logging.getLogger(__name__)


class _Answered:
    """A request already answered with an error while it was decoded: nothing left to do."""

    jsonrpc = None


_ANSWERED = _Answered()


def _decode_problem(exc: BaseException) -> str:
    """What was wrong with a message's params, in one line (cattrs' paths, e.g. `$.params.command`)."""
    cause = exc.__cause__
    if cause is None:
        return str(exc)
    try:
        from cattrs import transform_error

        return "; ".join(transform_error(cause, path="$"))  # type: ignore[arg-type]
    except Exception:
        return str(cause)


class AiderProtocol(LanguageServerProtocol):
    """pygls drops a request whose params do not decode (the client waits forever); answer it."""

    def structure_message(self, data: Any) -> Any:
        try:
            return super().structure_message(data)
        except JsonRpcException as exc:
            if not (isinstance(data, dict) and "jsonrpc" in data and "method" in data):
                raise
            message = f"invalid params for {data.get('method')}: {_decode_problem(exc)}"
            if "id" not in data:
                raise JsonRpcInvalidParams(message) from None  # a notification: logged, no answer
            self._send_response(data["id"], error=JsonRpcInvalidParams(message).to_response_error())
            return _ANSWERED

    def handle_message(self, message: Any) -> None:
        if message is _ANSWERED:
            return
        if not hasattr(message, "jsonrpc"):  # e.g. a JSON array: not a JSON-RPC message at all
            log.warning("ignored a client message that is not a JSON-RPC object: %.200r", message)
            return
        if getattr(message, "method", None) == "exit":
            self.exit_code = 0 if self._shutdown else 1  # the spec's codes; pygls' sys.exit is swallowed
        if self._shutdown and getattr(message, "method", None) and getattr(message, "id", None) is not None:
            # pygls drops requests after shutdown silently; the spec wants an InvalidRequest answer
            error = JsonRpcInvalidRequest(f"the server is shutting down: {message.method} refused")
            self._send_response(message.id, error=error.to_response_error())
            return
        super().handle_message(message)


class _OneLineClientErrors(logging.Filter):
    """A client's bad message is the client's mistake: log one line, not a pygls traceback."""

    def filter(self, record: logging.LogRecord) -> bool:
        exc = record.exc_info[1] if record.exc_info else None
        message = record.getMessage()
        if message.startswith("Unable to deserialize message"):
            record.msg, record.args = "a client message did not decode (details follow)", ()
        elif isinstance(exc, (JsonRpcException, ValueError)):
            record.msg, record.args = f"{message.splitlines()[0][:300]}: {exc}", ()
            record.exc_info, record.exc_text = None, None
        return True


for _name in ("pygls.protocol.json_rpc", "pygls.server", "pygls.io_"):
    logging.getLogger(_name).addFilter(_OneLineClientErrors())


def _not_the_exit(record: logging.LogRecord) -> bool:
    """pygls ends the process with sys.exit inside a message callback (TCP session end, `exit`
    without `shutdown`); asyncio would log that exit, and the tasks it cancels, as unhandled
    exceptions with tracebacks."""
    return not (record.exc_info and isinstance(record.exc_info[1], (SystemExit, asyncio.CancelledError)))


logging.getLogger("asyncio").addFilter(_not_the_exit)


class AiderLanguageServer(LanguageServer):
    """The one server object; `app` exists once a workspace folder is known."""

    def __init__(self) -> None:
        super().__init__("aider-lsp", __version__, protocol_cls=AiderProtocol)
        self.app: Application | None = None
        self.init_options: dict[str, Any] = {}
        self.settings: Settings = Settings()
        self.configured = asyncio.Event()  # set once workspace/configuration has been read
        self.background_tasks: set[asyncio.Task[Any]] = set()
        self.workspace_problem: str | None = None  # why the workspace folder could not be opened

    def report_server_error(self, error: Exception, source: Any) -> None:
        """A malformed notification has no answer to carry the error: log it to the client's
        output channel in one line instead of pygls' "Error in server" pop-up."""
        if source is FeatureRequestError:
            return  # already in the request's error answer
        text = f"aider-lsp ignored a malformed message from the client: {error}"
        log.warning("%s", text)
        try:
            self.window_log_message(types.LogMessageParams(types.MessageType.Warning, text))
        except Exception:  # no transport yet / any more
            pass

    def keep_task(self, task: asyncio.Task[Any]) -> None:
        """Hold a reference to a background task until it ends (asyncio keeps only weak ones)."""
        self.background_tasks.add(task)
        task.add_done_callback(self.background_tasks.discard)

    async def wait_configured(self, timeout: float = 5.0) -> None:
        """Commands wait for the client's settings, but never hang on a silent client."""
        try:
            await asyncio.wait_for(self.configured.wait(), timeout)
        except asyncio.TimeoutError:
            log.warning("no workspace/configuration answer within %.0f s; using what is known", timeout)
            self.configured.set()

    # -- settings ----------------------------------------------------------------------
    def apply_settings(self, explicit: dict[str, Any]) -> None:
        """Validate and apply settings; a bad value is shown to the user by name and ignored.

        Only the bad setting keeps its previous value (or its default): the others (the model,
        its URL…) still apply. A bad `AIDER_LSP_*` variable keeps the previous settings whole.
        """
        remaining = {key: value for key, value in explicit.items() if isinstance(key, str)}
        previous = self.settings.model_dump()
        defaults = Settings().model_dump()
        problems: list[str] = []
        settings: Settings | None = None
        for _ in range(len(remaining) + 1):
            try:
                settings = load_settings(remaining)
                break
            except SettingsError as exc:
                problems.append(str(exc))
                bad = [key for key in remaining if exc.setting and _snake(key) == exc.setting]
                if not bad:
                    break
                for key in bad:
                    del remaining[key]
                name = exc.setting
                if name in previous and previous[name] != defaults.get(name):
                    remaining[name] = previous[name]
        message = "; ".join(problems)
        if message:
            fallback = "ignored" if settings is not None else "the previous settings stay"
            self.window_show_message(
                types.ShowMessageParams(types.MessageType.Error, f"aider-lsp: {message} ({fallback})")
            )
        if settings is None:
            return
        self.settings = settings
        if self.app is not None:
            self.app.update_settings(self.settings)

    async def pull_configuration(self) -> None:
        """Read the `aiderLsp` section when the client supports workspace/configuration."""
        workspace_caps = self.client_capabilities.workspace
        if not (workspace_caps and workspace_caps.configuration):
            return
        try:
            configs = await self.workspace_configuration_async(
                types.ConfigurationParams(items=[types.ConfigurationItem(section=SECTION)])
            )
        except Exception as exc:  # a client that fails this request is not fatal
            log.warning("workspace/configuration failed: %s", exc)
            return
        section = configs[0] if configs and isinstance(configs[0], dict) else {}
        self.apply_settings({**self.init_options, **section})

    # -- documents ---------------------------------------------------------------------
    def workspace_relative(self, uri: str) -> str | None:
        """Workspace-relative path of a document URI, or None when it is outside."""
        if self.app is None:
            return None
        path = to_fs_path(uri)
        if path is None:
            return None
        try:
            return self.app.files.relative(path)
        except ValueError:
            return None

    def unsaved_files(self) -> list[str]:
        """Workspace-relative paths of open documents whose text is not what is on disk."""
        unsaved: list[str] = []
        for document in list(self.workspace.text_documents.values()):
            # the document's own URI: pygls keys documents by an already-unquoted URI, which a
            # second decoding would turn `p%2520.py` (file `p%20.py`) into `p .py`
            relative = self.workspace_relative(document.uri)
            if relative is not None and _differs_from_disk(document.source, self.app.workspace / relative):
                unsaved.append(relative)
        return unsaved

    def open_files(self) -> list[str]:
        """Workspace-relative paths of the documents open in the editor."""
        paths = (self.workspace_relative(d.uri) for d in list(self.workspace.text_documents.values()))
        return [path for path in paths if path is not None]

    def request_context(self, report: ProgressCallback | None = None) -> RequestContext:
        """What a request needs to know of the editor: open documents, where progress goes."""
        context = RequestContext(open_files=self.open_files())
        if report is not None:
            context.report_progress = report
        return context


def _snake(key: str) -> str:
    """`maxFileBytes` → `max_file_bytes` (keys may come camelCased or snake_cased)."""
    return re.sub(r"(?<!^)(?=[A-Z])", "_", key).lower()


def _differs_from_disk(buffer_text: str, path: Path) -> bool:
    """An open buffer is unsaved when its text is not what is on disk.

    The disk bytes are decoded as they are (no newline translation: a CRLF file's buffer holds
    CRLF) and a UTF-8 BOM, which editors do not show in the buffer, is ignored; otherwise every
    open CRLF or BOM file would count as unsaved and Aider would refuse it."""
    try:
        disk = path.read_bytes().decode("utf-8", errors="replace")
    except OSError:
        return True  # an unsaved new file
    return disk.removeprefix("\ufeff") != buffer_text.removeprefix("\ufeff")


def _workspace_root(params: types.InitializeParams) -> str | None:
    if params.workspace_folders:
        return to_fs_path(params.workspace_folders[0].uri)
    if params.root_uri:
        return to_fs_path(params.root_uri)
    return params.root_path


server = AiderLanguageServer()


@server.feature(types.INITIALIZE)
def on_initialize(ls: AiderLanguageServer, params: types.InitializeParams) -> None:
    options = params.initialization_options
    ls.init_options = dict(options) if isinstance(options, dict) else {}
    ls.apply_settings(ls.init_options)
    root = _workspace_root(params)
    if root is None:
        log.warning("no workspace folder: commands will ask the user to open one")
        return
    try:
        ls.app = Application(root, ls.settings, unsaved_files=ls.unsaved_files)
    except (OSError, ValueError) as exc:
        log.error("cannot open workspace %s: %s", root, exc)
        ls.workspace_problem = f"aider-lsp cannot open the workspace folder {root}: {exc}"
    _exit_cleanly_on_sigterm(ls)


def _exit_cleanly_on_sigterm(ls: AiderLanguageServer) -> None:
    """SIGTERM (an editor stopping us, a session ending) closes the Aider server and its
    process group before exiting, as shutdown would; the default would leave it running."""
    import signal

    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        return

    async def terminate() -> None:
        log.info("SIGTERM: closing and exiting")
        if ls.app is not None:
            try:
                await asyncio.wait_for(ls.app.aclose(), 10)
            except BaseException as exc:  # exiting anyway
                log.warning("closing on SIGTERM: %s", exc)
        logging.shutdown()
        os._exit(0)

    try:
        loop.add_signal_handler(signal.SIGTERM, lambda: ls.keep_task(loop.create_task(terminate())))
    except (NotImplementedError, RuntimeError, ValueError):  # not the main thread / no signals here
        pass


@server.feature(types.INITIALIZED)
async def on_initialized(ls: AiderLanguageServer, params: types.InitializedParams) -> None:
    try:
        await ls.pull_configuration()
    finally:
        ls.configured.set()
    indexing.start_workspace_index(ls)  # background, with $/progress


@server.feature(types.TEXT_DOCUMENT_DID_SAVE)
async def on_did_save(ls: AiderLanguageServer, params: types.DidSaveTextDocumentParams) -> None:
    await indexing.on_saved(ls, params.text_document.uri)


@server.feature(types.WORKSPACE_DID_CHANGE_WATCHED_FILES)
async def on_watched_files(
    ls: AiderLanguageServer, params: types.DidChangeWatchedFilesParams
) -> None:
    await indexing.on_watched_files(ls, params.changes)


@server.feature(
    types.WORKSPACE_DID_RENAME_FILES,
    types.FileOperationRegistrationOptions(
        filters=[types.FileOperationFilter(pattern=types.FileOperationPattern(glob="**/*"))]
    ),
)
async def on_did_rename_files(ls: AiderLanguageServer, params: types.RenameFilesParams) -> None:
    await indexing.on_renamed(ls, [(item.old_uri, item.new_uri) for item in params.files])


@server.feature(types.WORKSPACE_DID_CHANGE_CONFIGURATION)
async def on_configuration_changed(
    ls: AiderLanguageServer, params: types.DidChangeConfigurationParams
) -> None:
    settings = params.settings
    if isinstance(settings, dict) and isinstance(settings.get(SECTION), dict):
        ls.apply_settings({**ls.init_options, **settings[SECTION]})
    else:
        await ls.pull_configuration()


@server.feature(types.SHUTDOWN)
async def on_shutdown(ls: AiderLanguageServer, params: Any = None) -> None:
    if ls.app is not None:
        await ls.app.aclose()


# -- commands ----------------------------------------------------------------------------
def _validate(spec: CommandSpec, args: tuple[Any, ...]) -> CommandParams:
    """One object argument (or none) validated by the command's model, else InvalidParams."""
    if len(args) > 1:
        raise JsonRpcInvalidParams(f"{spec.id} takes one object argument, got {len(args)}")
    raw = args[0] if args else {}
    if raw is None:
        raw = {}
    if not isinstance(raw, dict):
        raise JsonRpcInvalidParams(f"{spec.id} takes one object argument, got {type(raw).__name__}")
    try:
        return spec.params_model.model_validate(raw)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(part) for part in error['loc']) or 'argument'}: {error['msg']}"
            for error in exc.errors()
        )
        raise JsonRpcInvalidParams(f"{spec.id}: invalid argument: {problems}") from None


def _request_cancelled(ls: AiderLanguageServer) -> bool:
    msg_id = ls.protocol.msg_id
    outer = ls.protocol._request_futures.get(msg_id) if msg_id is not None else None
    return outer is None or outer.cancelled()


def _link_request_cancellation(ls: AiderLanguageServer, task: asyncio.Task[Any]) -> None:
    """pygls cancels only the outer executeCommand future; cancel the command's task too."""
    msg_id = ls.protocol.msg_id
    outer = ls.protocol._request_futures.get(msg_id) if msg_id is not None else None
    if outer is None:
        return

    def on_outer_done(future: Any) -> None:
        if future.cancelled() and not task.done():
            task.cancel()

    outer.add_done_callback(on_outer_done)


async def _with_progress(
    ls: AiderLanguageServer, title: str, run: Callable[[RequestContext], Awaitable[TaskResult]]
) -> TaskResult:
    """Report $/progress under a fresh token; the client's progress cancel stops the run."""
    task = asyncio.current_task()
    token = str(uuid.uuid4())
    progress = ls.work_done_progress
    has_progress = bool(
        ls.client_capabilities.window and ls.client_capabilities.window.work_done_progress
    )
    if not has_progress:
        return await run(ls.request_context())
    try:
        await progress.create_async(token)
    except Exception as exc:
        log.warning("client refused a progress token: %s", exc)
        return await run(ls.request_context())
    cancel_future = progress.tokens.get(token)
    if cancel_future is not None and task is not None:
        cancel_future.add_done_callback(lambda f: f.cancelled() and task.cancel())

    def report(message: str, percentage: int | None = None) -> None:
        progress.report(
            token, types.WorkDoneProgressReport(message=message, percentage=percentage, cancellable=True)
        )

    progress.begin(token, types.WorkDoneProgressBegin(title=title, cancellable=True))
    outcome = "cancelled"
    try:
        result = await run(ls.request_context(report))
        outcome = result.status.value.lower()
        return result
    finally:
        progress.end(token, types.WorkDoneProgressEnd(message=outcome))


def _register_command(spec: CommandSpec) -> None:
    async def execute(ls: AiderLanguageServer, *args: Any) -> dict[str, Any]:
        params = _validate(spec, args)
        await ls.wait_configured()
        if ls.app is None:
            return failed_result(
                ErrorReason.CONFIGURATION_ERROR,
                ls.workspace_problem or "aider-lsp needs a workspace folder: open a folder in the editor",
            ).to_wire()
        task = asyncio.current_task()
        if task is not None:
            _link_request_cancellation(ls, task)
        app = ls.app

        async def run(ctx: RequestContext) -> TaskResult:
            return await spec.run(app, params, ctx)

        try:
            if spec.long_running:
                result = await _with_progress(ls, spec.title, run)
            else:
                result = await run(ls.request_context())
        except asyncio.CancelledError:
            if _request_cancelled(ls):
                raise  # pygls has already answered the request as cancelled
            # cancelled from the progress UI: answer the request with what happened
            result = failed_result(ErrorReason.CANCELLED, f"{spec.title}: cancelled by the user")
        except Exception as exc:  # never a traceback to the user, never a dead server
            log.exception("command %s failed", spec.id)
            result = failed_result(ErrorReason.UNEXPECTED_ERROR, f"{spec.id} failed: {exc}")
        return result.to_wire()

    execute.__name__ = "cmd_" + spec.id.replace(".", "_").replace("-", "_")
    server.command(spec.id)(execute)


for _spec in COMMANDS:
    _register_command(_spec)


def serve_stdio() -> int:
    """Serve on stdio; fd 1 is handed to the transport and redirected to stderr for all else.

    Returns the exit code: 1 after `exit` without `shutdown` (LSP), else 0."""
    transport = os.fdopen(os.dup(1), "wb", buffering=0)
    os.dup2(2, 1)
    import sys

    sys.stdout = sys.stderr
    server.start_io(sys.stdin.buffer, transport)
    return getattr(server.protocol, "exit_code", 0)


def serve_tcp(host: str, port: int) -> None:
    server.start_tcp(host, port)
