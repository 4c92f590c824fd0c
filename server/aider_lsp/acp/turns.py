"""One prompt turn in each mode: the typed call to the Application, its answer rendered.

Ask → `Application.ask` (the session's ask chat); Edit → `Application.edit(chat=True)` (the
session's kept Aider chat, the mentioned files announced as pending edit tool calls first);
in both, Aider's reply reaches the client as message chunks while Aider writes it;
Workflow → `Application.run_workflow` (progress as a plan; its edits, test runs and analyses
shown as they happen, live.py); in a session whose isolation is `worktree` the run works in a
worktree of its own and, when its change is ready, the user decides on it (ready_run.py).
Each returns the stop reason; a cancel arrives as CancelledError and is the caller's.
"""

from __future__ import annotations

import asyncio
import time
import uuid

from acp.schema import StopReason

from ..models import (
    AiderEditOutcome,
    Choose,
    ErrorReason,
    Isolation,
    RequestContext,
    RunState,
    WorkflowEvent,
    WorkflowProgress,
    WorkflowRequest,
    WorkflowRun,
)
from ..models.outcome import capitalised, test_outcome
from . import render
from .buffers import rejected_buffers
from .commands import parse_command, run_command
from .live import LiveRun
from .modes import Mode
from .permission import Asked, permission_asker, rejection_note
from .prompt import PromptInput, saved_images
from .ready_run import decide
from .run_version import RunVersion
from .session import AcpSession

# a run's ending → ACP's stop reason (anything else ends the turn, the text says how)
STOP_REASONS: dict[ErrorReason, StopReason] = {
    ErrorReason.MAX_RETRIES_REACHED: "max_turn_requests",
    ErrorReason.BUDGET_EXCEEDED: "max_tokens",
    ErrorReason.CANCELLED: "cancelled",
}


async def run_turn(session: AcpSession, request: PromptInput) -> StopReason:
    """The turn in the session's mode; refused files named first."""
    if request.refused:
        session.outbox.post(render.message("Not given to Aider: " + "; ".join(request.refused) + "\n\n"))
    if request.all_refused:
        session.outbox.post(render.message("Nothing was run: every file the prompt names was refused."))
        return "end_turn"
    if not request.text:
        session.outbox.post(render.message("The prompt has no text: say what Aider should do."))
        return "end_turn"
    command = parse_command(request.text)
    if command is not None:
        return await run_command(session, *command)
    if session.app.aider_setup_needed() and not await set_up_aider(session):
        return "end_turn"
    with saved_images(request.images) as image_files:
        request.image_files = image_files  # while the turn runs: removed after it
        if session.mode is Mode.ASK:
            return await ask_turn(session, request)
        try:
            return await _editing_turn(session, request)
        finally:
            session.skipped.clear()
            session.held.release(session.id)


async def _editing_turn(session: AcpSession, request: PromptInput) -> StopReason:
    """An Edit or Workflow turn, once the user has said which changed buffers Aider may edit."""
    named = [*session.files, *(rel for rel in request.files if rel not in session.files)]
    skipped = await rejected_buffers(session, named)
    if skipped:
        session.skipped.update(skipped)
        session.held.hold(session.id, skipped)
        session.outbox.post(
            render.message(
                "Not edited (its editor buffer differs from the file on disk, and editing it was "
                "not allowed): " + ", ".join(skipped) + "\n\n"
            )
        )
        if request.files and all(rel in skipped for rel in request.files):
            session.outbox.post(render.message("Nothing was run: every file the prompt names was kept."))
            return "end_turn"
    if session.mode is Mode.WORKFLOW:
        return await workflow_turn(session, request)
    return await edit_turn(session, request)


async def set_up_aider(session: AcpSession) -> bool:
    """Make Aider's environment before the first prompt that needs it, shown as a tool call
    whose content is the set-up's latest line (at most one update a second); a cancel stops
    it (the caller's CancelledError). False (the turn ends, the reason said) when it failed."""
    call_id = f"setup-{uuid.uuid4().hex[:8]}"
    started = time.monotonic()
    shown = [0.0]
    session.outbox.post(render.setup_started(call_id))

    def on_line(line: str) -> None:
        now = time.monotonic()
        if now - shown[0] >= 1.0:
            shown[0] = now
            session.outbox.post(render.setup_progress(call_id, line, now - started))

    try:
        failed = await session.app.set_up_aider(on_line)
    except asyncio.CancelledError:
        session.outbox.post(
            render.setup_done(call_id, time.monotonic() - started, failed="stopped: cancelled")
        )
        raise
    session.outbox.post(render.setup_done(call_id, time.monotonic() - started, failed=failed))
    if failed is not None:
        session.outbox.post(render.message(f"Nothing was run: {failed}."))
    return failed is None


