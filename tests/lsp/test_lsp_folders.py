"""One server for every folder of a multi-root window, as an editor drives it over stdio: each
folder's files read and edited in that folder, its own settings, folders added and removed, a
file in no folder refused by name, a folder inside another served as its own."""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path
from typing import Any

import pytest
from lsprotocol import types

from aider_lsp_testing import fake_aider_mcp
from aider_lsp_testing.llm_server import ScriptedLLMServer, aider_whole, any_request
from aider_lsp_testing.lsp_session import execute
from aider_lsp_testing.recorded_edits import record_edit
from aider_lsp_testing.waiting import eventually

READ = "aider-lsp.system.readFiles"
HISTORY = "aider-lsp.history.list"


@pytest.fixture
def folders(tmp_path: Path) -> tuple[Path, Path]:
    """Two folders of one window: an app and the library beside it."""
    app, lib = tmp_path / "app", tmp_path / "lib"
    for root, text in ((app, "APP = 1\n"), (lib, "LIB = 1\n")):
        root.mkdir()
        (root / "main.py").write_text(text)
        (root / "README.md").write_text(f"# {root.name}\n")
    return app, lib


def change_folders(client: Any, added: list[Path] = (), removed: list[Path] = ()) -> None:  # type: ignore[assignment]
    def folder(path: Path) -> types.WorkspaceFolder:
        return types.WorkspaceFolder(uri=path.as_uri(), name=path.name)

    client.workspace_did_change_workspace_folders(
        types.DidChangeWorkspaceFoldersParams(
            event=types.WorkspaceFoldersChangeEvent(
                added=[folder(path) for path in added], removed=[folder(path) for path in removed]
            )
        )
    )


async def read(client: Any, path: str, folder: Path | None = None) -> dict[str, Any]:
    argument: dict[str, Any] = {"file_paths": [path]}
    if folder is not None:
        argument["folder"] = folder.as_uri()
    result: dict[str, Any] = await execute(client, READ, argument)
    return result


async def test_each_folder_is_served_with_its_own_files_and_settings(
    lsp: Any, folders: tuple[Path, Path]
) -> None:
    app, lib = folders
    async with lsp(app, more_folders=[lib]) as client:
        # the library's own settings (its .vscode/settings.json, as the editor answers for its scope)
        client.set_configuration({"secretPatterns": ["*.md"]}, section="aiderLsp", scope_uri=lib.as_uri())
        await asyncio.sleep(1)  # the first folder's start-up settles
        assert not (lib / ".aider-lsp").exists(), "the second folder was opened before it was used"

        second = await read(client, "main.py", folder=lib)
        assert second["status"] == "COMPLETE", second
        assert "LIB = 1" in second["content"] and "APP = 1" not in second["content"]
        by_path = await read(client, str(lib / "main.py"))  # no folder named: the file's own
        assert "LIB = 1" in by_path["content"], by_path
        first = await read(client, "main.py", folder=app)
        assert "APP = 1" in first["content"], first

        # the library's secretPatterns refuse its README; the app's README is still read
        assert (await read(client, "README.md", folder=lib))["notes"]["files_read_count"] == 0
        assert "# app" in (await read(client, "README.md", folder=app))["content"]

        # a relative path and no folder in a two-folder window: which one is not guessed
        unsure = await read(client, "main.py")
        assert unsure["status"] == "FAILED"
        assert "2 workspace folders" in unsure["content"] and "app" in unsure["content"], unsure

        # a file in no open folder: refused, by name
        stray = lib.parent / "stray.py"
        stray.write_text("SECRET_STRAY = 1\n")
        refused = await read(client, str(stray))
        assert refused["status"] == "FAILED" and str(stray) in refused["content"], refused
        assert "SECRET_STRAY" not in refused["content"]


async def test_a_folders_runs_are_listed_without_opening_it(lsp: Any, folders: tuple[Path, Path]) -> None:
    """The Runs view of a window of several folders lists each folder's runs: a folder not
    used yet answers from its history on disk, its index and Aider server not started."""
    app, lib = folders
    lib_run = record_edit(lib, "shout LIB", {"main.py": b"LIB = 2\n"})
    async with lsp(app, more_folders=[lib]) as client:
        await asyncio.sleep(1)  # the first folder's start-up settles
        listed = await execute(client, HISTORY, {"folder": lib.as_uri()})
        assert listed["status"] == "COMPLETE", listed
        assert [(run["id"], run["label"]) for run in listed["notes"]["runs"]] == [(lib_run, "shout LIB")]
        assert (await execute(client, HISTORY, {"folder": app.as_uri()}))["notes"]["runs"] == []
        await asyncio.sleep(1)
        assert not (lib / ".aider-lsp" / "index.sqlite3").exists(), "listing its runs opened the folder"

        # used, the folder opens (its index starts); its Application lists the same runs
        assert "LIB = 2" in (await read(client, "main.py", folder=lib))["content"]
        assert await eventually(lambda: (lib / ".aider-lsp" / "index.sqlite3").exists())
        opened = await execute(client, HISTORY, {"folder": lib.as_uri()})
        assert [run["id"] for run in opened["notes"]["runs"]] == [lib_run]


