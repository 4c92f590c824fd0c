"""Diagnostics follow the code (a real server over stdio, REAL Aider, the scripted model, a real
unittest run): a test failure's diagnostic moves with the lines the user inserts or deletes
above it, goes when its own line is edited, and "Fix with Aider" on it re-runs the tests that
failed, so a fixed failure's diagnostic is gone and one still failing stays."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from lsprotocol import types
from test_lsp_code_actions import code_actions
from test_lsp_workflow import (
    FAILURE,
    MULTIPLY_ASSERT,
    on_line,
    options,
    record_publishes,
    wait_for_diagnostics,
)

from aider_lsp_testing.calc_project import FIXED, HALF_FIXED, PLAN, TEST_COMMAND, TESTS
from aider_lsp_testing.llm_server import IS_AIDER, IS_ANALYSIS, IS_PLAN, aider_whole, json_output
from aider_lsp_testing.lsp_session import execute
from aider_lsp_testing.waiting import eventually

pytestmark = pytest.mark.aider


async def failed_run(client: Any, llm_server: Any, test_uri: str, opened: str = TESTS) -> types.Diagnostic:
    """A run that ends red, leaving the multiply test's failure on test_calc.py (open, v7, with
    the text `opened`)."""
    llm_server.add_rule(IS_PLAN, json_output(PLAN))
    llm_server.add_rule(IS_ANALYSIS, json_output(FAILURE))
    llm_server.add_rule(IS_AIDER, aider_whole({"calc.py": HALF_FIXED}))
    client.text_document_did_open(
        types.DidOpenTextDocumentParams(
            types.TextDocumentItem(uri=test_uri, language_id="python", version=7, text=opened)
        )
    )
    result = await execute(
        client, "aider-lsp.workflow.run", {"goal": "fix calc", "test_command": TEST_COMMAND, "max_retries": 1}
    )
    assert result["status"] == "FAILED"
    found = await wait_for_diagnostics(client, test_uri, on_line(MULTIPLY_ASSERT))
    return next(d for d in found if d.range.start.line == MULTIPLY_ASSERT)


def change(
    client: Any, uri: str, version: int, start: tuple[int, int], end: tuple[int, int], text: str
) -> None:
    client.text_document_did_change(
        types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=version),
            content_changes=[
                types.TextDocumentContentChangePartial(
                    range=types.Range(
                        start=types.Position(line=start[0], character=start[1]),
                        end=types.Position(line=end[0], character=end[1]),
                    ),
                    text=text,
                )
            ],
        )
    )


async def test_a_diagnostic_moves_with_the_lines_above_and_goes_when_its_line_is_edited(
    lsp: Any, calc_project: Path, llm_server: Any
) -> None:
    test_uri = (calc_project / "test_calc.py").as_uri()
    async with lsp(calc_project, init_options=options(llm_server)) as client:
        before = await failed_run(client, llm_server, test_uri)
        published = record_publishes(client)

        change(client, test_uri, 8, (0, 0), (0, 0), "# one\n# two\n")  # two lines inserted above
        moved = await wait_for_diagnostics(client, test_uri, on_line(MULTIPLY_ASSERT + 2), timeout=60)
        ours = next(d for d in moved if d.range.start.line == MULTIPLY_ASSERT + 2)
        assert (ours.range.start.character, ours.range.end.character, ours.message) == (
            before.range.start.character,
            before.range.end.character,
            before.message,
        )
        assert published[-1].version == 8

        change(client, test_uri, 9, (0, 0), (1, 0), "")  # one deleted above
        await wait_for_diagnostics(client, test_uri, on_line(MULTIPLY_ASSERT + 1), timeout=60)
        assert published[-1].version == 9

        change(client, test_uri, 10, (0, 0), (0, 5), "# ONE")  # an edit above, on one line: stays
        assert await eventually(lambda: published[-1].version == 10)
        assert on_line(MULTIPLY_ASSERT + 1)(published[-1].diagnostics)

        line = MULTIPLY_ASSERT + 1  # the user edits the failing line itself: what it said may be stale
        change(client, test_uri, 11, (line, 8), (line, 12), "this")
        await wait_for_diagnostics(client, test_uri, lambda found: not on_line(line)(found), timeout=60)
        assert published[-1].version == 11


async def test_an_editor_catching_up_with_the_file_the_tests_read_does_not_move_them(
    lsp: Any, calc_project: Path, llm_server: Any
) -> None:
    """The editor had not reloaded the file yet when the failures came (an edit had just written
    it): its reload is a change, but the positions were made for that very text."""
    test_uri = (calc_project / "test_calc.py").as_uri()
    first, rest = TESTS.split("\n", 1)
    async with lsp(calc_project, init_options=options(llm_server)) as client:
        await failed_run(client, llm_server, test_uri, opened=rest)
        published = record_publishes(client)
        change(client, test_uri, 8, (0, 0), (0, 0), first + "\n")  # the reload: now as on disk
        assert await eventually(lambda: bool(published) and published[-1].version == 8)
        assert on_line(MULTIPLY_ASSERT)(published[-1].diagnostics)


async def fix_with_aider(
    client: Any, llm_server: Any, test_uri: str, failing: types.Diagnostic, answer: str
) -> Any:
    """Choose "Fix with Aider" on the failing test's diagnostic, Aider writing `answer` to calc.py."""
    actions = await code_actions(client, test_uri, failing.range, [failing])
    fix = next(action for action in actions or [] if action.title == "Fix with Aider")
    assert fix.command is not None and fix.command.arguments is not None
    assert fix.command.arguments[0]["rerun_failing_tests"] is True
    llm_server.clear_rules()
    llm_server.add_rule(IS_AIDER, aider_whole({"calc.py": answer}))
    return await execute(client, fix.command.command, *fix.command.arguments)


async def test_fix_with_aider_on_a_failing_test_reruns_it_and_its_diagnostic_goes(
    lsp: Any, calc_project: Path, llm_server: Any
) -> None:
    test_uri = (calc_project / "test_calc.py").as_uri()
    async with lsp(calc_project, init_options=options(llm_server)) as client:
        failing = await failed_run(client, llm_server, test_uri)
        result = await fix_with_aider(client, llm_server, test_uri, failing, FIXED)
        assert result["status"] == "COMPLETE", result["content"]
        assert "The tests that failed pass now." in result["content"]
        assert "test_calc.CalcTest.test_multiply" in result["notes"]["retest"]["command"]  # only that test
        await wait_for_diagnostics(client, test_uri, lambda found: not found, timeout=30)


async def test_fix_with_aider_that_does_not_fix_leaves_the_failure_shown(
    lsp: Any, calc_project: Path, llm_server: Any
) -> None:
    test_uri = (calc_project / "test_calc.py").as_uri()
    async with lsp(calc_project, init_options=options(llm_server)) as client:
        failing = await failed_run(client, llm_server, test_uri)
        published = record_publishes(client)
        result = await fix_with_aider(
            client, llm_server, test_uri, failing, HALF_FIXED.replace("a + b", "b + a")
        )
        assert result["status"] == "COMPLETE", result["content"]
        assert "Still failing (exit code 1)" in result["content"]
        await wait_for_diagnostics(client, test_uri, lambda found: bool(published), timeout=30)
        assert on_line(MULTIPLY_ASSERT)(client.diagnostics[test_uri])
