"""`aider-lsp.workflow.run` over LSP: a real `aider-lsp serve`, real Aider edits, the scripted LLM
planning and analysing, a real unittest run. Test failures come back as `aider-lsp` diagnostics."""

from __future__ import annotations

import asyncio
import threading
import uuid
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest
from lsprotocol import types
from test_lsp_cancel import _slow_test_command as slow_test_command
from test_lsp_code_actions import code_actions

from aider_lsp.models.events import PROGRESS_SEPARATOR
from aider_lsp_testing.calc_project import (  # the calc project whose test fails, and its scripted LLM
    BUGGY,
    FIXED,
    HALF_FIXED,
    PLAN,
    TEST_COMMAND,
    TESTS,
    analysis_by_exit_code,
)
from aider_lsp_testing.llm_server import (
    IS_AIDER,
    IS_ANALYSIS,
    IS_PLAN,
    aider_whole,
    all_of,
    held,
    json_output,
    last_user_contains,
)
from aider_lsp_testing.lsp_session import execute
from aider_lsp_testing.raw_lsp import alive
from aider_lsp_testing.waiting import eventually

pytestmark = pytest.mark.aider


MULTIPLY_ASSERT = 10  # 0-based LSP line of `self.assertEqual(multiply(3, 4), 12)`
FAILURE = {"verdict": "FAILURE", "message": "multiply is beyond me"}
PUBLISH = types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS

Diagnostics = Sequence[types.Diagnostic]


def options(llm_server: Any) -> dict[str, Any]:
    return {
        "model": "openai:scripted-planner",
        "baseUrl": llm_server.base_url,
        "apiKey": "test-key",
        "aiderModel": "openai/scripted-coder",
        "aiderServer": {"args": ["--edit-format", "whole"]},
        "timeouts": {"aider": 90, "test": 60},
    }


def edit_then_slow_test(llm_server: Any, calc_project: Path) -> tuple[Path, dict[str, Any]]:
    """A run that plans, edits calc.py, then hangs in its test (which writes its pid first)."""
    pid_file = calc_project.parent / "test.pid"
    llm_server.add_rule(IS_PLAN, json_output(PLAN))
    llm_server.add_rule(IS_AIDER, aider_whole({"calc.py": HALF_FIXED}))
    return pid_file, {"goal": "fix calc", "test_command": slow_test_command(pid_file)}


async def wait_for_pid(pid_file: Path) -> int:
    """The slow test command's pid, once the run has planned and edited (Aider may start cold)."""
    started = await eventually(lambda: pid_file.exists() and pid_file.read_text(), 120)
    assert started, "the test command never started"
    return int(pid_file.read_text())


async def wait_until_gone(pid: int) -> None:
    assert await eventually(lambda: not alive(pid)), f"the test process {pid} survived the cancel"


async def wait_for_diagnostics(
    client: Any, uri: str, wanted: Callable[[Diagnostics], bool], timeout: float = 120
) -> Diagnostics:
    """Wait for publishDiagnostics until the uri's diagnostics are what the test wants."""

    async def until() -> Diagnostics:
        while not wanted(client.diagnostics.get(uri, [])):
            await client.wait_for_notification(PUBLISH)
        return client.diagnostics[uri]

    return await asyncio.wait_for(until(), timeout)


def record_publishes(client: Any) -> list[types.PublishDiagnosticsParams]:
    """Every publishDiagnostics the client gets, in order (client.diagnostics keeps the last)."""
    published: list[types.PublishDiagnosticsParams] = []
    handler = client.protocol.fm.features[PUBLISH]

    def recording(params: types.PublishDiagnosticsParams) -> Any:
        published.append(params)
        return handler(params)

    client.protocol.fm.features[PUBLISH] = recording
    return published


def on_line(line: int) -> Callable[[Diagnostics], bool]:
    return lambda found: any(d.range.start.line == line and d.source == "aider-lsp" for d in found)


def progress_of(client: Any, title: str) -> list[Any]:
    return next(
        reports
        for reports in client.progress_reports.values()
        if reports and getattr(reports[0], "title", None) == title
    )


