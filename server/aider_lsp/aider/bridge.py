"""AiderBridge: one persistent MCP session (mcp 2.x client over stdio) to an Aider MCP server.

Why persistent: starting Aider costs seconds (imports, litellm); a warm session edits in
milliseconds plus the LLM's time. The bridge owns the server process (its own process group),
enforces its own deadline per call, kills and restarts the server after a crash or a hang,
and runs one call at a time. It does not trust a server's `success` flag: it checks the
editable files itself before and after the call.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import re
import signal
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from aider_mcp.snapshots import unified_diff  # stdlib-only helper shipped alongside

from .. import aider_env
from ..files import DEFAULT_SECRET_PATTERNS, SECRET_DIRECTORIES, AccessDenied, FileAccessManager
from ..models import (
    AssociativeMatchResult,
    ContextGenerationInput,
    ErrorReason,
    TaskResult,
    complete_result,
    failed_result,
)
from ..providers import PROVIDER_KEY_VARS, split_model_id
from ..settings import Settings, env_var_for

if TYPE_CHECKING:
    import anyio
    import mcp.types as mcp_types
    from mcp.client.session import ClientSession
    from mcp.client.stdio import get_default_environment
    from mcp.os.posix.utilities import terminate_posix_process_tree
    from mcp.shared.exceptions import MCPError
    from mcp.shared.message import SessionMessage


def _import_mcp() -> None:
    """mcp and anyio take ~0.7 s to import: load them on first use, not at server start."""
    global anyio, mcp_types, ClientSession, MCPError, SessionMessage
    global get_default_environment, terminate_posix_process_tree
    import anyio
    import mcp.types as mcp_types
    from mcp.client.session import ClientSession
    from mcp.client.stdio import get_default_environment
    from mcp.os.posix.utilities import terminate_posix_process_tree
    from mcp.shared.exceptions import MCPError
    from mcp.shared.message import SessionMessage


log = logging.getLogger(__name__)

EDIT_TOOLS = frozenset({"aider_ai_code", "aider_chat"})
PASS_ENV_SUFFIXES = ("_API_KEY", "_API_BASE", "_BASE_URL", "_API_VERSION")
PASS_ENV_NAMES = (
    "XDG_CACHE_HOME",
    "LANG",
    "LC_ALL",
    "TMPDIR",
    "SSL_CERT_FILE",
    "REQUESTS_CA_BUNDLE",
    "HTTP_PROXY",
    "HTTPS_PROXY",
    "NO_PROXY",
    "http_proxy",
    "https_proxy",
    "no_proxy",
    "AIDER_LSP_AIDER_ENV",
)
STDERR_TAIL_BYTES = 4000
PING_SECONDS = 5.0
STDIN_CLOSE_GRACE = 0.3  # the bundled server exits at once when its stdin closes
SIGTERM_GRACE = 1.0  # then the group gets SIGTERM, and SIGKILL after this


class ServerStartError(ConnectionError):
    """The server did not come up; carries the tail of its stderr."""

    def __init__(self, message: str, stderr_tail: str = "") -> None:
        super().__init__(message)
        self.stderr_tail = stderr_tail


def _describe(exc: BaseException) -> str:
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    text = str(exc) or type(exc).__name__
    return f"{type(exc).__name__}: {text}" if str(exc) else text


class ConfigurationProblem(Exception):
    """The server cannot be started as configured; the message names the setting to fill."""


@dataclass(frozen=True)
class LaunchSpec:
    """How to start the server; a changed spec restarts the session."""

    command: str
    args: tuple[str, ...]
    env: tuple[tuple[str, str], ...]
    cwd: str
    bundled: bool


def aider_model_for(settings: Settings) -> str | None:
    """Aider's model name: `aiderModel`, else derived from `model` (`openai:gpt-4.1` → `openai/gpt-4.1`).

    With `baseUrl` set the endpoint is OpenAI-compatible, so the name becomes `openai/<name>`.
    """
    if settings.aider_model:
        return settings.aider_model
    if not settings.model:
        return None
    provider, name = split_model_id(settings.model)
    if settings.base_url:
        return f"openai/{name.split('/', 1)[1] if name.startswith('openai/') else name}"
    mapping = {"ollama": "ollama_chat", "google-gla": "gemini", "google-vertex": "vertex_ai"}
    if not provider:
        return name
    return f"{mapping.get(provider, provider)}/{name}"


def server_environment(settings: Settings, environ: dict[str, str] | None = None) -> dict[str, str]:
    """Keys and endpoints for the server: provider keys pass through; baseUrl → OPENAI_API_BASE."""
    environ = dict(os.environ if environ is None else environ)
    env = {
        key: value
        for key, value in environ.items()
        if key.endswith(PASS_ENV_SUFFIXES) or key in PASS_ENV_NAMES
    }
    if settings.base_url:
        env["OPENAI_API_BASE"] = settings.base_url
        env["OPENAI_BASE_URL"] = settings.base_url
        env.setdefault("OPENAI_API_KEY", "sk-no-key-needed")
    if settings.api_key:
        model = aider_model_for(settings) or ""
        provider = model.split("/", 1)[0] if "/" in model else "openai"
        env[f"{provider.upper()}_API_KEY"] = settings.api_key
    env.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    env["PYTHONUNBUFFERED"] = "1"
    # the bundled server keeps secret files out of Aider's repo map and mention offers
    env["AIDER_MCP_SECRET_PATTERNS"] = json.dumps(
        [*DEFAULT_SECRET_PATTERNS, *settings.secret_patterns, *(f"{name}/" for name in SECRET_DIRECTORIES)]
    )
    return env


def _missing_provider_key(model: str, env: dict[str, str]) -> str | None:
    """Without its key Aider retries for a minute, then blames "the provider's servers":
    say which variable is missing instead (only for providers whose key variable is known)."""
    provider, sep, _ = model.partition("/")
    key_vars = PROVIDER_KEY_VARS.get(provider) if sep else None
    if not key_vars or any(env.get(var) for var in key_vars):
        return None
    if provider == "openai" and env.get("OPENAI_API_BASE"):
        return None  # an OpenAI-compatible proxy may take no key
    return (
        f"{' or '.join(key_vars)} is not set: Aider's model {model!r} needs it "
        f"(set {key_vars[0]}, or aiderLsp.apiKey, or point aiderLsp.baseUrl at a local server)"
    )


def _expand(arg: str, values: dict[str, str]) -> str:
    return re.sub(r"\$\{(\w+)\}", lambda m: values.get(m.group(1), m.group(0)), arg)


def launch_spec(settings: Settings, workspace: Path) -> LaunchSpec:
    """The server command: `aiderServer` if set (args may use ${workspace} and ${model}),
    else the bundled server in the Aider environment."""
    model = aider_model_for(settings)
    env = server_environment(settings)
    custom = settings.aider_server
    if custom.command:
        values = {"workspace": str(workspace), "model": model or ""}
        env.update(custom.env)
        return LaunchSpec(
            command=custom.command,
            args=tuple(_expand(arg, values) for arg in custom.args),
            env=tuple(sorted(env.items())),
            cwd=str(workspace),
            bundled=False,
        )
    if not model:
        raise ConfigurationProblem(
            f"no Aider model: set aiderLsp.aiderModel (or aiderLsp.model), or {env_var_for('aider_model')}"
        )
    if not aider_env.is_ready():
        raise ConfigurationProblem(
            f"the Aider environment is missing ({aider_env.env_dir()}): run `aider-lsp setup-aider`,"
            " or point aiderLsp.aiderServer at another Aider MCP server"
        )
    command, args, extra = aider_env.server_command()
    env.update(extra)
    env.update(custom.env)
    return LaunchSpec(
        command=command,
        args=(*args, "--cwd", str(workspace), "--model", model, *custom.args),
        env=tuple(sorted(env.items())),
        cwd=str(workspace),
        bundled=True,
    )


@dataclass
class _Connection:
    """A running server: its process, the MCP session, and the task that owns both."""

    spec: LaunchSpec
    process: Any
    session: ClientSession
    owner: asyncio.Task[None]
    stop: asyncio.Event
    stderr_path: Path
    closed: asyncio.Event = field(default_factory=asyncio.Event)

    @property
    def alive(self) -> bool:
        return self.process.returncode is None and not self.closed.is_set()

    def stderr_tail(self) -> str:
        try:
            data = self.stderr_path.read_bytes()[-STDERR_TAIL_BYTES:]
        except OSError:
            return ""
        return data.decode("utf-8", errors="replace").strip()


@dataclass
class _CallState:
    """How far a call got: starting the server, or calling the tool on it."""

    stage: str = "start"
    conn: _Connection | None = None


def _kill_group(pid: int, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, sig)


class AiderBridge:
    """call_aider_tool over ONE persistent session per workspace (see module doc)."""

    def __init__(
        self,
        files: FileAccessManager,
        get_settings: Callable[[], Settings],
        memory: Any | None = None,
    ) -> None:
        self.files = files
        self.workspace = files.root
        self._get_settings = get_settings
        self.memory = memory
        self._lock = asyncio.Lock()
        self._conn: _Connection | None = None
        self._file_context: list[str] = []
        self.starts = 0  # how many servers this bridge has started (restarts are visible)

    def settings(self) -> Settings:
        """The settings in force now (they change live in the editor)."""
        return self._get_settings()

    # -- file context ----------------------------------------------------------------------
    def set_file_context(self, file_paths: list[str], source: str = "explicit") -> dict[str, Any]:
        """Keep only existing, workspace-confined, non-secret files; report what was dropped."""
        kept, refused = self.files.model_safe_files(file_paths, must_exist=True)
        self._file_context = kept
        skipped = [{"path": refusal.path, "reason": refusal.reason} for refusal in refused]
        return {"file_paths": list(kept), "skipped": skipped, "source": source}

    def get_file_context(self) -> list[str]:
        return list(self._file_context)

    async def get_context_for_query(self, query: str) -> AssociativeMatchResult:
        """Relevant files for a query from the MemorySystem (when there is one)."""
        if self.memory is None:
            return AssociativeMatchResult(
                context_summary="No workspace memory is available.", error="memory unavailable"
            )
        try:
            return await self.memory.get_relevant_context_for(ContextGenerationInput(query=query))
        except Exception as exc:
            return AssociativeMatchResult(context_summary="Context retrieval failed.", error=str(exc))

    # -- process lifecycle -----------------------------------------------------------------
    @property
    def server_pid(self) -> int | None:
        """The running server's pid (tests kill it to check the restart)."""
        conn = self._conn
        return conn.process.pid if conn is not None and conn.alive else None

    async def _start(self, spec: LaunchSpec) -> _Connection:
        """Spawn the server in its own process group and initialise an MCP session."""
        _import_mcp()
        fd, stderr_name = tempfile.mkstemp(prefix="aider-mcp-", suffix=".log")
        stderr_file = os.fdopen(fd, "wb")
        loop = asyncio.get_running_loop()
        ready: asyncio.Future[_Connection] = loop.create_future()
        stop = asyncio.Event()
        try:
            process = await anyio.open_process(
                [spec.command, *spec.args],
                env=get_default_environment() | dict(spec.env),
                cwd=spec.cwd,
                stderr=stderr_file,
                start_new_session=True,
            )
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(stderr_name)
            raise
        finally:
            stderr_file.close()
        self.starts += 1
        owner = asyncio.create_task(
            self._own(spec, process, Path(stderr_name), ready, stop), name="aider-mcp-session"
        )
        try:
            return await asyncio.shield(ready)
        except BaseException:
            stop.set()
            _kill_group(process.pid, signal.SIGKILL)
            with contextlib.suppress(BaseException):
                await asyncio.wait_for(asyncio.shield(owner), 5)
            raise

    async def _own(
        self,
        spec: LaunchSpec,
        process: Any,
        stderr_path: Path,
        ready: asyncio.Future[_Connection],
        stop: asyncio.Event,
    ) -> None:
        """Owner task: pumps the pipes, holds the session open until told to stop.

        Why not the SDK's `stdio_client`, which also starts the server in a new session and
        stops it by closing stdin, then SIGTERM and SIGKILL of the group: it does not hand out
        the process, so the bridge could neither tell that the server died (`alive`, checked
        before each call without a round trip) nor name its pid (`server_pid`), and its fixed
        grace periods (2 s + 2 s) slow down a cancelled edit. What is kept here is only that:
        the pipe pumps around our own process; the environment and the group kill are the SDK's.
        """
        _import_mcp()
        read_send, read_recv = anyio.create_memory_object_stream[SessionMessage | Exception](16)
        write_send, write_recv = anyio.create_memory_object_stream[SessionMessage](16)
        conn: _Connection | None = None

        async def reader() -> None:
            buffer = b""
            async with read_send:
                with contextlib.suppress(
                    anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError, OSError
                ):
                    while True:
                        chunk = await process.stdout.receive()
                        buffer += chunk
                        *lines, buffer = buffer.split(b"\n")
                        for line in lines:
                            if not line.strip():
                                continue
                            try:
                                message = mcp_types.jsonrpc_message_adapter.validate_json(line)
                                await read_send.send(SessionMessage(message))
                            except ValueError as exc:  # a stray print on the server's stdout
                                log.warning("aider server wrote non-JSON-RPC to stdout: %r", line[:200])
                                await read_send.send(exc)
            if conn is not None:
                conn.closed.set()

        async def writer() -> None:
            async with write_recv:
                with contextlib.suppress(anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
                    async for message in write_recv:
                        data = message.message.model_dump_json(by_alias=True, exclude_unset=True)
                        await process.stdin.send((data + "\n").encode("utf-8"))

        try:
            async with anyio.create_task_group() as group:
                group.start_soon(reader)
                group.start_soon(writer)
                try:
                    async with ClientSession(read_recv, write_send) as session:
                        await session.initialize()
                        conn = _Connection(spec, process, session, asyncio.current_task(), stop, stderr_path)  # type: ignore[arg-type]
                        ready.set_result(conn)
                        await stop.wait()
                finally:
                    group.cancel_scope.cancel()
        except BaseException as exc:
            if not ready.done():
                ready.set_exception(ServerStartError(_describe(exc)))
        finally:
            if conn is not None:
                conn.closed.set()
            await self._terminate(process)
            if not ready.done():
                ready.set_exception(ServerStartError("the Aider MCP server exited during start"))
            if conn is None:  # a failed start: hand its stderr to the caller, drop the log
                error = ready.exception() if not ready.cancelled() else None
                if isinstance(error, ServerStartError):
                    with contextlib.suppress(OSError):
                        data = stderr_path.read_bytes()[-STDERR_TAIL_BYTES:]
                        error.stderr_tail = data.decode("utf-8", errors="replace").strip()
                with contextlib.suppress(OSError):
                    stderr_path.unlink()

    @staticmethod
    async def _terminate(process: Any) -> None:
        """Close stdin (the server's cue to exit), then the SDK's SIGTERM → SIGKILL of the
        whole process group, strays included even when the server itself already exited."""
        _import_mcp()
        with anyio.CancelScope(shield=True):
            with contextlib.suppress(Exception):
                await process.stdin.aclose()
            with anyio.move_on_after(STDIN_CLOSE_GRACE):
                while process.returncode is None:
                    await anyio.sleep(0.02)
            await terminate_posix_process_tree(process, SIGTERM_GRACE)

    async def _stop_connection(self) -> None:
        _import_mcp()
        conn, self._conn = self._conn, None
        if conn is None:
            return
        conn.stop.set()
        with contextlib.suppress(BaseException):
            await asyncio.wait_for(asyncio.shield(conn.owner), 6)
        with contextlib.suppress(OSError):
            conn.stderr_path.unlink()

    async def _responsive(self, conn: _Connection) -> bool:
        """A ping before each call: a server killed since the last call is caught here,
        before a request is sent to it (its exit may not have been noticed yet)."""
        _import_mcp()
        try:
            with anyio.fail_after(PING_SECONDS):
                await conn.session.send_ping()
            return conn.alive
        except Exception:
            return False

    async def _ensure(self, spec: LaunchSpec) -> _Connection:
        conn = self._conn
        if conn is not None and (not conn.alive or conn.spec != spec or not await self._responsive(conn)):
            await self._stop_connection()
            conn = None
        if conn is None:
            conn = await self._start(spec)
            self._conn = conn
        return conn

    async def warm_up(self) -> bool:
        """Start the server ahead of the first edit (e.g. after `initialized`); the bundled
        server then imports Aider in the background. False when not configured or it failed.

        Only before any server was started: once a call started one, warming up has nothing to
        do, and after a cancelled edit stopped it, starting it again would undo that stop."""
        settings = self._get_settings()
        try:
            spec = launch_spec(settings, self.workspace)
        except ConfigurationProblem:
            return False
        async with self._lock:
            if self.starts:
                return self._conn is not None
            try:
                async with asyncio.timeout(settings.timeouts.aider):
                    await self._ensure(spec)
                return True
            except Exception as exc:
                log.warning("could not pre-start the Aider MCP server: %s", _describe(exc))
                await self._stop_connection()
                return False

    async def restart(self) -> None:
        """Stop the server; the next call starts a fresh one (new session, empty chats)."""
        async with self._lock:
            await self._stop_connection()

    async def aclose(self) -> None:
        """Stop the server and its process group (shutdown)."""
        await self._stop_connection()

    # -- calls -----------------------------------------------------------------------------
    def _snapshot(self, paths: list[str]) -> dict[str, bytes | None]:
        contents: dict[str, bytes | None] = {}
        for rel in paths:
            try:
                real = self.files.resolve(rel)
                contents[rel] = real.read_bytes() if real.is_file() else None
            except (OSError, AccessDenied):
                contents[rel] = None
        return contents

    async def call_aider_tool(
        self, tool_name: str, params: dict[str, Any], *, timeout: float | None = None
    ) -> TaskResult:
        """Call one tool on the server; every failure is a FAILED TaskResult with its ErrorReason."""
        _import_mcp()
        settings = self._get_settings()
        deadline = timeout if timeout is not None else settings.timeouts.aider
        spec = self._launch_spec_for(settings, tool_name)
        if isinstance(spec, TaskResult):
            return spec
        editable = [p for p in params.get("relative_editable_files") or [] if isinstance(p, str)]
        async with self._lock:
            before = self._snapshot(editable)
            call = _CallState()
            try:
                async with asyncio.timeout(deadline):
                    call.conn = await self._ensure(spec)
                    call.stage = "call"
                    result = await call.conn.session.call_tool(tool_name, params)
            except asyncio.CancelledError:
                # a cancelled edit must not land later: stop the server with it
                await asyncio.shield(self._stop_connection())
                raise
            except Exception as exc:
                return await self._call_failure(exc, tool_name, spec, call, deadline)
            after = self._snapshot(editable)
        changed = [rel for rel in editable if before.get(rel) != after.get(rel)]
        own_diff = "".join(unified_diff(rel, before.get(rel), after.get(rel)) for rel in changed)
        return self._interpret(tool_name, result, changed, own_diff, bundled=spec.bundled)

    def _launch_spec_for(self, settings: Settings, tool_name: str) -> LaunchSpec | TaskResult:
        """How to start the server, or the configuration problem (a missing key included)."""
        try:
            spec = launch_spec(settings, self.workspace)
        except ConfigurationProblem as exc:
            return failed_result(ErrorReason.CONFIGURATION_ERROR, str(exc))
        if spec.bundled and tool_name != "list_models":  # listing models needs no key
            missing = _missing_provider_key(aider_model_for(settings) or "", dict(spec.env))
            if missing:
                return failed_result(ErrorReason.CONFIGURATION_ERROR, missing)
        return spec

    async def _call_failure(
        self, exc: Exception, tool_name: str, spec: LaunchSpec, call: _CallState, deadline: float
    ) -> TaskResult:
        """A failed start or call as a FAILED result; a server that may be broken is stopped
        (the next call starts a new one)."""
        stage, conn = call.stage, call.conn
        if isinstance(exc, TimeoutError):
            tail = self._conn.stderr_tail() if self._conn else ""
            await self._stop_connection()
            what = "starting the Aider MCP server" if stage == "start" else f"{tool_name}"
            return failed_result(
                ErrorReason.EXECUTION_TIMEOUT,
                f"{what} did not finish within {deadline:g}s; the server was stopped"
                " and the next call starts a new one",
                notes=_tail_note(tail),
            )
        if isinstance(exc, ServerStartError):
            return failed_result(
                ErrorReason.CONNECTION_ERROR,
                f"the Aider MCP server did not start: {exc}",
                notes=_tail_note(exc.stderr_tail),
            )
        if isinstance(exc, FileNotFoundError):
            return failed_result(
                ErrorReason.CONFIGURATION_ERROR,
                f"cannot start the Aider MCP server {spec.command!r}: {exc}"
                " (check aiderLsp.aiderServer or run `aider-lsp setup-aider`)",
            )
        if isinstance(exc, MCPError):
            tail = conn.stderr_tail() if conn else ""
            closed = exc.code == mcp_types.CONNECTION_CLOSED or (conn is not None and not conn.alive)
            if not (closed or stage == "start"):
                return failed_result(
                    ErrorReason.PROTOCOL_ERROR, f"{tool_name}: MCP error {exc.code}: {exc.message}"
                )
            await self._stop_connection()
            return failed_result(
                ErrorReason.CONNECTION_ERROR,
                f"the Aider MCP server closed the connection during {stage}: {exc.message};"
                " the next call starts a new one",
                notes=_tail_note(tail),
            )
        if isinstance(exc, (OSError, ConnectionError, anyio.BrokenResourceError, anyio.ClosedResourceError)):
            tail = conn.stderr_tail() if conn else ""
            await self._stop_connection()
            return failed_result(
                ErrorReason.CONNECTION_ERROR,
                f"the Aider MCP server is unreachable ({stage}): {exc or type(exc).__name__}",
                notes=_tail_note(tail),
            )
        # malformed messages, validation errors in the client
        await self._stop_connection()
        return failed_result(
            ErrorReason.PROTOCOL_ERROR,
            f"{tool_name}: unexpected MCP failure: {type(exc).__name__}: {exc}",
        )

    def _interpret(
        self, tool_name: str, result: Any, changed: list[str], own_diff: str, *, bundled: bool
    ) -> TaskResult:
        _import_mcp()
        texts = [block.text for block in result.content if isinstance(block, mcp_types.TextContent)]
        raw = "\n".join(texts)
        if result.is_error:
            return failed_result(
                ErrorReason.TOOL_EXECUTION_ERROR, f"{tool_name} failed: {raw[:2000] or 'no detail'}"
            )
        if not texts:
            return failed_result(ErrorReason.OUTPUT_FORMAT_FAILURE, f"{tool_name} returned no text content")
        try:
            payload = json.loads(raw)
        except json.JSONDecodeError:
            return failed_result(
                ErrorReason.OUTPUT_FORMAT_FAILURE,
                f"{tool_name} returned text that is not JSON: {raw[:300]!r}",
                notes={"raw": raw[:4000]},
            )
        if not isinstance(payload, dict):
            return failed_result(
                ErrorReason.OUTPUT_FORMAT_FAILURE, f"{tool_name} returned JSON that is not an object"
            )
        if "error" in payload:
            return failed_result(
                ErrorReason.TOOL_EXECUTION_ERROR,
                f"{tool_name}: {payload['error']}",
                notes={"server_result": payload},
            )
        if tool_name == "list_models":
            models = payload.get("models")
            if not isinstance(models, list):
                return failed_result(
                    ErrorReason.OUTPUT_FORMAT_FAILURE, "list_models returned no 'models' list"
                )
            return complete_result("\n".join(map(str, models)), notes={"count": len(models)}, parsed=models)
        if tool_name in EDIT_TOOLS:
            return self._edit_result(tool_name, payload, changed, own_diff, bundled=bundled)
        return complete_result(raw, parsed=payload)

    def _edit_result(
        self,
        tool_name: str,
        payload: dict[str, Any],
        changed: list[str],
        own_diff: str,
        *,
        bundled: bool,
    ) -> TaskResult:
        claimed = payload.get("success")
        diff = payload.get("diff")
        if not isinstance(claimed, bool) or not isinstance(diff, str):
            return failed_result(
                ErrorReason.OUTPUT_FORMAT_FAILURE,
                f"{tool_name} returned JSON without boolean 'success' and string 'diff'",
                notes={"server_result": payload},
            )
        # the server's claim counts only when the files agree: a foreign server's `success`
        # means "a file looks like code"; the bridge hashed the editable files itself
        changed_by_others: list[str] = []
        if bundled:
            # the bundled server names the files Aider itself wrote: an editable file that
            # another program changed meanwhile is not this edit's (undo leaves it alone)
            written = payload.get("changed_files") or []
            changed_by_others = [rel for rel in changed if rel not in written]
            changed = [rel for rel in changed if rel in written]
        else:
            # a foreign server's diff is `git diff` (cumulative, blind to new files): use ours
            diff = own_diff
        files_changed = bool(changed)
        notes: dict[str, Any] = {
            "tool": tool_name,
            "success": bool(claimed) and files_changed,
            "server_success": claimed,
            "diff": diff or "",
            "changed_files": changed,
            "files_outside_editable": payload.get("files_outside_editable", []),
            "created_files": payload.get("created_files", []),
            "reply": payload.get("reply", ""),
        }
        for key in (
            "session_id",
            "turn",
            "errors",
            "declined_files",
            "refused_files",
            "reverted_files",
            "conflicts",
        ):
            if key in payload:
                notes[key] = payload[key]
        if changed_by_others:  # changed on disk by someone else during the edit, like a save
            notes["conflicts"] = sorted({*notes.get("conflicts", []), *changed_by_others})
        if tool_name == "aider_chat":
            # a chat turn may answer without editing: that is a reply, not a failure
            content = (payload.get("reply") or "") + (f"\n\n{diff}" if diff else "")
            return complete_result(content, notes=notes, parsed=payload)
        if notes["success"]:
            return complete_result(diff or "", notes=notes, parsed=payload)
        if claimed and not files_changed:
            message = f"{tool_name} reported success but no editable file changed"
        else:
            message = payload.get("message") or f"{tool_name}: Aider made no change to the files"
        return failed_result(ErrorReason.TOOL_EXECUTION_ERROR, message, notes=notes)


def _tail_note(tail: str) -> dict[str, Any]:
    return {"server_stderr": tail} if tail else {}