async def test_folders_added_and_removed_while_the_window_is_open(
    lsp: Any, folders: tuple[Path, Path]
) -> None:
    app, lib = folders
    async with lsp(app, more_folders=[lib]) as client:
        assert "LIB = 1" in (await read(client, "main.py", folder=lib))["content"]
        change_folders(client, removed=[lib])
        gone = await read(client, "main.py", folder=lib)
        assert gone["status"] == "FAILED" and "not open in this window" in gone["content"], gone

        added = lib.parent / "tools"
        added.mkdir()
        (added / "main.py").write_text("TOOLS = 1\n")
        change_folders(client, added=[added])
        assert "TOOLS = 1" in (await read(client, str(added / "main.py")))["content"]


async def test_a_folder_inside_another_is_its_own(lsp: Any, tmp_path: Path) -> None:
    outer = tmp_path / "repo"
    inner = outer / "packages" / "core"
    inner.mkdir(parents=True)
    (inner / "core.py").write_text("CORE = 1\n")
    (outer / "top.py").write_text("TOP = 1\n")
    async with lsp(outer, more_folders=[inner]) as client:
        result = await read(client, str(inner / "core.py"))
        assert result["status"] == "COMPLETE", result
        # read in the inner folder: the file is named relative to it
        assert "core.py" in result["content"] and "packages/core/core.py" not in result["content"], result
        assert "TOP = 1" in (await read(client, str(outer / "top.py")))["content"]


def aider_servers_for(root: Path) -> list[int]:
    """Live processes whose command line is the bundled Aider server for this folder."""
    found: list[int] = []
    for entry in filter(str.isdigit, os.listdir("/proc")):
        try:
            argv = Path(f"/proc/{entry}/cmdline").read_bytes().split(b"\0")
            state = Path(f"/proc/{entry}/stat").read_text().split(")")[-1].split()[0]
        except OSError:
            continue
        if state != "Z" and b"aider_mcp" in b" ".join(argv) and str(root).encode() in argv:
            found.append(int(entry))
    return found


@pytest.mark.aider
async def test_a_real_aider_edit_in_the_second_folder_and_its_server_closed_with_it(
    lsp: Any, folders: tuple[Path, Path], llm_server: ScriptedLLMServer
) -> None:
    app, lib = folders
    llm_server.add_rule(any_request, aider_whole({"main.py": "LIB = 2\n"}))
    options = {
        "baseUrl": llm_server.base_url,
        "aiderModel": "openai/scripted-coder",
        "aiderServer": {"args": ["--edit-format", "whole"]},
        "timeouts": {"aider": 90},
    }
    async with lsp(app, init_options=options, more_folders=[lib]) as client:
        edit = await execute(
            client,
            "aider-lsp.aider.automatic",
            {"prompt": "set LIB to 2", "file_context": ["main.py"], "folder": lib.as_uri()},
        )
        assert edit["status"] == "COMPLETE", edit
        assert (lib / "main.py").read_text() == "LIB = 2\n"
        assert (app / "main.py").read_text() == "APP = 1\n"
        assert aider_servers_for(lib), "no Aider server for the library"

        change_folders(client, removed=[lib])
        assert await eventually(lambda: not aider_servers_for(lib), timeout=60), "its Aider server lives on"


def fake_aider(mode: str) -> dict[str, Any]:
    """`aiderServer` for the stdlib fake Aider MCP server, the folder on its command line."""
    return {"command": sys.executable, "args": [fake_aider_mcp.__file__, mode, "${workspace}"]}


async def test_beyond_max_open_folders_the_least_recently_used_idle_folder_is_closed(
    lsp: Any, tmp_path: Path
) -> None:
    a, b, c = (tmp_path / name for name in ("a", "b", "c"))
    for root in (a, b, c):
        root.mkdir()
        (root / "main.py").write_text(f"{root.name.upper()} = 1\n")
    options = {"maxOpenFolders": 2, "aiderServer": fake_aider("ok")}
    async with lsp(a, init_options=options, more_folders=[b, c]) as client:
        assert await eventually(lambda: aider_servers_for(a), timeout=30), (
            "the first folder's Aider never started"
        )
        # tests that run until the test lets them end keep the second folder busy
        finished = tmp_path / "tests-may-end"
        (tmp_path / "busy_tests.py").write_text(
            f"import os, time\nwhile not os.path.exists({str(finished)!r}):\n    time.sleep(0.05)\n"
        )
        slow_tests = f"{sys.executable} {tmp_path / 'busy_tests.py'}"
        busy = asyncio.create_task(
            execute(client, "aider-lsp.system.runTests", {"command": slow_tests, "folder": b.as_uri()})
        )
        assert await eventually(lambda: aider_servers_for(b), timeout=30), (
            "the busy folder's Aider never started"
        )

        # a third folder used: the least recently used one (a) closes, its Aider server with it
        assert "C = 1" in (await read(client, "main.py", folder=c))["content"]
        assert await eventually(lambda: not aider_servers_for(a), timeout=60), "a's Aider server lives on"
        assert await eventually(lambda: aider_servers_for(c), timeout=30)

        # a used again works (an edit through its new Aider server); the least recently used is
        # now b, but b is busy: c closes instead
        edit = await execute(
            client,
            "aider-lsp.aider.automatic",
            {"prompt": "x", "file_context": ["main.py"], "folder": a.as_uri()},
        )
        assert edit["status"] == "COMPLETE", edit
        assert (a / "main.py").read_text() == "A = 1\n# edited by fake\n"
        assert await eventually(lambda: not aider_servers_for(c), timeout=60), "c's Aider server lives on"
        assert not busy.done() and aider_servers_for(b), "the busy folder was closed"
        finished.write_text("")
        assert (await asyncio.wait_for(busy, 60))["status"] == "COMPLETE"
