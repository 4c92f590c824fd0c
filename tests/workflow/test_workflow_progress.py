"""A run's progress is a typed event (phase, percentage, what the run spent), worded once as
the sentence the LSP's `$/progress` shows; the front ends read the event, never the sentence."""

from __future__ import annotations

from pathlib import Path

import pytest

from aider_lsp.models import (
    PlanMade,
    RequestContext,
    Spend,
    Verdict,
    WorkflowEvent,
    WorkflowProgress,
    WorkflowStatus,
    WorkflowUsage,
)
from aider_lsp.workflow.orchestrator import CodingWorkflowOrchestrator
from aider_lsp_testing.fake_host import WITHOUT_TESTS_FIRST, FakeHost, analysis, green_run, red_run, writes

WRONG = "def multiply(a, b):\n    return a + b + 1\n"
FIXED = "def multiply(a, b):\n    return a * b\n"
pytestmark = [pytest.mark.timeout(10), pytest.mark.usefixtures("narrow_every_suite")]


def test_the_sentence_is_the_phase_then_the_spend_once_anything_was_spent() -> None:
    nothing = WorkflowProgress(phase="Iteration 1/3: Aider is editing", percentage=0)
    assert nothing.message == "Iteration 1/3: Aider is editing"
    spent = WorkflowUsage(planning=Spend(input_tokens=300, requests=1, cost=0.001))
    some = WorkflowProgress(phase="Iteration 2/3: running the whole suite", percentage=33, usage=spent)
    assert some.message == f"Iteration 2/3: running the whole suite · spent {spent.describe()}"


async def test_each_progress_event_carries_what_the_sentence_says(tmp_path: Path) -> None:
    (tmp_path / "calc.py").write_text("def multiply(a, b):\n    return a + b\n")
    host = FakeHost(tmp_path, WITHOUT_TESTS_FIRST, tokens_per_call=40)
    host.edits.extend([writes("calc.py", WRONG, tokens=100), writes("calc.py", FIXED, tokens=100)])
    host.test_runs.extend([red_run(), green_run()])
    host.analyses.append(analysis(Verdict.RETRY))
    events: list[WorkflowEvent] = []
    sentences: list[tuple[str, int | None]] = []
    ctx = RequestContext(
        report_event=events.append, report_progress=lambda message, pct: sentences.append((message, pct))
    )
    run = CodingWorkflowOrchestrator(host, "multiply multiplies", "", "pytest", 3, ["calc.py"])
    result = await run.run(ctx)
    assert result.status is WorkflowStatus.SUCCESS
    progress = [event for event in events if isinstance(event, WorkflowProgress)]
    assert [(event.message, event.percentage) for event in progress] == sentences
    assert progress[0].phase == "Iteration 1/3: Aider is editing" and progress[0].usage == WorkflowUsage()
    assert progress[1].phase == "Iteration 1/3: running the whole suite"
    assert progress[1].usage.aider.total_tokens == 100  # the first edit's, as it was spent
    assert progress[-1].phase == "Done: the goal is reached" and progress[-1].percentage == 100
    assert progress[-1].usage == result.usage
    assert not any(isinstance(event, PlanMade) for event in events)
