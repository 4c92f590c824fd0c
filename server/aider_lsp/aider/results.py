"""Result interpretation: a tool's answer → an AiderEditOutcome (edits) or a TaskResult (others).

The contract (docs/aider.md): an answer is one TextContent holding a JSON object; non-JSON
text, `isError` and `{"error": ...}` are failures. An edit's `success` is never trusted: the
public server calls an edit successful when a file merely looks like code, and its diff is a
cumulative `git diff`. What counts is the editable files, read before and after the call.
A missing `usage` is "not reported", never zero. No mcp import here: the transport hands over
a plain ToolReply.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from aider_mcp.snapshots import unified_diff  # stdlib-only helper shipped alongside

from ..models import (
    AiderEditOutcome,
    CallUsage,
    ErrorReason,
    TaskError,
    TaskResult,
    complete_result,
    failed_result,
)

EDIT_TOOLS = frozenset({"aider_ai_code", "aider_chat"})
# keys of the bundled server's edit answer passed on to the client as they are
PASSED_ON = (
    "session_id",
    "turn",
    "errors",
    "declined_files",
    "refused_files",
    "reverted_files",
    "added_files",
)


@dataclass(frozen=True)
class ToolReply:
    """A tool's answer as the transport received it: its text blocks and MCP's isError."""

    texts: tuple[str, ...]
    is_error: bool = False

    @property
    def text(self) -> str:
        return "\n".join(self.texts)


@dataclass(frozen=True)
class CallFailure:
    """A call that gave no usable answer: the reason, a message for the user, and what helps
    to diagnose it (`server_stderr`, `raw`, `server_result`)."""

    reason: ErrorReason
    message: str
    diagnostics: Mapping[str, Any] = field(default_factory=dict)
    server_broken: bool = False  # the server may be unusable: the session stops it

    def to_task_result(self) -> TaskResult:
        return failed_result(self.reason, self.message, notes=dict(self.diagnostics))

    def as_edit(self, tool_name: str) -> AiderEditOutcome:
        return AiderEditOutcome(
            tool=tool_name,
            error=TaskError(reason=self.reason, message=self.message),
            diagnostics=dict(self.diagnostics),
        )


@dataclass(frozen=True)
class EditedFiles:
    """The editable files' bytes before and after the call (None: absent or unreadable)."""

    editable: list[str]
    before: Mapping[str, bytes | None]
    after: Mapping[str, bytes | None]

    def changed(self) -> list[str]:
        return [rel for rel in self.editable if self.before.get(rel) != self.after.get(rel)]

    def diff(self, paths: list[str]) -> str:
        return "".join(unified_diff(rel, self.before.get(rel), self.after.get(rel)) for rel in paths)


def parse_answer(tool_name: str, reply: ToolReply) -> dict[str, Any] | CallFailure:
    """The answer's JSON object, or why there is none (isError, no text, not JSON, `error`)."""
    raw = reply.text
    if reply.is_error:
        return CallFailure(
            ErrorReason.TOOL_EXECUTION_ERROR, f"{tool_name} failed: {raw[:2000] or 'no detail'}"
        )
    if not reply.texts:
        return CallFailure(ErrorReason.OUTPUT_FORMAT_FAILURE, f"{tool_name} returned no text content")
    try:
        payload = json.loads(raw)
    except json.JSONDecodeError:
        return CallFailure(
            ErrorReason.OUTPUT_FORMAT_FAILURE,
            f"{tool_name} returned text that is not JSON: {raw[:300]!r}",
            {"raw": raw[:4000]},
        )
    if not isinstance(payload, dict):
        return CallFailure(
            ErrorReason.OUTPUT_FORMAT_FAILURE, f"{tool_name} returned JSON that is not an object"
        )
    if "error" in payload:
        # an error with a `code` is the server's own sentence for the user (a model that reads
        # no images): said as it is; any other is named after the tool that failed
        said = str(payload["error"]) if payload.get("code") else f"{tool_name}: {payload['error']}"
        return CallFailure(ErrorReason.TOOL_EXECUTION_ERROR, said, {"server_result": payload})
    return payload