class ReplyChunks:
    """Aider's reply posted as message chunks as it is written (the Application's
    `on_reply`); `any` tells whether a piece came, so the reply is not posted twice."""

    def __init__(self, session: AcpSession) -> None:
        self.session = session
        self.any = False

    def __call__(self, text: str) -> None:
        self.any = True
        self.session.outbox.post(render.message(text))


def _session_files(session: AcpSession, request: PromptInput) -> list[str]:
    """The files of this turn: those earlier turns named, then the new ones."""
    for rel in request.files:
        if rel not in session.files:
            session.files.append(rel)
    return [rel for rel in session.files if rel not in session.skipped]


async def ask_turn(session: AcpSession, request: PromptInput) -> StopReason:
    files = _session_files(session, request)
    reply = ReplyChunks(session)
    outcome = await session.app.ask(
        request.text, files, session_id=session.ask_chat, on_reply=reply, images=request.image_files
    )
    session.ask_chat = outcome.session_id or session.ask_chat
    if outcome.error is not None:
        session.outbox.say(outcome.error.message)
    elif not reply.any:
        session.outbox.post(render.message(outcome.reply or "(Aider gave no answer)"))
    return "end_turn"


async def edit_turn(session: AcpSession, request: PromptInput) -> StopReason:
    files = _session_files(session, request)
    workspace = session.app.workspace
    calls = {rel: session.next_call_id("edit") for rel in files}
    for rel, call_id in calls.items():
        session.outbox.post(render.edit_pending(call_id, rel, workspace))
    reply = ReplyChunks(session)
    try:
        outcome = await session.app.edit(
            request.text,
            files,
            chat=True,
            session_id=session.edit_chat,
            on_reply=reply,
            images=request.image_files,
        )
    except asyncio.CancelledError:
        for rel, call_id in calls.items():
            session.outbox.post(render.edit_done(call_id, None, rel, workspace, failed="cancelled"))
        raise
    session.edit_chat = outcome.session_id or session.edit_chat
    session.last_diff = outcome.diff or session.last_diff
    for rel in [*outcome.changed_files, *outcome.created_files]:
        if rel not in session.files:
            session.files.append(rel)
    _render_edit(session, outcome, calls, streamed=reply.any)
    return "end_turn"


def _render_edit(
    session: AcpSession, outcome: AiderEditOutcome, calls: dict[str, str], *, streamed: bool
) -> None:
    """Each file's tool call closed (with its diff), then Aider's reply (unless it was
    `streamed` already) and what changed."""
    workspace = session.app.workspace
    parts = render.file_parts(outcome.diff)
    failed = outcome.error.message if outcome.error is not None else None
    for rel, call_id in calls.items():
        session.outbox.post(render.edit_done(call_id, parts.get(rel), rel, workspace, failed=failed))
    for rel, part in parts.items():
        if rel not in calls:  # a file Aider chose (the index's pick, or one it created)
            call_id = session.next_call_id("edit")
            session.outbox.post(render.edit_pending(call_id, rel, workspace))
            session.outbox.post(render.edit_done(call_id, part, rel, workspace))
    # a streamed reply is shown already: what changed follows it, on its own
    reply = "" if streamed else outcome.reply.strip()
    lines = [reply] if reply else []
    if failed is not None:
        lines.append(f"The edit failed: {failed}")
    elif parts:
        lines.append("Aider changed " + ", ".join(parts) + ".")
    else:
        lines.append("Aider changed no file.")
    session.outbox.say("\n\n".join(lines))


async def workflow_turn(session: AcpSession, request: PromptInput) -> StopReason:
    phases: list[str] = []

    def on_event(event: WorkflowEvent) -> None:
        """Each new phase joins the plan shown; every step is shown as it happens (live.py)."""
        if isinstance(event, WorkflowProgress) and (not phases or phases[-1] != event.phase):
            phases.append(event.phase)
            session.outbox.post(render.plan(phases, finished=False))
        live.show(event)

    def on_cancelled(run: WorkflowRun) -> None:
        session.outbox.say(run.message)

    asked = Asked()
    ask = permission_asker(session.client, session, asked) if session.client is not None else None
    isolation = Isolation(session.isolation)
    isolated = isolation is Isolation.WORKTREE
    live = LiveRun(session, version=RunVersion(session.app.workspace) if isolated else None)
    ctx = RequestContext(
        answer_cancelled=on_cancelled,
        open_files=list(request.files),
        ask=ask,
        report_event=on_event,
        report_reply=live.reply,
    )
    run = _workflow_request(session, request, isolation)
    await _say_mcp_not_started(session)
    try:
        # a prompt sent meanwhile is a note for the run's next edit (agent.py), for the runs this
        # turn starts when they are isolated (those under way before are another turn's)
        in_place = not isolated and session.attempts == 1
        session.runs_before = None if in_place else frozenset(running_runs(session))
        session.steering = True
        with session.app.model_toolsets(session.mcp.toolsets):
            result = await session.app.run_workflow(run, ctx)
    except asyncio.CancelledError:
        live.close_open("cancelled")
        raise
    finally:
        session.steering, session.runs_before = False, None
    if result.outcome is not None:  # the turn's usage_update says where its spend went
        session.last_run = result.outcome.usage
    rejected = rejection_note(asked)
    if rejected is not None:  # the run stopped before it began: nothing ran
        session.outbox.post(render.message(rejected))
        return "end_turn"
    if phases:
        session.outbox.post(render.plan(phases, finished=True))
    live.close_open(result.message)  # a run that ended mid-step (it says why)
    session.outbox.say(_outcome(result))
    if await _on_users_files(session, result):
        session.last_diff = result.changes.diff or session.last_diff
    return _stop_reason(result)


