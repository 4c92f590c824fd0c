"""What undo and the history know of past runs and edits: what a run changed, what an undo
restored or left alone (and why), and one line of the history.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Self

from pydantic import BaseModel, ConfigDict, model_validator

from .commands import Finding
from .envelope import ErrorReason, TaskError
from .outcome import test_outcome
from .runs import DecidingRun, SuiteScope, Verdict, WorkflowResult, WorkflowStatus


class SkipReason(StrEnum):
    """Why an undo (or an isolated run's apply) left a file alone."""

    UNSAVED = "unsaved"  # open in the editor with unsaved changes
    CHANGED_SINCE = "changed_since"  # changed since the edit: the user's later work
    UNWRITABLE = "unwritable"  # an OS error or a path no longer allowed


class Isolation(StrEnum):
    """Where a workflow run edits: the user's files (`none`), or a worktree of its own whose
    change the user takes when it is ready (`worktree`; a copy where there is no git)."""

    NONE = "none"
    WORKTREE = "worktree"


class RunState(StrEnum):
    """Where a run of the history stands. A run in place is `applied` as soon as it edits;
    an isolated one is `running`, then `ready` until the user applies, discards or keeps it."""

    RUNNING = "running"
    READY = "ready"  # finished in its worktree: its change waits for the user
    APPLIED = "applied"  # its change is on the user's files (undo takes it back)
    DISCARDED = "discarded"  # thrown away (or cancelled, or it changed nothing)
    KEPT = "kept"  # committed to its own branch; the user's files untouched
    UNDONE = "undone"  # applied, then taken back


class SkippedFile(BaseModel):
    """A file an undo did not restore, and why (`reason` is the sentence a user reads)."""

    model_config = ConfigDict(frozen=True)

    path: str
    reason: str
    kind: SkipReason = SkipReason.UNWRITABLE  # what a client decides on; never parse `reason`
    # where the run's change and a later one overlap: 1-based (first, last) lines of the file now
    lines: tuple[tuple[int, int], ...] = ()


class RestoreReport(BaseModel):
    """What an undo did with a checkpoint (`checkpoint` None: there was nothing to undo)."""

    model_config = ConfigDict(frozen=True)

    checkpoint: str | None = None
    label: str = ""
    restored: tuple[str, ...] = ()
    deleted: tuple[str, ...] = ()
    skipped: tuple[SkippedFile, ...] = ()

    @property
    def touched(self) -> list[str]:
        """Files put back or removed."""
        return [*self.restored, *self.deleted]


class RunChanges(BaseModel):
    """What a workflow run changed, against the files before the run: the files it changed and
    created, their diff (the edits' git-style format, aider_mcp/snapshots.py) and the checkpoint that
    undoes them (None: nothing to undo)."""

    model_config = ConfigDict(frozen=True)

    changed_files: tuple[str, ...] = ()
    created_files: tuple[str, ...] = ()
    diff: str = ""
    checkpoint_id: str | None = None


class StepEdit(BaseModel):
    """An iteration's Aider edit as the history keeps it: the files it changed and created
    (both empty: it changed nothing, and `error` says why when Aider said)."""

    model_config = ConfigDict(frozen=True)

    changed_files: tuple[str, ...] = ()
    created_files: tuple[str, ...] = ()
    error: str | None = None


class StepTestRun(BaseModel):
    """The test run that decided an iteration, as the history keeps it: the runner's last line
    rather than its output, how many tests failed and the first of them (the run's own record,
    on the workflow's answer, has the rest)."""

    model_config = ConfigDict(frozen=True)

    command: str
    scope: SuiteScope = SuiteScope.WHOLE
    exit_code: int | None = None
    timed_out: bool = False
    summary: str = ""  # "1 failed, 2 passed in 0.02s", "FAILED (failures=1)"
    failed: int | None = None  # None: the runner's output names no test it can count
    failing: tuple[str, ...] = ()  # the first failing test ids (at most a few)

    # how it ended in the one wording every screen shows (outcome.py), filled in when not given
    outcome: str = ""

    @model_validator(mode="after")
    def _worded(self) -> Self:
        if not self.outcome:
            object.__setattr__(
                self,
                "outcome",
                test_outcome(
                    self.exit_code, timed_out=self.timed_out, summary=self.summary, failed=self.failed
                ),
            )
        return self


class StepAnalysis(BaseModel):
    """An iteration's analysis: its verdict and the start of its message; `overruled` says
    why the run did not follow it (a SUCCESS over a failing test)."""

    model_config = ConfigDict(frozen=True)

    verdict: Verdict
    message: str = ""
    overruled: str | None = None


class RunStep(BaseModel):
    """One iteration of a workflow run in the history (the Runs view's node under the run):
    its edit, the test run that decided it, and the analysis. A step is None where the
    iteration did not get that far (the edit changed nothing: no test; green: no analysis)."""

    model_config = ConfigDict(frozen=True)

    iteration: int
    edit: StepEdit | None = None
    test: StepTestRun | None = None
    analysis: StepAnalysis | None = None
    notes: tuple[str, ...] = ()  # the user's notes its edit carried (added while the run ran)


class RunRecord(BaseModel):
    """One run or edit of the history (`aider-lsp history`, `aider-lsp.history.list`): its id
    for undo, when, what was asked, how it ended, what it changed and spent."""

    model_config = ConfigDict(frozen=True)

    id: str
    created: float
    kind: str  # "workflow" or "edit"
    label: str
    goal: str | None = None  # a workflow run's whole goal (the label may be cut); None for edits
    status: str | None = None  # SUCCESS / FAILURE / COMPLETE / FAILED, as the run ended
    iterations: int | None = None
    files: tuple[str, ...] = ()
    spend: str | None = None  # what it spent, as the run's report says it
    duration_s: float | None = None
    undone: float | None = None
    steps: tuple[RunStep, ...] = ()  # a workflow run's iterations, oldest first (edits: none)
    note: str | None = None  # what the run could not do and went on without (no plan was made)
    state: RunState = RunState.APPLIED
    isolation: Isolation = Isolation.NONE
    branch: str | None = None  # an isolated run's git branch (kept: where its commit is)
    # an isolated run's last test failures: shown on the run, never as the user's Problems
    findings: tuple[Finding, ...] = ()
    group_id: str | None = None  # an attempt of a group (models/attempts.py): its siblings share it
    won: bool = False  # the attempt the tests chose in its group (`apply GROUP_ID` applies it)
    attempt: int | None = None  # an attempt's number in its group (1-based)
    aider_model: str | None = None  # the Aider model an attempt edited with (None: the settings')


class RunFileDiff(BaseModel):
    """One file of a run as the diff editor shows it (`aider-lsp.history.diff`): its text before
    the run's first edit of it and after the run's last. A side is None where the file did not
    exist; `binary` files (not UTF-8 text) have no sides, only the name."""

    model_config = ConfigDict(frozen=True)

    path: str
    before: str | None = None
    after: str | None = None
    existed_before: bool
    exists_after: bool
    binary: bool = False


class RunDiff(BaseModel):
    """What a run of the history changed, file by file (`aider-lsp.history.diff`)."""

    model_config = ConfigDict(frozen=True)

    run: RunRecord
    files: tuple[RunFileDiff, ...] = ()


class IsolatedRun(BaseModel):
    """An isolated run as its answer names it: the id the user applies, discards or keeps it
    by, where it stands (`ready`: its change waits; `discarded`: it changed nothing, or was
    cancelled), and its last test failures (on the run, not in the user's Problems)."""

    model_config = ConfigDict(frozen=True)

    run_id: str
    state: RunState
    findings: tuple[Finding, ...] = ()


class IsolatedRunManifest(BaseModel):
    """An isolated run as kept on disk (isolation/store.py): its history record, where its tree
    is, the process running it, and, once it ended, its change file by file: each path's blob
    at the run's start and in the run's version (None: absent)."""

    record: RunRecord
    top: str  # the tree's root (a worktree, or a copy)
    tree_workspace: str  # the user's workspace inside it
    owner: int | None = None  # the process running it (a crash leaves a dead one)
    files: dict[str, tuple[str | None, str | None]] = {}


class RunAction(BaseModel):
    """What applying, discarding or keeping an isolated run did. Apply writes nothing when one
    file cannot take the change (`skipped`: both changed the same lines, named; unsaved in the
    editor) unless forced; `checkpoint_id` is then the applied run in the history (undo)."""

    model_config = ConfigDict(frozen=True)

    run_id: str
    state: RunState
    label: str = ""
    written: tuple[str, ...] = ()
    deleted: tuple[str, ...] = ()
    skipped: tuple[SkippedFile, ...] = ()
    branch: str | None = None
    commit: str | None = None
    checkpoint_id: str | None = None
    refused: TaskError | None = None  # no such run, not ready, busy, git failed
    discarded: tuple[str, ...] = ()  # an attempt applied: its ready siblings, discarded with it

    @property
    def done(self) -> bool:
        """The action took place (nothing refused, no file left behind)."""
        return self.refused is None and not self.skipped


class DeclinedTestCommand(BaseModel):
    """The detected test command the user chose to change instead of running (a client may
    pre-fill an input with it); `message` names the setting to set."""

    command: str
    detected_by: str | None = None
    message: str


# -- several attempts at one goal (a run group): the tests choose ----------------------------
class Choose(StrEnum):
    """How the tests choose among the attempts."""

    FIRST_GREEN = "first-green"  # the first attempt whose whole suite passes wins; the others stop
    COMPARE = "compare"  # all finish, then they are ranked: green, smaller change, cheaper


class Attempt(BaseModel):
    """One attempt of a group: its isolated run's id and state (ready: its change waits;
    discarded: it changed nothing, or was stopped), how it ended and what it cost."""

    model_config = ConfigDict(frozen=True)

    run_id: str
    number: int  # 1-based, in the order they were started
    aider_model: str | None = None  # the model Aider edited with (None: the settings')
    planned: bool = False  # a plan ran beside its first edit (the planner's files joined it)
    state: RunState
    status: str | None = None  # SUCCESS / FAILURE as the run ended; None: stopped before its end
    green: bool = False  # its whole suite passed and the judge kept it (no test lost)
    tests: str = ""  # how its last test run ended, in the one wording (models/outcome.py)
    lines_changed: int = 0  # lines added and removed by its change
    tokens: int = 0
    cost: float = 0.0
    seconds: float = 0.0
    stopped: str | None = None  # why it was stopped before its end (another attempt won first)


class AttemptGroup(BaseModel):
    """A group's answer: each attempt, and the winner (a run id, or None with the reason)."""

    model_config = ConfigDict(frozen=True)

    group_id: str
    choose: Choose
    attempts: tuple[Attempt, ...] = ()
    winner: str | None = None
    reason: str = ""

    def attempt(self, run_id: str) -> Attempt | None:
        return next((attempt for attempt in self.attempts if attempt.run_id == run_id), None)

    @property
    def summary(self) -> str:
        """The group in words: the winner and why (or why none), then every attempt."""
        count = f"{len(self.attempts)} attempt(s) ({self.choose.value})"
        won = self.attempt(self.winner) if self.winner else None
        head = (
            f"{count}: attempt {won.number} wins ({self.reason}); run {won.run_id} is ready: apply it "
            f"(its siblings are discarded with it)."
            if won is not None
            else f"{count}: {self.reason}."
        )
        return " ".join([head, *(f"{_attempt_said(attempt)}." for attempt in self.attempts)])


def _attempt_said(attempt: Attempt) -> str:
    """ "Attempt 1 (model m): the tests fail (exit code 1), 3 line(s) changed, 1200 tokens, 14 s"."""
    model = f" ({attempt.aider_model})" if attempt.aider_model else ""
    if attempt.stopped is not None:
        return f"Attempt {attempt.number}{model}: stopped, {attempt.stopped} ({attempt.tokens} tokens spent)"
    ended = attempt.tests or f"it ended {attempt.status or 'FAILED'}"
    change = f"{attempt.lines_changed} line(s) changed" if attempt.state is RunState.READY else "no change"
    spent = f"{attempt.tokens} tokens, {attempt.seconds:.0f} s"
    return f"Attempt {attempt.number}{model}: {ended}, {change}, {spent}"


class WorkflowRun(BaseModel):
    """What `Application.run_workflow` gives every front end, typed to the end: the run's
    outcome and what it left changed, or why it never started. Each front end words it in one
    module (results.py: the LSP's and the CLI's TaskResult; acp/turns.py: the ACP reply)."""

    outcome: WorkflowResult | None = None  # None: it never started (`refused` says why)
    changes: RunChanges = RunChanges()
    refused: TaskError | None = None  # already running, the test command not confirmed, …
    cancelled: bool = False  # the user stopped it; `changes` holds what it had changed by then
    # the user chose to change the detected test command: it, and the rule that found it
    declined_test_command: DeclinedTestCommand | None = None
    isolated: IsolatedRun | None = None  # ran in a worktree: its id and state (`changes` wait there)
    group: AttemptGroup | None = None  # several attempts: each one, and the winner the tests chose

    @property
    def ok(self) -> bool:
        """The goal was reached: the tests passed in the run's last iteration (several
        attempts: one passed, the winner)."""
        if self.group is not None:
            return self.group.winner is not None
        return self.outcome is not None and self.outcome.status is WorkflowStatus.SUCCESS

    @property
    def last_test(self) -> DecidingRun | None:
        """The test run that decided the last iteration that ran the tests (None: none did)."""
        tested = [it.test for it in self.outcome.iterations if it.test is not None] if self.outcome else []
        return tested[-1] if tested else None

    @property
    def names_the_tests(self) -> bool:
        """The run's own words already say how its tests ended: a success and the end after the
        last iteration are worded from its last test run (workflow/orchestrator.py), so a front
        end does not say it again."""
        outcome = self.outcome
        return outcome is not None and (
            outcome.status is WorkflowStatus.SUCCESS or outcome.reason is ErrorReason.MAX_RETRIES_REACHED
        )

    @property
    def message(self) -> str:
        """The run's own words: how it ended, or why it never started."""
        if self.group is not None:
            return self.group.summary
        if self.outcome is not None:
            return self.outcome.content
        if self.refused is not None:
            return self.refused.message
        touched = [*self.changes.changed_files, *self.changes.created_files]
        if self.isolated is not None:
            return "the workflow was cancelled by the user; its worktree was removed, your files untouched"
        said = f"; it had changed {', '.join(touched)} (undo restores them)" if touched else ""
        return f"the workflow was cancelled by the user{said}"
