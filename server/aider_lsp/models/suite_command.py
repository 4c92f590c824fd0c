"""The test command a run uses and where it came from (suite/choose.py decides it): a value the
suite, the workflow and the front ends share."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


class CommandSource(StrEnum):
    RUN = "given to the run"
    SETTING = "the testCommand setting"
    REMEMBERED = "confirmed for this workspace"
    DETECTED = "detected"


@dataclass(frozen=True)
class ChosenTestCommand:
    """The command (a string, as settings hold it: shlex-split unless testShell), where it came
    from, and for a detected or remembered one the rule that found it."""

    command: str
    source: CommandSource
    rule: str | None = None

    @property
    def needs_confirmation(self) -> bool:
        return self.source is CommandSource.DETECTED

    def describe(self) -> str:
        """`…` and why, for a message: "`.venv/bin/python -m pytest` (found: pytest configured in
        pyproject.toml)"."""
        if self.source is CommandSource.DETECTED:
            why = f"found: {self.rule}"
        elif self.source is CommandSource.REMEMBERED and self.rule:
            why = f"{self.source.value}; found: {self.rule}"
        else:
            why = self.source.value
        return f"`{self.command}` ({why})"
