"""The analysis of an iteration (its edit and its test run), asked of the planning model and
judged by the tests: a SUCCESS over red tests is recorded as overruled and never ends a run.
The analysis of a red iteration runs beside the next edit; its advice reaches the edit after.

Why a class of its own: the analysis beside is a task the loop starts, waits for, or drops
when the tests pass (its verdict is moot then); this object holds it, the rule that the tests
overrule it, and what is recorded and shown of it when it answers, whenever that is.
"""

from __future__ import annotations

import asyncio

from ..models import AnalysisMade, CombinedAnalysisResult, Verdict
from .host import WorkflowHost
from .iteration import Ending, Iteration, step_failed, stop
from .prompts import analysis_request
from .records import RunIterations, analysis_findings, judge_findings, state
from .report import RunReport


class Analyses:
    """The analyses of one run; `latest` is the last one made."""

    def __init__(
        self, host: WorkflowHost, goal: str, context: str, report: RunReport, history: RunIterations
    ) -> None:
        self.host = host
        self.goal = goal
        self.context = context
        self.report = report
        self.history = history
        self.latest: CombinedAnalysisResult | None = None
        # the analysis of the iteration before, running beside this one's edit
        self._beside: asyncio.Task[CombinedAnalysisResult | Ending] | None = None

    @property
    def running(self) -> bool:
        """An analysis runs beside the edit (the progress says so)."""
        return self._beside is not None and not self._beside.done()

    async def ask(self, it: Iteration, command: str) -> CombinedAnalysisResult | Ending:
        """The analysis of `it`, set on it (with why it is overruled), or the end of the run."""
        request = analysis_request(
            it, goal=self.goal, context=self.context, command=command, max_iterations=it.of
        )
        answer = await self.host.analyse(request)
        self.report.spent("analysis", answer.usage)
        analysis = answer.value
        if analysis is None:
            return step_failed(answer, "the analysis failed")
        test = it.test
        passed = test is not None and test.passed and it.judge is None
        if analysis.verdict is Verdict.SUCCESS and it.judge is not None:
            it.overruled = "the analysis said SUCCESS, which tests the run changed cannot confirm"
        elif analysis.verdict is Verdict.SUCCESS and not passed:
            it.overruled = f"the analysis said SUCCESS, but {state(test)}; the tests are the judge"
        it.analysis = self.latest = analysis
        self._made(it, analysis, passed)
        return analysis

    def _made(self, it: Iteration, analysis: CombinedAnalysisResult, passed: bool) -> None:
        """Its iteration's record and event; its findings unless a later iteration's test run
        is shown or it is a SUCCESS the tests confirm."""
        self.history.record(it)
        self.report.event(AnalysisMade(iteration=it.number, analysis=analysis, overruled=it.overruled))
        if self.history.tested_after(it.number) or (passed and analysis.verdict is Verdict.SUCCESS):
            return
        found = [*it.test.findings, *judge_findings(it.judge)] if it.test else []
        self.report.findings([*found, *analysis_findings(self.host, analysis, it.files)])

    def start_beside(self, it: Iteration, command: str) -> None:
        """The analysis of a red iteration, beside the next edit."""
        self._beside = asyncio.create_task(self.ask(it, command))

    async def advice(self, it: Iteration) -> CombinedAnalysisResult | Ending | None:
        """The analysis of the iteration before `it` (None: none ran beside)."""
        if self._beside is None:
            return None
        if not self._beside.done():
            self.report.progress(
                f"{it.label}: waiting for the analysis of iteration {it.number - 1}", it.percentage
            )
        advice = await self._beside
        self._beside = None
        return advice

    async def drop(self) -> None:
        """The tests are the judge: a verdict still to come is moot (stopped, unrecorded)."""
        if self._beside is not None:
            await stop(self._beside)
            self._beside = None