async def test_failing_iteration_retry_then_complete_clears_diagnostics(
    lsp: Any, calc_project: Path, llm_server: Any
) -> None:
    analysed = threading.Event()

    def analysis(request: dict[str, Any]) -> Any:
        answer = analysis_by_exit_code(request)
        analysed.set()
        return answer

    llm_server.add_rule(IS_PLAN, json_output(PLAN))
    llm_server.add_rule(IS_ANALYSIS, analysis)
    # the first edit (the goal, with the failing output of the tests run before it) fixes half
    llm_server.add_rule(
        all_of(IS_AIDER, last_user_contains("make the tests pass")),
        aider_whole({"calc.py": HALF_FIXED}),
        times=1,
    )
    # the retry sends the failing output into Aider's chat, as Aider's own --auto-test loop does;
    # it answers once the analysis beside it has answered (an order of events, not a delay)
    llm_server.add_rule(
        all_of(IS_AIDER, last_user_contains("I ran this command:")),
        held(analysed, aider_whole({"calc.py": FIXED})),
    )
    test_uri = (calc_project / "test_calc.py").as_uri()
    async with lsp(calc_project, init_options=options(llm_server)) as client:
        commands = set(client.initialize_result.capabilities.execute_command_provider.commands)
        assert {"aider-lsp.workflow.run", "aider-lsp.diagnostics.clear"} <= commands
        run = asyncio.ensure_future(
            execute(
                client,
                "aider-lsp.workflow.run",
                {"goal": "make the tests pass", "test_command": TEST_COMMAND},
            )
        )
        failing = await wait_for_diagnostics(client, test_uri, on_line(MULTIPLY_ASSERT))
        diagnostic = next(d for d in failing if d.range.start.line == MULTIPLY_ASSERT)
        assert diagnostic.severity == types.DiagnosticSeverity.Error
        assert "AssertionError" in diagnostic.message
        # the line's text is covered, from its first non-blank character
        assert diagnostic.range.start.character == 8
        assert diagnostic.range.end.character == len("        self.assertEqual(multiply(3, 4), 12)")
        # other requests answer while the run goes on
        listed = await execute(client, "aider-lsp.tools.list", {})
        assert listed["status"] == "COMPLETE"

        result = await run
        assert result["status"] == "COMPLETE", result["content"]
        assert (calc_project / "calc.py").read_text() == FIXED
        first, second = result["parsedContent"]["iterations"]
        assert first["analysis"]["verdict"] == "RETRY" and second["test"]["exit_code"] == 0
        assert list(client.diagnostics[test_uri]) == []  # cleared on SUCCESS
        assert all(not found for found in client.diagnostics.values())
        reports = progress_of(client, "Aider workflow")
        # each sentence is a phase, then the spend once anything was spent
        sentences = [getattr(report, "message", None) or "" for report in reports]
        messages = [sentence.split(PROGRESS_SEPARATOR, 1)[0] for sentence in sentences]
        # the plan may still be running beside the first test run ("…; planning beside it")
        assert any(m.startswith("Iteration 1/3: running the whole suite") for m in messages), messages
        # the analysis of iteration 1 starts beside the second edit; it may have ended already
        # when that edit starts (iteration 1 waits for the plan first: "waiting for the plan")
        assert any(m.startswith("Iteration 2/3: Aider is editing") for m in messages), messages
        assert "Iteration 2/3: analysing the result" not in messages  # green tests: no analysis
        assert "Aider: " in (getattr(reports[-2], "message", None) or "")  # the spend on screen
        assert progress_of(client, "Aider workflow")[-1].kind == "end"


async def test_failed_run_keeps_diagnostics_fix_action_and_clear(
    lsp: Any, calc_project: Path, llm_server: Any
) -> None:
    llm_server.add_rule(IS_PLAN, json_output(PLAN))
    llm_server.add_rule(IS_ANALYSIS, json_output(FAILURE))
    llm_server.add_rule(IS_AIDER, aider_whole({"calc.py": HALF_FIXED}))
    test_path = calc_project / "test_calc.py"
    test_uri = test_path.as_uri()
    async with lsp(calc_project, init_options=options(llm_server)) as client:
        client.text_document_did_open(
            types.DidOpenTextDocumentParams(
                types.TextDocumentItem(uri=test_uri, language_id="python", version=7, text=TESTS)
            )
        )
        published = record_publishes(client)
        result = await execute(
            client,
            "aider-lsp.workflow.run",
            {"goal": "fix calc", "test_command": TEST_COMMAND, "max_retries": 1},
        )
        assert result["status"] == "FAILED"
        found = await wait_for_diagnostics(client, test_uri, on_line(MULTIPLY_ASSERT))
        # published with the open document's version
        assert {params.version for params in published if params.uri == test_uri} == {7}
        # the analysis' advice sits on the plan's file, line 0, as information
        advice = await wait_for_diagnostics(client, (calc_project / "calc.py").as_uri(), bool)
        assert [(d.range.start.line, d.severity) for d in advice] == [
            (0, types.DiagnosticSeverity.Information)
        ]
        assert "multiply is beyond me" in advice[0].message

        # our own diagnostic offers "Fix with Aider" on its file
        ours = next(d for d in found if d.range.start.line == MULTIPLY_ASSERT)
        actions = await code_actions(client, test_uri, ours.range, [ours])
        fix = next(action for action in actions or [] if action.title == "Fix with Aider")
        assert fix.command.arguments[0]["file_context"] == ["test_calc.py"]
        assert "AssertionError" in fix.command.arguments[0]["prompt"]

        cleared = await execute(client, "aider-lsp.diagnostics.clear", {})
        assert cleared["status"] == "COMPLETE"
        await wait_for_diagnostics(client, test_uri, lambda found: not found)
        await wait_for_diagnostics(client, (calc_project / "calc.py").as_uri(), lambda found: not found)