def tool_result(tool_name: str, reply: ToolReply) -> TaskResult:
    """A tool that edits nothing (`list_models`, `aider_chat_end`, …) as a TaskResult."""
    payload = parse_answer(tool_name, reply)
    if isinstance(payload, CallFailure):
        return payload.to_task_result()
    if tool_name == "list_models":
        models = payload.get("models")
        if not isinstance(models, list):
            return failed_result(ErrorReason.OUTPUT_FORMAT_FAILURE, "list_models returned no 'models' list")
        return complete_result("\n".join(map(str, models)), notes={"count": len(models)}, parsed=models)
    return complete_result(reply.text, parsed=payload)


def edit_outcome(tool_name: str, reply: ToolReply, files: EditedFiles, *, bundled: bool) -> AiderEditOutcome:
    """An edit tool's answer judged against the files: a success only when an editable file
    really changed; a chat turn that only answered is not a failure."""
    payload = parse_answer(tool_name, reply)
    if isinstance(payload, CallFailure):
        return payload.as_edit(tool_name)
    claimed, diff = payload.get("success"), payload.get("diff")
    if not isinstance(claimed, bool) or not isinstance(diff, str):
        return CallFailure(
            ErrorReason.OUTPUT_FORMAT_FAILURE,
            f"{tool_name} returned JSON without boolean 'success' and string 'diff'",
            {"server_result": payload},
        ).as_edit(tool_name)
    changed, by_others, diff = _this_edits_changes(payload, files, diff, bundled=bundled)
    conflicts = _list(payload.get("conflicts"))
    if by_others:  # changed on disk by someone else during the edit, like a save
        conflicts = sorted({*conflicts, *by_others})
    success = claimed and bool(changed)
    return AiderEditOutcome(
        tool=tool_name,
        success=success,
        server_success=claimed,
        diff=diff,
        changed_files=[rel for rel in changed if rel not in conflicts],  # the user's, not Aider's
        created_files=_list(payload.get("created_files")),
        files_outside_editable=_list(payload.get("files_outside_editable")),
        conflicts=conflicts,
        reply=str(payload.get("reply") or ""),
        usage=reported_usage(payload.get("usage")),
        server_report={key: payload[key] for key in PASSED_ON if key in payload},
        payload=payload,
        error=None if success or tool_name == "aider_chat" else _no_change(tool_name, payload, claimed),
    )


def _this_edits_changes(
    payload: dict[str, Any], files: EditedFiles, diff: str, *, bundled: bool
) -> tuple[list[str], list[str], str]:
    """(files this edit changed, editable files someone else changed meanwhile, the diff).

    The bundled server names the files Aider itself wrote, so an editable file another
    program changed during the call is not this edit's (undo leaves it alone). A foreign
    server's diff is `git diff` (cumulative, blind to new files): the bridge's own replaces it."""
    changed = files.changed()
    if not bundled:
        return changed, [], files.diff(changed)
    written = _list(payload.get("changed_files"))
    return [rel for rel in changed if rel in written], [rel for rel in changed if rel not in written], diff


def _no_change(tool_name: str, payload: dict[str, Any], claimed: bool) -> TaskError:
    if claimed:
        message = f"{tool_name} reported success but no editable file changed"
    else:
        message = str(payload.get("message") or f"{tool_name}: Aider made no change to the files")
    return TaskError(reason=ErrorReason.TOOL_EXECUTION_ERROR, message=message)


def reported_usage(raw: Any) -> CallUsage | None:
    """The edit's usage when the server reported a well-formed one, else None (not zero)."""
    if not isinstance(raw, dict):
        return None
    try:
        return CallUsage.model_validate(raw)
    except ValueError:
        return None


def _list(value: Any) -> list[Any]:
    return list(value) if isinstance(value, list) else []
