"""`aider:automatic` and `aider:interactive`: Aider edits through the AiderBridge.

Before an edit: files open in the editor with unsaved changes are refused (Aider writes the
disk, the editor's buffer would silently diverge), secret files are refused (they must never
reach a model), and the files are checkpointed so `aider-lsp.workflow.undo` restores them.
The unsaved files come from one provider given at construction (the editor's buffers, asked
at each edit, so that a long run sees a buffer the user modified after it started).
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import contextlib
import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from ..aider.bridge import AiderBridge
from ..guards.files import AccessDenied, FileAccessManager, Refusal
from ..guards.redact import redact, secret_values
from ..history.checkpoints import ACTIVE_CHECKPOINT, Checkpoint, CheckpointStore, snapshot_files
from ..models import (
    AiderAutomaticArgs,
    AiderEditOutcome,
    AiderInteractiveArgs,
    ErrorReason,
    ReplyCallback,
    Selection,
    TaskError,
    TaskResult,
    ToolSpec,
    UnsavedFiles,
    failed_result,
    parse_args,
)

log = logging.getLogger(__name__)

MEMORY_FILE_LIMIT = 5
# the bundled server's words for a chat it no longer has (aider_mcp/engine.py: it restarted)
LOST_CHAT = "unknown_session"  # the bundled server's error `code` for a chat it does not have

AIDER_AUTOMATIC_SPEC = ToolSpec.for_args(
    "aider:automatic",
    "Ask Aider to edit code: one self-contained instruction applied to the given files."
    " Returns the unified diff of the change.",
    AiderAutomaticArgs,
    read_only=False,
)

AIDER_INTERACTIVE_SPEC = ToolSpec.for_args(
    "aider:interactive",
    "A multi-turn Aider conversation that keeps its chat: pass session_id from the previous"
    " answer to continue; Aider may answer or edit the files.",
    AiderInteractiveArgs,
    read_only=False,
)


def _stopped(
    tool: str,
    reason: ErrorReason,
    message: str,
    *,
    refused: list[str] | None = None,
    unsaved_files: list[str] | None = None,
) -> AiderEditOutcome:
    """An edit stopped before Aider ran (bad input, refused or unsaved files): FAILED."""
    return AiderEditOutcome(
        tool=tool,
        error=TaskError(reason=reason, message=message),
        refused=refused or [],
        unsaved_files=unsaved_files or [],
    )


def _refused(tool: str, refusals: list[Refusal]) -> AiderEditOutcome:
    reasons = [refusal.reason for refusal in refusals]
    message = "refused to give Aider these files: " + "; ".join(reasons)
    return _stopped(tool, ErrorReason.ACCESS_DENIED, message, refused=reasons)


@dataclass(frozen=True)
class UndoCover:
    """What undo covers after an edit: the checkpoint kept (None: dropped, nothing changed)
    and the files Aider touched that it cannot restore."""

    checkpoint_id: str | None = None
    not_covered: list[str] = field(default_factory=list)


def finished_edit(
    outcome: AiderEditOutcome, files: list[str], cover: UndoCover, *, fallback: str | None = None
) -> AiderEditOutcome:
    """The edit as its callers see it: the bridge's outcome plus the files it was given, what
    undo covers and, for a chat turn, the fallback taken (a new outcome, the bridge's is kept)."""
    return outcome.model_copy(
        update={
            "files": files,
            "checkpoint_id": cover.checkpoint_id,
            "not_covered_by_undo": cover.not_covered,
            "fallback": fallback,
        }
    )


class AiderExecutors:
    """The two Aider tools plus listModels and undo, sharing one bridge and checkpoint store."""

    def __init__(
        self,
        bridge: AiderBridge,
        files: FileAccessManager,
        checkpoints: CheckpointStore,
        unsaved_files: UnsavedFiles = tuple,
    ) -> None:
        self.bridge = bridge
        self.files = files
        self.checkpoints = checkpoints
        self.unsaved_files = unsaved_files
        # files each Aider chat session holds: a later turn may edit any of them, so each turn
        # checks them for unsaved buffers and checkpoints them, not only the turn's own files
        self._session_files: dict[str, list[str]] = {}
        self._edit_lock = asyncio.Lock()

    # -- shared checks -----------------------------------------------------------------------
    async def _resolve_files(
        self, tool: str, file_context: list[str] | None, prompt: str
    ) -> tuple[list[str], AiderEditOutcome | None]:
        """Editable files: file_context, else the files the memory finds for the prompt."""
        paths = file_context if file_context is not None else await self._context_files(prompt)
        clean, refused = self.files.model_safe_files(paths)
        if refused:
            return [], _refused(tool, refused)
        if not clean:
            return [], _stopped(
                tool,
                ErrorReason.INPUT_VALIDATION_FAILURE,
                "no files to edit: pass file_context (workspace-relative paths)",
            )
        return clean, None

    async def _context_files(self, prompt: str) -> list[str]:
        """The prompt's best files by the bridge's file context (see aider/bridge.py): the
        memory's matches, only those that exist, stay inside and are not secret."""
        if self.bridge.memory is None:
            return []
        found = await self.bridge.get_context_for_query(prompt)
        matches = [m.source_path for m in found.matches if m.source_path]
        self.bridge.set_file_context(matches[:MEMORY_FILE_LIMIT], source="memory")
        return self.bridge.get_file_context()

    def _for_model(self, text: str) -> str:
        """Aider sends the prompt to its LLM: credential values (e.g. in pasted test output) are
        redacted as in every other model-bound text."""
        settings = self.bridge.settings()
        return redact(text, secret_values(extra=[getattr(settings, "api_key", None)]))

    def _resolve_readonly(
        self, tool: str, readonly_files: list[str] | None
    ) -> tuple[list[str], AiderEditOutcome | None]:
        """Read-only files reach the model too: same confinement and secret refusal."""
        clean, refused = self.files.model_safe_files(readonly_files or [])
        return ([], _refused(tool, refused)) if refused else (clean, None)

    def _not_utf8(self, tool: str, paths: list[str]) -> AiderEditOutcome | None:
        """Aider reads files only as UTF-8: a file in another encoding (a Latin-1 byte) is
        named before Aider starts, with what to do (aider-lsp has no encoding setting)."""
        for path in paths:
            try:
                where = self.files.utf8_problem(path)
            except (AccessDenied, OSError):
                continue  # refused or unreadable: the other checks (or Aider) say why
            if where:
                return _stopped(
                    tool,
                    ErrorReason.INPUT_VALIDATION_FAILURE,
                    f"{path} is not UTF-8 text ({where}): Aider reads and writes files as UTF-8 only. "
                    f"Convert the file to UTF-8 first (in VS Code: 'Save with Encoding' → UTF-8; or "
                    f"iconv -f latin1 -t utf-8), then try again",
                    refused=[path],
                )
        return None

    def _dirty(self) -> set[str]:
        """The workspace files the editor holds with unsaved changes, asked now."""
        dirty: set[str] = set()
        for path in self.unsaved_files():
            with contextlib.suppress(AccessDenied):
                dirty.add(self.files.relative(path))
        return dirty

    def _unsaved_conflicts(self, tool: str, paths: list[str]) -> AiderEditOutcome | None:
        dirty = self._dirty()
        blocked = [path for path in paths if path in dirty]
        if not blocked:
            return None
        return _stopped(
            tool,
            ErrorReason.INPUT_VALIDATION_FAILURE,
            f"{', '.join(blocked)} {'has' if len(blocked) == 1 else 'have'} unsaved changes in the"
            " editor: save or revert first (Aider edits the files on disk and would not see them)",
            unsaved_files=blocked,
        )

    def _checkpoint(self, paths: list[str], label: str) -> tuple[Checkpoint, bool]:
        """The run's checkpoint when inside `run_checkpoint` (files added, content before the
        run kept), else a new one for this edit. Returns (checkpoint, owned)."""
        active = ACTIVE_CHECKPOINT.get()
        if active is not None:
            self.checkpoints.add(active, paths)
            return active, False
        return self.checkpoints.create(paths, label=label), True

    def _settle_checkpoint(
        self,
        checkpoint: Checkpoint,
        outcome: AiderEditOutcome,
        owned: bool = True,
        known: dict[str, bytes | None] | None = None,
    ) -> UndoCover:
        """Keep the checkpoint only when files changed; include the files Aider wrote outside
        the editable list: those it created (undo deletes them) and those whose content before
        the server reported (`known`; one by one: a path outside the workspace must not drop
        the others)."""
        conflicts = outcome.conflicts  # saved by the user during the edit: their change, not Aider's
        outside = outcome.files_outside_editable
        known = known or {}
        covered = [path for path in outside if self._cover_outside(checkpoint, path, outcome, known)]
        not_covered = [p for p in outside if p not in covered]
        if not (outcome.changed_files or covered or not owned):
            self.checkpoints.discard(checkpoint)
            return UndoCover(not_covered=not_covered)
        with contextlib.suppress(OSError, AccessDenied):
            if owned and conflicts:  # this edit did not touch them: nothing of it to undo
                self.checkpoints.forget(checkpoint, conflicts)
            self.checkpoints.record_after(checkpoint, user_changed=conflicts)
        return UndoCover(checkpoint.id, not_covered)

    def _cover_outside(
        self, checkpoint: Checkpoint, path: str, outcome: AiderEditOutcome, known: dict[str, bytes | None]
    ) -> bool:
        """Record a file Aider wrote outside its chat for undo: with the content it held before
        when the server told it, else as absent when Aider created it; False when it cannot be."""
        if path not in known:
            return path in outcome.created_files and self._cover_created(checkpoint, path)
        try:
            self.checkpoints.add_known(checkpoint, {path: known[path]})
            return True
        except (OSError, AccessDenied):
            return False

    def _cover_created(self, checkpoint: Checkpoint, path: str) -> bool:
        """Record a file the edit created as "did not exist" (undo deletes it); False when it cannot be."""
        try:
            self.checkpoints.add(checkpoint, [path], absent=True)
            return True
        except (OSError, AccessDenied):
            return False

    async def _call(
        self,
        checkpoint: Checkpoint,
        owned: bool,
        tool: str,
        call: dict[str, Any],
        on_reply: ReplyCallback | None = None,
        retell: str | None = None,
    ) -> AiderEditOutcome:
        """The bridge call; when cancelled (the bridge stops the server), a checkpoint of files
        that did not change is dropped so the next undo reaches the previous edit."""
        try:
            return await self._chat_turn(tool, call, on_reply, retell)
        except asyncio.CancelledError:
            if owned:
                with contextlib.suppress(OSError, AccessDenied):
                    if self.checkpoints.unchanged(checkpoint):
                        self.checkpoints.discard(checkpoint)
            raise

    async def _chat_turn(
        self, tool: str, call: dict[str, Any], on_reply: ReplyCallback | None, retell: str | None = None
    ) -> AiderEditOutcome:
        """One call; with `retell` (not None), a turn of a chat the Aider server no longer has
        (it restarted: a crash, a cancel) goes once to a new chat, told `retell` first. The
        outcome names the new chat: callers keep `outcome.session_id`. Without it (the
        interactive tool: its caller holds the chat id) the loss is the answer."""
        outcome = await self.bridge.edit(tool, call, on_reply=on_reply)
        lost = call.get("session_id") and _server_code(outcome) == LOST_CHAT
        if retell is None or not lost:
            return outcome
        log.info("the Aider chat %s was lost (the server restarted): a new chat", call["session_id"])
        fresh = {key: value for key, value in call.items() if key != "session_id"}
        if retell:
            fresh["message"] = f"{self._for_model(retell)}\n\n{fresh['message']}"
        return await self.bridge.edit(tool, fresh, on_reply=on_reply)

    # -- tools -------------------------------------------------------------------------------
    async def ask(
        self,
        question: str,
        files: Sequence[str] = (),
        *,
        session_id: str | None = None,
        on_reply: ReplyCallback | None = None,
        images: Sequence[str] = (),
    ) -> AiderEditOutcome:
        """Aider answers about the code and edits nothing (its "ask" format, on the bundled
        server's `aider_chat`): the files are shown read-only under the rule for what a model
        sees, the question redacted like any prompt. `session_id` continues an ask chat (a
        lost one is started again; the outcome names it); a problem is an outcome with `error`.
        `images`: image files (absolute paths) shown to a model that reads them, this turn only."""
        tool = "aider_chat"
        if not question.strip():
            return _stopped(tool, ErrorReason.INPUT_VALIDATION_FAILURE, "missing question")
        shown, refused = self.files.model_safe_files(files)
        if refused:
            return _refused(tool, refused)
        call: dict[str, Any] = {"message": self._for_model(question), "relative_readonly_files": shown}
        call["ask"] = True
        if session_id:
            call["session_id"] = session_id
        if images:
            call["image_files"] = list(images)
        return await self._chat_turn(tool, call, on_reply, retell="")

    async def automatic(self, params: dict[str, Any]) -> TaskResult:
        """One Aider edit: `AiderAutomaticArgs` {prompt, file_context?}."""
        args = parse_args(AiderAutomaticArgs, params)
        if isinstance(args, TaskResult):
            return args
        return (await self.edit(args)).to_task_result()

    async def edit_for(
        self,
        prompt: str,
        files: Sequence[str] = (),
        *,
        readonly: Sequence[str] = (),
        selection: Selection | None = None,
        chat: bool = False,
        session_id: str | None = None,
        on_reply: ReplyCallback | None = None,
        retell: str = "",
        dropped: Sequence[str] = (),
        images: Sequence[str] = (),
    ) -> AiderEditOutcome:
        """The Application's one door for an edit (the editor's command, a workflow's turn): an
        editor `selection` folded into the prompt (its file leads the files), then `edit`; an
        edit that is not a workflow's turn is recorded in the history as the user's own.
        `dropped`: files that leave a kept chat before this turn; `images`: see `edit`."""
        try:
            if selection is not None:
                prompt, paths = apply_selection(self.files, prompt, list(files) or None, selection)
                files = paths
            args = AiderAutomaticArgs(
                prompt=prompt, file_context=list(files) or None, readonly_files=list(readonly) or None
            )
        except ValueError as exc:  # a selection outside the workspace, a bad path
            return _stopped("aider_ai_code", ErrorReason.INPUT_VALIDATION_FAILURE, str(exc))
        outcome = await self.edit(
            args,
            chat=chat,
            session_id=session_id,
            on_reply=on_reply,
            retell=retell,
            dropped=dropped,
            images=images,
        )
        if not chat:  # a workflow's turns are its run's; the run says what the history shows
            spend = None if outcome.usage is None else f"{outcome.usage.total_tokens} tokens"
            status = "FAILED" if outcome.error is not None else "COMPLETE"
            self.checkpoints.annotate(outcome.checkpoint_id, kind="edit", status=status, spend=spend)
        return outcome

    async def edit(
        self,
        args: AiderAutomaticArgs,
        *,
        chat: bool = False,
        session_id: str | None = None,
        on_reply: ReplyCallback | None = None,
        retell: str = "",
        dropped: Sequence[str] = (),
        images: Sequence[str] = (),
    ) -> AiderEditOutcome:
        """`aider:automatic` typed: every check, the checkpoint and the edit; a stop before
        Aider ran is a FAILED outcome too (its `error` says why). `chat`: the edit is a turn
        of a kept Aider chat (`session_id` continues one), as a workflow run's retries are; a
        chat the server lost starts again, told `retell` first (`_chat_turn`); `dropped`: files
        that leave that chat before the turn. `on_reply` reads Aider's reply as it is written.
        `images`: image files (absolute paths, outside the workspace as a pasted one is) shown
        to Aider's model for this edit only; a model that reads none is refused by name."""
        tool = "aider_chat" if chat else "aider_ai_code"
        if not args.prompt.strip():
            return _stopped(
                tool, ErrorReason.INPUT_VALIDATION_FAILURE, "missing prompt: say what Aider should change"
            )
        paths, problem = await self._resolve_files(tool, args.file_context, args.prompt)
        if problem:
            return problem
        blocked = self._unsaved_conflicts(tool, paths)
        if blocked:
            return blocked
        readonly, problem = self._resolve_readonly(tool, args.readonly_files)
        if problem:
            return problem
        problem = self._not_utf8(tool, [*paths, *readonly])
        if problem:
            return problem
        key = "message" if chat else "ai_coding_prompt"
        call: dict[str, Any] = {key: self._for_model(args.prompt), "relative_editable_files": paths}
        if readonly:
            call["relative_readonly_files"] = readonly
        if session_id:
            call["session_id"] = session_id
        if images:
            call["image_files"] = list(images)
        if chat:
            # a workflow's turn: files Aider asks to add or edits outside the chat may join it
            # (the bundled server judges workspace and secrets; the editor's unsaved files, here)
            call["allow_outside_files"] = True
            call["unsaved_files"] = sorted(self._dirty())
            leaving = [path for path in dropped if path not in paths]
            if leaving and session_id:
                call["dropped_files"] = leaving
        outcome, cover, fallback = await self._checkpointed_edit(
            paths, args.prompt, tool, call, on_reply, retell=retell
        )
        return finished_edit(outcome, paths, cover, fallback=fallback)

    async def _checkpointed_edit(
        self,
        paths: list[str],
        label: str,
        tool_name: str,
        call: dict[str, Any],
        on_reply: ReplyCallback | None = None,
        *,
        retell: str | None = None,
    ) -> tuple[AiderEditOutcome, UndoCover, str | None]:
        """Checkpoint, edit and settle as one, under the edit lock: concurrent edits would
        snapshot the same 'before' and undo would skip the first edit. Returns the outcome,
        what undo covers, and the fallback taken (a chat turn on a server without chats).
        `retell`: a lost chat starts again, told it first (None: the caller's chat id stands)."""
        async with self._edit_lock:
            checkpoint, owned = self._checkpoint(paths, label)
            # a chat holds the run's earlier files too: Aider may write any of them this turn
            held = [*paths, *(rel for rel in checkpoint.files if rel not in paths)]
            before = snapshot_files(self.files.resolve, held)
            outcome = await self._call(checkpoint, owned, tool_name, call, on_reply, retell)
            fallback = None
            if (
                tool_name == "aider_chat"
                and outcome.error
                and _unknown_tool(outcome.error.message, tool_name)
            ):
                # a server without sessions (e.g. the public aider-mcp-server): one stateless edit
                outcome = await self.bridge.edit(
                    "aider_ai_code",
                    {"ai_coding_prompt": call["message"], "relative_editable_files": paths},
                    on_reply=on_reply,
                )
                fallback = "aider_ai_code: this Aider server keeps no chat sessions"
            outside = self._outside_before(outcome)
            cover = self._settle_checkpoint(checkpoint, outcome, owned, outside)
            if cover.checkpoint_id is not None:
                self._record_change(checkpoint, {**outside, **before}, outcome)
            return _without_before(outcome), cover, fallback

    def _outside_before(self, outcome: AiderEditOutcome) -> dict[str, bytes | None]:
        """What the files Aider wrote outside the editable list held before (the bundled
        server's `outside_before`), for those inside the workspace; none from other servers."""
        reported = (outcome.payload or {}).get("outside_before")
        known: dict[str, bytes | None] = {}
        if not isinstance(reported, dict):
            return known
        for path, data in reported.items():
            try:
                rel = self.files.relative(str(path))
                known[rel] = None if data is None else base64.b64decode(str(data), validate=True)
            except (AccessDenied, binascii.Error, ValueError):
                continue
        return known

    def _record_change(
        self, checkpoint: Checkpoint, before: dict[str, bytes | None], outcome: AiderEditOutcome
    ) -> None:
        """What this edit itself changed, for undo as a revert: only the files Aider wrote. A
        file another program changed during the edit but Aider did not write is not the edit's
        change (undoing it would take theirs back); one both wrote is unsure (named, kept)."""
        written = set(outcome.changed_files) | set(outcome.files_outside_editable)
        unsure = [path for path in outcome.conflicts if path in written]
        kept = {rel: data for rel, data in before.items() if rel in written}
        with contextlib.suppress(OSError, AccessDenied):
            self.checkpoints.record_edit(checkpoint, kept, created=outcome.created_files, unsure=unsure)

    async def interactive(self, params: dict[str, Any]) -> TaskResult:
        """One turn of a kept Aider chat: `AiderInteractiveArgs` {query|prompt, file_context?,
        session_id?, end_session?}."""
        args = parse_args(AiderInteractiveArgs, params)
        if isinstance(args, TaskResult):
            return args
        return await self.turn(args)

    async def turn(self, args: AiderInteractiveArgs, on_reply: ReplyCallback | None = None) -> TaskResult:
        """`aider:interactive` typed: one turn of a kept chat, or its end (`end_session`).
        `on_reply` reads Aider's reply as it is written."""
        session_id = args.session_id
        if args.end_session:
            if not session_id:
                return failed_result(ErrorReason.INPUT_VALIDATION_FAILURE, "end_session needs a session_id")
            self._session_files.pop(session_id, None)
            return await self.bridge.call_aider_tool("aider_chat_end", {"session_id": session_id})
        message = args.query
        if message is None or not message.strip():
            return failed_result(
                ErrorReason.INPUT_VALIDATION_FAILURE, "missing query (or prompt): the message to Aider"
            )
        paths, problem = await self._resolve_files("aider_chat", args.file_context, message)
        if problem:
            return problem.to_task_result()
        if session_id:
            earlier = self._session_files.get(session_id, [])
            paths = [*earlier, *(path for path in paths if path not in earlier)]
        blocked = self._unsaved_conflicts("aider_chat", paths) or self._not_utf8("aider_chat", paths)
        if blocked:
            return blocked.to_task_result()
        call: dict[str, Any] = {"message": self._for_model(message), "relative_editable_files": paths}
        if session_id:
            call["session_id"] = session_id
        outcome, cover, fallback = await self._checkpointed_edit(paths, message, "aider_chat", call, on_reply)
        if fallback is None and outcome.session_id:
            self._remember_session_files(outcome.session_id, [*paths, *outcome.created_files])
        return finished_edit(outcome, paths, cover, fallback=fallback).to_task_result()

    def _remember_session_files(self, session_id: str, paths: list[str]) -> None:
        """The files a chat holds, for its later turns' checks and checkpoints."""
        held = self._session_files.setdefault(session_id, [])
        for path in paths:
            if isinstance(path, str) and path not in held:
                held.append(path)

    async def end_chat(self, session_id: str) -> None:
        """Forget a kept Aider chat (the end of a workflow run); a failure only logs. A stopped
        server forgot its chats: it is not started again for this."""
        if not self.bridge.running:
            return
        result = await self.turn(AiderInteractiveArgs(session_id=session_id, end_session=True))
        if not result.ok:
            log.debug("ending the Aider chat %s: %s", session_id, result.content)

    async def list_models(self, substring: str = "") -> TaskResult:
        """Models the Aider server knows (optionally filtered)."""
        return await self.bridge.call_aider_tool("list_models", {"substring": substring} if substring else {})

    @property
    def editing(self) -> bool:
        """An edit is running (undo waits for it: it would restore files Aider is writing)."""
        return self._edit_lock.locked()


def _without_before(outcome: AiderEditOutcome) -> AiderEditOutcome:
    """The outcome without the files' earlier content (undo has it now): it is not the
    answer's to carry to the editor."""
    payload = outcome.payload
    if not payload or "outside_before" not in payload:
        return outcome
    return outcome.model_copy(update={"payload": {k: v for k, v in payload.items() if k != "outside_before"}})


def _server_code(outcome: AiderEditOutcome) -> str | None:
    """The bundled server's error `code` (its `{"error", "code"}` answer), None without one."""
    answer = outcome.diagnostics.get("server_result")
    code = answer.get("code") if isinstance(answer, dict) else None
    return code if isinstance(code, str) else None


def _unknown_tool(message: str, tool: str) -> bool:
    lowered = message.lower()
    return tool in lowered and any(word in lowered for word in ("unknown tool", "not found", "no such tool"))


def apply_selection(
    files: FileAccessManager, prompt: str, file_context: list[str] | None, selection: Selection
) -> tuple[str, list[str]]:
    """Fold an editor selection into the prompt, and its file into the file context (first)."""
    rel = files.relative(selection.uri) if selection.uri else None
    paths = list(file_context or [])
    if rel and rel not in paths:
        paths = [rel, *paths]
    where = rel or "the current file"
    if selection.range is not None:
        where += f" (lines {selection.range.start.line + 1}-{selection.range.end.line + 1})"
    if selection.text:
        prompt = f"{prompt}\n\nThis is about the selected code in {where}:\n```\n{selection.text}\n```"
    else:
        prompt = f"{prompt}\n\nThis is about {where}."
    return prompt, paths
