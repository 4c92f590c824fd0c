"""One run of a shell command (the user's test command) and the problems found in it.

Protocol-free: the LSP layer turns findings into diagnostics, the CLI prints them, results.py
turns a CommandRun into the seeds' TaskResult at the boundary.
"""

from __future__ import annotations

from enum import StrEnum

from pydantic import BaseModel, ConfigDict, Field

from .envelope import TaskError


class Severity(StrEnum):
    ERROR = "error"
    WARNING = "warning"
    INFORMATION = "information"
    HINT = "hint"


class Finding(BaseModel):
    """One problem found in a file (a failing test, a compiler error, the analysis' advice).

    Protocol-free: the LSP layer turns findings into diagnostics, the CLI prints them.
    `line` and `column` are 1-based as tools print them; 0 means "the whole file"."""

    path: str
    line: int = Field(default=0, ge=0)
    column: int = Field(default=0, ge=0)
    message: str
    severity: Severity = Severity.ERROR
    source: str = "tests"  # the tool that said it: pytest, ruff, mypy, tsc, gcc, analysis, …


class CommandRun(BaseModel):
    """One run of a shell command (the user's test command): what happened and the output as
    kept (long output keeps its head and tail). `error` is set when the command could not run
    (bad or missing command, cannot start) or was killed at its timeout (`timed_out`, no exit
    code); a non-zero exit is not an error: the analysis needs its output. `findings` are the
    failures it printed on file:line, when the caller asked for them. `ended_processes` are
    the processes ended with the run ("PID COMMAND"): what the command left running when it
    exited, or all of it at the timeout."""

    model_config = ConfigDict(frozen=True)

    command: str
    exit_code: int | None = None
    duration_s: float = 0.0
    stdout: str = ""
    stderr: str = ""
    timed_out: bool = False
    findings: tuple[Finding, ...] = ()
    ended_processes: tuple[str, ...] = ()
    error: TaskError | None = None

    @property
    def ran(self) -> bool:
        """The command started (it finished, or was killed at the timeout)."""
        return self.error is None or self.timed_out

    @property
    def passed(self) -> bool:
        return self.error is None and self.exit_code == 0