def running_runs(session: AcpSession) -> list[str]:
    """The isolated runs under way on the session's folder (an attempt is one)."""
    return [record.id for record in session.app.history() if record.state is RunState.RUNNING]


def _workflow_request(session: AcpSession, request: PromptInput, isolation: Isolation) -> WorkflowRequest:
    """The turn's run as the session's options shape it (retries, isolation, attempts)."""
    return WorkflowRequest(
        goal=request.text,
        file_context=_session_files(session, request) or None,
        max_retries=session.max_retries,
        isolation=isolation,
        attempts=session.attempts,
        choose=Choose(session.choose),
        images=request.image_files,
    )


async def _say_mcp_not_started(session: AcpSession) -> None:
    """The client's MCP servers that did not start: the turn runs without their tools."""
    not_started = await session.mcp.ready()
    if not_started:
        said = "; ".join(not_started)
        session.outbox.post(
            render.message(f"MCP servers that did not start (their tools are not offered): {said}\n\n")
        )


async def _on_users_files(session: AcpSession, run: WorkflowRun) -> bool:
    """Whether the run's change is on the user's files now: a run in place's is; an isolated
    one's once the user applied it (asked here when it is ready)."""
    if run.isolated is None:
        return True
    if run.isolated.state is not RunState.READY:
        if run.outcome is not None:
            session.outbox.say("It changed no file: there is nothing to apply, its worktree is removed.")
        return False
    session.outbox.say(f"Its change waits in a worktree of its own (run {run.isolated.run_id}).")
    action = await decide(session, run.isolated.run_id, run.changes.diff)
    return action is not None and action.state is RunState.APPLIED


def _stop_reason(run: WorkflowRun) -> StopReason:
    """The turn's stopReason: how the run ended (its reason), end_turn when it reached the goal."""
    if run.ok:
        return "end_turn"
    reason = run.outcome.reason if run.outcome is not None else (run.refused.reason if run.refused else None)
    return STOP_REASONS.get(reason, "end_turn") if reason is not None else "end_turn"


def _outcome(run: WorkflowRun) -> str:
    """How the run ended, said once: the run's own words, then only what they leave out: the
    last test run's state when they do not say it (`WorkflowRun.names_the_tests`), or what to
    do with the tests the judge refused: `/undo` of them for a run in place, a warning for an
    isolated one, whose change (the tests' with it) waits in its worktree, where `/undo`
    reaches nothing (the edits and test runs were shown as they happened: the reply repeats
    none of them)."""
    said = _sentence(run.message)
    outcome = run.outcome
    if outcome is None:
        return said
    judge = outcome.judge or next((it.judge for it in reversed(outcome.iterations) if it.test), None)
    if judge is not None:
        offer = _judged_tests_offer(judge.test_files, isolated=run.isolated is not None)
        return f"{said}\n\n{offer}" if offer else said
    if run.names_the_tests:
        return said
    test = run.last_test
    if test is None:
        return f"{said}\n\nNo test ran."
    clause = test_outcome(
        test.exit_code, command=test.command, timed_out=test.timed_out, summary=test.summary
    )
    return f"{said}\n\n{capitalised(clause)}."


def _judged_tests_offer(test_files: list[str], *, isolated: bool) -> str:
    """What the user can do about the test files the judge refused (none named: nothing)."""
    if not test_files:
        return ""
    if isolated:
        names = ", ".join(test_files)
        return f"Its change to {names} is part of what applying it takes: read its diff first."
    return f"`/undo {' '.join(test_files)}` takes back only the run's changes to the tests."


def _sentence(text: str) -> str:
    """`text` as a sentence of its own: a capital first, a full stop last."""
    text = text.strip()
    if not text:
        return text
    text = text[0].upper() + text[1:]
    return text if text.endswith((".", "!", "?")) else text + "."
