"""One contract per tool: the argument model is the schema a model sees, the executor's
validation and the LSP command's argument; and the rules shared by several modules
(confining files for a model, `provider:model`, the `.aider-lsp/` state folder)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from pydantic import ValidationError

from aider_lsp.aider.launch import aider_model_for
from aider_lsp.app import Application
from aider_lsp.config.providers import split_model_id
from aider_lsp.config.settings import Settings
from aider_lsp.config.state import GITIGNORE_TEXT, STATE_DIR
from aider_lsp.guards.files import FileAccessManager
from aider_lsp.history.checkpoints import CheckpointStore
from aider_lsp.lsp.commands import AiderAutomaticParams, AiderInteractiveParams, GetContextParams
from aider_lsp.memory.system import default_index_path
from aider_lsp.models import (
    AiderAutomaticArgs,
    AiderInteractiveArgs,
    GetContextArgs,
    ReadFilesArgs,
    ShellCommandArgs,
    TaskStatus,
)

CONTRACTS = {
    "aider:automatic": AiderAutomaticArgs,
    "aider:interactive": AiderInteractiveArgs,
    "system:get_context": GetContextArgs,
    "system:read_files": ReadFilesArgs,
    "system:execute_shell_command": ShellCommandArgs,
}


@pytest.fixture
async def app(workspace: Path):  # type: ignore[no-untyped-def]
    application = Application(workspace, Settings())
    try:
        yield application
    finally:
        await application.aclose()


async def test_the_schema_offered_for_each_tool_is_its_argument_model(app: Application) -> None:
    for name, model in CONTRACTS.items():
        tool = app.tools.get(name)
        assert tool is not None, name
        assert tool.spec.input_schema == model.model_json_schema(), name
        assert app.tools.get(tool.spec.provider_name) is tool  # `aider_automatic` still works
    # fields only programmatic callers and the editor give are not offered to a model
    assert "open_files" not in GetContextArgs.model_json_schema()["properties"]
    assert "readonly_files" not in AiderAutomaticArgs.model_json_schema()["properties"]
    assert AiderAutomaticArgs.model_json_schema()["required"] == ["prompt"]


def test_prompt_is_an_alias_of_query_and_query_wins() -> None:
    assert AiderInteractiveArgs.model_validate({"prompt": "hi"}).query == "hi"
    assert AiderInteractiveArgs.model_validate({"query": "q", "prompt": "p"}).query == "q"
    assert AiderInteractiveParams.model_validate({"prompt": "hi"}).query == "hi"
    assert "query" in AiderInteractiveArgs.model_json_schema()["properties"]


def test_file_lists_may_be_json_array_strings() -> None:
    args = AiderAutomaticArgs.model_validate({"prompt": "p", "file_context": '["a.py", "b/c.py"]'})
    assert args.file_context == ["a.py", "b/c.py"]
    assert AiderAutomaticArgs.model_validate({"prompt": "p", "file_context": ""}).file_context is None
    assert ReadFilesArgs.model_validate({"file_paths": '["x.py"]'}).file_paths == ["x.py"]
    with pytest.raises(ValidationError, match="file_context"):
        AiderAutomaticArgs.model_validate({"prompt": "p", "file_context": "not json"})
    with pytest.raises(ValidationError, match="file_context"):
        AiderAutomaticArgs.model_validate({"prompt": "p", "file_context": '{"a": 1}'})


def test_lsp_arguments_refuse_unknown_fields_tools_ignore_them() -> None:
    with pytest.raises(ValidationError, match="no_such_field"):
        AiderAutomaticParams.model_validate({"prompt": "p", "no_such_field": 1})
    with pytest.raises(ValidationError, match="no_such_field"):
        GetContextParams.model_validate({"query": "q", "no_such_field": 1})
    assert AiderAutomaticArgs.model_validate({"prompt": "p", "no_such_field": 1}).prompt == "p"


@pytest.mark.parametrize(
    ("tool", "params", "field"),
    [
        ("aider:automatic", {}, "prompt"),
        ("aider:automatic", {"prompt": "p", "file_context": 5}, "file_context"),
        ("aider:automatic", {"prompt": "p", "file_context": "[1, 2"}, "file_context"),
        ("aider:interactive", {"query": "q", "session_id": 5}, "session_id"),
        ("system:get_context", {"query": "q", "target_files": [{"a": 1}]}, "target_files.0"),
        ("system:get_context", {"query": "q", "max_results": 0}, "max_results"),
        ("system:read_files", {}, "file_paths"),
        ("system:read_files", {"file_paths": 3}, "file_paths"),
        ("system:execute_shell_command", {"command": "true", "timeout": -1}, "timeout"),
    ],
)
async def test_bad_arguments_fail_naming_the_field(
    app: Application, tool: str, params: dict[str, object], field: str
) -> None:
    result = await app.handle_task_command(tool, params)
    assert result.status is TaskStatus.FAILED
    assert result.notes["error"]["reason"] == "input_validation_failure"
    assert field in result.content, result.content


async def test_read_files_takes_a_json_array_string(app: Application) -> None:
    result = await app.handle_task_command("system:read_files", {"file_paths": '["pkg/calc.py"]'})
    assert result.status is TaskStatus.COMPLETE
    assert "def add(a, b):" in result.content


def test_model_safe_files_is_the_one_confinement_rule(workspace: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside.py"
    outside.write_text("x = 1\n")
    os.symlink(outside, workspace / "link.py")
    files = FileAccessManager(workspace)
    kept, refused = files.model_safe_files(
        ["pkg/calc.py", "./pkg/calc.py", "new.py", ".env", "../outside.py", "link.py", "pkg"]
    )
    assert kept == ["pkg/calc.py", "new.py"]  # deduplicated; a file not yet there may be created
    assert {r.path for r in refused} == {".env", "../outside.py", "link.py", "pkg"}
    assert all(r.reason for r in refused)
    kept, refused = files.model_safe_files(["pkg/calc.py", "new.py"], must_exist=True)
    assert kept == ["pkg/calc.py"]
    assert [(r.path, r.reason) for r in refused] == [("new.py", "no such file")]


@pytest.mark.parametrize(
    ("model_id", "expected"),
    [
        ("openai:gpt-4.1", ("openai", "gpt-4.1")),
        ("ollama:qwen2.5-coder:7b", ("ollama", "qwen2.5-coder:7b")),
        ("gpt-4.1", (None, "gpt-4.1")),
        ("openrouter:meta/llama", ("openrouter", "meta/llama")),
    ],
)
def test_provider_model_parsing(model_id: str, expected: tuple[str | None, str]) -> None:
    assert split_model_id(model_id) == expected


def test_aider_model_names_come_from_the_same_parsing() -> None:
    assert aider_model_for(Settings(model="ollama:qwen2.5-coder:7b")) == "ollama_chat/qwen2.5-coder:7b"
    assert aider_model_for(Settings(model="gpt-4.1")) == "gpt-4.1"
    assert aider_model_for(Settings(model="google-gla:gemini-2.5-pro")) == "gemini/gemini-2.5-pro"


def test_checkpoints_and_the_index_share_one_state_folder(workspace: Path) -> None:
    CheckpointStore(FileAccessManager(workspace)).create(["pkg/calc.py"], label="one")
    ignore = workspace / STATE_DIR / ".gitignore"
    assert ignore.read_text() == GITIGNORE_TEXT
    ignore.unlink()
    assert default_index_path(workspace).parent == workspace / STATE_DIR
    assert ignore.read_text() == GITIGNORE_TEXT
