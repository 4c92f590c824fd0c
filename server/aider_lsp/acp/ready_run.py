"""What becomes of an isolated run that is ready: "Apply this change?" asked as
`session/request_permission` (apply / keep as a branch, or leave it ready where there is no
git / discard), the Application's answer said in the turn's reply.

Each option has a kind of its own, because clients key the choices by kind (CodeCompanion shows
"Allow", "Reject", "Reject always" and maps one key to each): apply is `allow_once`; keeping the
change aside (a branch in git, else the run left ready) is `reject_once`, not applied this time;
discard is `reject_always`, rejected for good. The reject listed first loses nothing: a client
that takes a question closed unanswered as its first reject (CodeCompanion) keeps the change.
A client that gives `reject_always` no key (CodeCompanion 19.22) reaches Discard by `/discard`,
which the reply of a run left ready names. The
question's tool call leads with the run's diff (clients preview only a first `diff` block), its
text after it.

An apply that wrote nothing (the user changed the lines the run changed, or holds a file unsaved
in the editor) names each file and why, and asks once more: apply anyway (the run's version of
those files wins; /undo takes it back), or leave it ready. No answer (a client that cannot ask,
a failed request, a cancelled prompt) leaves the run ready, and the reply says how to decide
later: `/apply`, or `aider-lsp apply` in a terminal.

Why a module of its own: the end of an isolated Workflow turn and `/apply` ask the same question;
the Application does the work (isolation/), this words it for the client.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING

from acp.schema import (
    AllowedOutcome,
    ContentToolCallContent,
    FileEditToolCallContent,
    PermissionOption,
    PermissionOptionKind,
    TerminalToolCallContent,
    ToolCallLocation,
    ToolCallUpdate,
)

from acp import start_tool_call, text_block, tool_content, update_tool_call

from ..models import RunAction, RunState
from . import render
from .run_version import RunVersion

if TYPE_CHECKING:
    from ..models import RunRecord
    from .session import AcpSession

log = logging.getLogger(__name__)


def _option(name: str, kind: PermissionOptionKind) -> PermissionOption:
    """An option whose id is its kind (permission.py says why); a question's options differ
    in kind, and the answer is known by the option it names (`_ask`)."""
    return PermissionOption(option_id=kind, name=name, kind=kind)


APPLY_OPTION = _option("Apply to my files", "allow_once")
KEEP_OPTION = _option("Keep as a branch", "reject_once")
LEAVE_OPTION = _option("Leave it ready", "reject_once")
DISCARD_OPTION = _option("Discard", "reject_always")
FORCE_OPTION = _option("Apply anyway (the run's version wins)", "allow_once")
FORCE_OPTIONS = [FORCE_OPTION, LEAVE_OPTION]
Content = list[FileEditToolCallContent | ContentToolCallContent | TerminalToolCallContent]


async def decide(session: AcpSession, run_id: str, diff: str = "") -> RunAction | None:
    """Ask what becomes of the ready run `run_id` (its `diff` shown on the user's files), do it,
    and say what was done (None: nothing was done, the run stays ready)."""
    record = next((run for run in session.app.history() if run.id == run_id), None)
    aside = KEEP_OPTION if record is not None and record.branch else LEAVE_OPTION
    content, locations = _change_shown(session, diff)
    label = record.label if record is not None and record.label else run_id
    content.append(tool_content(text_block(f"Run {run_id}: {label}")))
    options = [APPLY_OPTION, aside, DISCARD_OPTION]
    chosen = await _ask(session, _apply_question(diff), options, content, locations, run_id)
    if chosen is LEAVE_OPTION:
        session.outbox.say(later(run_id))
    if chosen is None or chosen is LEAVE_OPTION:
        return None
    action: RunAction | None
    if chosen is DISCARD_OPTION:
        action = session.app.discard_run(run_id)
    elif chosen is KEEP_OPTION:
        action = session.app.keep_run(run_id)
    else:
        action = await _apply(session, run_id)
    if action is not None:
        session.outbox.say(outcome(action))
    return action


async def _apply(session: AcpSession, run_id: str) -> RunAction | None:
    """Apply; when a file cannot take the change, name them and ask whether to apply anyway
    (None: the user left it ready, already said)."""
    action = session.app.apply_run(run_id)
    if action.refused is not None or not action.skipped:
        return action
    session.outbox.say(_skipped(action))
    where = [ToolCallLocation(path=str(session.app.workspace / item.path)) for item in action.skipped]
    question = "Apply anyway? " + "; ".join(f"{item.path}: {item.reason}" for item in action.skipped)
    chosen = await _ask(session, question, FORCE_OPTIONS, [], where, run_id)
    if chosen is FORCE_OPTION:
        return session.app.apply_run(run_id, force=True)
    if chosen is LEAVE_OPTION:
        session.outbox.say(later(run_id))
    return None


async def _ask(
    session: AcpSession,
    title: str,
    options: list[PermissionOption],
    content: Content,
    locations: list[ToolCallLocation],
    run_id: str,
) -> PermissionOption | None:
    """The option chosen in a pending `edit` tool call (closed with the answer); None when no
    answer came: the run stays ready, and the reply says how to decide later."""
    if session.client is None:
        session.outbox.say(later(run_id))
        return None
    call_id = session.next_call_id("permission")
    session.outbox.post(
        start_tool_call(
            call_id, title, kind="edit", status="pending", content=content or None, locations=locations
        )
    )
    await session.outbox.flush()
    update = ToolCallUpdate(
        tool_call_id=call_id, title=title, kind="edit", content=content or None, locations=locations
    )
    try:
        answer = await session.client.request_permission(
            session_id=session.id, tool_call=update, options=options
        )
    except asyncio.CancelledError:
        _close(session, call_id, content, f"Not decided (the prompt was cancelled). {later(run_id)}")
        raise
    except Exception as exc:  # the client cannot ask: the run waits
        log.info("session/request_permission failed: %s", exc)
        answer = None
    outcome = None if answer is None else answer.outcome
    chosen_id = outcome.option_id if isinstance(outcome, AllowedOutcome) else None
    chosen = next((option for option in options if option.option_id == chosen_id), None)
    if chosen is None:
        _close(session, call_id, content, "Not decided.")
        session.outbox.say(later(run_id))
        return None
    _close(session, call_id, content, f"Chosen: {chosen.name}.")
    return chosen


def _close(session: AcpSession, call_id: str, content: Content, said: str) -> None:
    """The question's call closed with what was chosen (its diffs kept: a new content replaces
    the old). Completed either way: a decision is no failure."""
    closing = [*content, tool_content(text_block(said))]
    session.outbox.post(update_tool_call(call_id, status="completed", content=closing))


def _change_shown(session: AcpSession, diff: str) -> tuple[Content, list[ToolCallLocation]]:
    """The run's change as `{path, oldText, newText}` on the user's files as they are now, the
    diffs first (a file whose text cannot be shown says why after them), each file's location
    in the same order (a client previews the first diff at the first location)."""
    workspace = session.app.workspace
    version = RunVersion(workspace)
    shown = [
        (
            render.sides_change(rel, workspace, version.advance(part)),
            ToolCallLocation(path=str(workspace / rel)),
        )
        for rel, part in render.file_parts(diff).items()
    ]
    shown.sort(key=lambda pair: not isinstance(pair[0], FileEditToolCallContent))
    return [change for change, _ in shown], [location for _, location in shown]


def outcome(action: RunAction) -> str:
    """What applying, keeping or discarding did, in the reply's words."""
    stays = f" {later(action.run_id)}" if action.state is RunState.READY else ""
    if action.refused is not None:
        return f"Not done: {action.refused.message}.{stays}"
    if action.skipped:
        return _skipped(action) + stays
    if action.state is RunState.APPLIED:
        files = [*action.written, *(f"{rel} (deleted)" for rel in action.deleted)]
        others = (
            f" The other attempts are discarded: {', '.join(action.discarded)}." if action.discarded else ""
        )
        return f"Applied to your files: {_names(files)}. `/undo` takes it back.{others}"
    if action.state is RunState.KEPT:
        commit = f" (commit {action.commit[:12]})" if action.commit else ""
        return f"Kept on branch `{action.branch}`{commit}; your files are untouched."
    which = f"“{action.label}” (run {action.run_id})" if action.label else f"run {action.run_id}"
    return f"Discarded {which}: its worktree is removed; your files are untouched."


