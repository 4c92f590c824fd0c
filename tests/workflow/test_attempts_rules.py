"""Several attempts (isolation/attempts.py), decided without a process: what makes each attempt
differ, how `compare` ranks them, each attempt's share of the group's budget."""

from __future__ import annotations

from aider_lsp.config.settings import BudgetSettings
from aider_lsp.isolation.attempts import attempt_plans, budget_share, lines_changed, ranked
from aider_lsp.models import Attempt, RunState, WorkflowRequest
from aider_lsp_testing.fake_host import product_settings


def attempt(number: int, *, green: bool, lines: int, tokens: int) -> Attempt:
    return Attempt(
        run_id=f"r{number}",
        number=number,
        state=RunState.READY,
        green=green,
        lines_changed=lines,
        tokens=tokens,
    )


def test_attempts_take_the_models_in_turn_and_a_model_again_plans_first() -> None:
    request = WorkflowRequest(goal="g", attempts=4, aider_models=["a", "b"])
    plans = attempt_plans(request, product_settings())
    assert [(plan.aider_model, plan.planned) for plan in plans] == [
        ("a", False),
        ("b", False),
        ("a", True),
        ("b", True),
    ]
    alone = attempt_plans(WorkflowRequest(goal="g", attempts=3), product_settings())
    assert [(plan.aider_model, plan.planned) for plan in alone] == [
        (None, False),
        (None, True),
        (None, False),
    ]


def test_the_settings_give_the_count_and_the_models_a_request_does_not() -> None:
    settings = product_settings(attempts=2, attemptModels=["m"])
    assert [plan.aider_model for plan in attempt_plans(WorkflowRequest(goal="g"), settings)] == ["m", "m"]
    assert len(attempt_plans(WorkflowRequest(goal="g"), product_settings())) == 1  # the product's default


def test_compare_ranks_green_then_the_smaller_change_then_the_cheaper() -> None:
    red = attempt(1, green=False, lines=1, tokens=10)
    big = attempt(2, green=True, lines=9, tokens=10)
    small_dear = attempt(3, green=True, lines=2, tokens=900)
    small_cheap = attempt(4, green=True, lines=2, tokens=100)
    assert [a.number for a in ranked([red, big, small_dear, small_cheap])] == [4, 3, 2, 1]


def test_lines_changed_counts_the_diffs_lines_not_its_headers() -> None:
    diff = "--- a/x.py\n+++ b/x.py\n@@ -1,2 +1,2 @@\n-old\n+new\n context\n"
    assert lines_changed(diff) == 2


def test_each_attempt_gets_its_share_of_the_groups_budget() -> None:
    assert budget_share(BudgetSettings(max_tokens=9000, max_cost=0.75), 3) == BudgetSettings(
        max_tokens=3000, max_cost=0.25
    )
    assert budget_share(BudgetSettings(), 3) == BudgetSettings()
