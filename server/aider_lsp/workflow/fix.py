"""Fix with Aider on a failing test: one edit, then the tests that failed run again.

Why beside the workflow: it is the loop's smallest case (edit, then test, no retry) and what the
editor's quick fix on a test failure runs. The edit gets the code the test exercises (the
index's best code files for the failure), since a failing test is usually fixed there; the
re-run's findings replace the shown ones, so a fixed failure's diagnostic goes and one still
failing moves to where it fails now.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

from ..models import AiderEditOutcome, CommandRun, FixAndRetest, ReplyCallback, RequestContext, Selection

log = logging.getLogger(__name__)

CODE_UNDER_TEST = 2  # code files a test failure's fix may edit beside the test (the index's best)


class Edit(Protocol):
    """The one edit door (`Application.edit`)."""

    async def __call__(
        self,
        prompt: str,
        files: Sequence[str] = (),
        *,
        selection: Selection | None = None,
        on_reply: ReplyCallback | None = None,
    ) -> AiderEditOutcome: ...


CodeUnderTest = Callable[[str, Sequence[str], int], Awaitable[list[str]]]
Rerun = Callable[[], Awaitable[CommandRun | None]]


async def fix_and_retest(
    prompt: str,
    files: Sequence[str],
    selection: Selection | None,
    ctx: RequestContext,
    *,
    edit: Edit,
    code_under_test: CodeUnderTest,
    rerun_failing: Rerun,
) -> FixAndRetest:
    """The edit on the test's files and the code under test, then the failing tests again."""
    files = await _with_code_under_test(code_under_test, prompt, files)
    outcome = await edit(prompt, files, selection=selection, on_reply=ctx.report_reply)
    if outcome.error is not None:
        return FixAndRetest(edit=outcome)
    ctx.report_progress("running the tests that failed", None)
    run = await rerun_failing()
    if run is None or not run.ran:
        return FixAndRetest(edit=outcome)
    ctx.report_findings(list(run.findings))
    return FixAndRetest(edit=outcome, retest=run)


@dataclass(frozen=True)
class FailingTestFixer:
    """`fix_and_retest` with the rooms it asks (the edit door, the index, the test runner)
    bound: the Application's operation of that name."""

    edit: Edit
    code_under_test: CodeUnderTest
    rerun_failing: Rerun

    async def fix_and_retest(
        self, prompt: str, files: Sequence[str], selection: Selection | None, ctx: RequestContext
    ) -> FixAndRetest:
        """Fix with Aider on a failing test, then the failing tests again."""
        return await fix_and_retest(
            prompt,
            files,
            selection,
            ctx,
            edit=self.edit,
            code_under_test=self.code_under_test,
            rerun_failing=self.rerun_failing,
        )


async def _with_code_under_test(find: CodeUnderTest, prompt: str, files: Sequence[str]) -> list[str]:
    try:
        code = await find(prompt, files, CODE_UNDER_TEST)
    except Exception as exc:  # the index is a help here, never a reason to fail the fix
        log.warning("no code under test for the fix: %s", exc)
        return list(files)
    return [*files, *code]
