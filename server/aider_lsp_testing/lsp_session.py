"""A real `aider-lsp serve` subprocess driven by pytest-lsp's client, and the calls tests send it.

Why here and not in conftest: tests import these by name (a conftest is not a module to import
from), and the benchmarks can use them too. conftest.py only turns them into fixtures.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import sys
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from lsprotocol import types
from pygls.protocol import default_converter
from pytest_lsp import LanguageClient, client_capabilities
from pytest_lsp.client import register_lsp_features

SERVER_COMMAND = [sys.executable, "-m", "aider_lsp", "serve"]


class AiderTestClient(LanguageClient):
    """pytest-lsp's client plus what our tests check: the initialize result, the server's
    dynamic registrations (accepted and kept), edits refused, and the exited server process."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.initialize_result: types.InitializeResult | None = None
        self.registrations: list[types.Registration] = []
        self.exited_process: asyncio.subprocess.Process | None = None
        self.shutdown_sent = False  # a test sent `shutdown` itself

    async def shutdown_async(self, params: None) -> None:
        self.shutdown_sent = True
        await super().shutdown_async(params)

    @property
    def server_process(self) -> asyncio.subprocess.Process | None:
        """The `aider-lsp serve` process this client started (pygls keeps it private)."""
        return self._server

    async def server_exit(self, server: asyncio.subprocess.Process) -> None:
        self.exited_process = server
        await super().server_exit(server)


def make_client() -> AiderTestClient:
    """What pytest-lsp's default factory builds (its handlers for configuration, progress,
    messages…), as an AiderTestClient with two handlers of ours."""
    client = AiderTestClient(converter_factory=default_converter)
    register_lsp_features(client)

    @client.feature(types.WORKSPACE_APPLY_EDIT)
    def apply_edit(params: types.ApplyWorkspaceEditParams) -> types.ApplyWorkspaceEditResult:
        return types.ApplyWorkspaceEditResult(applied=False, failure_reason="test client")

    @client.feature(types.CLIENT_REGISTER_CAPABILITY)
    def register_capability(params: types.RegistrationParams) -> None:
        """Accept dynamic registrations (the server asks to watch files) and keep them."""
        client.registrations.extend(params.registrations)

    return client


def _server_env(extra: dict[str, str] | None) -> dict[str, str]:
    env = {key: value for key, value in os.environ.items() if not key.startswith("AIDER_LSP_")}
    env.update(extra or {})
    return env


@contextlib.asynccontextmanager
async def lsp_session(
    root: Path,
    *,
    init_options: dict[str, Any] | None = None,
    configuration: dict[str, Any] | None = None,
    env: dict[str, str] | None = None,
    capabilities: str | types.ClientCapabilities = "visual-studio-code",
    more_folders: list[Path] | None = None,
    command: list[str] | None = None,
    cwd: Path | None = None,
) -> AsyncIterator[AiderTestClient]:
    """Start `aider-lsp serve`, initialize it on `root` (and `more_folders`: a multi-root
    window), and shut it down afterwards (unless the test did: its process has exited).

    `capabilities` names one of pytest-lsp's recorded clients, or is the capabilities to send;
    `command` replaces SERVER_COMMAND (the installed `aider-lsp serve`, say) and `cwd` is the
    folder the server starts in (pytest-lsp's config offers neither)."""
    client = make_client()
    await client.start_io(*(command or SERVER_COMMAND), env=_server_env(env), cwd=cwd)
    if configuration is not None:
        client.set_configuration(configuration, section="aiderLsp")
    try:
        client.initialize_result = await client.initialize_session(
            types.InitializeParams(
                capabilities=client_capabilities(capabilities)
                if isinstance(capabilities, str)
                else capabilities,
                root_uri=root.as_uri(),
                workspace_folders=[
                    types.WorkspaceFolder(uri=folder.as_uri(), name=folder.name)
                    for folder in [root, *(more_folders or [])]
                ],
                initialization_options=init_options,
            )
        )
        yield client
    finally:
        if not client.shutdown_sent:
            await client.shutdown_session()
        elif client.exited_process is None and client.server_process is not None:
            client.server_process.kill()  # the test shut it down and failed before it exited
        await client.stop()


async def execute(client: LanguageClient, command: str, *arguments: Any) -> Any:
    """workspace/executeCommand with the given arguments; returns the raw result."""
    return await client.workspace_execute_command_async(
        types.ExecuteCommandParams(command=command, arguments=list(arguments))
    )


def start_command(client: LanguageClient, command: str, argument: Any) -> tuple[str, asyncio.Future[Any]]:
    """workspace/executeCommand sent without waiting: (its message id, its answer to come)."""
    msg_id = str(uuid.uuid4())
    pending = asyncio.ensure_future(
        client.protocol.send_request_async(
            types.WORKSPACE_EXECUTE_COMMAND,
            types.ExecuteCommandParams(command=command, arguments=[argument]),
            msg_id=msg_id,
        )
    )
    return msg_id, pending


async def cancel_command(client: LanguageClient, msg_id: str, pending: asyncio.Future[Any]) -> None:
    """$/cancelRequest as an editor sends it, then wait for the (cancelled) answer."""
    client.protocol.notify(types.CANCEL_REQUEST, types.CancelParams(id=msg_id))
    try:
        await asyncio.wait_for(pending, 10)
    except Exception:
        pass  # answered "cancelled"
