"""How a test run ended, in the one wording every screen uses (the LSP's answers, the CLI, the
ACP tool calls and replies, the run's own message): "the tests pass (3 passed in 0.02s)", "the
tests fail (2 failed)", "the tests fail (exit code 1)", "the tests timed out", "the tests were
stopped before they ended (…)", "the tests could not run: …". Callers put it in their sentence.
"""

from __future__ import annotations


def test_outcome(
    exit_code: int | None,
    *,
    timed_out: bool = False,
    summary: str = "",
    failed: int | None = None,
    error: str | None = None,
    stopped: str | None = None,
) -> str:
    """The clause for a test run's end: `summary` is the runner's last word, `failed` how many
    tests it counted as failing, `error` why it could not run, `stopped` why we stopped it."""
    if stopped is not None:
        return f"the tests were stopped before they ended ({stopped})"
    if error is not None:
        return f"the tests could not run: {error}"
    if timed_out:
        return "the tests timed out"
    if exit_code == 0:
        return f"the tests pass ({summary})" if summary else "the tests pass"
    if failed:
        return f"the tests fail ({failed} failed)"
    return f"the tests fail (exit code {exit_code})"


def capitalised(clause: str) -> str:
    """A clause as a sentence's start."""
    return clause[:1].upper() + clause[1:]
