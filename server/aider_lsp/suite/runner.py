"""The workspace's test runs: the command chosen, run through the shell, its failures located.

Why a room of its own: what earlier runs tell is state the editor, the CLI and a workflow run
share (how long each command took: whether the suite may run before a first edit; the last
failing run: what "Fix with Aider" re-runs after its edit). The process itself is the shell's
(shell.py); the choice of command is choose.py's; the reading of the output is findings.py's.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from pathlib import Path

from ..config.settings import SettingsProvider
from ..models import CommandRun, DeclinedTestCommand, ErrorReason, RequestContext, TaskError
from ..models.suite_command import ChosenTestCommand
from ..processes.shell import CommandExecutor
from .choose import choose_test_command, confirm_test_command, no_suite_message
from .findings import parse_test_output
from .narrow import narrow


class TestRunner:
    """Runs the workspace's tests and remembers what the runs told."""

    __test__ = False  # not a pytest class

    def __init__(self, workspace: Path, shell: CommandExecutor, settings: SettingsProvider) -> None:
        self.workspace = workspace
        self.shell = shell
        self.settings = settings
        self._last_failing: CommandRun | None = None  # the last run that failed (re-run after a fix)
        self._seconds: dict[str, float] = {}  # each command's last run's wall time

    def choice(self, requested: str | None = None) -> ChosenTestCommand | None:
        """The command a run uses and why (choose.py: the requested one, the setting, the one
        confirmed for the workspace, the detected one; it reads files: call it off the loop)."""
        return choose_test_command(self.workspace, self.settings(), requested)

    async def pick(
        self, requested: str | None, ctx: RequestContext
    ) -> ChosenTestCommand | DeclinedTestCommand | None:
        """The command for a request (`choice`), a detected one confirmed with the user first
        (declined: the user chose to change it); None: no suite this server knows."""
        choice = await asyncio.to_thread(self.choice, requested)
        if choice is None:
            return None
        return await confirm_test_command(self.workspace, choice, ctx, self.settings().name("testCommand"))

    async def run(self, command: str | None = None, fallback_files: Sequence[str] = ()) -> CommandRun:
        """Run the chosen command; a failing run carries the failures it printed on file:line
        (`fallback_files`: where to put those that name no file)."""
        choice = await asyncio.to_thread(self.choice, command)
        if choice is None:
            error = TaskError(reason=ErrorReason.CONFIGURATION_ERROR, message=no_suite_message())
            return CommandRun(command="", error=error)
        settings = self.settings()
        started = time.monotonic()
        try:
            run = await self.shell.execute(
                choice.command,
                timeout=settings.timeouts.test,
                use_shell=settings.test_shell,
                timeout_setting=settings.name("timeouts.test"),
                command_setting=settings.name("testCommand"),
            )
        except asyncio.CancelledError:  # stopped before its end: it takes at least this long
            elapsed = time.monotonic() - started
            self._seconds[choice.command] = max(self._seconds.get(choice.command, 0.0), elapsed)
            raise
        self._remember(run)
        if not run.ran or run.exit_code == 0:
            return run
        findings = parse_test_output(
            run.stdout,
            run.stderr,
            self.workspace,
            exit_code=-1 if run.timed_out or run.exit_code is None else run.exit_code,
            fallback_files=list(fallback_files),
        )
        return run.model_copy(update={"findings": tuple(findings)})

    def seconds(self, command: str) -> float | None:
        """How long `command` took the last time it ran here (None: not yet); a run stopped
        before its end counts as the time it had run."""
        return self._seconds.get(command)

    async def rerun_failing(self) -> CommandRun | None:
        """The tests that failed in the last failing run, alone when its runner can be narrowed
        (narrow.py), else that whole command; None when no run has failed."""
        last = self._last_failing
        if last is None:
            return None
        narrowed = narrow(last.command, f"{last.stdout}\n{last.stderr}", shell=self.settings().test_shell)
        return await self.run(narrowed.command if narrowed else last.command)

    def _remember(self, run: CommandRun) -> None:
        """The last failing run (a pass of that same command forgets it), and how long each
        command took."""
        if run.ran and not run.timed_out:
            self._seconds[run.command] = run.duration_s
        if run.ran and not run.passed:
            self._last_failing = run
        elif run.passed and self._last_failing is not None and run.command == self._last_failing.command:
            self._last_failing = None
