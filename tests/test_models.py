"""The data models: the validators the seeds imply and the one FAILED shape."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from aider_lsp.models import (
    AiderSpend,
    AiderUsage,
    Budget,
    CombinedAnalysisResult,
    ContextGenerationInput,
    DevelopmentPlan,
    ErrorReason,
    MatchItem,
    TaskResult,
    TaskStatus,
    ToolSpec,
    UsageTotal,
    WorkflowUsage,
    failed_result,
)


def test_failed_result_has_the_seed_error_shape() -> None:
    result = failed_result(ErrorReason.INPUT_VALIDATION_FAILURE, "missing prompt")
    assert result.status is TaskStatus.FAILED
    assert result.notes["error"] == {
        "type": "TASK_FAILURE",
        "reason": "input_validation_failure",
        "message": "missing prompt",
    }
    assert result.error is not None and result.error.reason is ErrorReason.INPUT_VALIDATION_FAILURE
    assert not result.ok


def test_task_result_wire_format_uses_parsed_content() -> None:
    wire = TaskResult(status=TaskStatus.COMPLETE, content="x", parsedContent={"a": 1}).to_wire()
    assert wire == {"status": "COMPLETE", "content": "x", "notes": {}, "parsedContent": {"a": 1}}


def test_retry_requires_next_prompt() -> None:
    with pytest.raises(ValidationError, match="next_prompt"):
        CombinedAnalysisResult(verdict="RETRY", message="tests fail")
    with pytest.raises(ValidationError, match="next_prompt"):
        CombinedAnalysisResult(verdict="RETRY", message="tests fail", next_prompt="  ")
    retry = CombinedAnalysisResult(verdict="RETRY", message="m", next_prompt="fix add()")
    assert retry.next_files is None  # keeps the current files
    assert CombinedAnalysisResult(verdict="SUCCESS", message="done").next_prompt is None
    with pytest.raises(ValidationError):
        CombinedAnalysisResult(verdict="MAYBE", message="m")


def test_relevance_score_is_bounded() -> None:
    MatchItem(id="a", content="c", relevance_score=1.0)
    for bad in (-0.1, 1.01):
        with pytest.raises(ValidationError):
            MatchItem(id="a", content="c", relevance_score=bad)


def test_plan_files_are_relative() -> None:
    assert DevelopmentPlan(instructions="do", files=["a.py"]).files == ["a.py"]
    with pytest.raises(ValidationError, match="relative"):
        DevelopmentPlan(instructions="do", files=["/etc/passwd"])
    with pytest.raises(ValidationError):
        DevelopmentPlan(instructions="", files=[])


def test_context_input_effective_query_falls_back() -> None:
    assert ContextGenerationInput(query=" q ").effective_query == "q"
    assert ContextGenerationInput(template_description="d").effective_query == "d"
    assert ContextGenerationInput(inputs={"goal": "fix"}).effective_query == "fix"


def test_tool_spec_provider_alias() -> None:
    assert ToolSpec(name="aider:automatic", description="d").provider_name == "aider_automatic"


def test_aiders_spend_adds_up_and_unknown_is_never_zero() -> None:
    spend = AiderSpend()
    assert spend.reported and spend.describe() == "Aider: 0 tokens · cost n/a"
    unreported = spend.plus(None)  # a server that says nothing (the public aider-mcp-server)
    assert not unreported.reported and unreported.describe() == "Aider: not reported"
    priced = spend.plus(AiderUsage(prompt_tokens=100, completion_tokens=20, cost=0.01))
    both = priced.plus(AiderUsage(prompt_tokens=50, completion_tokens=5))  # no price for this one
    assert (both.total_tokens, both.cost, both.edits) == (175, 0.01, 2)
    assert both.since(priced).total_tokens == 55 and both.describe() == "Aider: 175 tokens · $0.0100"


def test_a_runs_usage_shows_both_spends_apart_and_together() -> None:
    start = WorkflowUsage(total_tokens=10, requests=1, cost=0.001)
    aider = AiderSpend().plus(AiderUsage(prompt_tokens=1000, completion_tokens=200, cost=None))
    now = WorkflowUsage(total_tokens=310, requests=3, cost=0.003, aider=aider)
    run = now.since(start)
    assert (run.total_tokens, run.requests, run.aider.total_tokens) == (300, 2, 1200)
    assert run.all.total_tokens == 1500 and run.all.cost == pytest.approx(0.002)
    wire = run.model_dump(mode="json")
    assert wire["all"] == {"total_tokens": 1500, "cost": pytest.approx(0.002)}
    assert wire["aider"]["edits"] == 1 and wire["input_tokens"] == 0  # the old keys stay
    assert run.describe() == (
        "1500 tokens · $0.0020 (planning/analysis: 300 tokens · $0.0020; Aider: 1200 tokens · cost n/a)"
    )
    assert WorkflowUsage.model_validate(wire) == run  # read back (the CLI's report)


def test_the_budget_says_which_cap_is_spent_and_which_setting_to_raise() -> None:
    tokens = Budget(max_tokens=500)
    assert tokens.exceeded(UsageTotal(total_tokens=499, cost=9.0)) is None  # no cost cap
    assert tokens.remaining_tokens(UsageTotal(total_tokens=499)) == 1
    why = tokens.exceeded(UsageTotal(total_tokens=510))
    assert why is not None and "budget of 500 is used up (510 used)" in why
    assert "raise aiderLsp.budget.maxTokens" in why

    cost = Budget(max_cost=0.5)
    assert cost.exceeded(UsageTotal(total_tokens=10**6, cost=None)) is None  # price unknown
    assert cost.remaining_tokens(UsageTotal()) is None
    why = cost.exceeded(UsageTotal(cost=0.5))
    assert why is not None and "raise aiderLsp.budget.maxCost" in why
    assert not Budget().capped and Budget(max_cost=0.5).capped
