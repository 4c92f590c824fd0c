"""Where a workflow run goes: in place (the user's files, workflow/runs.py), in a worktree of its
own (runs.py), or as several attempts, each in a worktree (attempts.py).

Why one place: every front end asks `Application.run_workflow` the same way; the request's
`isolation` and `attempts`, else the settings', decide here, once.
"""

from __future__ import annotations

from collections.abc import Callable

from ..config.settings import Settings
from ..models import ErrorReason, Isolation, RequestContext, TaskError, WorkflowRequest, WorkflowRun
from ..workflow.runs import WorkflowRuns
from .attempts import AttemptGroups
from .runs import IsolatedRuns


class RunPlacement:
    """Sends each workflow request where it runs."""

    def __init__(
        self, in_place: WorkflowRuns, isolated: IsolatedRuns, settings: Callable[[], Settings]
    ) -> None:
        self.in_place = in_place
        self.isolated = isolated
        self.groups = AttemptGroups(isolated, settings)
        self.settings = settings

    async def run(self, request: WorkflowRequest, ctx: RequestContext) -> WorkflowRun:
        settings = self.settings()
        if (request.attempts or settings.attempts) > 1:
            return await self.groups.run(request, ctx)
        if settings.isolation_for(request.isolation) == Isolation.WORKTREE:
            return await self.isolated.run(request, ctx)
        return await self.in_place.run(request, ctx)

    def steer(self, run_id: str | None, note: str) -> TaskError | None:
        """A note from the user for a run under way (None: the run in place), which its next
        edit carries; the error says why it could not (no such run under way, an empty note)."""
        if not note.strip():
            return TaskError(reason=ErrorReason.INPUT_VALIDATION_FAILURE, message="the note is empty")
        delivered = (
            self.in_place.steer(note.strip()) if run_id is None else self.isolated.steer(run_id, note.strip())
        )
        if delivered:
            return None
        which = (
            "no workflow run is under way in place" if run_id is None else f"no run {run_id!r} is under way"
        )
        return TaskError(
            reason=ErrorReason.INPUT_VALIDATION_FAILURE, message=f"{which}: nothing to add the note to"
        )
