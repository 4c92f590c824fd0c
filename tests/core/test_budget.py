"""The run's budget (budget.py): what counts as spent, which cap is used up, the setting to raise."""

from __future__ import annotations

from aider_lsp.config.settings import Settings
from aider_lsp.guards.budget import RunBudget, limit_reached
from aider_lsp.models import CallUsage, Spend, WorkflowUsage


class Session:
    """A session's spend that grows as calls are made (what `Application.spent` answers)."""

    def __init__(self, planning: int = 0, aider: int = 0, cost: float | None = None) -> None:
        self.usage = WorkflowUsage(
            planning=Spend(input_tokens=planning, cost=cost), aider=Spend(input_tokens=aider)
        )

    def spend(self, *, planning: int = 0, aider: int = 0, cost: float | None = None) -> None:
        self.usage = WorkflowUsage(
            planning=self.usage.planning.plus(CallUsage(input_tokens=planning, cost=cost)),
            aider=self.usage.aider.plus(CallUsage(input_tokens=aider)),
        )


def budget(session: Session, max_tokens: int | None = None, max_cost: float | None = None) -> RunBudget:
    return RunBudget(max_tokens, max_cost, lambda: session.usage, Settings().name)


def test_only_what_the_run_spent_counts_both_models_together() -> None:
    session = Session(planning=10_000, aider=10_000)  # earlier runs of the session
    tokens = budget(session, max_tokens=500)
    assert tokens.exceeded() is None and tokens.remaining_tokens() == 500
    session.spend(planning=200, aider=299)
    assert tokens.usage().planning.total_tokens == 200 and tokens.usage().aider.total_tokens == 299
    assert tokens.exceeded() is None and tokens.remaining_tokens() == 1
    session.spend(aider=11)
    why = tokens.exceeded()
    assert why is not None and "budget of 500 is used up (510 used)" in why
    assert "raise aiderLsp.budget.maxTokens" in why
    assert tokens.remaining_tokens() == 1  # at least one, however far over


def test_the_cost_cap_counts_a_known_price_only_and_names_its_setting() -> None:
    session = Session()
    cost = budget(session, max_cost=0.5)
    session.spend(planning=10**6)  # no price reported: unknown, not over
    assert cost.exceeded() is None and cost.remaining_tokens() is None
    session.spend(cost=0.5)
    why = cost.exceeded()
    assert why is not None and "raise aiderLsp.budget.maxCost" in why
    assert cost.capped and not budget(session).capped


def test_the_messages_name_the_setting_as_this_front_ends_user_sets_it() -> None:
    session = Session()
    names = Settings(names="environment").name
    over = RunBudget(1, None, lambda: session.usage, names)
    session.spend(planning=1)
    assert "raise AIDER_LSP_BUDGET__MAX_TOKENS" in (over.exceeded() or "")
    assert limit_reached("request_limit of 50", names) == (
        "usage limit reached: request_limit of 50 (AIDER_LSP_BUDGET caps a run)"
    )
