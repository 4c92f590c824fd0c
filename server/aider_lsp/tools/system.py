"""`system:*` direct tools: read files and run the configured shell command.

Their arguments are `ReadFilesArgs` and `ShellCommandArgs` (models/args.py): the schema offered
to a model and the validation here both come from them.
"""

from __future__ import annotations

from typing import Any

from ..guards.files import AccessDenied, FileAccessManager
from ..models import (
    ErrorReason,
    ReadFilesArgs,
    ShellCommandArgs,
    TaskResult,
    ToolSpec,
    complete_result,
    failed_result,
    parse_args,
)
from ..processes.shell import CommandExecutor
from ..results import command_result

READ_FILES_SPEC = ToolSpec.for_args(
    "system:read_files", "Read workspace files and return their contents with delimiters.", ReadFilesArgs
)

EXECUTE_SHELL_SPEC = ToolSpec.for_args(
    "system:execute_shell_command",
    "Run a shell command in the workspace (never offered to a model).",
    ShellCommandArgs,
    read_only=False,
)


def read_files(files: FileAccessManager, params: dict[str, Any]) -> TaskResult:
    """Concatenate confined, non-secret text files; report what was skipped and why."""
    args = parse_args(ReadFilesArgs, params)
    if isinstance(args, TaskResult):
        return args
    blocks: list[str] = []
    skipped: list[dict[str, str]] = []
    for path in args.file_paths:
        try:
            text = files.read_text(path, for_model=True)
        except (AccessDenied, OSError) as exc:
            skipped.append({"path": path, "reason": str(exc)})
            continue
        suffix = "\n[... truncated ...]" if text.truncated else ""
        blocks.append(f"--- START FILE: {text.path} ---\n{text.text}{suffix}\n--- END FILE: {text.path} ---")
    # the answer itself names what was left out: a model (or a user) reading only the content
    # would otherwise take a missing file for an empty one
    read_count = len(blocks)
    blocks.extend(f"--- SKIPPED: {item['path']} ({item['reason']}) ---" for item in skipped)
    notes = {
        "files_read_count": read_count,
        "skipped_files": [item["path"] for item in skipped],
        "skipped_reasons": skipped,
    }
    return complete_result("\n\n".join(blocks), notes=notes)


async def execute_shell_command(
    shell: CommandExecutor, params: dict[str, Any], *, default_timeout: float, use_shell: bool
) -> TaskResult:
    args = parse_args(ShellCommandArgs, params)
    if isinstance(args, TaskResult):
        return args
    if not args.command.strip():
        return failed_result(ErrorReason.INPUT_VALIDATION_FAILURE, "missing command")
    timeout = args.timeout if args.timeout is not None else default_timeout
    return command_result(await shell.execute(args.command, timeout=timeout, use_shell=use_shell))
