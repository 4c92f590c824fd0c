"""Adversarial: does aider-lsp ever lose the user's work? REAL Aider, scripted LLM.

Unsaved editor buffers (didOpen + didChange, never saved) must never be overwritten — not by
aider.automatic, not by a later turn of an aider.interactive session that holds the file, not
by workflow.undo. Undo walks back edits that created files, two edits, and an edit that failed
halfway; a cancelled edit leaves files untouched and no Aider process behind.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from lsprotocol import types

from aider_lsp.app import Application
from aider_lsp.config.settings import load_settings
from aider_lsp.models import TaskStatus
from aider_lsp_testing.llm_server import ScriptedLLMServer, aider_diff, aider_whole, any_request, slow, text
from aider_lsp_testing.lsp_session import cancel_command, execute, start_command
from aider_lsp_testing.waiting import eventually

pytestmark = pytest.mark.aider

A0, A1 = "A = 1\n", "A = 2\n"
B0, B1 = "B = 1\n", "B = 2\n"


def options(llm_server: ScriptedLLMServer, edit_format: str = "whole") -> dict[str, Any]:
    return {
        "baseUrl": llm_server.base_url,
        "aiderModel": "openai/scripted-coder",
        "aiderServer": {"args": ["--edit-format", edit_format]},
        "timeouts": {"aider": 90},
    }


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    (root / "pkg").mkdir(parents=True)
    (root / "pkg" / "a.py").write_text(A0)
    (root / "pkg" / "b.py").write_text(B0)
    return root


@pytest.fixture
async def app(tree: Path, llm_server: ScriptedLLMServer) -> AsyncIterator[Application]:
    application = Application(tree, load_settings(options(llm_server), environ={}))
    try:
        yield application
    finally:
        await application.aclose()


def open_unsaved(client: Any, path: Path, text_now: str) -> str:
    """didOpen with the disk text, then didChange to `text_now`; never saved."""
    uri = path.as_uri()
    client.text_document_did_open(
        types.DidOpenTextDocumentParams(
            types.TextDocumentItem(uri=uri, language_id="python", version=1, text=path.read_text())
        )
    )
    client.text_document_did_change(
        types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=2),
            content_changes=[types.TextDocumentContentChangeWholeDocument(text=text_now)],
        )
    )
    return uri


def close(client: Any, uri: str) -> None:
    client.text_document_did_close(types.DidCloseTextDocumentParams(types.TextDocumentIdentifier(uri=uri)))


async def test_unsaved_buffers_survive_every_aider_path_over_lsp(
    lsp: Any, tree: Path, llm_server: ScriptedLLMServer
) -> None:
    a, b = tree / "pkg" / "a.py", tree / "pkg" / "b.py"
    async with lsp(tree, init_options=options(llm_server)) as client:
        # a chat session that holds a.py (a.py clean at that time)
        llm_server.add_rule(any_request, text("a.py defines A."), times=1)
        first = await execute(
            client, "aider-lsp.aider.interactive", {"prompt": "what is A?", "file_context": ["pkg/a.py"]}
        )
        assert first["status"] == "COMPLETE", first["content"]
        session_id = first["notes"]["session_id"]

        llm_server.add_rule(any_request, aider_whole({"pkg/a.py": A1, "pkg/b.py": B1}))
        uri_a = open_unsaved(client, a, "A = 1  # my unsaved work\n")
        auto = await execute(
            client, "aider-lsp.aider.automatic", {"prompt": "bump", "file_context": ["pkg/a.py"]}
        )
        chat = await execute(
            client, "aider-lsp.aider.interactive", {"prompt": "bump", "file_context": ["pkg/a.py"]}
        )
        # the session's next turn names only b.py, but Aider still holds a.py in its chat
        later = await execute(
            client,
            "aider-lsp.aider.interactive",
            {"prompt": "bump both", "file_context": ["pkg/b.py"], "session_id": session_id},
        )
        for result in (auto, chat, later):
            assert result["status"] == "FAILED" and "unsaved changes" in result["content"], result
        assert a.read_text() == A0 and b.read_text() == B0
        assert len(llm_server.chat_requests()) == 1  # only the first, harmless turn
        close(client, uri_a)

        # an edit of b.py, then b.py changed in the editor: undo must not overwrite the buffer
        edited = await execute(
            client, "aider-lsp.aider.automatic", {"prompt": "bump b", "file_context": ["pkg/b.py"]}
        )
        assert edited["status"] == "COMPLETE", edited["content"]
        assert b.read_text() == B1
        uri_b = open_unsaved(client, b, "B = 2  # refined by hand\n")
        undo = await execute(client, "aider-lsp.workflow.undo", {})
        assert undo["status"] == "FAILED" and "unsaved" in undo["content"], undo
        assert b.read_text() == B1
        close(client, uri_b)  # the user reverted the buffer: now undo may restore
        undo = await execute(client, "aider-lsp.workflow.undo", {})
        assert undo["status"] == "COMPLETE", undo
        assert b.read_text() == B0


async def test_a_session_turn_is_checkpointed_for_every_file_the_session_holds(
    app: Application, tree: Path, llm_server: ScriptedLLMServer
) -> None:
    llm_server.add_rule(any_request, text("a.py defines A."), times=1)
    first = await app.aider_tools.interactive({"query": "what is A?", "file_context": ["pkg/a.py"]})
    session_id = first.notes["session_id"]
    llm_server.add_rule(any_request, aider_whole({"pkg/a.py": A1, "pkg/b.py": B1}))
    second = await app.aider_tools.interactive(
        {"query": "bump both", "file_context": ["pkg/b.py"], "session_id": session_id}
    )
    assert second.status is TaskStatus.COMPLETE, second.content
    assert (tree / "pkg" / "a.py").read_text() == A1
    assert sorted(second.notes["changed_files"]) == ["pkg/a.py", "pkg/b.py"]
    undo = app.undo()
    assert undo.ok, undo.content
    assert (tree / "pkg" / "a.py").read_text() == A0 and (tree / "pkg" / "b.py").read_text() == B0


async def test_undo_walks_back_new_files_two_edits_and_a_half_failed_edit(
    tree: Path, llm_server: ScriptedLLMServer
) -> None:
    subprocess.run(["git", "init", "-q", str(tree)], check=True)
    subprocess.run(["git", "-C", str(tree), "add", "-A"], check=True)
    subprocess.run(
        ["git", "-C", str(tree), "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "init"],
        check=True,
    )
    app = Application(tree, load_settings(options(llm_server, "diff"), environ={}))
    try:
        # edit 1 creates a new file
        llm_server.add_rule(any_request, aider_diff([("pkg/new.py", "", "N = 1\n")]), times=1)
        one = await app.handle_task_command(
            "aider:automatic", {"prompt": "add new", "file_context": ["pkg/new.py"]}
        )
        assert one.ok and (tree / "pkg" / "new.py").read_text() == "N = 1\n", one.content
        # edit 2 changes a.py
        llm_server.add_rule(any_request, aider_diff([("pkg/a.py", A0, A1)]), times=1)
        two = await app.handle_task_command(
            "aider:automatic", {"prompt": "bump a", "file_context": ["pkg/a.py"]}
        )
        assert two.ok and (tree / "pkg" / "a.py").read_text() == A1, two.content
        # edit 3 fails halfway: b.py's block applies, a.py's SEARCH text does not exist
        llm_server.add_rule(
            any_request, aider_diff([("pkg/b.py", B0, B1), ("pkg/a.py", "NOT THERE\n", "X = 0\n")])
        )
        three = await app.handle_task_command(
            "aider:automatic", {"prompt": "bump both", "file_context": ["pkg/a.py", "pkg/b.py"]}
        )
        assert (tree / "pkg" / "b.py").read_text() == B1, three.content
        assert three.notes.get("errors"), three.notes
        # nothing of ours shows in git status: only the user's files
        status = subprocess.run(
            ["git", "-C", str(tree), "status", "--porcelain", "--untracked-files=all"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        assert sorted(line[3:] for line in status.splitlines()) == ["pkg/a.py", "pkg/b.py", "pkg/new.py"], (
            status
        )

        assert app.undo().ok
        assert (tree / "pkg" / "b.py").read_text() == B0 and (tree / "pkg" / "a.py").read_text() == A1
        assert app.undo().ok
        assert (tree / "pkg" / "a.py").read_text() == A0
        assert app.undo().ok
        assert not (tree / "pkg" / "new.py").exists()
        assert app.undo().content == "Nothing to undo."
        assert (
            subprocess.run(
                ["git", "-C", str(tree), "status", "--porcelain", "--untracked-files=all"],
                capture_output=True,
                text=True,
                check=True,
            ).stdout
            == ""
        )
    finally:
        await app.aclose()


def _aider_servers_for(root: Path) -> list[int]:
    """Live processes whose command line is the bundled Aider server for this workspace."""
    found: list[int] = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as handle:
                argv = handle.read().split(b"\0")
            with open(f"/proc/{entry}/stat") as handle:
                state = handle.read().split(")")[-1].split()[0]
        except OSError:
            continue
        if state != "Z" and b"aider_mcp" in b" ".join(argv) and str(root).encode() in argv:
            found.append(int(entry))
    return found


async def test_cancelled_edit_leaves_files_untouched_and_no_aider_process(
    lsp: Any, tree: Path, llm_server: ScriptedLLMServer
) -> None:
    a = tree / "pkg" / "a.py"
    llm_server.add_rule(any_request, slow(3.0, aider_whole({"pkg/a.py": A1})))
    async with lsp(tree, init_options=options(llm_server)) as client:
        msg_id, pending = start_command(
            client, "aider-lsp.aider.automatic", {"prompt": "bump", "file_context": ["pkg/a.py"]}
        )
        assert await asyncio.to_thread(llm_server.wait_for_requests, 1, 60), "Aider never called the LLM"
        assert _aider_servers_for(tree), "no Aider server found to watch"
        await cancel_command(client, msg_id, pending)
        await eventually(lambda: not _aider_servers_for(tree))
        assert _aider_servers_for(tree) == [], "the Aider server survived the cancel"
        await asyncio.sleep(3.5)  # past the slow reply: nothing lands late
        assert a.read_text() == A0
        # nothing changed, so nothing to undo (no empty checkpoint hiding the previous edit)
        undo = await execute(client, "aider-lsp.workflow.undo", {})
        assert undo["content"] == "Nothing to undo.", undo


async def test_undo_never_discards_changes_saved_after_the_edit(
    lsp: Any, tree: Path, llm_server: ScriptedLLMServer
) -> None:
    a = tree / "pkg" / "a.py"
    later_work = A1 + "# an hour of my own work, saved\n"
    llm_server.add_rule(any_request, aider_whole({"pkg/a.py": A1}))
    async with lsp(tree, init_options=options(llm_server)) as client:
        edited = await execute(
            client, "aider-lsp.aider.automatic", {"prompt": "bump", "file_context": ["pkg/a.py"]}
        )
        assert edited["status"] == "COMPLETE" and a.read_text() == A1, edited
        a.write_text(later_work)  # the user kept working and saved
        client.text_document_did_save(
            types.DidSaveTextDocumentParams(types.TextDocumentIdentifier(uri=a.as_uri()))
        )
        undo = await execute(client, "aider-lsp.workflow.undo", {})
        assert undo["status"] == "FAILED" and "changed since the edit" in undo["content"], undo
        assert a.read_text() == later_work
        forced = await execute(client, "aider-lsp.workflow.undo", {"force": True})
        assert forced["status"] == "COMPLETE", forced
        assert a.read_text() == A0
        assert (await execute(client, "aider-lsp.workflow.undo", {}))["content"] == "Nothing to undo."


def test_files_a_foreign_server_created_are_each_covered_by_undo_or_reported(tmp_path: Path) -> None:
    from aider_lsp.guards.files import FileAccessManager
    from aider_lsp.history.checkpoints import CheckpointStore
    from aider_lsp.models import AiderEditOutcome
    from aider_lsp.tools.aider import AiderExecutors, finished_edit

    root = tmp_path / "ws"
    (root / "pkg").mkdir(parents=True)
    files = FileAccessManager(root)
    store = CheckpointStore(files)
    executors = AiderExecutors(bridge=None, files=files, checkpoints=store)  # type: ignore[arg-type]
    checkpoint = store.create(["pkg/a.py"], label="edit")
    (root / "pkg" / "a.py").write_text(A1)
    (root / "pkg" / "new.py").write_text("N = 1\n")
    created = ["../escape.py", "pkg/new.py"]  # what a server without confinement may report
    outcome = AiderEditOutcome(
        tool="aider_ai_code",
        success=True,
        server_success=True,
        changed_files=["pkg/a.py"],
        files_outside_editable=created,
        created_files=created,
    )
    cover = executors._settle_checkpoint(checkpoint, outcome)
    result = finished_edit(outcome, ["pkg/a.py"], cover).to_task_result()
    assert result.notes["not_covered_by_undo"] == ["../escape.py"]
    assert result.notes["checkpoint_id"] == checkpoint.id
    report = store.restore()
    assert report.deleted == ("pkg/a.py", "pkg/new.py") and not report.skipped
    assert not (root / "pkg" / "new.py").exists() and not (root / "pkg" / "a.py").exists()


async def test_concurrent_edits_are_undone_one_at_a_time(
    app: Application, tree: Path, llm_server: ScriptedLLMServer
) -> None:
    from aider_lsp_testing.llm_server import last_user_contains

    a = tree / "pkg" / "a.py"
    llm_server.add_rule(last_user_contains("first"), aider_whole({"pkg/a.py": A1}))
    llm_server.add_rule(last_user_contains("second"), aider_whole({"pkg/a.py": "A = 3\n"}))
    first, second = await asyncio.gather(
        app.handle_task_command("aider:automatic", {"prompt": "first", "file_context": ["pkg/a.py"]}),
        app.handle_task_command("aider:automatic", {"prompt": "second", "file_context": ["pkg/a.py"]}),
    )
    assert first.ok and second.ok, (first.content, second.content)
    assert a.read_text() == "A = 3\n"
    assert app.undo().ok
    assert a.read_text() == A1  # back to the first edit's result, not past it
    assert app.undo().ok
    assert a.read_text() == A0


async def test_undo_waits_for_a_running_edit(
    app: Application, tree: Path, llm_server: ScriptedLLMServer
) -> None:
    llm_server.add_rule(any_request, slow(1.5, aider_whole({"pkg/a.py": A1})))
    running = asyncio.ensure_future(
        app.handle_task_command("aider:automatic", {"prompt": "bump", "file_context": ["pkg/a.py"]})
    )
    assert await asyncio.to_thread(llm_server.wait_for_requests, 1, 60)
    early = app.undo()
    assert early.status is TaskStatus.FAILED and "running" in early.content
    assert (await running).ok
    assert (tree / "pkg" / "a.py").read_text() == A1
    assert app.undo().ok
    assert (tree / "pkg" / "a.py").read_text() == A0


async def test_a_whole_file_reply_that_elides_code_does_not_delete_it(
    app: Application, tree: Path, llm_server: ScriptedLLMServer
) -> None:
    big = tree / "pkg" / "big.py"
    original = "".join(f"def f{i}(x):\n    return x + {i}\n\n" for i in range(8))
    big.write_text(original)
    lazy = "def f0(x):\n    return x * 100\n\n# ... rest of the functions unchanged ...\n"
    llm_server.add_rule(any_request, aider_whole({"pkg/big.py": lazy}))
    result = await app.handle_task_command(
        "aider:automatic", {"prompt": "make f0 multiply", "file_context": ["pkg/big.py"]}
    )
    assert big.read_text() == original  # the seven other functions are still there
    assert result.status is TaskStatus.FAILED
    assert result.notes["reverted_files"][0]["path"] == "pkg/big.py"
    assert any("rest of the functions unchanged" in error for error in result.notes["errors"])
    assert app.checkpoints.latest() is None


async def test_a_file_saved_during_the_edit_is_not_overwritten(
    app: Application, tree: Path, llm_server: ScriptedLLMServer
) -> None:
    # e.g. editor auto-save while Aider waits for its LLM: Aider's write would discard the save
    a = tree / "pkg" / "a.py"
    saved = "A = 1  # typed and auto-saved while Aider was thinking\n"
    llm_server.add_rule(any_request, slow(1.5, aider_whole({"pkg/a.py": A1})))
    running = asyncio.ensure_future(
        app.handle_task_command("aider:automatic", {"prompt": "bump", "file_context": ["pkg/a.py"]})
    )
    assert await asyncio.to_thread(llm_server.wait_for_requests, 1, 60)
    a.write_text(saved)
    result = await running
    assert a.read_text() == saved
    assert result.status is TaskStatus.FAILED
    assert result.notes["conflicts"] == ["pkg/a.py"]
    assert any("changed on disk during the edit" in error for error in result.notes["errors"])


async def test_undo_after_a_conflicting_edit_keeps_the_users_save(
    app: Application, tree: Path, llm_server: ScriptedLLMServer
) -> None:
    a, b = tree / "pkg" / "a.py", tree / "pkg" / "b.py"
    saved = "A = 1  # saved during the edit\n"
    llm_server.add_rule(any_request, slow(1.5, aider_whole({"pkg/a.py": A1, "pkg/b.py": B1})))
    running = asyncio.ensure_future(
        app.handle_task_command(
            "aider:automatic", {"prompt": "bump", "file_context": ["pkg/a.py", "pkg/b.py"]}
        )
    )
    assert await asyncio.to_thread(llm_server.wait_for_requests, 1, 60)
    a.write_text(saved)
    result = await running
    assert result.ok and result.notes["changed_files"] == ["pkg/b.py"], result.notes
    assert a.read_text() == saved and b.read_text() == B1
    undo = app.undo()
    assert undo.ok and undo.notes["restored"] == ["pkg/b.py"], undo.content
    assert b.read_text() == B0 and a.read_text() == saved


async def test_undo_keeps_a_change_another_program_made_to_a_file_aider_did_not_write(
    app: Application, tree: Path, llm_server: ScriptedLLMServer
) -> None:
    # b.py is in the edit's files, but only another program writes it while Aider works on a.py:
    # that change is not the edit's, and undoing the edit must not take it back
    a, b = tree / "pkg" / "a.py", tree / "pkg" / "b.py"
    theirs = "B = 1  # written by another program during the edit\n"
    llm_server.add_rule(any_request, slow(1.5, aider_whole({"pkg/a.py": A1})))
    running = asyncio.ensure_future(
        app.handle_task_command(
            "aider:automatic", {"prompt": "bump", "file_context": ["pkg/a.py", "pkg/b.py"]}
        )
    )
    assert await asyncio.to_thread(llm_server.wait_for_requests, 1, 60)
    b.write_text(theirs)
    result = await running
    assert result.ok and result.notes["changed_files"] == ["pkg/a.py"], result.notes
    undo = app.undo()
    assert undo.ok, undo.content
    assert a.read_text() == A0 and b.read_text() == theirs
