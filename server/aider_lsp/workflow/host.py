"""WorkflowHost: what the coding workflow needs from its host, and nothing more.

Why a protocol: the orchestrator is a client of the Application like the editor and the CLI;
naming the few calls it makes (the plan, the analysis, edit, run the tests, find context, spend and
budget, checkpoints, confined paths) keeps it from reaching into services, lets a test give it
a small fake, and keeps app.py → workflow/ the only import between them (the Application
satisfies this protocol; mypy checks it where app.py builds the orchestrator). The calls the
ACP agent makes too (the settings, the workspace, an edit, the tests, context, the spend) are
declared once, in host.py's Host; the ones below are the run's alone.
"""

from __future__ import annotations

from collections.abc import Collection
from pathlib import Path
from typing import Protocol

from ..guards.budget import RunBudget
from ..history.checkpoints import CheckpointStore
from ..host import Host
from ..models import AnalysisRequest, CombinedAnalysisResult, DevelopmentPlan, ModelAnswer, PlanRequest


class WorkflowHost(Host, Protocol):
    """The calls a workflow run makes on the Application (Host's, and these)."""

    @property
    def checkpoints(self) -> CheckpointStore:
        """Where the run's one checkpoint is kept (one undo restores the whole run)."""
        ...

    async def make_plan(self, request: PlanRequest) -> ModelAnswer[DevelopmentPlan]:
        """The planner's plan of a goal (llm/asks.py), or the error that stopped it."""
        ...

    async def analyse(self, request: AnalysisRequest) -> ModelAnswer[CombinedAnalysisResult]:
        """The analysis of an iteration (llm/asks.py), or the error that stopped it."""
        ...

    async def end_chat(self, session_id: str) -> None:
        """Forget a kept Aider chat (a run's, at its end)."""
        ...

    def suite_seconds(self, command: str) -> float | None:
        """How long the test command took the last time it ran to its end (None: not yet)."""
        ...

    def unsaved(self) -> Collection[str]:
        """The files the editor holds with unsaved changes, now (an edit refuses them)."""
        ...

    def set_budget(self, max_tokens: int | None, max_cost: float | None) -> RunBudget:
        """Cap the LLM calls that follow (over budget → FAILED): the run's budget, which the
        loop asks too between steps (budget.py)."""
        ...

    def clear_budget(self) -> None: ...

    async def start_aider(self) -> bool:
        """Start the Aider server ahead of the first edit; whether it runs."""
        ...

    def resolve_path(self, path: str) -> Path:
        """A path confined to the workspace (AccessDenied outside it)."""
        ...

    def relative_path(self, path: str) -> str:
        """The workspace-relative form of a confined path (AccessDenied outside it)."""
        ...
