"""The questions asked as ACP's `session/request_permission`: may a test command found in
the workspace run (allow once / allow always / reject)? May Aider edit a file whose editor
buffer differs from the file on disk (allow once / reject; buffers.py)?

The Application asks through `RequestContext.ask(question)` (models/question.py) and takes a
typed answer: "allow always" is `Answer.ACCEPT` (remembered in the user's own state folder, as
the LSP's "Use it"), "reject" is `Answer.DECLINE` (nothing runs, the turn says why), and "allow
once" is `Answer.ONCE` (the command used this once, not remembered). "Always" and "reject" are
offered when the question offers their answer. A cancelled prompt rejects. Each option has a
kind of its own (clients key the choices by kind: ready_run.py).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING

from acp.schema import AllowedOutcome, PermissionOption, ToolCallLocation, ToolCallUpdate

from acp import start_tool_call, text_block, tool_content, update_tool_call

from ..models import Answer

if TYPE_CHECKING:
    from acp.interfaces import Client

    from ..models import AskCallback, Question
    from .session import AcpSession

log = logging.getLogger(__name__)

# each option's id is its kind: a client that knows an option by its id alone (avante's
# buttons take "allow_once" and "allow_always" for yes, any other id for no) reads it right
ALLOW_ONCE, ALLOW_ALWAYS, REJECT = "allow_once", "allow_always", "reject_once"
OPTIONS = [
    PermissionOption(option_id=ALLOW_ONCE, name="Allow once", kind="allow_once"),
    PermissionOption(option_id=ALLOW_ALWAYS, name="Always allow in this workspace", kind="allow_always"),
    PermissionOption(option_id=REJECT, name="Reject", kind="reject_once"),
]


EDIT_OPTIONS = [OPTIONS[0], OPTIONS[2]]  # a buffer differs now: nothing to remember


@dataclass
class Asked:
    """What the user answered in this turn (the turn's reply says a rejection)."""

    rejected: str | None = None  # the question that was rejected


def permission_asker(client: Client, session: AcpSession, asked: Asked) -> AskCallback:
    """A `RequestContext.ask` that asks the client's permission for a pending `execute` tool
    call (announced first, closed with the answer)."""

    async def ask(question: Question) -> Answer | None:
        call_id = session.next_call_id("permission")
        message = question.message
        session.outbox.post(start_tool_call(call_id, message, kind="execute", status="pending"))
        await session.outbox.flush()
        update = ToolCallUpdate(tool_call_id=call_id, title=message, kind="execute")
        chosen = await _choice(client, session.id, update, _options_for(question))
        if chosen == REJECT:
            note = [tool_content(text_block("Not allowed: nothing was run."))]
            session.outbox.post(update_tool_call(call_id, status="failed", content=note))
            asked.rejected = message
            return Answer.DECLINE
        session.outbox.post(update_tool_call(call_id, status="completed"))
        return Answer.ACCEPT if chosen == ALLOW_ALWAYS else Answer.ONCE if chosen == ALLOW_ONCE else None

    return ask


def _options_for(question: Question) -> list[PermissionOption]:
    """The options whose answer the question offers ("allow once", no answer: always)."""
    offered = {
        ALLOW_ONCE: True,
        ALLOW_ALWAYS: question.offers(Answer.ACCEPT),
        REJECT: question.offers(Answer.DECLINE),
    }
    return [option for option in OPTIONS if offered[option.option_id]]


async def may_edit(client: Client, session: AcpSession, rel: str, path: str) -> bool:
    """Ask whether Aider may edit `rel`, whose editor buffer differs from the file on disk
    (Aider edits the disk: the editor's unsaved text would be overwritten or left behind).
    A pending `edit` tool call on the file, closed with the answer."""
    message = f"Edit {rel}? Its editor buffer differs from the file on disk: Aider edits the file on disk."
    call_id = session.next_call_id("permission")
    location = [ToolCallLocation(path=path)]
    session.outbox.post(start_tool_call(call_id, message, kind="edit", status="pending", locations=location))
    await session.outbox.flush()
    update = ToolCallUpdate(tool_call_id=call_id, title=message, kind="edit", locations=location)
    allowed = await _choice(client, session.id, update, EDIT_OPTIONS) == ALLOW_ONCE
    note = [tool_content(text_block("Allowed once." if allowed else f"Not allowed: {rel} is not edited."))]
    session.outbox.post(update_tool_call(call_id, status="completed" if allowed else "failed", content=note))
    return allowed


async def _choice(
    client: Client, session_id: str, tool_call: ToolCallUpdate, options: list[PermissionOption] = OPTIONS
) -> str:
    """The option the user chose; REJECT when the prompt was cancelled or the client failed."""
    try:
        answer = await client.request_permission(session_id=session_id, tool_call=tool_call, options=options)
    except Exception as exc:  # the client cannot answer: the question is declined
        log.info("session/request_permission failed: %s", exc)
        return REJECT
    outcome = answer.outcome
    chosen = {option.option_id for option in options} - {REJECT}
    if isinstance(outcome, AllowedOutcome) and outcome.option_id in chosen:
        return outcome.option_id
    return REJECT


def rejection_note(asked: Asked) -> str | None:
    """The reply's sentence for a rejected question, or None."""
    if asked.rejected is None:
        return None
    return (
        f"Not allowed: {asked.rejected} Nothing was run. To use another test command, set "
        "AIDER_LSP_TEST_COMMAND in the agent's environment."
    )
