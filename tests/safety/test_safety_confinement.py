"""Adversarial: paths that come from a model (or a confused caller) stay in the workspace.

`../`, absolute paths, file:// URIs and a symlinked folder pointing out of the workspace are
refused by every reader, and a plan naming them (or git hooks) is sent back to the model.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from aider_lsp.app import Application
from aider_lsp.config.settings import Settings
from aider_lsp.models import TaskStatus
from aider_lsp_testing.llm_server import ScriptedLLMServer, any_request, json_output

OUTSIDE_TEXT = "OUTSIDE-CONTENT-42"


def build(tmp_path: Path) -> tuple[Path, list[str]]:
    root = tmp_path / "ws"
    (root / "pkg").mkdir(parents=True)
    (root / "pkg" / "calc.py").write_text("def add(a, b):\n    return a + b\n")
    outside = tmp_path / "other"
    outside.mkdir()
    (outside / "notes.txt").write_text(OUTSIDE_TEXT + "\n")
    (tmp_path / "sibling.txt").write_text(OUTSIDE_TEXT + "\n")
    os.symlink(outside, root / "linkdir")
    escapes = [
        "../sibling.txt",
        "pkg/../../sibling.txt",
        str(tmp_path / "sibling.txt"),
        (tmp_path / "other" / "notes.txt").as_uri(),
        "linkdir/notes.txt",
    ]
    return root, escapes


async def test_no_reader_leaves_the_workspace(tmp_path: Path, llm_server: ScriptedLLMServer) -> None:
    root, escapes = build(tmp_path)
    app = Application(root, Settings(model="openai:scripted", base_url=llm_server.base_url))
    try:
        read = await app.handle_task_command("system:read_files", {"file_paths": escapes})
        primed = await app.handler.prime_data_context("notes sibling outside", escapes)
        found = await app.handle_task_command(
            "system:get_context", {"query": "notes outside", "target_files": escapes}
        )
    finally:
        await app.aclose()
    assert read.notes["files_read_count"] == 0 and set(read.notes["skipped_files"]) == set(escapes)
    assert primed.notes["file_paths"] == []
    assert not set(found.notes.get("file_paths") or []) & set(escapes)
    blob = json.dumps([read.model_dump(), primed.model_dump(), found.model_dump()], default=str)
    assert OUTSIDE_TEXT not in blob


async def test_a_plan_naming_outside_paths_or_git_hooks_is_sent_back(
    tmp_path: Path, llm_server: ScriptedLLMServer
) -> None:
    root, escapes = build(tmp_path)
    app = Application(root, Settings(model="openai:scripted", base_url=llm_server.base_url))
    app.handler.llm.request_retries = 1
    bad = [*escapes[:3], "linkdir/new.py", ".git/hooks/pre-commit"]
    llm_server.add_rule(any_request, json_output({"instructions": "x", "files": bad}), times=1)
    llm_server.add_rule(any_request, json_output({"instructions": "x", "files": ["pkg/calc.py"]}))
    try:
        plan = await app.handle_task_command(
            "user:generate-plan-from-goal", {"goal": "g", "context_string": "c"}
        )
    finally:
        await app.aclose()
    assert plan.status is TaskStatus.COMPLETE, plan.content
    assert plan.parsed_content.files == ["pkg/calc.py"]
    feedback = json.dumps(llm_server.requests[1]["messages"][-1])
    for path in bad:
        assert json.dumps(path)[1:-1] in feedback, path
