"""What the history keeps of each iteration of a run (the Runs view's nodes under it, the
lines under a run in `aider-lsp history`): the edit's files, the deciding test run's last line
and failing count, the analysis's verdict and the start of its message.

Why a digest, not the iteration's record: the record carries whole diffs and test output, and
the history is kept for many runs on disk (checkpoints.py bounds it); a step keeps only what a
reader scans, each text cut to a few lines.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..models import (
    CombinedAnalysisResult,
    DecidingRun,
    EditSummary,
    RunStep,
    StepAnalysis,
    StepEdit,
    StepTestRun,
    WorkflowIteration,
)
from ..suite.narrow import failing_tests

MAX_FAILING_IDS = 5  # the failing tests a step names (its count says how many failed)
MAX_LINES = 3  # of an analysis message or an edit's error
MAX_CHARS = 300  # of any one text a step keeps


def run_steps(iterations: Sequence[WorkflowIteration]) -> tuple[RunStep, ...]:
    """Each iteration's step, oldest first."""
    return tuple(
        RunStep(
            iteration=it.iteration,
            edit=None if it.aider is None else _edit(it.aider),
            test=None if it.test is None else _test(it.test),
            analysis=None if it.analysis is None else _analysis(it.analysis, it.overruled),
            notes=tuple(short(note) for note in it.notes),
        )
        for it in iterations
    )


def _edit(edit: EditSummary) -> StepEdit:
    error = None if edit.error is None else short(edit.error.message)
    return StepEdit(
        changed_files=tuple(edit.changed_files), created_files=tuple(edit.created_files), error=error
    )


def _test(run: DecidingRun) -> StepTestRun:
    """The run's last line, and how many tests failed: none when it passed, else as many as
    the runner named (None: a runner whose failures cannot be counted, or a timeout)."""
    passed = run.exit_code == 0 and not run.timed_out
    ids = () if passed else failing_tests(run.command, f"{run.stdout}\n{run.stderr}")
    failed = 0 if passed else (len(ids) if ids else None)
    return StepTestRun(
        command=short(run.command, lines=1),
        scope=run.scope,
        exit_code=run.exit_code,
        timed_out=run.timed_out,
        summary=short(run.summary, lines=1),
        failed=failed,
        failing=tuple(short(test_id, lines=1) for test_id in (ids or ())[:MAX_FAILING_IDS]),
    )


def _analysis(analysis: CombinedAnalysisResult, overruled: str | None) -> StepAnalysis:
    return StepAnalysis(
        verdict=analysis.verdict,
        message=short(analysis.message),
        overruled=None if overruled is None else short(overruled),
    )


def short(text: str, lines: int = MAX_LINES, chars: int = MAX_CHARS) -> str:
    """The first `lines` non-blank lines of `text`, at most `chars` long; "…" where cut."""
    kept = [line.rstrip() for line in text.strip().splitlines() if line.strip()]
    cut = "\n".join(kept[:lines])
    if len(cut) > chars:
        cut = cut[: chars - 1].rstrip()
    return cut + "…" if cut != "\n".join(kept) else cut