def _skipped(action: RunAction) -> str:
    listed = "; ".join(f"{item.path}: {item.reason}" for item in action.skipped)
    return f"Not applied, nothing was written: {listed}."


def later(run_id: str) -> str:
    """How to decide on a run that stays ready."""
    return (
        f"Run {run_id} stays ready: `/apply {run_id}` here asks again and `/discard {run_id}` throws "
        f"it away, or in a terminal in this folder `aider-lsp apply {run_id}` applies it and "
        f"`aider-lsp discard {run_id}` throws it away."
    )


def _apply_question(diff: str) -> str:
    """ "Apply this change to calc.py (+2 -1)?": what the change is, in the title (a client may
    show the title alone, as the VS Code ACP Client's question does)."""
    parts = render.file_parts(diff)
    if not parts:
        return "Apply this change?"
    lines = [line for line in diff.splitlines() if line[:1] in "+-" and line[:3] not in ("+++", "---")]
    added = sum(line.startswith("+") for line in lines)
    files = list(parts)
    named = ", ".join(files[:3]) + (f" and {len(files) - 3} more" if len(files) > 3 else "")
    return f"Apply this change to {named} (+{added} -{len(lines) - added})?"


def _names(files: Sequence[str]) -> str:
    return ", ".join(files) or "no file"


def ready_runs(records: Sequence[RunRecord]) -> list[str]:
    """The ids of the runs that are ready, newest first (as the history lists them)."""
    return [record.id for record in records if record.state is RunState.READY]
