"""A workflow run whose Aider server dies between two iterations: the next edit finds a new
server that forgot the run's chat, starts a new chat told the run's instructions again, and the
run goes on to green tests (REAL Aider, the scripted model, a real unittest run)."""

from __future__ import annotations

import os
import shlex
import sys
from pathlib import Path
from typing import Any

import pytest

from aider_lsp.models import RequestContext, TaskStatus, WorkflowRequest
from aider_lsp_testing.apps import run_workflow_on_wire, scripted_app
from aider_lsp_testing.calc_project import FIXED, HALF_FIXED, PLAN, analysis_by_exit_code
from aider_lsp_testing.llm_server import (
    IS_AIDER,
    IS_ANALYSIS,
    IS_PLAN,
    aider_whole,
    all_of,
    json_output,
    last_user_contains,
    last_user_message,
)

pytestmark = [pytest.mark.aider, pytest.mark.slow]
RETRY_MARK = "I ran this command:"

# The test command of this story: the first time it runs, it kills the Aider server serving
# the workspace (as a crash would), then runs the tests as usual.
KILL_AIDER_ONCE = """
import os, signal, subprocess, sys
workspace, marker = sys.argv[1], sys.argv[2]
if not os.path.exists(marker):
    open(marker, "w").close()
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            argv = open(f"/proc/{pid}/cmdline", "rb").read().split(b"\\0")
        except OSError:
            continue
        if b"aider_mcp" in argv and os.fsencode(workspace) in argv:
            os.kill(int(pid), signal.SIGKILL)
sys.exit(subprocess.call([sys.executable, "-m", "unittest"]))
"""


async def test_a_chat_the_restarted_server_forgot_is_started_again_with_the_instructions(
    calc_project: Path, llm_server: Any, tmp_path: Path
) -> None:
    script = tmp_path / "kill_aider_once.py"
    script.write_text(KILL_AIDER_ONCE)
    marker = tmp_path / "killed"
    command = shlex.join([sys.executable, str(script), os.fspath(calc_project), str(marker)])
    llm_server.add_rule(IS_PLAN, json_output(PLAN))
    llm_server.add_rule(IS_ANALYSIS, analysis_by_exit_code)
    llm_server.add_rule(all_of(IS_AIDER, last_user_contains(RETRY_MARK)), aider_whole({"calc.py": FIXED}))
    llm_server.add_rule(IS_AIDER, aider_whole({"calc.py": HALF_FIXED}))

    request = WorkflowRequest(goal="make the tests pass", test_command=command, max_retries=3)
    # the kill must come after the first edit's chat: no test run before that edit
    app = scripted_app(calc_project, llm_server.base_url, testsBeforeFirstEdit=False)
    try:
        result = await run_workflow_on_wire(app, request, RequestContext())
    finally:
        await app.aclose()

    assert marker.exists(), "the test command never ran"
    assert result.status is TaskStatus.COMPLETE, result.content
    assert (calc_project / "calc.py").read_text() == FIXED
    edits = [request for request in llm_server.chat_requests() if IS_AIDER(request)]
    assert len(edits) == 2
    # a new chat, told the instructions again beside the failure (a kept chat gets the failure only)
    retry = last_user_message(edits[1])
    assert PLAN["instructions"] in retry and RETRY_MARK in retry
