"""REAL Aider edits through the bundled MCP server, the scripted LLM answering in Aider's formats.

Needs the Aider environment (`aider-lsp setup-aider`; CI runs it first).
"""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from collections.abc import AsyncIterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from aider_lsp.app import Application
from aider_lsp.models import TaskStatus
from aider_lsp_testing.apps import scripted_app
from aider_lsp_testing.llm_server import (
    IS_AIDER_SUMMARY,
    aider_diff,
    aider_whole,
    any_request,
    fault,
    is_aider_diff_format,
    slow,
    text,
)
from aider_lsp_testing.waiting import eventually

pytestmark = pytest.mark.aider

ORIGINAL = "def add(a, b):\n    return a + b\n"
EDITED = "def add(a, b):\n    return a + b + 0  # edited\n"


@pytest.fixture
async def app(workspace: Path, llm_server: Any) -> AsyncIterator[Application]:
    application = scripted_app(workspace, llm_server.base_url)
    try:
        yield application
    finally:
        await application.aclose()


def reason(result: Any) -> str:
    return result.notes["error"]["reason"]


async def test_whole_format_edit_changes_the_file_and_reports_the_diff(
    app: Application, workspace: Path, llm_server: Any
) -> None:
    llm_server.add_rule(any_request, aider_whole({"pkg/calc.py": EDITED}))
    result = await app.handle_task_command(
        "aider:automatic", {"prompt": "mark add as edited", "file_context": '["pkg/calc.py"]'}
    )
    assert result.status is TaskStatus.COMPLETE, result.content
    assert (workspace / "pkg" / "calc.py").read_text() == EDITED
    assert result.notes["success"] is True
    assert "-    return a + b\n+    return a + b + 0  # edited" in result.content
    assert result.notes["changed_files"] == ["pkg/calc.py"]
    # Aider really got the file and the prompt over HTTP
    request = llm_server.chat_requests()[-1]
    blob = str(request["messages"])
    assert "mark add as edited" in blob and "return a + b" in blob
    # nothing of Aider's lands in the user's tree (no chat history, no tags cache)
    leftovers = {p.name for p in workspace.iterdir()}
    assert not any(name.startswith(".aider.") for name in leftovers), leftovers


async def test_an_edit_without_files_edits_the_files_the_memory_finds(
    app: Application, workspace: Path, llm_server: Any
) -> None:
    llm_server.add_rule(any_request, aider_whole({"pkg/calc.py": EDITED}))
    result = await app.handle_task_command("aider:automatic", {"prompt": "make add return a + b + 0"})
    assert result.status is TaskStatus.COMPLETE, result.content
    assert result.notes["files"][0] == "pkg/calc.py" and ".env" not in result.notes["files"]
    assert (workspace / "pkg" / "calc.py").read_text() == EDITED
    assert "sk-secret-do-not-leak" not in str(llm_server.chat_requests())


async def test_diff_format_edit_applies_search_replace(workspace: Path, llm_server: Any) -> None:
    llm_server.add_rule(
        is_aider_diff_format,
        aider_diff([("pkg/calc.py", "    return a + b\n", "    return b + a\n")]),
    )
    app = scripted_app(workspace, llm_server.base_url, edit_format="diff")
    try:
        result = await app.handle_task_command(
            "aider:automatic", {"prompt": "swap the operands", "file_context": ["pkg/calc.py"]}
        )
    finally:
        await app.aclose()
    assert result.status is TaskStatus.COMPLETE, result.content
    assert (workspace / "pkg" / "calc.py").read_text() == "def add(a, b):\n    return b + a\n"
    assert "+    return b + a" in result.notes["diff"]


async def test_prose_only_answer_is_not_a_success(app: Application, workspace: Path, llm_server: Any) -> None:
    llm_server.add_rule(any_request, text("You could consider adding type hints. Good luck!"))
    result = await app.handle_task_command(
        "aider:automatic", {"prompt": "improve it", "file_context": ["pkg/calc.py"]}
    )
    assert result.status is TaskStatus.FAILED
    assert reason(result) == "tool_execution_error"
    assert result.notes["success"] is False
    assert (workspace / "pkg" / "calc.py").read_text() == ORIGINAL
    assert app.checkpoints.latest() is None  # nothing changed: nothing to undo


