"""WorkflowHost: what the coding workflow needs from its host, and nothing more.

Why a protocol: the orchestrator is a client of the Application like the editor and the CLI;
naming the few calls it makes (run a template, edit, run the tests, find context, spend and
budget, checkpoints, confined paths) keeps it from reaching into services, lets a test give it
a small fake, and keeps app.py → workflow/ the only import between them (the Application
satisfies this protocol; mypy checks it where app.py builds the orchestrator).
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from pathlib import Path
from typing import Any, Protocol

from ..budget import RunBudget
from ..checkpoints import CheckpointStore
from ..models import (
    AiderEditOutcome,
    AssociativeMatchResult,
    CommandRun,
    ContextGenerationInput,
    ReplyCallback,
    TaskResult,
    WorkflowUsage,
)
from ..settings import Settings


class WorkflowHost(Protocol):
    """The calls a workflow run makes on the Application."""

    @property
    def settings(self) -> Settings:
        """The settings in force (budget, test command, test timeout)."""
        ...

    @property
    def workspace(self) -> Path: ...

    @property
    def checkpoints(self) -> CheckpointStore:
        """Where the run's one checkpoint is kept (one undo restores the whole run)."""
        ...

    async def handle_task_command(self, identifier: str, params: dict[str, Any] | None = None) -> TaskResult:
        """Run a template (the plan, the analysis)."""
        ...

    async def edit(
        self,
        prompt: str,
        files: Sequence[str] = (),
        *,
        chat: bool = False,
        session_id: str | None = None,
        on_reply: ReplyCallback | None = None,
        retell: str = "",
        dropped: Sequence[str] = (),
    ) -> AiderEditOutcome:
        """One Aider edit as `aider:automatic` makes it (checks, edit lock, checkpoint), typed:
        what changed, what undo covers, Aider's usage, or the `error` that stopped it. `chat`:
        a turn of a kept Aider chat (`session_id` continues one; the outcome names it; one the
        server lost starts again, told `retell` first; `dropped` files leave it before the
        turn); `on_reply` reads Aider's reply as it is written."""
        ...

    async def end_chat(self, session_id: str) -> None:
        """Forget a kept Aider chat (a run's, at its end)."""
        ...

    async def run_tests(self, command: str | None = None, fallback_files: Sequence[str] = ()) -> CommandRun:
        """Run the test command; the failures it printed come back as findings."""
        ...

    def suite_seconds(self, command: str) -> float | None:
        """How long the test command took the last time it ran to its end (None: not yet)."""
        ...

    async def find_context(self, request: ContextGenerationInput) -> AssociativeMatchResult:
        """The workspace files most relevant to a query (the index)."""
        ...

    def unsaved(self) -> Collection[str]:
        """The files the editor holds with unsaved changes, now (an edit refuses them)."""
        ...

    def spent(self) -> WorkflowUsage:
        """Tokens, requests and cost the LLM calls spent so far in this session, Aider's own
        (as its server reports them) in `aider`."""
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
