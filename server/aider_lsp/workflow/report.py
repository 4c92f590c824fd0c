"""Where a run tells its caller what happens: typed events, where the run is (a typed progress
event, and the same as a sentence for the LSP's `$/progress`), and the findings to show.

Why one object: the loop and its helpers (the plan, the test runs, the analysis) report to the
same caller the same way; the caller's RequestContext arrives when the run starts.
"""

from __future__ import annotations

from collections.abc import Callable

from ..models import (
    CallKind,
    CallKinds,
    CallUsage,
    Finding,
    RequestContext,
    WorkflowEvent,
    WorkflowProgress,
    WorkflowUsage,
)


class RunReport:
    """The caller's sinks for one run; `usage` says what the run spent so far, `calls` by the
    kind of call (each step adds its call's own usage as it answers)."""

    def __init__(self, usage: Callable[[], WorkflowUsage]) -> None:
        self.ctx = RequestContext()
        self._usage = usage
        self.calls = CallKinds()

    def spent(self, kind: CallKind, usage: CallUsage | None) -> None:
        """One call of `kind` answered, having spent `usage` (None: not reported)."""
        self.calls = self.calls.plus(kind, usage)

    def progress(self, phase: str, percentage: int) -> None:
        """Where the run is, as a typed event and as one sentence (worded by the event)."""
        progress = WorkflowProgress(phase=phase, percentage=percentage, usage=self._usage())
        self.ctx.report_event(progress)
        self.ctx.report_progress(progress.message, percentage)

    def event(self, event: WorkflowEvent) -> None:
        self.ctx.report_event(event)

    def findings(self, findings: list[Finding]) -> None:
        """The findings shown now (they replace those shown before; none clears them)."""
        self.ctx.report_findings(findings)