async def test_new_file_shows_in_the_diff_and_undo_removes_it(
    app: Application, workspace: Path, llm_server: Any
) -> None:
    llm_server.add_rule(
        any_request,
        aider_whole({"pkg/calc.py": EDITED, "pkg/util.py": "def twice(x):\n    return 2 * x\n"}),
    )
    result = await app.handle_task_command(
        "aider:automatic",
        {"prompt": "add a helper module", "file_context": ["pkg/calc.py", "pkg/util.py"]},
    )
    assert result.status is TaskStatus.COMPLETE, result.content
    assert (workspace / "pkg" / "util.py").read_text() == "def twice(x):\n    return 2 * x\n"
    assert "+++ b/pkg/util.py" in result.notes["diff"] and "new file" in result.notes["diff"]

    undo = app.undo()
    assert undo.status is TaskStatus.COMPLETE, undo.content
    assert (workspace / "pkg" / "calc.py").read_text() == ORIGINAL
    assert not (workspace / "pkg" / "util.py").exists()
    assert app.undo().content == "Nothing to undo."


OTHER_PROGRAM = """
import pathlib, sys
root = pathlib.Path(sys.argv[1])
(root / "build.log").write_text("written by another program\\n")
(root / "README.md").write_text("# demo, edited by another program\\n")
(root / "pkg" / "notes.py").write_text("# editable, but written by another program\\n")
"""


async def test_files_another_program_writes_during_an_edit_are_not_the_edits(
    app: Application, workspace: Path, llm_server: Any
) -> None:
    (workspace / "pkg" / "notes.py").write_text("# notes\n")
    llm_server.add_rule(any_request, slow(3, aider_whole({"pkg/calc.py": EDITED})))

    async def another_program() -> None:
        assert await eventually(llm_server.chat_requests, 60)  # Aider is waiting for its model
        process = await asyncio.create_subprocess_exec(sys.executable, "-c", OTHER_PROGRAM, str(workspace))
        assert await process.wait() == 0

    result, _ = await asyncio.gather(
        app.handle_task_command(
            "aider:automatic",
            {"prompt": "mark add as edited", "file_context": ["pkg/calc.py", "pkg/notes.py"]},
        ),
        another_program(),
    )
    assert result.status is TaskStatus.COMPLETE, result.content
    assert result.notes["changed_files"] == ["pkg/calc.py"]
    for name in ("build.log", "README.md", "notes.py"):
        assert name not in result.notes["diff"], result.notes["diff"]
    assert "build.log" not in result.notes["created_files"]

    undo = app.undo()
    assert undo.status is TaskStatus.COMPLETE, undo.content
    assert (workspace / "pkg" / "calc.py").read_text() == ORIGINAL
    assert (workspace / "build.log").read_text() == "written by another program\n"
    assert (workspace / "README.md").read_text() == "# demo, edited by another program\n"
    assert (workspace / "pkg" / "notes.py").read_text() == "# editable, but written by another program\n"


async def test_killed_server_is_restarted_by_the_next_call(
    app: Application, workspace: Path, llm_server: Any
) -> None:
    llm_server.add_rule(any_request, aider_whole({"pkg/calc.py": EDITED}), times=1)
    first = await app.handle_task_command(
        "aider:automatic", {"prompt": "edit once", "file_context": ["pkg/calc.py"]}
    )
    assert first.status is TaskStatus.COMPLETE, first.content
    pid = app.aider.server_pid
    assert pid is not None
    os.kill(pid, signal.SIGKILL)

    llm_server.add_rule(any_request, aider_whole({"pkg/calc.py": ORIGINAL}))
    second = await app.handle_task_command(
        "aider:automatic", {"prompt": "put it back", "file_context": ["pkg/calc.py"]}
    )
    assert second.status is TaskStatus.COMPLETE, second.content
    assert (workspace / "pkg" / "calc.py").read_text() == ORIGINAL
    assert app.aider.starts == 2 and app.aider.server_pid not in (None, pid)


async def test_an_ask_chat_the_restarted_server_lost_goes_on_in_a_new_chat(
    app: Application, workspace: Path, llm_server: Any
) -> None:
    """The chat of an editor's Ask session outlives a crash of Aider's server: the next
    question starts a new chat (named in the outcome) instead of failing "unknown session_id"."""
    llm_server.add_rule(any_request, text("add() returns the sum."))
    first = await app.ask("what does add do?", ["pkg/calc.py"])
    assert first.error is None and first.session_id, first
    pid = app.aider.server_pid
    assert pid is not None
    os.kill(pid, signal.SIGKILL)
    second = await app.ask("and subtract?", ["pkg/calc.py"], session_id=first.session_id)
    assert second.error is None, second.error
    assert second.session_id and second.session_id != first.session_id
    assert "add() returns the sum." in second.reply


