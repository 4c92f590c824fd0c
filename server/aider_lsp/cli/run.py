"""`aider-lsp run`: the coding workflow in a terminal, without an editor.

Why: it is the same orchestrator the editor drives, so a user sees what the project does (and a
script can use it) with one command. Progress goes to stderr (a live line on a terminal: phase,
iteration, elapsed time, tokens and cost so far); the result, the diff and the analysis go to
stdout, or the result as JSON with `--json`. Exit codes: 0 SUCCESS, 1 FAILURE, 2 a usage or
configuration error, 130 cancelled (Ctrl-C: the LLM call, Aider and the test processes are
stopped; `aider-lsp undo` restores the files). An isolated run (`--isolated`, or the `isolation`
setting) works in a worktree of its own: the report ends with its id and the commands that apply,
discard or keep it (runs.py); Ctrl-C removes its worktree.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import signal
import sys
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn, TextIO

from ..config.settings import Settings, SettingsError, env_var_for, load_settings

if TYPE_CHECKING:
    from ..app import Application
    from ..models import (
        AttemptGroup,
        Finding,
        IsolatedRun,
        WorkflowEvent,
        WorkflowIteration,
        WorkflowRequest,
        WorkflowResult,
        WorkflowRun,
        WorkflowUsage,
    )
    from ..preflight import EarlyAider

EXIT_SUCCESS, EXIT_FAILURE, EXIT_USAGE, EXIT_CANCELLED = 0, 1, 2, 130
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)  # Ctrl-C, and a terminal or supervisor stopping us
CANCELLED_BEFORE_START = "cancelled before the run started; nothing was changed"
TICK_SECONDS = 0.5


def configuration_problem(settings: Settings, workspace: Path) -> str | None:
    """Why a run cannot start (the message names the setting to fill), or None."""
    from .. import preflight
    from ..config import aider_env

    if not workspace.is_dir():
        return f"the workspace is not a directory: {workspace}"
    config = preflight.model_config(settings)
    if config.model_id is None:
        return config.problem or f"no model: set {env_var_for('model')} (aiderLsp.model)"
    if config.base_url is None and config.problem:
        return config.problem
    if not settings.aider_model:
        return f"no Aider model: set {env_var_for('aider_model')} (aiderLsp.aiderModel), e.g. openai/gpt-4.1"
    if not settings.aider_server.command and not aider_env.is_ready():
        return f"the Aider environment is missing ({aider_env.describe()}): run `aider-lsp setup-aider`"
    return None


class ProgressDisplay:
    """The live status on stderr: one rewritten line on a terminal, one line per phase otherwise."""

    def __init__(self, stream: TextIO, usage: Callable[[], WorkflowUsage]) -> None:
        self.stream = stream
        self.usage = usage  # what the run spent so far
        self.live = stream.isatty()
        self.started = time.monotonic()
        self.phase = "Starting"

    def status(self) -> str:
        """`[00:12.5] Iteration 1/3: running tests · 1500 tokens · $0.0100 (planning/analysis:
        300 tokens · $0.0010; Aider: 1200 tokens · $0.0090)`: both spends, apart and together."""
        elapsed = time.monotonic() - self.started
        clock = f"[{int(elapsed) // 60:02d}:{elapsed % 60:04.1f}]"
        return f"{clock} {self.phase} · {self.usage().describe()}"

    def on_event(self, event: WorkflowEvent) -> None:
        """A run's step: its progress is the status line's phase (the spend is shown live)."""
        from ..models import WorkflowProgress  # loaded with the Application

        if isinstance(event, WorkflowProgress):
            self.phase = event.phase
            self.render(final=not self.live)

    def on_findings(self, findings: list[Finding]) -> None:
        located = [f for f in findings if f.source != "analysis"]
        if not located:
            return
        self.clear()
        for finding in located[:10]:
            where = f"{finding.path}:{finding.line}" if finding.line else finding.path
            print(f"    {where}: {finding.message}", file=self.stream)
        if len(located) > 10:
            print(f"    … and {len(located) - 10} more", file=self.stream)
        self.render()

    def render(self, final: bool = False) -> None:
        if self.live:
            self.stream.write("\r\x1b[K" + self.status())
            self.stream.flush()
        elif final:
            print(self.status(), file=self.stream, flush=True)

    def clear(self) -> None:
        if self.live:
            self.stream.write("\r\x1b[K")
            self.stream.flush()

    async def tick(self) -> None:
        """Keep the clock and the token count moving while a step runs."""
        while self.live:
            await asyncio.sleep(TICK_SECONDS)
            self.render()


def run_workflow_command(
    workspace: Path,
    request_fields: dict[str, Any],
    *,
    as_json: bool = False,
    settings: Settings | None = None,
    debug: bool = False,
) -> int:
    """Check the configuration, run the workflow (`request_fields`: a WorkflowRequest's fields),
    print the result; returns the exit code. `debug` (`--debug`) logs the LLM layer's prompts,
    tools and failures whatever the `debug` setting says."""
    try:
        settings = settings or load_settings()
    except SettingsError as exc:
        print(f"aider-lsp run: {exc}", file=sys.stderr)
        return EXIT_USAGE
    workspace = workspace.expanduser().resolve()
    runner = asyncio.Runner()
    try:
        code = runner.run(_checked_run(workspace, settings, request_fields, as_json, debug))
        if code == EXIT_CANCELLED:
            _exit_at_once(code)
        return code
    finally:
        runner.close()


def _exit_at_once(code: int) -> NoReturn:
    """Exit after a cancel, every child process already stopped, without joining the worker
    threads still busy (an import under way, the index's pass: up to seconds, which a normal
    exit waits for): the user pressed Ctrl-C and waits for the prompt."""
    logging.shutdown()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


async def _checked_run(
    workspace: Path, settings: Settings, request_fields: dict[str, Any], as_json: bool, debug: bool
) -> int:
    """Aider's server spawned first, then the checks: its start (seconds) overlaps the
    imports the checks need (the models, the planning model's configuration: most of a
    second); a run the checks refuse stops it again. A Ctrl-C before the run has started
    (Aider's spawn, the checks) ends it as cancelled too; once it has, the run's handler takes
    over (a signal is handled at the loop's next turn, by the handler set then)."""
    from ..preflight import spawn_aider

    loop = asyncio.get_running_loop()
    this = asyncio.current_task()
    assert this is not None
    for signum in STOP_SIGNALS:
        loop.add_signal_handler(signum, this.cancel)
    early: EarlyAider | None = None
    try:
        if workspace.is_dir() and not _isolated(settings, request_fields):
            early = await spawn_aider(settings, workspace)
        checked = _check(workspace, settings, request_fields)
        if isinstance(checked, int):
            _discard(early)
            return checked
        return await _run(workspace, settings, checked, as_json, debug, early)
    except asyncio.CancelledError:  # before the run started: nothing was changed
        _discard(early)
        print(f"aider-lsp run: {CANCELLED_BEFORE_START}", file=sys.stderr)
        return EXIT_CANCELLED
    finally:
        for signum in STOP_SIGNALS:
            loop.remove_signal_handler(signum)


def _isolated(settings: Settings, request: Mapping[str, Any]) -> bool:
    """Whether the run works in a worktree (Settings.isolation_for; several attempts always
    do): then Aider's server is the tree's own, started by the run, and none is spawned for the
    user's folder (it would only compete with the tree's for the CPU)."""
    several = (request.get("attempts") or settings.attempts) > 1
    return several or settings.isolation_for(request.get("isolation")) == "worktree"


def _ignore() -> None:
    """A stop signal while the run closes: it is ending already."""


def _discard(early: EarlyAider | None) -> None:
    """Stop Aider's server spawned ahead of a run that does not start."""
    if early is not None:
        from ..preflight import discard_aider

        discard_aider(early)


def _check(workspace: Path, settings: Settings, request_fields: dict[str, Any]) -> WorkflowRequest | int:
    """The request, or EXIT_USAGE once the problem is printed."""
    from ..models import WorkflowRequest

    try:
        request = WorkflowRequest.model_validate(request_fields)
    except ValueError as exc:  # pydantic's ValidationError
        print(f"aider-lsp run: {_first_error(exc)}", file=sys.stderr)
        return EXIT_USAGE
    problem = configuration_problem(settings, workspace)
    if problem:
        print(f"aider-lsp run: {problem}", file=sys.stderr)
        return EXIT_USAGE
    return request


async def _with_tests(app: Application, request: WorkflowRequest) -> WorkflowRequest | int:
    """The request with the test command the Application chooses, or EXIT_USAGE once printed."""
    from ..preflight import no_suite_message

    tests = await asyncio.to_thread(app.test_command_choice, request.test_command)
    if tests is None:
        print(f'aider-lsp run: {no_suite_message()} (--test "…")', file=sys.stderr)
        return EXIT_USAGE
    print(f"aider-lsp run: tests: {tests.describe()}", file=sys.stderr)
    return request.model_copy(update={"test_command": tests.command})


async def _run(
    workspace: Path,
    settings: Settings,
    request: WorkflowRequest,
    as_json: bool,
    debug: bool,
    early: EarlyAider | None,
) -> int:
    from ..app import Application
    from ..models import RequestContext

    app = Application.for_one_run(workspace, settings)
    checked = await _with_tests(app, request)
    if isinstance(checked, int):
        _discard(early)
        await app.aclose()
        return checked
    request = checked
    isolated = _isolated(settings, request.model_dump())
    # an isolated run starts Aider in its tree itself: nothing to warm up in the user's folder
    starting = [] if isolated else [asyncio.create_task(app.warm_up(early, aider_first=True))]
    if debug:
        app.set_debug_mode(True)
    start = app.spent()
    display = ProgressDisplay(sys.stderr, lambda: app.spent().since(start))
    ctx = RequestContext(report_event=display.on_event, report_findings=display.on_findings)
    run = asyncio.create_task(app.run_workflow(request, ctx))
    ticker = asyncio.create_task(display.tick())
    loop = asyncio.get_running_loop()
    stop = _cancel_once(loop, run) if isolated else run.cancel
    for signum in STOP_SIGNALS:
        loop.add_signal_handler(signum, stop)
    try:
        result = await run
    except asyncio.CancelledError:
        # the user is waiting for the prompt: Aider's server ends now, not after its grace periods
        app.kill_children()
        display.clear()
        print(f"aider-lsp run: {_cancelled_message(workspace, isolated)}", file=sys.stderr)
        return EXIT_CANCELLED
    finally:
        for signum in STOP_SIGNALS:  # a second Ctrl-C while closing (well under a second) waits
            loop.add_signal_handler(signum, _ignore)
        for task in (ticker, *starting):
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        await app.aclose()
    display.clear()
    if as_json:
        from ..results import workflow_run_result

        print(json.dumps(workflow_run_result(result).to_wire(), indent=2))
    else:
        print_report(result, workspace, sys.stdout)
    return EXIT_SUCCESS if result.ok else EXIT_FAILURE


def _cancel_once(loop: asyncio.AbstractEventLoop, run: asyncio.Task[WorkflowRun]) -> Callable[[], None]:
    """An isolated run's stop signal: the first cancels the run, the next ones wait. Why: the
    run removes its worktree while it handles the cancel, and a second cancel would stop that
    removal half-way (the tree left behind until the next start cleans it)."""

    def cancel() -> None:
        run.cancel()
        for signum in STOP_SIGNALS:
            loop.add_signal_handler(signum, _ignore)

    return cancel


def _cancelled_message(workspace: Path, isolated: bool) -> str:
    if isolated:
        return (
            "cancelled; the LLM call, Aider and the tests were stopped and the run's worktree "
            "removed. Your files were not touched."
        )
    return (
        "cancelled; the LLM call, Aider and the tests were stopped. "
        f"`aider-lsp undo --workspace {workspace}` restores the files the run changed."
    )


def print_report(result: WorkflowRun, workspace: Path, out: TextIO) -> None:
    """The run for a human: outcome, plan, each iteration, the diff, how to undo."""
    run = result.outcome
    status = run.status.value if run else ("SUCCESS" if result.ok else "FAILED")
    reason = run.reason if run else (result.refused.reason if result.refused else None)
    said = f" ({reason.value})" if reason else ""
    print(f"\n{status}{said}: {result.message}", file=out)
    if run is not None:
        _print_run(run, out)
    if result.changes.diff:
        print(f"\nThe run's changes:\n{result.changes.diff}", file=out)
    if result.changes.checkpoint_id:
        print(f"Undo them with: aider-lsp undo --workspace {workspace}", file=out)
        if run is not None and run.judge is not None and run.judge.test_files:
            tests = " ".join(run.judge.test_files)
            command = f"aider-lsp undo --workspace {workspace} --files {tests}"
            print(f"Take back only its changes to the tests: {command}", file=out)
    if result.isolated is not None:
        _print_isolated(result.isolated, workspace, out)
    if result.group is not None:
        _print_group(result.group, workspace, out)


def _print_group(group: AttemptGroup, workspace: Path, out: TextIO) -> None:
    """The report's end for several attempts: each ready one's id, and how to take the winner."""
    where = f"--workspace {workspace}"
    for attempt in group.attempts:
        if attempt.state.value == "ready":
            print(f"  attempt {attempt.number}: aider-lsp apply {attempt.run_id} {where}", file=out)
    if group.winner is not None:
        print("\nApply the winner (its siblings are discarded with it):", file=out)
        print(f"  aider-lsp apply {group.group_id} {where}", file=out)


def _print_isolated(isolated: IsolatedRun, workspace: Path, out: TextIO) -> None:
    """The report's end for an isolated run: its id, and how to take its change (or that there
    is none)."""
    from ..models import RunState

    run_id = isolated.run_id
    if isolated.state is not RunState.READY:
        print(f"\nRun {run_id} changed nothing; its worktree is removed.", file=out)
        return
    print(f"\nRun {run_id} is ready in its worktree; your files are untouched.", file=out)
    where = f"--workspace {workspace}"
    print(f"  apply it:   aider-lsp apply {run_id} {where}", file=out)
    print(f"  discard it: aider-lsp discard {run_id} {where}", file=out)
    print(f"  keep it as a branch: aider-lsp keep {run_id} {where}", file=out)


def _print_run(run: WorkflowResult, out: TextIO) -> None:
    if run.plan_problem is not None:
        print(f"\nNo plan was made: {run.plan_problem}", file=out)
    if run.plan is not None:
        files = ", ".join(run.plan.files) or "(chosen by Aider)"
        title = "Plan (implied by the first edit, not the planner's)" if run.plan.implied else "Plan"
        print(f"\n{title}: {run.plan.instructions}\n  files: {files}", file=out)
    for item in run.iterations:
        _print_iteration(item, out)
    print(f"\nSpent: {run.usage.describe()}", file=out)


def _print_iteration(item: WorkflowIteration, out: TextIO) -> None:
    from ..models import SuiteScope

    print(f"\nIteration {item.iteration}: {item.prompt}", file=out)
    edit = item.aider
    if edit is not None and edit.error is not None:
        print(f"  Aider: {edit.error.message}", file=out)
    else:
        changed = edit.changed_files if edit else []
        print(f"  Aider changed: {', '.join(changed) or 'nothing'}", file=out)
    for suite in item.test_runs:
        what = {
            SuiteScope.FAILING: f"{len(suite.tests)} failing",
            SuiteScope.REST: f"rest of the suite (without {len(suite.tests)})",
        }.get(suite.scope, "whole suite")
        why = f"; {suite.why}" if suite.why else ""
        print(f"  tests ({what}{why}): exit code {suite.exit_code} ({suite.command})", file=out)
    for finding in item.findings[:10]:
        where = f"{finding.path}:{finding.line}" if finding.line else finding.path
        print(f"    {where}: {finding.message}", file=out)
    if item.judge is not None:
        print(f"  not a pass: {item.judge.message}", file=out)
    if item.analysis is not None:
        print(f"  analysis: {item.analysis.verdict.value}: {item.analysis.message}", file=out)


def _first_error(exc: ValueError) -> str:
    errors = getattr(exc, "errors", None)
    if callable(errors):
        first = errors()[0]
        where = ".".join(str(part) for part in first.get("loc", ()))
        return f"{where}: {first.get('msg')}" if where else str(first.get("msg"))
    return str(exc)
