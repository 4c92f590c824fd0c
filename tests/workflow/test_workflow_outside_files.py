"""A workflow's Aider turns may edit files outside its chat (issue 31), with REAL Aider edits
through the bundled server, the scripted model and a real unittest run: the file the fix
needs joins the chat and the run reaches green; undo takes it back; a file the editor holds
unsaved, or a secret, is still refused. One-shot `aider:automatic` keeps refusing
(tests/test_aider_real.py `test_aider_stays_within_the_given_files`)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from aider_lsp.app import Application
from aider_lsp.config.settings import load_settings
from aider_lsp.models import RequestContext, TaskStatus, WorkflowRequest
from aider_lsp_testing.apps import run_workflow_on_wire, scripted_options
from aider_lsp_testing.llm_server import IS_AIDER, IS_ANALYSIS, IS_PLAN, aider_whole, json_output, text

pytestmark = pytest.mark.aider

UNITS = "CM_PER_INCH = 2.54\n"
AREA = "def circle_area(r):\n    return 3.14159 * r\n"
AREA_FIXED = "def circle_area(r):\n    return 3.14159 * r * r\n"
TESTS = (
    "import unittest\n\nfrom area import circle_area\n\n\n"
    "class AreaTest(unittest.TestCase):\n"
    "    def test_circle_area(self):\n"
    "        self.assertAlmostEqual(circle_area(2), 12.56636)\n"
)
COMMAND = f"{sys.executable} -m unittest"
RETRY = {"verdict": "RETRY", "message": "still red", "next_prompt": "Fix circle_area"}


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "shapes"
    root.mkdir()
    (root / "units.py").write_text(UNITS)
    (root / "area.py").write_text(AREA)
    (root / "test_area.py").write_text(TESTS)
    (root / ".env").write_text("API_KEY=sk-secret-do-not-leak\n")
    return root


def app_on(project: Path, llm_server: Any, unsaved: tuple[str, ...] = ()) -> Application:
    settings = load_settings(scripted_options(llm_server.base_url), environ={})
    return Application(project, settings, unsaved_files=lambda: unsaved)


async def run_on_units(app: Application, max_retries: int = 3) -> Any:
    """The user chose units.py; the fix is in area.py, which Aider's reply edits."""
    request = WorkflowRequest(
        goal="Make the circle area test pass",
        test_command=COMMAND,
        file_context=["units.py"],
        max_retries=max_retries,
    )
    return await run_workflow_on_wire(app, request, RequestContext())


async def test_an_edit_outside_the_chat_reaches_green_and_undo_takes_it_back(
    project: Path, llm_server: Any
) -> None:
    llm_server.add_rule(IS_PLAN, json_output({"instructions": "x", "files": ["units.py"]}))
    llm_server.add_rule(IS_ANALYSIS, json_output(RETRY))
    llm_server.add_rule(IS_AIDER, aider_whole({"area.py": AREA_FIXED}))
    app = app_on(project, llm_server)
    try:
        result = await run_on_units(app)
        assert result.status is TaskStatus.COMPLETE, result.content
        assert (project / "area.py").read_text() == AREA_FIXED
        (only,) = result.notes["workflow"]["iterations"]
        assert only["files"] == ["units.py", "area.py"]  # it joined the run's files
        assert result.notes["changed_files"] == ["area.py"]
        undo = app.undo()
        assert undo.status is TaskStatus.COMPLETE, undo.content
        assert (project / "area.py").read_text() == AREA
    finally:
        await app.aclose()


async def test_a_file_unsaved_in_the_editor_or_a_secret_is_still_refused(
    project: Path, llm_server: Any
) -> None:
    llm_server.add_rule(IS_ANALYSIS, json_output(RETRY))
    llm_server.add_rule(IS_AIDER, aider_whole({"area.py": AREA_FIXED, ".env": "API_KEY=leaked\n"}))
    app = app_on(project, llm_server, unsaved=(str(project / "area.py"),))
    try:
        result = await run_on_units(app, max_retries=1)
    finally:
        await app.aclose()
    assert result.status is TaskStatus.FAILED
    assert (project / "area.py").read_text() == AREA  # the user's unsaved buffer is not overwritten
    assert (project / ".env").read_text() == "API_KEY=sk-secret-do-not-leak\n"
    (only,) = result.notes["workflow"]["iterations"]
    assert only["aider"]["changed_files"] == [] and only["test"] is None  # a failed attempt


