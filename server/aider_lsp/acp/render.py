"""The Application's typed answers as ACP `session/update`s: Aider's reply as message
chunks, each changed file as an `edit` tool call with `diff` content, each test run as an
`execute` tool call with its output, a run's progress as a `plan` (the full list each time),
and the spend as `usage_update`.

Only models are built here; turns.py sends them in order.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from acp.schema import (
    AgentMessageChunk,
    AgentPlanUpdate,
    AgentThoughtChunk,
    ContentToolCallContent,
    Cost,
    FileEditToolCallContent,
    ToolCallLocation,
    ToolCallProgress,
    ToolCallStart,
    Usage,
    UsageUpdate,
)

from acp import (
    plan_entry,
    start_tool_call,
    text_block,
    tool_content,
    tool_diff_content,
    update_agent_message_text,
    update_agent_thought_text,
    update_plan,
    update_tool_call,
)

from ..models import CommandRun, Finding, TestRunFinished, WorkflowUsage
from .diffs import FileDiff, split_diff, text_before
from .run_version import Sides

OUTPUT_LINES = 40  # a test run's output keeps its first and last lines
FAILING_PLACES = 10  # of a failed run's places, linked
Update = (
    AgentMessageChunk | AgentThoughtChunk | AgentPlanUpdate | ToolCallStart | ToolCallProgress | UsageUpdate
)


def message(text: str) -> AgentMessageChunk:
    return update_agent_message_text(text)


def thought(text: str) -> AgentThoughtChunk:
    """The agent's reasoning (a run's plan, its analysis): shown apart from the reply."""
    return update_agent_thought_text(text)


def edit_pending(call_id: str, rel: str, workspace: Path) -> ToolCallStart:
    """A file Aider is about to edit: the tool call opens, pending, on the file."""
    path = str(workspace / rel)
    return start_tool_call(
        call_id, f"Edit {rel}", kind="edit", status="pending", locations=[ToolCallLocation(path=path)]
    )


def run_edit_started(call_id: str, iteration: int, files: Sequence[str], workspace: Path) -> ToolCallStart:
    """A workflow's Aider edit opens, pending, on the files it was given (one call an edit)."""
    title = f"Iteration {iteration}: Aider edits {', '.join(files) or 'the files it picks'}"
    locations = [ToolCallLocation(path=str(workspace / rel)) for rel in files]
    return start_tool_call(call_id, title, kind="edit", status="pending", locations=locations or None)


def run_edit_finished(
    call_id: str,
    iteration: int,
    parts: dict[str, FileDiff],
    workspace: Path,
    *,
    failed: str | None = None,
    sides: dict[str, Sides | None] | None = None,
) -> ToolCallProgress:
    """The edit closed: completed with one `{path, oldText, newText}` a changed file and the
    changed places as locations, or failed with why. `sides`: an isolated run's texts before and
    after the edit (its files are not the user's: run_version.py), shown on the user's paths."""
    if failed is not None:
        content = [tool_content(text_block(failed))]
        return update_tool_call(
            call_id, title=f"Iteration {iteration}: no edit", status="failed", content=content
        )
    changes = [
        _change(part, rel, workspace) if sides is None else sides_change(rel, workspace, sides.get(rel))
        for rel, part in parts.items()
    ]
    locations = [
        ToolCallLocation(path=str(workspace / rel), line=_first_changed_line(part))
        for rel, part in parts.items()
    ]
    title = f"Iteration {iteration}: Aider changed {', '.join(parts)}"
    return update_tool_call(call_id, title=title, status="completed", content=changes, locations=locations)


def update_failed(call_id: str, why: str) -> ToolCallProgress:
    """A tool call closed as failed, saying why (a cancelled run)."""
    return update_tool_call(call_id, status="failed", content=[tool_content(text_block(why))])


