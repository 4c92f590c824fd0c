"""Shared fixtures: temp workspaces and a real `aider-lsp serve` subprocess over stdio."""

from __future__ import annotations

import asyncio
import os
import sys
import uuid
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from lsprotocol import types
from pygls.protocol import default_converter
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities
from pytest_lsp.client import register_lsp_features

from aider_lsp import aider_env
from aider_lsp.app import Application
from aider_lsp_testing.apps import scripted_app
from aider_lsp_testing.calc_project import write_calc_project

SERVER_COMMAND = [sys.executable, "-m", "aider_lsp", "serve"]
# for tests that drive the real Aider: CI creates its environment first (scripts/bootstrap)
needs_aider = pytest.mark.skipif(
    not aider_env.is_ready(),
    reason=f"the Aider environment is missing ({aider_env.env_dir()}): run `aider-lsp setup-aider`",
)
# fixture projects hold failing tests on purpose (their captured outputs are the fixtures)
collect_ignore = ["fixtures"]


class AiderTestClient(LanguageClient):
    """pytest-lsp's client plus what our tests check: the initialize result, the server's
    dynamic registrations (accepted and kept), edits refused, and the exited server process."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.initialize_result: types.InitializeResult | None = None
        self.registrations: list[types.Registration] = []
        self.exited_process: asyncio.subprocess.Process | None = None

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


@pytest.fixture
def calc_project(tmp_path: Path) -> Path:
    """The calc project whose multiply test fails (the workflow tests' project)."""
    return write_calc_project(tmp_path)


@pytest.fixture
async def app(calc_project: Path, llm_server: Any) -> AsyncIterator[Application]:
    """An Application on the calc project, its models the scripted server's (closed after)."""
    application = scripted_app(calc_project, llm_server.base_url)
    try:
        yield application
    finally:
        await application.aclose()


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    """A small project: code, a test, a secret and a nested folder."""
    root = tmp_path / "project"
    (root / "pkg").mkdir(parents=True)
    (root / "pkg" / "__init__.py").write_text("")
    (root / "pkg" / "calc.py").write_text("def add(a, b):\n    return a + b\n")
    (root / "README.md").write_text("# demo\n")
    (root / ".env").write_text("OPENAI_API_KEY=sk-secret-do-not-leak\n")
    return root


def _server_env(extra: dict[str, str] | None) -> dict[str, str]:
    env = {key: value for key, value in os.environ.items() if not key.startswith("AIDER_LSP_")}
    env.update(extra or {})
    return env


@asynccontextmanager
async def lsp_session(
    root: Path,
    *,
    init_options: dict[str, Any] | None = None,
    configuration: dict[str, Any] | None = None,
    env: dict[str, str] | None = None,
    capabilities: str | types.ClientCapabilities = "visual-studio-code",
) -> AsyncIterator[AiderTestClient]:
    """Start `aider-lsp serve`, initialize it on `root`, and shut it down afterwards.

    `capabilities` names one of pytest-lsp's recorded clients, or is the capabilities to send."""
    config = ClientServerConfig(
        server_command=SERVER_COMMAND, server_env=_server_env(env), client_factory=make_client
    )
    client = await config.start()
    assert isinstance(client, AiderTestClient)
    if configuration is not None:
        client.set_configuration(configuration, section="aiderLsp")
    try:
        client.initialize_result = await client.initialize_session(
            types.InitializeParams(
                capabilities=client_capabilities(capabilities)
                if isinstance(capabilities, str)
                else capabilities,
                root_uri=root.as_uri(),
                workspace_folders=[types.WorkspaceFolder(uri=root.as_uri(), name=root.name)],
                initialization_options=init_options,
            )
        )
        yield client
    finally:
        await client.shutdown_session()
        await client.stop()


LspSessionFactory = Callable[..., Any]


@pytest.fixture
def lsp() -> LspSessionFactory:
    """`async with lsp(root, init_options=..., env=...) as client:` — a real server subprocess."""
    return lsp_session


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


async def eventually(condition: Callable[[], bool], timeout: float = 5.0) -> bool:
    """Whether `condition` holds within `timeout` seconds (polled every 50 ms)."""
    deadline = asyncio.get_running_loop().time() + timeout
    while not condition():
        if asyncio.get_running_loop().time() > deadline:
            return False
        await asyncio.sleep(0.05)
    return True


@pytest.fixture
def llm_server() -> Any:
    """A started scripted OpenAI-compatible server on 127.0.0.1 (aider_lsp_testing.llm_server)."""
    from aider_lsp_testing.llm_server import ScriptedLLMServer

    with ScriptedLLMServer() as server:
        yield server
