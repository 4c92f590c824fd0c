"""Host: the calls every client of the Application makes, declared once.

Why: a workflow run (workflow/host.py WorkflowHost) and the ACP agent (acp/host.py AcpHost)
each name what they call on the Application, so that neither reaches into a service and each
runs over a small fake in the fast tests. What both call is declared here, once, with its
signature and its meaning; each host adds only what it alone calls. The Application satisfies
both (mypy checks it where app.py hands itself to the workflow and acp/server.py builds the
agent's), as do the fakes (aider_lsp_testing/fake_host.py, fake_app.py). The types are imported
for the checker only: the ACP agent's `initialize` must not wait for the models.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from .config.settings import Settings
    from .models import (
        AiderEditOutcome,
        AssociativeMatchResult,
        CommandRun,
        ContextGenerationInput,
        ReplyCallback,
        WorkflowUsage,
    )


class Host(Protocol):
    """The workspace, its settings, and the calls both a run and the ACP agent make."""

    @property
    def settings(self) -> Settings:
        """The settings in force (changed through the Application, never set on it)."""
        ...

    @property
    def workspace(self) -> Path: ...

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
        images: Sequence[str] = (),
    ) -> AiderEditOutcome:
        """One Aider edit as `aider:automatic` makes it (checks, edit lock, checkpoint), typed:
        what changed, what undo covers, Aider's usage, or the `error` that stopped it. `chat`:
        a turn of a kept Aider chat (`session_id` continues one; the outcome names it; one the
        server lost starts again, told `retell` first; `dropped` files leave it before the
        turn); `on_reply` reads Aider's reply as it is written; `images` (absolute paths) are
        shown to a model that reads images, for this edit only."""
        ...

    async def run_tests(self, command: str | None = None, fallback_files: Sequence[str] = ()) -> CommandRun:
        """Run the test command; the failures it printed come back as findings."""
        ...

    async def find_context(self, request: ContextGenerationInput) -> AssociativeMatchResult:
        """The workspace files most relevant to a query (the index)."""
        ...

    def spent(self) -> WorkflowUsage:
        """Tokens, requests and cost the LLM calls spent so far in this session, Aider's own
        (as its server reports them) in `aider`."""
        ...
