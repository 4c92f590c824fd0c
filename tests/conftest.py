"""Shared fixtures: temp workspaces, the scripted model server and a real `aider-lsp serve`.

The helpers tests call live in `aider_lsp_testing` (lsp_session, waiting, markers); this file
only makes fixtures of them and skips the `aider` tests where the Aider environment is missing.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from aider_lsp.app import Application
from aider_lsp_testing.apps import scripted_app
from aider_lsp_testing.calc_project import write_calc_project
from aider_lsp_testing.llm_server import ScriptedLLMServer
from aider_lsp_testing.lsp_session import lsp_session
from aider_lsp_testing.markers import skip_without_aider

# fixture projects hold failing tests on purpose (their captured outputs are the fixtures)
collect_ignore = ["suite/fixtures"]


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    skip_without_aider(items)


@pytest.fixture(autouse=True)
def user_state(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The user's own state folder (what they confirmed per workspace), one per test: a test
    never reads or writes the real ~/.local/state, and servers it starts inherit it."""
    folder = tmp_path_factory.mktemp("user-state")
    monkeypatch.setenv("XDG_STATE_HOME", str(folder))
    # the sign-in store (credentials.py) too: a test never reads a key a developer stored
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path_factory.mktemp("user-config")))
    # and no test reads or writes a developer's OS keyring (the `keyring` package's own switch)
    monkeypatch.setenv("PYTHON_KEYRING_BACKEND", "keyring.backends.null.Keyring")
    return folder


@pytest.fixture
def calc_project(tmp_path: Path) -> Path:
    """The calc project whose multiply test fails (the workflow tests' project)."""
    return write_calc_project(tmp_path)


@pytest.fixture
async def app(calc_project: Path, llm_server: ScriptedLLMServer) -> AsyncIterator[Application]:
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


LspSessionFactory = Callable[..., Any]


@pytest.fixture
def lsp() -> LspSessionFactory:
    """`async with lsp(root, init_options=..., env=...) as client:` — a real server subprocess."""
    return lsp_session


@pytest.fixture
def llm_server() -> Iterator[ScriptedLLMServer]:
    """A started scripted OpenAI-compatible server on 127.0.0.1 (aider_lsp_testing.llm_server)."""
    with ScriptedLLMServer() as server:
        yield server


@pytest.fixture
def narrow_every_suite(monkeypatch: pytest.MonkeyPatch) -> None:
    """Failing tests first on any suite: the tests of it use suites that take milliseconds,
    which a run otherwise runs whole (choose_tests.QUICK_SUITE_S)."""
    from aider_lsp.workflow import choose_tests

    monkeypatch.setattr(choose_tests, "QUICK_SUITE_S", 0.0)