def edit_done(
    call_id: str, part: FileDiff | None, rel: str, workspace: Path, *, failed: str | None = None
) -> ToolCallProgress:
    """The file's tool call closed: completed with `{path, oldText, newText}` when it changed,
    completed as unchanged when it did not, failed with why."""
    path = workspace / rel
    location = [ToolCallLocation(path=str(path), line=_first_changed_line(part))]
    if failed is not None:
        content = [tool_content(text_block(failed))]
        return update_tool_call(call_id, status="failed", content=content, locations=location)
    if (
        part is None
    ):  # no location left: a client that names a call by it (CodeCompanion) names it by its title
        return update_tool_call(call_id, title=f"{rel} unchanged", status="completed", locations=[])
    return update_tool_call(
        call_id, status="completed", content=[_change(part, rel, workspace)], locations=location
    )


def _change(part: FileDiff, rel: str, workspace: Path) -> FileEditToolCallContent | ContentToolCallContent:
    """A changed file's `{path, oldText, newText}` (the text before rebuilt from the file now
    and its part of the diff), or why it cannot be shown."""
    path = workspace / rel
    try:
        now = path.read_text(encoding="utf-8") if not part.deleted else ""
    except (OSError, UnicodeDecodeError) as exc:
        return tool_content(text_block(f"{rel} changed but cannot be read now: {exc}"))
    return tool_diff_content(str(path), now, text_before(part, now))


def sides_change(
    rel: str, workspace: Path, sides: Sides | None
) -> FileEditToolCallContent | ContentToolCallContent:
    """A file of an isolated run as `{path, oldText, newText}` on the user's path, or why its
    text cannot be shown (the user changed the file since the run started)."""
    if sides is None:
        return tool_content(text_block(f"{rel} changed in the run; you changed it since the run started"))
    before, after = sides
    return tool_diff_content(str(workspace / rel), after, before)


def _first_changed_line(part: FileDiff | None) -> int | None:
    """Where the client should jump: the first hunk's line (0-based)."""
    if part is None or not part.hunks:
        return None
    return max(part.hunks[0].new_start - 1, 0)


def file_parts(diff: str) -> dict[str, FileDiff]:
    """An edit's or a run's diff by file."""
    return {part.path: part for part in split_diff(diff)}


def setup_started(call_id: str) -> ToolCallStart:
    """Aider's environment is being made (the first prompt that needs it)."""
    title = "Setting up Aider (first use: a few minutes, once)"
    return start_tool_call(
        call_id, title, kind="execute", status="in_progress", raw_input={"command": "aider-lsp setup-aider"}
    )


def setup_progress(call_id: str, line: str, elapsed: float) -> ToolCallProgress:
    """The set-up's latest line and how long it has taken so far."""
    return update_tool_call(call_id, content=[tool_content(text_block(f"{elapsed:.0f} s: {line}"))])


def setup_done(call_id: str, elapsed: float, failed: str | None = None) -> ToolCallProgress:
    """The set-up closed: ready, or why not."""
    text = failed or f"Aider is set up ({elapsed:.0f} s)."
    return update_tool_call(
        call_id, status="failed" if failed else "completed", content=[tool_content(text_block(text))]
    )


def test_run_started(call_id: str, command: str, why: str = "", which: str = "") -> ToolCallStart:
    """A test run starts: the command is the title, `which` run of the loop after it ("before
    the first edit", "iteration 2": a run's two runs of one command read apart in a client that
    shows titles alone); `why` its content."""
    content = [tool_content(text_block(why))] if why else None
    return start_tool_call(
        call_id,
        f"{command} ({which})" if which else command,
        kind="execute",
        status="in_progress",
        content=content,
        raw_input={"command": command},
    )


def test_run_closed(
    call_id: str, run: TestRunFinished | CommandRun, workspace: Path, why: str = ""
) -> ToolCallProgress:
    """A test run closed as it ended (a workflow's event, or `/test`'s run): passed, failed
    with its exit code, killed at the timeout or not run; the output's head and tail; its
    failures as links to file:line. Not as the call's `locations`: clients that prefer them
    title the call by its first one, and a test run is titled by its command."""
    output = "\n".join(part for part in (run.stdout, run.stderr) if part.strip())
    stopped = run.stopped if isinstance(run, TestRunFinished) else None
    said = f"{why}: {_test_outcome(run)}" if why else _test_outcome(run)
    text = f"{said}\n```\n{_head_and_tail(output)}\n```" if output.strip() else said
    places = [_finding_link(finding, workspace) for finding in run.findings if finding.path]
    if places:
        text += "\n\nFailing at: " + ", ".join(dict.fromkeys(places[:FAILING_PLACES]))
    return update_tool_call(
        call_id,
        status="completed" if run.passed or stopped is not None else "failed",
        content=[tool_content(text_block(text))],
        raw_output={"exit_code": run.exit_code},
    )


