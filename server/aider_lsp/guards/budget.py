"""The budget of a workflow run: its cap (aiderLsp.budget), what counts as spent against it,
and the words the user reads when it is used up.

Why one home: three places stop a run on its budget (the LLM layer before a call, the model
library during one, given what is left as the call's token limit, and the loop between steps).
They all ask the run's `RunBudget`, so the rule ("what the run spent since it started, the
planning/analysis model's and Aider's together, reaches the cap") and the message are the
same wherever a run is stopped.
"""

from __future__ import annotations

from collections.abc import Callable

from ..models import Spend, WorkflowUsage

# How a front end's user sets a setting (`Settings.name`): `budget.maxTokens` →
# `aiderLsp.budget.maxTokens` in an editor, `AIDER_LSP_BUDGET__MAX_TOKENS` in a terminal.
SettingName = Callable[[str], str]


class RunBudget:
    """One run's cap on tokens and/or cost, and what the run spent so far: the session's spend
    (`spent`) minus what it was when the budget was set. None caps nothing."""

    def __init__(
        self,
        max_tokens: int | None,
        max_cost: float | None,
        spent: Callable[[], WorkflowUsage],
        name: SettingName,
    ) -> None:
        self.max_tokens = max_tokens
        self.max_cost = max_cost
        self._spent = spent
        self._start = spent()
        self._name = name

    @property
    def capped(self) -> bool:
        return self.max_tokens is not None or self.max_cost is not None

    def usage(self) -> WorkflowUsage:
        """What the run spent since its budget was set, each model apart and together."""
        return self._spent().since(self._start)

    def spent(self) -> Spend:
        """What counts against the cap: both models together."""
        return self.usage().all

    def exceeded(self) -> str | None:
        """Why no further model call may run, naming the setting to raise; None while within."""
        spent = self.spent()
        if self.max_tokens is not None and spent.total_tokens >= self.max_tokens:
            return (
                f"the token budget of {self.max_tokens} is used up ({spent.total_tokens} used): raise "
                f"{self._name('budget.maxTokens')} (tokens per run, planning/analysis and Aider "
                "together), or give a smaller goal"
            )
        cost = spent.cost or 0.0
        if self.max_cost is not None and cost >= self.max_cost:
            return (
                f"the cost budget of {self.max_cost:g} is used up ({cost:.4f} used): raise "
                f"{self._name('budget.maxCost')} (cost per run, planning/analysis and Aider "
                "together), or give a smaller goal"
            )
        return None

    def remaining_tokens(self) -> int | None:
        """The tokens the next call may spend (its limit in the model library); None: no cap."""
        if self.max_tokens is None:
            return None
        return max(1, self.max_tokens - self.spent().total_tokens)


def limit_reached(library_said: str, name: SettingName) -> str:
    """A model call stopped by the model library's usage limit when the budget itself is not
    used up (the limit it was given, or one of the library's own)."""
    return f"usage limit reached: {library_said} ({name('budget')} caps a run)"