async def test_cancel_request_mid_test_stops_everything_and_undo_restores(
    lsp: Any, calc_project: Path, llm_server: Any
) -> None:
    pid_file, arguments = edit_then_slow_test(llm_server, calc_project)
    # the story is a cancel in the tests after the edit, not in the (same, slow) tests run before it
    init = {**options(llm_server), "testsBeforeFirstEdit": False}
    async with lsp(calc_project, init_options=init) as client:
        msg_id = str(uuid.uuid4())
        pending = asyncio.ensure_future(
            client.protocol.send_request_async(
                types.WORKSPACE_EXECUTE_COMMAND,
                types.ExecuteCommandParams(command="aider-lsp.workflow.run", arguments=[arguments]),
                msg_id=msg_id,
            )
        )
        pid = await wait_for_pid(pid_file)
        assert (calc_project / "calc.py").read_text() == HALF_FIXED  # the edit landed, the test runs
        client.protocol.notify(types.CANCEL_REQUEST, types.CancelParams(id=msg_id))
        with pytest.raises(Exception, match="cancel"):
            await asyncio.wait_for(pending, 60)
        await wait_until_gone(pid)
        # the progress ends once the run has settled its checkpoint
        assert await eventually(lambda: progress_of(client, "Aider workflow")[-1].kind == "end")

        undone = await execute(client, "aider-lsp.workflow.undo", {})
        assert undone["status"] == "COMPLETE", undone["content"]
        assert (calc_project / "calc.py").read_text() == BUGGY


async def test_second_run_refused_while_one_runs_then_progress_cancel(
    lsp: Any, calc_project: Path, llm_server: Any
) -> None:
    pid_file, arguments = edit_then_slow_test(llm_server, calc_project)
    # the story is a cancel in the tests after the edit, not in the (same, slow) tests run before it
    init = {**options(llm_server), "testsBeforeFirstEdit": False}
    async with lsp(calc_project, init_options=init) as client:
        first = asyncio.ensure_future(execute(client, "aider-lsp.workflow.run", arguments))
        pid = await wait_for_pid(pid_file)

        second = await execute(client, "aider-lsp.workflow.run", {"goal": "something else"})
        assert second["status"] == "FAILED"
        assert "already running" in second["content"]
        assert alive(pid) and not first.done()  # refused while the first still runs

        token = next(
            token
            for token, reports in client.progress_reports.items()
            if reports
            and getattr(reports[0], "title", None) == "Aider workflow"
            and reports[-1].kind != "end"
        )
        client.protocol.notify(
            types.WINDOW_WORK_DONE_PROGRESS_CANCEL, types.WorkDoneProgressCancelParams(token=token)
        )
        result = await asyncio.wait_for(first, 60)
        assert result["status"] == "FAILED" and result["notes"]["error"]["reason"] == "cancelled"
        # the answer says what the run had already changed, so the editor can offer Undo
        assert result["notes"]["changed_files"] == ["calc.py"], result
        assert "calc.py" in result["content"] and result["notes"]["checkpoint_id"], result
        assert "calc.py" in result["notes"]["diff"], result
        await wait_until_gone(pid)
        assert client.progress_reports[token][-1].kind == "end"
        undone = await execute(client, "aider-lsp.workflow.undo", {})
        assert undone["status"] == "COMPLETE", undone["content"]
        assert (calc_project / "calc.py").read_text() == BUGGY