async def test_unsaved_and_secret_files_are_refused_before_aider_runs(
    app: Application, workspace: Path, llm_server: Any
) -> None:
    app.aider_tools.unsaved_files = lambda: ["pkg/calc.py"]  # the editor holds unsaved changes
    unsaved = await app.aider_tools.automatic({"prompt": "edit", "file_context": ["pkg/calc.py"]})
    app.aider_tools.unsaved_files = tuple
    assert unsaved.status is TaskStatus.FAILED
    assert reason(unsaved) == "input_validation_failure"
    assert "unsaved changes" in unsaved.content and "pkg/calc.py" in unsaved.content
    secret = await app.handle_task_command("aider:automatic", {"prompt": "edit", "file_context": [".env"]})
    assert secret.status is TaskStatus.FAILED
    assert reason(secret) == "access_denied"
    missing = await app.handle_task_command("aider:automatic", {"file_context": ["pkg/calc.py"]})
    assert reason(missing) == "input_validation_failure"
    assert llm_server.chat_requests() == []  # Aider was never asked
    assert app.aider.server_pid is None


async def test_interactive_session_keeps_its_chat(app: Application, workspace: Path, llm_server: Any) -> None:
    llm_server.add_rule(any_request, text("add() returns the sum of its two arguments."), times=1)
    first = await app.handle_task_command(
        "aider:interactive", {"query": "what does add do?", "file_context": ["pkg/calc.py"]}
    )
    assert first.status is TaskStatus.COMPLETE, first.content
    assert "sum of its two arguments" in first.content
    assert first.notes["success"] is False  # a reply, not an edit
    session_id = first.notes["session_id"]

    llm_server.add_rule(any_request, aider_whole({"pkg/calc.py": EDITED}))
    second = await app.handle_task_command(
        "aider:interactive",
        {"prompt": "now mark it edited", "file_context": ["pkg/calc.py"], "session_id": session_id},
    )
    assert second.status is TaskStatus.COMPLETE, second.content
    assert second.notes["session_id"] == session_id and second.notes["success"] is True
    assert (workspace / "pkg" / "calc.py").read_text() == EDITED
    # the second request carried the first turn: the chat was kept
    assert "what does add do?" in str(llm_server.chat_requests()[-1]["messages"])

    ended = await app.handle_task_command(
        "aider:interactive", {"session_id": session_id, "end_session": True}
    )
    assert ended.status is TaskStatus.COMPLETE
    gone = await app.handle_task_command(
        "aider:interactive", {"query": "hello?", "file_context": ["pkg/calc.py"], "session_id": session_id}
    )
    assert gone.status is TaskStatus.FAILED and "unknown session_id" in gone.content


async def test_list_models_comes_from_aider(app: Application) -> None:
    result = await app.aider_tools.list_models("gpt-4.1-mini")
    assert result.status is TaskStatus.COMPLETE, result.content
    assert "openai/gpt-4.1-mini" in result.parsed_content


async def test_llm_errors_and_bad_paths_are_reported_not_raised(
    app: Application, workspace: Path, llm_server: Any
) -> None:
    llm_server.add_rule(any_request, fault(401, {"error": {"message": "invalid api key"}}))
    result = await app.handle_task_command(
        "aider:automatic", {"prompt": "edit", "file_context": ["pkg/calc.py"]}
    )
    assert result.status is TaskStatus.FAILED
    assert result.notes["success"] is False and result.notes.get("errors")
    assert (workspace / "pkg" / "calc.py").read_text() == ORIGINAL
    # the bundled server refuses paths outside its directory with {"error"}
    outside = await app.aider.call_aider_tool(
        "aider_ai_code", {"ai_coding_prompt": "x", "relative_editable_files": ["../escape.py"]}
    )
    assert outside.status is TaskStatus.FAILED
    assert reason(outside) == "tool_execution_error" and "outside" in outside.content
    assert not (workspace.parent / "escape.py").exists()