PI_ROUNDED = "PI = 3  # rounded\n"
PI_FIXED = "PI = 3.14159\n"
AREA_OF_PI = "from constants import PI\n\n\ndef circle_area(r):\n    return PI * r * r\n"


async def test_a_goal_alone_reaches_green_when_the_fix_is_in_a_file_the_index_did_not_offer(
    tmp_path: Path, llm_server: Any
) -> None:
    """No file chosen: the first edit gets the index's files for the goal (the area code and
    its test); the bug is in constants.py, which Aider's reply edits from outside the chat."""
    root = tmp_path / "geometry"
    root.mkdir()
    (root / "constants.py").write_text(PI_ROUNDED)
    (root / "area.py").write_text(AREA_OF_PI)
    (root / "test_area.py").write_text(TESTS)
    llm_server.add_rule(IS_PLAN, json_output({"instructions": "Fix circle_area", "files": ["area.py"]}))
    llm_server.add_rule(IS_ANALYSIS, json_output(RETRY))
    llm_server.add_rule(IS_AIDER, aider_whole({"constants.py": PI_FIXED}))
    app = app_on(root, llm_server)
    try:
        request = WorkflowRequest(goal="Make the circle area test pass", test_command=COMMAND, max_retries=3)
        result = await run_workflow_on_wire(app, request, RequestContext())
    finally:
        await app.aclose()
    first_edit = next(request for request in llm_server.chat_requests() if IS_AIDER(request))
    assert "# rounded" not in str(first_edit["messages"])  # constants.py was not in the chat
    assert result.status is TaskStatus.COMPLETE, result.content
    assert (root / "constants.py").read_text() == PI_FIXED
    (only,) = result.notes["workflow"]["iterations"]
    assert "constants.py" in only["files"] and result.notes["changed_files"] == ["constants.py"]


def git_project(root: Path) -> None:
    """The project as a git repository: Aider's repository map is on and its files can be asked for."""
    for args in (
        ["init", "-q"],
        ["add", "."],
        ["-c", "user.email=t@t", "-c", "user.name=t", "commit", "-qm", "start"],
    ):
        subprocess.run(["git", *args], cwd=root, check=True, capture_output=True)


async def test_a_file_the_message_names_stays_out_of_the_chat_until_the_model_asks_for_it(
    project: Path, llm_server: Any
) -> None:
    """A workflow's message names files without sending them (the first edit's other
    candidates, a test's output): Aider does not add them on its own; the model's reply asks
    for area.py, Aider adds it (one more request, counted in the edit's usage) and the fix lands."""
    (project / ".env").unlink()
    git_project(project)
    llm_server.add_rule(IS_ANALYSIS, json_output(RETRY))
    llm_server.add_rule(
        IS_AIDER, text("To fix this I need to edit area.py. Please add it to the chat."), times=1
    )
    llm_server.add_rule(IS_AIDER, aider_whole({"area.py": AREA_FIXED}))
    app = app_on(project, llm_server)
    try:
        request = WorkflowRequest(
            goal="Make the circle area test pass; the bug may be in area.py",
            test_command=COMMAND,
            file_context=["units.py"],
            max_retries=1,
        )
        result = await run_workflow_on_wire(app, request, RequestContext())
    finally:
        await app.aclose()
    assert result.status is TaskStatus.COMPLETE, result.content
    first, second = [request for request in llm_server.chat_requests() if IS_AIDER(request)][:2]
    assert "return 3.14159 * r" not in str(first["messages"])  # named in the message, not sent
    assert "return 3.14159 * r" in str(second["messages"])  # asked for: sent whole
    (only,) = result.notes["workflow"]["iterations"]
    assert only["aider"]["usage"]["requests"] == 2
    assert result.notes["workflow"]["usage"]["calls"]["edit"]["requests"] == 2
