"""AcpHost: what the ACP front end calls on its workspace's Application, and nothing more.

Why a protocol: the agent is one client of the Application among three; naming the calls its
turns, commands and options make keeps it from reaching into services, and lets the fast tests
run the whole agent over a small fake (aider_lsp_testing/fake_app.py) that mypy checks against
this list as it checks the Application where server.py builds it. The calls a workflow run makes
too (the settings, the workspace, an edit, the tests, context, the spend) are declared once, in
host.py's Host; the ones below are the agent's alone. The types are imported for the checker
only: `initialize` must not wait for the Application's models.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any, Protocol

from ..host import Host

if TYPE_CHECKING:
    from ..config.settings import Settings
    from ..guards.files import Refusal
    from ..models import (
        AiderEditOutcome,
        DeclinedTestCommand,
        IndexStats,
        ReplyCallback,
        RequestContext,
        RunAction,
        RunRecord,
        TaskError,
        TaskResult,
        WorkflowRequest,
        WorkflowRun,
    )
    from ..models.suite_command import ChosenTestCommand


class AcpHost(Host, Protocol):
    """The calls an ACP session makes on its workspace's Application (Host's, and these)."""

    def update_settings(self, settings: Settings) -> None:
        """The sign-in changed (authenticate, a session without a model)."""
        ...

    def aider_model(self) -> str | None: ...

    def set_aider_model(self, name: str) -> None: ...

    def model_safe_files(self, paths: Sequence[str]) -> tuple[list[str], list[Refusal]]:
        """The prompt's files under the one rule for what a model sees."""
        ...

    async def warm_up(self) -> bool: ...

    async def index_workspace(self) -> IndexStats: ...

    def aider_setup_needed(self) -> bool: ...

    async def set_up_aider(self, on_line: Callable[[str], None]) -> str | None: ...

    async def ask(
        self,
        question: str,
        files: Sequence[str] = (),
        *,
        session_id: str | None = None,
        on_reply: ReplyCallback | None = None,
        images: Sequence[str] = (),
    ) -> AiderEditOutcome:
        """An Ask turn: Aider answers in the session's ask chat, edits nothing (`images`: the
        prompt's, shown to a model that reads them)."""
        ...

    def model_toolsets(self, toolsets: Sequence[Any]) -> AbstractContextManager[None]:
        """The session's MCP servers, offered to the planning/analysis model of a run."""
        ...

    async def run_workflow(self, request: WorkflowRequest, ctx: RequestContext) -> WorkflowRun: ...

    def steer(self, run_id: str | None, note: str) -> TaskError | None:
        """A note for a run under way (None: the run in place), which its next edit carries."""
        ...

    def undo(
        self, run_id: str | None = None, *, force: bool = False, files: list[str] | None = None
    ) -> TaskResult: ...

    def history(self) -> list[RunRecord]:
        """The runs, newest first (an isolated run's state, its branch when in git)."""
        ...

    def apply_run(self, run_id: str, *, force: bool = False) -> RunAction:
        """A ready isolated run's change laid on the user's files (all or nothing unless forced)."""
        ...

    def discard_run(self, run_id: str) -> RunAction: ...

    def keep_run(self, run_id: str) -> RunAction:
        """A ready isolated run committed to its branch; the user's files untouched."""
        ...

    async def prepare_isolated(self) -> str:
        """A spare worktree made ready for the next isolated run (says what it does)."""
        ...

    async def pick_test_command(
        self, requested: str | None, ctx: RequestContext
    ) -> ChosenTestCommand | DeclinedTestCommand | None:
        """`/test`'s command, a detected one confirmed with the user first."""
        ...

    async def aclose(self) -> None: ...

    def kill_children(self) -> None: ...