async def test_aider_stays_within_the_given_files(app: Application, workspace: Path, llm_server: Any) -> None:
    # the reply edits a file outside the list, creates a new one, and mentions the secret
    llm_server.add_rule(
        any_request,
        aider_whole(
            {"pkg/calc.py": EDITED, "README.md": "# rewritten\n", "pkg/extra.py": "X = 1\n"},
            preface="I also looked at .env for you.",
        ),
    )
    result = await app.handle_task_command(
        "aider:automatic", {"prompt": "edit calc", "file_context": ["pkg/calc.py"]}
    )
    assert result.status is TaskStatus.COMPLETE, result.content
    assert (workspace / "pkg" / "calc.py").read_text() == EDITED
    assert (workspace / "README.md").read_text() == "# demo\n"  # not in the list: not edited
    assert "README.md" in result.notes["declined_files"]
    assert (workspace / "pkg" / "extra.py").read_text() == "X = 1\n"  # new files are allowed
    assert result.notes["files_outside_editable"] == ["pkg/extra.py"]
    assert "sk-secret-do-not-leak" not in str(llm_server.requests)  # .env never sent
    undo = app.undo()
    assert undo.ok and not (workspace / "pkg" / "extra.py").exists()
    assert (workspace / "pkg" / "calc.py").read_text() == ORIGINAL


async def test_the_edit_reports_aiders_own_usage(app: Application, workspace: Path, llm_server: Any) -> None:
    """The bundled server's contract extension: each edit's tokens (as the model's answer
    reported them); cost is null for a model Aider knows no price of, never a made-up 0."""
    reply = aider_whole({"pkg/calc.py": EDITED})
    llm_server.add_rule(
        any_request, replace(reply, usage={"prompt_tokens": 1234, "completion_tokens": 56}), times=1
    )
    result = await app.handle_task_command(
        "aider:automatic", {"prompt": "mark add as edited", "file_context": ["pkg/calc.py"]}
    )
    assert result.status is TaskStatus.COMPLETE, result.content
    # `requests`: Aider's own requests in the edit (one here: no reflection, no file asked for)
    usage = {"prompt_tokens": 1234, "completion_tokens": 56, "cost": None, "requests": 1}
    assert result.notes["usage"] == usage
    # a second edit reports its own call only, not the server's running total
    llm_server.add_rule(any_request, replace(reply, usage={"prompt_tokens": 1000, "completion_tokens": 7}))
    (workspace / "pkg" / "calc.py").write_text(ORIGINAL)
    again = await app.handle_task_command(
        "aider:automatic", {"prompt": "mark add as edited again", "file_context": ["pkg/calc.py"]}
    )
    assert again.notes["usage"] == {
        "prompt_tokens": 1000,
        "completion_tokens": 7,
        "cost": None,
        "requests": 1,
    }


async def test_a_chat_s_history_is_summarized_only_when_sent_again_and_counted_then(
    app: Application, workspace: Path, llm_server: Any
) -> None:
    """Aider summarizes a long history after each edit; the bundled server does it before the
    next turn only (a chat that ends, like a run that went green, never pays for it), and the
    summary's request is in that turn's usage."""
    explained = "I made add() mark its result. " * 250  # over the 1,024 tokens of history Aider keeps
    summary = text("We changed add().", usage={"prompt_tokens": 700, "completion_tokens": 30})
    llm_server.add_rule(IS_AIDER_SUMMARY, summary)
    first_reply = aider_whole({"pkg/calc.py": EDITED}, preface=explained)
    llm_server.add_rule(
        any_request, replace(first_reply, usage={"prompt_tokens": 900, "completion_tokens": 500}), times=1
    )
    first = await app.handle_task_command(
        "aider:interactive", {"prompt": "mark add as edited", "file_context": ["pkg/calc.py"]}
    )
    assert first.notes["success"] is True, first.content
    assert first.notes["usage"]["requests"] == 1
    assert not any(IS_AIDER_SUMMARY(request) for request in llm_server.chat_requests())

    second_reply = aider_whole({"pkg/calc.py": ORIGINAL}, preface="Put back.")
    llm_server.add_rule(
        any_request, replace(second_reply, usage={"prompt_tokens": 1000, "completion_tokens": 7})
    )
    second = await app.handle_task_command(
        "aider:interactive",
        {"prompt": "put it back", "file_context": ["pkg/calc.py"], "session_id": first.notes["session_id"]},
    )
    assert second.notes["success"] is True, second.content
    summaries = [request for request in llm_server.chat_requests() if IS_AIDER_SUMMARY(request)]
    assert len(summaries) == 1 and "mark its result" in str(summaries[0]["messages"])
    # the turn's usage: its edit and the summary before it
    usage = {"prompt_tokens": 1700, "completion_tokens": 37, "cost": None, "requests": 2}
    assert second.notes["usage"] == usage
    # the edit was sent the summary in place of the long history
    last = str(llm_server.chat_requests()[-1]["messages"])
    assert "We changed add()" in last and explained not in last


