"""`system:*` direct tools: read files and run the configured shell command."""

from __future__ import annotations

import json
from typing import Any

from ..files import AccessDenied, FileAccessManager
from ..models import ErrorReason, TaskResult, ToolSpec, complete_result, failed_result
from ..shell import CommandExecutor

READ_FILES_SPEC = ToolSpec(
    name="system:read_files",
    description="Read workspace files and return their contents with delimiters.",
    input_schema={
        "type": "object",
        "properties": {
            "file_paths": {
                "type": "array",
                "items": {"type": "string"},
                "description": "Workspace-relative paths of the files to read.",
            }
        },
        "required": ["file_paths"],
    },
)

EXECUTE_SHELL_SPEC = ToolSpec(
    name="system:execute_shell_command",
    description="Run a shell command in the workspace (never offered to a model).",
    input_schema={
        "type": "object",
        "properties": {
            "command": {"type": "string"},
            "timeout": {"type": "number"},
        },
        "required": ["command"],
    },
    read_only=False,
)


def parse_path_list(value: Any, field: str) -> list[str]:
    """A list of paths given as a list or as a JSON-array string (the seed accepts both)."""
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except json.JSONDecodeError as exc:
            raise ValueError(f"{field} must be a list of paths or a JSON array string") from exc
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise ValueError(f"{field} must be a list of path strings")
    return value


def read_files(files: FileAccessManager, params: dict[str, Any]) -> TaskResult:
    """Concatenate confined, non-secret text files; report what was skipped and why."""
    if "file_paths" not in params:
        return failed_result(ErrorReason.INPUT_VALIDATION_FAILURE, "missing file_paths")
    try:
        paths = parse_path_list(params["file_paths"], "file_paths")
    except ValueError as exc:
        return failed_result(ErrorReason.INPUT_VALIDATION_FAILURE, str(exc))
    blocks: list[str] = []
    skipped: list[dict[str, str]] = []
    for path in paths:
        try:
            text = files.read_text(path, for_model=True)
        except (AccessDenied, OSError) as exc:
            skipped.append({"path": path, "reason": str(exc)})
            continue
        suffix = "\n[... truncated ...]" if text.truncated else ""
        blocks.append(f"--- START FILE: {text.path} ---\n{text.text}{suffix}\n--- END FILE: {text.path} ---")
    notes = {
        "files_read_count": len(blocks),
        "skipped_files": [item["path"] for item in skipped],
        "skipped_reasons": skipped,
    }
    return complete_result("\n\n".join(blocks), notes=notes)


async def execute_shell_command(
    shell: CommandExecutor, params: dict[str, Any], *, default_timeout: float, use_shell: bool
) -> TaskResult:
    command = params.get("command")
    if not isinstance(command, str) or not command.strip():
        return failed_result(ErrorReason.INPUT_VALIDATION_FAILURE, "missing command")
    timeout = params.get("timeout", default_timeout)
    if not isinstance(timeout, (int, float)) or timeout <= 0:
        return failed_result(ErrorReason.INPUT_VALIDATION_FAILURE, "timeout must be > 0 seconds")
    return await shell.execute(command, timeout=float(timeout), use_shell=use_shell)
