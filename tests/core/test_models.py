"""The data models: the validators the seeds imply and the one FAILED shape."""

from __future__ import annotations

import importlib
import inspect
import pkgutil
from pathlib import Path

import pytest
from pydantic import ValidationError

from aider_lsp import models
from aider_lsp.models import (
    CallKinds,
    CallUsage,
    CombinedAnalysisResult,
    ContextGenerationInput,
    DevelopmentPlan,
    EditSummary,
    ErrorReason,
    MatchItem,
    Spend,
    TaskResult,
    TaskStatus,
    ToolSpec,
    WorkflowRequest,
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


def test_one_calls_usage_reads_and_writes_each_wire() -> None:
    aider = CallUsage.model_validate({"prompt_tokens": 120, "completion_tokens": 30, "cost": None})
    assert (aider.input_tokens, aider.output_tokens, aider.total_tokens, aider.cost) == (120, 30, 150, None)
    assert aider.aider_wire() == {"prompt_tokens": 120, "completion_tokens": 30, "cost": None}
    planning = CallUsage(input_tokens=10, output_tokens=5, cost=0.5, requests=2, tool_calls=1)
    assert planning.llm_wire("openai:m") == {
        "model": "openai:m",
        "input_tokens": 10,
        "output_tokens": 5,
        "total_tokens": 15,
        "requests": 2,
        "tool_calls": 1,
        "estimated_tokens": 0,  # the tokens no answer reported, estimated (none here)
        "cached_tokens": 0,
        "cost": 0.5,
    }
    # the bundled server's extension: Aider's requests in one edit, its prompt tokens read from cache
    counted = CallUsage.model_validate(
        {"prompt_tokens": 900, "completion_tokens": 9, "requests": 3, "cached_tokens": 600}
    )
    assert counted.aider_wire() == {
        "prompt_tokens": 900,
        "completion_tokens": 9,
        "cost": None,
        "requests": 3,
        "cached_tokens": 600,
    }
    assert Spend().plus(counted).describe() == "909 tokens (600 of them cached) · cost n/a"
    with pytest.raises(ValidationError):
        CallUsage.model_validate({"prompt_tokens": -1})


def test_a_spend_adds_up_and_unknown_is_never_zero() -> None:
    spend = Spend()
    assert spend.reported and spend.describe() == "0 tokens · cost n/a"
    unreported = spend.plus(None)  # a server that says nothing (the public aider-mcp-server)
    assert not unreported.reported and unreported.describe() == "not reported"
    priced = spend.plus(CallUsage(input_tokens=100, output_tokens=20, cost=0.01))
    both = priced.plus(CallUsage(input_tokens=50, output_tokens=5))  # no price for this one
    assert (both.total_tokens, both.cost, both.calls) == (175, 0.01, 2)
    assert both.since(priced).total_tokens == 55 and both.describe() == "175 tokens · $0.0100"
    assert both.together(unreported).unreported == 1 and both.together(Spend()).cost == 0.01


def test_a_runs_usage_shows_both_spends_apart_and_together() -> None:
    start = WorkflowUsage(planning=Spend(input_tokens=10, requests=1, calls=1, cost=0.001))
    aider = Spend().plus(CallUsage(input_tokens=1000, output_tokens=200, cost=None))
    planning = Spend(input_tokens=250, output_tokens=60, requests=3, calls=3, cost=0.003)
    run = WorkflowUsage(planning=planning, aider=aider).since(start)
    assert (run.planning.total_tokens, run.planning.requests, run.aider.total_tokens) == (300, 2, 1200)
    assert run.all.total_tokens == 1500 and run.all.cost == pytest.approx(0.002)
    assert run.describe() == (
        "1500 tokens · $0.0020 (planning/analysis: 300 tokens · $0.0020; Aider: 1200 tokens · cost n/a)"
    )


def test_a_runs_usage_keeps_the_wire_clients_read() -> None:
    aider = Spend().plus(CallUsage(input_tokens=300, output_tokens=100)).plus(None)
    run = WorkflowUsage(planning=Spend(input_tokens=100, output_tokens=10, requests=1, calls=1), aider=aider)
    calls = CallKinds().plus("plan", CallUsage(input_tokens=100, output_tokens=10, requests=1))
    calls = calls.plus("edit", CallUsage(input_tokens=300, output_tokens=100, requests=2)).plus("edit", None)
    run = run.model_copy(update={"calls": calls})
    wire = run.model_dump(mode="json")
    nothing = dict.fromkeys(("input_tokens", "cached_tokens", "output_tokens", "estimated_tokens"), 0)
    assert wire == {
        "input_tokens": 100,
        "output_tokens": 10,
        "total_tokens": 110,
        "requests": 1,
        "estimated_tokens": 0,
        "cached_tokens": 0,
        "cost": None,
        "aider": {
            "prompt_tokens": 300,
            "completion_tokens": 100,
            "total_tokens": 400,
            "cost": None,
            "edits": 1,
            "unreported": 1,
            "requests": 0,
            "cached_tokens": 0,
        },
        "all": {"total_tokens": 510, "cached_tokens": 0, "cost": None},
        "calls": {
            "plan": {
                **nothing,
                "input_tokens": 100,
                "output_tokens": 10,
                "requests": 1,
                "calls": 1,
                "unreported": 0,
                "cost": None,
            },
            "edit": {
                **nothing,
                "input_tokens": 300,
                "output_tokens": 100,
                "requests": 2,
                "calls": 1,
                "unreported": 1,
                "cost": None,
            },
            "analysis": {**nothing, "requests": 0, "calls": 0, "unreported": 0, "cost": None},
        },
    }
    assert calls.describe() == (
        "plan: 1 call(s), 110 tokens · cost n/a; Aider: 2 edit(s), 2 request(s), 400 tokens · cost n/a"
    )
    assert WorkflowUsage.model_validate(wire).model_dump(mode="json") == wire  # read back (the CLI)
    assert WorkflowUsage.model_validate({}) == WorkflowUsage()


def test_an_edits_usage_is_written_under_the_aider_servers_names() -> None:
    usage = CallUsage(input_tokens=7, output_tokens=3, cost=0.25)
    summary = EditSummary(status=TaskStatus.COMPLETE, usage=usage)
    wire = summary.model_dump(mode="json")
    assert wire["usage"] == {"prompt_tokens": 7, "completion_tokens": 3, "cost": 0.25}  # no requests said
    assert EditSummary.model_validate(wire).usage == usage
    assert EditSummary(status=TaskStatus.FAILED).model_dump(mode="json")["usage"] is None


def test_every_public_model_is_importable_from_the_package() -> None:
    """`from aider_lsp.models import X` works for every model of every module (the package's
    `__all__` lists them), so importers need not know which module holds X."""
    for info in pkgutil.iter_modules(models.__path__):
        module = importlib.import_module(f"aider_lsp.models.{info.name}")
        defined = [
            name
            for name, value in vars(module).items()
            if not name.startswith("_")
            and getattr(value, "__module__", None) == module.__name__
            and (inspect.isclass(value) or inspect.isfunction(value))
        ]
        missing = [name for name in defined if name not in models.__all__]
        assert not missing, f"aider_lsp.models.{info.name} defines {missing}: add them to __all__"


def test_a_runs_images_are_existing_files_named_by_absolute_path(tmp_path: Path) -> None:
    picture = tmp_path / "mockup.png"
    picture.write_bytes(b"\x89PNG")
    assert WorkflowRequest(goal="match it", images=[str(picture)]).images == [str(picture)]
    for wrong in ("mockup.png", str(tmp_path / "missing.png")):
        with pytest.raises(ValidationError, match="images must name existing image files"):
            WorkflowRequest(goal="match it", images=[wrong])