def _test_outcome(run: TestRunFinished | CommandRun) -> str:
    """How the run ended, in a few words (a run we stopped on purpose is no failure)."""
    if isinstance(run, TestRunFinished):
        stopped, error = run.stopped, run.error
    else:  # a timeout is an error of the run: said as a timeout
        stopped, error = None, run.error.message if run.error is not None and not run.timed_out else None
    if stopped is not None:
        return f"stopped before it ended ({stopped})"
    if error is not None:
        return f"could not run: {error}"
    if run.timed_out:
        return "killed at the timeout"
    return "passed" if run.exit_code == 0 else f"failed (exit code {run.exit_code})"


def file_link(rel: str, workspace: Path) -> str:
    """A workspace file as a markdown link (its URI in angle brackets: a path may hold brackets)."""
    return f"[{rel}](<{(workspace / rel).as_uri()}>)"


def _finding_link(finding: Finding, workspace: Path) -> str:
    """A failure's place as a markdown link to the file (and its line: 0 is the whole file)."""
    uri = (workspace / finding.path).as_uri()
    if finding.line > 0:
        return f"[{finding.path}:{finding.line}]({uri}#L{finding.line})"
    return f"[{finding.path}]({uri})"


def _head_and_tail(output: str) -> str:
    lines = output.splitlines()
    if len(lines) <= 2 * OUTPUT_LINES:
        return output.rstrip()
    skipped = len(lines) - 2 * OUTPUT_LINES
    return "\n".join([*lines[:OUTPUT_LINES], f"… {skipped} lines …", *lines[-OUTPUT_LINES:]])


def plan(phases: Sequence[str], *, finished: bool) -> AgentPlanUpdate:
    """A run's steps so far, each one a plan entry: the last in progress until the run ends."""
    entries = []
    for index, phase in enumerate(phases):
        current = index == len(phases) - 1 and not finished
        entries.append(plan_entry(phase, priority="medium", status="in_progress" if current else "completed"))
    return update_plan(entries)


def usage_update(
    spent: WorkflowUsage, budget_tokens: int | None, *, run: WorkflowUsage | None = None
) -> UsageUpdate:
    """The session's spend: tokens of the planning/analysis model and Aider together, and the
    cost when either knows its price. ACP's `size` is a context window: this agent has no one
    window, so it is the budget's token cap when one is set, else the tokens used. After a
    Workflow turn, `_meta["aider-lsp"].run` says where that run's spend went: by kind of call
    (plan, Aider's edits, analysis; cached tokens apart) and in words."""
    total = spent.all
    used = max(total.total_tokens, 0)
    cost = None if total.cost is None else Cost(amount=round(total.cost, 6), currency="USD")
    meta = None
    if run is not None and run.calls.any:
        by_kind = {
            "plan": run.calls.plan.wire(),
            "edit": run.calls.edit.wire(),
            "analysis": run.calls.analysis.wire(),
        }
        meta = {"aider-lsp": {"run": {"calls": by_kind, "spent": run.describe()}}}
    return UsageUpdate(
        session_update="usage_update",
        used=used,
        size=max(budget_tokens or used, used),
        cost=cost,
        field_meta=meta,
    )


def turn_usage(spent: WorkflowUsage) -> Usage:
    """What one turn spent, for the prompt's answer (planning/analysis and Aider together).
    Tokens estimated for calls that reported nothing (one stopped while the model answered)
    count as input: they are mostly the prompt the model read."""
    input_tokens = max(spent.all.input_tokens + spent.all.estimated_tokens, 0)
    output_tokens = max(spent.all.output_tokens, 0)
    cached = max(spent.all.cached_tokens, 0)
    return Usage(
        input_tokens=input_tokens,
        output_tokens=output_tokens,
        total_tokens=input_tokens + output_tokens,
        cached_read_tokens=cached or None,
    )