async def test_a_file_dropped_from_a_chat_is_not_sent_with_its_next_turn(
    app: Application, workspace: Path, llm_server: Any
) -> None:
    """A workflow's retry keeps the files the run changed: one it sent and no edit touched
    leaves Aider's chat (`dropped`) and is not sent whole again."""
    (workspace / "pkg" / "helpers.py").write_text("HELPER_MARK = 'sent whole'\n")
    llm_server.add_rule(any_request, aider_whole({"pkg/calc.py": EDITED}), times=1)
    first = await app.edit("mark add as edited", ["pkg/calc.py", "pkg/helpers.py"], chat=True)
    assert first.success, first.error
    assert "HELPER_MARK" in str(llm_server.chat_requests()[-1]["messages"])

    llm_server.add_rule(any_request, aider_whole({"pkg/calc.py": ORIGINAL}))
    second = await app.edit(
        "put it back", ["pkg/calc.py"], chat=True, session_id=first.session_id, dropped=["pkg/helpers.py"]
    )
    assert second.success, second.error
    sent = str(llm_server.chat_requests()[-1]["messages"])
    assert "put it back" in sent and "HELPER_MARK" not in sent
    assert (workspace / "pkg" / "helpers.py").read_text() == "HELPER_MARK = 'sent whole'\n"  # on disk still


async def test_a_streamed_edit_hands_on_the_reply_in_order_and_keeps_the_usage(
    app: Application, workspace: Path, llm_server: Any
) -> None:
    """With a reader for the reply the edit streams: the pieces joined are the reply, and the
    usage is still the model's own (the stream's last chunk), not Aider's estimate."""
    reply = aider_whole({"pkg/calc.py": EDITED}, preface="Marking add as edited. " * 8)
    llm_server.add_rule(any_request, replace(reply, usage={"prompt_tokens": 1234, "completion_tokens": 56}))
    pieces: list[str] = []
    outcome = await app.edit("mark add as edited", ["pkg/calc.py"], on_reply=pieces.append)
    assert outcome.error is None and (workspace / "pkg" / "calc.py").read_text() == EDITED
    assert llm_server.chat_requests()[-1].get("stream") is True
    assert len(pieces) >= 1 and "".join(pieces).strip() == outcome.reply.strip()
    assert outcome.usage is not None
    assert (outcome.usage.input_tokens, outcome.usage.output_tokens) == (1234, 56)


async def test_the_bundled_server_names_a_file_aider_cannot_read_as_utf8(
    app: Application, workspace: Path, llm_server: Any
) -> None:
    """Called directly (the executors check first): Aider's advice names a flag this server does
    not take; the bundled server names the file and says what to do instead."""
    (workspace / "legacy.py").write_bytes(b"NAME = 'caf\xe9'\n")
    llm_server.add_rule(any_request, aider_whole({"legacy.py": "NAME = 'cafe'\n"}))
    result = await app.aider.call_aider_tool(
        "aider_ai_code", {"ai_coding_prompt": "rename", "relative_editable_files": ["legacy.py"]}
    )
    assert result.status is TaskStatus.FAILED
    message = result.notes["error"]["message"]
    assert "legacy.py" in message and "convert it to UTF-8" in message, message
    assert "--encoding" not in message, message


async def test_the_bundled_server_shows_images_only_to_a_model_that_reads_them(
    app: Application, workspace: Path, llm_server: Any, tmp_path: Path
) -> None:
    llm_server.add_rule(any_request, aider_whole({"pkg/calc.py": EDITED}))
    picture = tmp_path / "mockup.png"
    picture.write_bytes(b"\x89PNG\r\n\x1a\n not decoded by anyone here")
    call = {"ai_coding_prompt": "match it", "relative_editable_files": ["pkg/calc.py"]}
    refused = await app.aider.call_aider_tool("aider_ai_code", {**call, "image_files": [str(picture)]})
    not_an_image = await app.aider.call_aider_tool(
        "aider_ai_code", {**call, "image_files": [str(workspace / "x.txt")]}
    )
    assert refused.status is TaskStatus.FAILED and "mockup.png" in refused.content
    assert "does not read images" in refused.content
    assert "x.txt: no such image file" in not_an_image.content
    assert llm_server.chat_requests() == [] and (workspace / "pkg" / "calc.py").read_text() == ORIGINAL
    seen = await app.aider.call_aider_tool(
        "aider_ai_code", {**call, "image_files": [str(picture)], "model": "openai/gpt-4o-mini"}
    )
    assert seen.status is TaskStatus.COMPLETE, seen.content
    assert "data:image/png;base64," in str(llm_server.chat_requests()[0])
