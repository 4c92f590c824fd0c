"""How a test run ended, in the one wording every screen uses (the LSP's answers, the CLI, the
ACP tool calls and replies, the run's own message): "the tests pass (3 passed in 0.02s)", "the
tests fail (2 failed)", "the tests fail (exit code 1)", "the tests timed out", "the tests were
stopped before they ended (…)", "the tests could not run: …". Callers put it in their sentence.
"""

from __future__ import annotations


def test_outcome(
    exit_code: int | None,
    *,
    command: str = "",
    timed_out: bool = False,
    summary: str = "",
    failed: int | None = None,
    error: str | None = None,
    stopped: str | None = None,
) -> str:
    """The clause for a test run's end: `summary` is the runner's last word, `failed` how many
    tests it counted as failing, `error` why it could not run, `stopped` why we stopped it;
    `command`, when given, is named first in the parentheses."""
    if stopped is not None:
        return f"the tests were stopped before they ended ({stopped})"
    if error is not None:
        return f"the tests could not run: {error}"
    if timed_out:
        return f"the tests timed out{_said(command, '')}"
    if exit_code == 0:
        return f"the tests pass{_said(command, summary)}"
    detail = f"{failed} failed" if failed else f"exit code {exit_code}"
    return f"the tests fail{_said(command, detail)}"


def _said(command: str, detail: str) -> str:
    parts = [f"`{command}`" if command else "", detail]
    inside = ": ".join(part for part in parts if part)
    return f" ({inside})" if inside else ""


def capitalised(clause: str) -> str:
    """A clause as a sentence's start."""
    return clause[:1].upper() + clause[1:]
