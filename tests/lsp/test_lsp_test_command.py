"""The detected test command over LSP: shown once (window/showMessageRequest), used, remembered;
the user's setting never asks; a client that cannot ask gets the detected command."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from lsprotocol import types

from aider_lsp.suite.choose import remembered_path
from aider_lsp_testing.lsp_session import execute

PASSING_TEST = (
    "import unittest\n\n\nclass T(unittest.TestCase):\n    def test_it(self):\n        print('ran')\n"
)
DETECTED = f"{sys.executable} -m unittest"


def with_unittest_suite(workspace: Path) -> Path:
    (workspace / "test_calc.py").write_text(PASSING_TEST)
    return workspace


def answering(client: object, title: str | None, asked: list[types.ShowMessageRequestParams]) -> None:
    """Let the test client answer window/showMessageRequest with the action `title`."""

    @client.feature(types.WINDOW_SHOW_MESSAGE_REQUEST)  # type: ignore[attr-defined]
    def show_message_request(params: types.ShowMessageRequestParams) -> types.MessageActionItem | None:
        asked.append(params)
        return None if title is None else types.MessageActionItem(title=title)


async def test_a_detected_command_is_asked_once_used_and_remembered(lsp, workspace: Path) -> None:
    with_unittest_suite(workspace)
    asked: list[types.ShowMessageRequestParams] = []
    async with lsp(workspace) as client:
        answering(client, "Use it", asked)
        first = await execute(client, "aider-lsp.system.runTests", {})
        second = await execute(client, "aider-lsp.system.runTests", {})
    assert len(asked) == 1
    assert f"`{DETECTED}` (found: test_*.py files using unittest)" in asked[0].message
    assert [action.title for action in asked[0].actions or []] == ["Use it", "Change…"]
    for result in (first, second):
        assert result["status"] == "COMPLETE", result
        assert result["notes"]["exit_code"] == 0 and result["notes"]["command"] == DETECTED
    remembered = json.loads(remembered_path(workspace).read_text())
    assert remembered["command"] == DETECTED
    # a new session in the same workspace does not ask again
    async with lsp(workspace) as client:
        answering(client, "Use it", asked)
        third = await execute(client, "aider-lsp.system.runTests", {})
    assert len(asked) == 1 and third["notes"]["command"] == DETECTED


async def test_change_stops_and_names_the_setting_without_remembering(lsp, workspace: Path) -> None:
    with_unittest_suite(workspace)
    asked: list[types.ShowMessageRequestParams] = []
    async with lsp(workspace) as client:
        answering(client, "Change…", asked)
        result = await execute(client, "aider-lsp.system.runTests", {})
    assert result["status"] == "FAILED" and result["notes"]["error"]["reason"] == "configuration_error"
    assert "aiderLsp.testCommand" in result["content"] and DETECTED in result["content"]
    assert result["notes"]["detected_test_command"] == DETECTED  # for a client's pre-filled input
    assert not remembered_path(workspace).exists()


async def test_the_users_setting_is_never_asked_about(lsp, workspace: Path) -> None:
    with_unittest_suite(workspace)
    asked: list[types.ShowMessageRequestParams] = []
    command = f"{sys.executable} -c \"print('mine')\""
    async with lsp(workspace, init_options={"testCommand": command}) as client:
        answering(client, "Use it", asked)
        result = await execute(client, "aider-lsp.system.runTests", {})
    assert asked == [] and "mine" in result["notes"]["stdout"]


async def test_a_client_that_cannot_ask_gets_the_detected_command(lsp, workspace: Path) -> None:
    with_unittest_suite(workspace)
    capabilities = types.ClientCapabilities(
        workspace=types.WorkspaceClientCapabilities(configuration=True),
        window=types.WindowClientCapabilities(work_done_progress=True),
    )
    async with lsp(workspace, capabilities=capabilities) as client:
        result = await execute(client, "aider-lsp.system.runTests", {})
    assert result["status"] == "COMPLETE" and result["notes"]["command"] == DETECTED
    assert not remembered_path(workspace).exists()
