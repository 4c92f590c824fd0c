"""Slash commands, offered through `available_commands_update` and run when a prompt's text
starts with one: `/undo`, `/diff`, `/test`, `/context QUERY`, `/budget`, `/apply [RUN_ID]` (the
question at the end of an isolated Workflow turn, asked again: ready_run.py), `/discard [RUN_ID]`
(throw a ready run away without a question: a client that keys choices by kind may offer no key
for the question's Discard).

Each is one Application call rendered like a turn's: `/test` as an `execute` tool call (a
command found in the workspace asked for first, as in a Workflow turn), `/context` as links the
client can open. A prompt starting with another `/word` is not a command here: it
goes to the session's mode as text.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from acp.helpers import update_available_commands
from acp.schema import (
    AvailableCommand,
    AvailableCommandInput,
    AvailableCommandsUpdate,
    StopReason,
    UnstructuredCommandInput,
)

from ..models import ContextGenerationInput, DeclinedTestCommand, RequestContext
from ..models.outcome import capitalised, test_outcome
from . import render
from .permission import Asked, permission_asker, rejection_note
from .ready_run import decide, outcome, ready_runs
from .session import AcpSession

CONTEXT_FILES = 8  # /context shows this many files

# (what it does, the hint of the input it needs). An optional argument is said in the
# description and declares no input: ACP's `input` is for a command that requires one, and a
# client holds such a command back for it (the VS Code ACP client's "/" popup inserts
# "/undo " and waits instead of sending it, where a command without input is sent at once)
_DESCRIPTIONS = {
    "undo": (
        "Take back the last Aider edit or run (other changes stay); /undo FILE… only its change to those",
        None,
    ),
    "diff": ("Show what the last edit or run in this session changed", None),
    "test": ("Run the tests", None),
    "context": ("The workspace files most relevant to a query", "what to look for"),
    "budget": ("What this session has spent, and the budget per run", None),
    "apply": (
        "Apply, keep as a branch or discard the newest ready isolated run (/apply RUN_ID: that one)",
        None,
    ),
    "discard": (
        "Throw away the newest ready isolated run (/discard RUN_ID: that one); your files stay as they are",
        None,
    ),
}


def available_commands() -> AvailableCommandsUpdate:
    """The commands as the client lists them (after `/`)."""
    commands = [
        AvailableCommand(
            name=name,
            description=about,
            input=None if hint is None else AvailableCommandInput(root=UnstructuredCommandInput(hint=hint)),
        )
        for name, (about, hint) in _DESCRIPTIONS.items()
    ]
    return update_available_commands(commands)


def parse_command(text: str) -> tuple[str, str] | None:
    """(name, argument) when the text starts with one of the commands, else None."""
    if not text.startswith("/"):
        return None
    name, _, argument = text[1:].partition(" ")
    name = name.strip()
    return (name, argument.strip()) if name in _DESCRIPTIONS else None


async def run_command(session: AcpSession, name: str, argument: str) -> StopReason:
    """Run one command; its answer is posted to the session."""
    await _RUNNERS[name](session, argument)
    return "end_turn"


async def _undo(session: AcpSession, argument: str) -> None:
    files = argument.split() or None
    result = session.app.undo(files=files)
    session.outbox.post(render.message(result.content))


async def _diff(session: AcpSession, argument: str) -> None:
    if not session.last_diff.strip():
        session.outbox.post(render.message("No edit or run in this session has changed a file yet."))
        return
    session.outbox.post(render.message(f"```diff\n{session.last_diff.rstrip()}\n```"))


async def _test(session: AcpSession, argument: str) -> None:
    asked = Asked()
    ask = permission_asker(session.client, session, asked) if session.client is not None else None
    choice = await session.app.pick_test_command(None, RequestContext(ask=ask))
    note = rejection_note(asked)
    if note is not None or isinstance(choice, DeclinedTestCommand) or choice is None:
        why = note or (choice.message if isinstance(choice, DeclinedTestCommand) else "No test command.")
        session.outbox.post(render.message(why))
        return
    call_id = session.next_call_id("test")
    session.outbox.post(render.test_run_started(call_id, choice.command))
    run = await session.app.run_tests(choice.command)
    session.outbox.post(render.test_run_closed(call_id, run, session.app.workspace))
    said = test_outcome(
        run.exit_code, timed_out=run.timed_out, error=run.error.message if run.error else None
    )
    session.outbox.post(render.message(f"{capitalised(said)}."))


async def _context(session: AcpSession, argument: str) -> None:
    if not argument:
        session.outbox.post(render.message("Say what to look for: /context QUERY"))
        return
    found = await session.app.find_context(
        ContextGenerationInput(query=argument, max_results=CONTEXT_FILES, open_files=list(session.files))
    )
    if found.error:
        session.outbox.post(render.message(f"The index could not answer: {found.error}"))
        return
    paths = [match.source_path for match in found.matches if match.source_path]
    if not paths:
        session.outbox.post(render.message(f"No file in the index matches {argument!r}."))
        return
    # markdown links, not resource_link blocks: clients that show text only (the VS Code ACP
    # Client, avante) dropped those, leaving the heading alone
    links = [f"- {render.file_link(rel, session.app.workspace)}" for rel in dict.fromkeys(paths)]
    session.outbox.post(
        render.message(f"The files most relevant to {argument!r}:\n\n" + "\n".join(links) + "\n")
    )


async def _budget(session: AcpSession, argument: str) -> None:
    budget = session.app.settings.budget
    spent = session.app.spent().describe()
    caps = [f"{budget.max_tokens} tokens" if budget.max_tokens is not None else None]
    caps.append(f"${budget.max_cost:g}" if budget.max_cost is not None else None)
    cap = " and ".join(c for c in caps if c) or "none (AIDER_LSP_BUDGET sets one)"
    session.outbox.post(render.message(f"Spent in this agent so far: {spent}.\nBudget per run: {cap}."))


async def _apply(session: AcpSession, argument: str) -> None:
    run_id = _ready_run(session, argument)
    if run_id is not None:
        await decide(session, run_id)


async def _discard(session: AcpSession, argument: str) -> None:
    run_id = _ready_run(session, argument)
    if run_id is not None:
        session.outbox.say(outcome(session.app.discard_run(run_id)))


def _ready_run(session: AcpSession, argument: str) -> str | None:
    """The ready run the argument names (default: the newest); None, said, when there is none."""
    ready = ready_runs(session.app.history())
    run_id = argument.split()[0] if argument else (ready[0] if ready else None)
    if run_id is None:
        session.outbox.post(render.message("No isolated run is ready in this folder."))
        return None
    if run_id not in ready:
        shown = ", ".join(ready) or "none"
        session.outbox.post(render.message(f"No isolated run {run_id!r} is ready: ready now: {shown}."))
        return None
    return run_id


_RUNNERS: dict[str, Callable[[AcpSession, str], Awaitable[None]]] = {
    "undo": _undo,
    "diff": _diff,
    "test": _test,
    "context": _context,
    "budget": _budget,
    "apply": _apply,
    "discard": _discard,
}
