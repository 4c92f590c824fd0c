"""A small in-memory Application for the ACP agent: its turns, commands and questions tested in
milliseconds.

Why: the real Application starts Aider, the index and the user's test command (seconds a
prompt); what the agent decides (which call a mode makes, what it sends the client, when it
asks, how a cancel ends a turn) only needs typed answers. This fake satisfies acp/host.py's
AcpHost (mypy checks it where the tests build the agent on it). Its answers are scripted:
edits write real files in a real (temporary) workspace and answer with their diff in the
bundled server's format; the test command's confirmation is the real one (suite/choose.py);
a workflow run reports the typed events and returns the real wire result (results.py); an
isolated one (`isolation: worktree`) writes a copy of the workspace instead and ends ready, to be
applied (all or nothing: a file the user changed since, or holds unsaved, is named), kept
(a branch when the workspace has `.git`) or discarded.
Every call is logged in `calls`; a step named in `hold` waits until cancelled.
"""

from __future__ import annotations

import asyncio
import contextlib
import difflib
import shutil
import time
from collections import deque
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from aider_lsp.config.settings import Settings
from aider_lsp.guards.files import FileAccessManager, Refusal
from aider_lsp.models import (
    AiderEditOutcome,
    AssociativeMatchResult,
    CallUsage,
    CombinedAnalysisResult,
    CommandRun,
    ContextGenerationInput,
    DecidingRun,
    DeclinedTestCommand,
    EditFinished,
    EditStarted,
    EditSummary,
    ErrorReason,
    IndexStats,
    IsolatedRun,
    Isolation,
    JudgeProblem,
    MatchItem,
    ReplyCallback,
    RequestContext,
    RunAction,
    RunChanges,
    RunRecord,
    RunState,
    SkippedFile,
    SkipReason,
    SuiteScope,
    TaskError,
    TaskResult,
    TaskStatus,
    TestRunFinished,
    TestRunStarted,
    UnsavedFiles,
    Verdict,
    WorkflowIteration,
    WorkflowProgress,
    WorkflowRequest,
    WorkflowResult,
    WorkflowRun,
    WorkflowStatus,
    WorkflowUsage,
    complete_result,
)
from aider_lsp.models.suite_command import ChosenTestCommand
from aider_lsp.suite.choose import choose_test_command, confirm_test_command

EDIT, ASK, RUN, TESTS, SETUP = "edit", "ask", "run", "tests", "setup"  # the steps `hold` can stop
SETTINGS = Settings(model="openai:fake-planner", aider_model="openai/fake-coder")


@dataclass(frozen=True)
class Turn:
    """One scripted Aider answer: the files it writes (path → text), its reply (sent in
    `pieces` as it is written), the error that stopped it, and the tokens it spent."""

    writes: dict[str, str] = field(default_factory=dict)
    reply: str = ""
    pieces: int = 1
    error: str | None = None
    tokens: int = 0


@dataclass
class FakeRun:
    """An isolated run as the fake keeps it: each file at the run's start and in its version."""

    record: RunRecord
    sides: dict[str, tuple[str | None, str]]


@dataclass(frozen=True)
class Iteration:
    """One scripted workflow iteration: its edit, then its test run (None: nothing to test),
    and the judge's refusal of passing tests the edit changed (suite/judge.py)."""

    edit: Turn
    tests: CommandRun | None = None
    judge: JudgeProblem | None = None


class FakeApplication:
    """The Application as the ACP agent sees it, answering from scripts."""

    def __init__(self, workspace: Path, settings: Settings = SETTINGS, unsaved_files: UnsavedFiles = tuple):
        self.settings = settings
        self.unsaved_files = unsaved_files
        self.files = FileAccessManager(workspace, settings=lambda: self.settings)
        self.calls: list[tuple[str, Any]] = []
        self.images_seen: list[list[bytes]] = []  # each ask, edit and run: its image files' bytes
        self.edits: deque[Turn] = deque()  # Edit turns' answers, in order
        self.answers: deque[Turn] = deque()  # Ask turns' answers
        self.runs: deque[list[Iteration]] = deque()  # workflow runs
        self.test_runs: deque[CommandRun] = deque()  # /test's runs
        self.context: list[str] = []  # what the index finds for any query
        self.hold: set[str] = set()
        self.notes: list[str] = []  # the notes a run under way was given (steer)
        self.steered: list[str | None] = []  # the run each note went to (None: the run in place)
        self._runs_under_way = 0
        self.setup_problem: str | None = None  # set_up_aider's answer
        self.needs_setup = False
        self.spend = WorkflowUsage()
        self.closed = False
        self.killed = False
        self._chats = 0
        self.isolated: dict[str, FakeRun] = {}  # the isolated runs, by id
        self._root: Path | None = None  # where edits write (None: the workspace; a run's copy)
        self._bases: dict[str, str | None] = {}  # an isolated run's files at its start

    @property
    def workspace(self) -> Path:
        return self.files.root

    # -- settings --------------------------------------------------------------------------
    def update_settings(self, settings: Settings) -> None:
        self.calls.append(("update_settings", settings))
        self.settings = settings

    def aider_model(self) -> str | None:
        return self.settings.aider_model

    def set_aider_model(self, name: str) -> None:
        self.update_settings(self.settings.model_copy(update={"aider_model": name}))

    def model_safe_files(self, paths: Sequence[str]) -> tuple[list[str], list[Refusal]]:
        return self.files.model_safe_files(paths)

    def spent(self) -> WorkflowUsage:
        return self.spend

    # -- start-up ----------------------------------------------------------------------------
    async def warm_up(self) -> bool:
        self.calls.append(("warm_up", None))
        return True

    async def prepare_isolated(self) -> str:
        self.calls.append(("prepare_isolated", None))
        return "A worktree is being made ready for the next isolated run."

    async def index_workspace(self) -> IndexStats:
        return IndexStats()

    def aider_setup_needed(self) -> bool:
        return self.needs_setup

    async def set_up_aider(self, on_line: Callable[[str], None]) -> str | None:
        self.calls.append(("set_up_aider", None))
        on_line("creating Aider's environment")
        await self._step(SETUP)
        self.needs_setup = self.setup_problem is not None
        return self.setup_problem

    # -- Aider ---------------------------------------------------------------------------------
    async def ask(
        self,
        question: str,
        files: Sequence[str] = (),
        *,
        session_id: str | None = None,
        on_reply: ReplyCallback | None = None,
        images: Sequence[str] = (),
    ) -> AiderEditOutcome:
        asked = {"question": question, "files": list(files), "session_id": session_id, "images": list(images)}
        self.calls.append((ASK, asked))
        self._see(images)
        turn = self.answers.popleft()
        await self._step(ASK)
        return self._answer("aider_chat", Turn(reply=turn.reply, pieces=turn.pieces), session_id, on_reply)

    async def edit(
        self,
        prompt: str,
        files: Sequence[str] = (),
        *,
        chat: bool = False,
        session_id: str | None = None,
        on_reply: ReplyCallback | None = None,
        retell: str = "",  # a lost chat's retelling: the fake's chats are never lost
        dropped: Sequence[str] = (),  # files leaving the chat: the fake keeps no chat's files
        images: Sequence[str] = (),
    ) -> AiderEditOutcome:
        edited = {"prompt": prompt, "files": list(files), "session_id": session_id, "images": list(images)}
        self.calls.append((EDIT, edited))
        self._see(images)
        turn = self.edits.popleft()
        await self._step(EDIT)
        return self._answer("aider_chat" if chat else "aider_ai_code", turn, session_id, on_reply)

    def _see(self, images: Sequence[str]) -> None:
        """What the call's image files hold while it runs (the agent removes them after)."""
        self.images_seen.append([Path(path).read_bytes() for path in images])

    def _answer(
        self, tool: str, turn: Turn, session_id: str | None, on_reply: ReplyCallback | None
    ) -> AiderEditOutcome:
        """The turn's reply streamed, its files written, its outcome as the bridge makes it."""
        if on_reply is not None:
            for piece in _pieces(turn.reply, turn.pieces):
                on_reply(piece)
        self.spend = self.spend.model_copy(
            update={"aider": self.spend.aider.plus(CallUsage(input_tokens=turn.tokens))}
        )
        if session_id is None:
            self._chats += 1
            session_id = f"chat-{self._chats}"
        report = {"session_id": session_id}
        if turn.error is not None:
            error = TaskError(reason=ErrorReason.TOOL_EXECUTION_ERROR, message=turn.error)
            return AiderEditOutcome(tool=tool, error=error, reply=turn.reply, server_report=report)
        diff, changed, created = self._write(turn.writes)
        return AiderEditOutcome(
            tool=tool,
            success=bool(diff),
            server_success=True,
            diff=diff,
            changed_files=changed,
            created_files=created,
            reply=turn.reply,
            server_report=report,
        )

    def _write(self, writes: dict[str, str]) -> tuple[str, list[str], list[str]]:
        """Write the files; their diff, the changed and the created ones."""
        diff, changed, created = "", list[str](), list[str]()
        for rel, text in writes.items():
            path = (self._root or self.workspace) / rel
            before = path.read_text(encoding="utf-8") if path.exists() else None
            if self._root is not None:  # an isolated run: what the file was at its start
                self._bases.setdefault(rel, before)
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
            diff += bundled_diff(rel, before, text)
            (changed if before is not None else created).append(rel)
        return diff, changed, created

    # -- runs, tests, context, undo -------------------------------------------------------------
    def model_toolsets(self, toolsets: Sequence[Any]) -> AbstractContextManager[None]:
        self.calls.append(("model_toolsets", list(toolsets)))
        return contextlib.nullcontext()

    async def run_workflow(self, request: WorkflowRequest, ctx: RequestContext) -> WorkflowRun:
        """The scripted run: the test command confirmed (the real question), then each
        iteration's events in order; the typed run the Application answers."""
        self.calls.append((RUN, request))
        self._see(request.images)
        self._runs_under_way += 1
        try:
            return await self._run(request, ctx)
        finally:
            self._runs_under_way -= 1

    def steer(self, run_id: str | None, note: str) -> TaskError | None:
        running = run_id in self.isolated and self.isolated[run_id].record.state is RunState.RUNNING
        if not self._runs_under_way or (run_id is not None and not running):
            return TaskError(reason=ErrorReason.INPUT_VALIDATION_FAILURE, message="no run is under way")
        self.notes.append(note)
        self.steered.append(run_id)
        return None

    async def _run(self, request: WorkflowRequest, ctx: RequestContext) -> WorkflowRun:
        choice = await self.pick_test_command(request.test_command, ctx)
        if isinstance(choice, DeclinedTestCommand):
            refused = TaskError(reason=ErrorReason.CONFIGURATION_ERROR, message=choice.message)
            return WorkflowRun(refused=refused, declined_test_command=choice)
        command = choice.command if choice is not None else "pytest"
        if request.isolation is Isolation.WORKTREE:
            return await self._isolated_run(command, request, ctx)
        return _result(await self._iterations(command, request, ctx))

    async def _iterations(
        self, command: str, request: WorkflowRequest, ctx: RequestContext
    ) -> list[WorkflowIteration]:
        done: list[WorkflowIteration] = []
        for number, iteration in enumerate(self.runs.popleft(), start=1):
            done.append(await self._iteration(number, iteration, command, request, ctx))
        return done

    async def _isolated_run(self, command: str, request: WorkflowRequest, ctx: RequestContext) -> WorkflowRun:
        """The run's edits in a copy of the workspace; ready when it changed a file."""
        run_id = f"run-{len(self.isolated) + 1}"
        under_way = RunRecord(
            id=run_id, created=time.time(), kind="workflow", label=request.goal, state=RunState.RUNNING
        )
        self.isolated[run_id] = FakeRun(under_way, {})
        tree = self.workspace.parent / f"{self.workspace.name}-{run_id}"
        shutil.copytree(self.workspace, tree)
        self._root, self._bases = tree, {}
        try:
            done = await self._iterations(command, request, ctx)
        finally:
            self._root = None
        sides = {rel: (base, (tree / rel).read_text()) for rel, base in self._bases.items()}
        sides = {rel: (base, final) for rel, (base, final) in sides.items() if base != final}
        state = RunState.READY if sides else RunState.DISCARDED
        branch = f"aider-lsp/{run_id}" if (self.workspace / ".git").exists() else None
        record = RunRecord(
            id=run_id, created=time.time(), kind="workflow", label=request.goal, state=state, branch=branch
        )
        self.isolated[run_id] = FakeRun(record, sides)
        changes = RunChanges(
            changed_files=tuple(rel for rel, (base, _) in sides.items() if base is not None),
            created_files=tuple(rel for rel, (base, _) in sides.items() if base is None),
            diff="".join(bundled_diff(rel, base, final) for rel, (base, final) in sides.items()),
        )
        run = _result(done).model_copy(update={"changes": changes})
        return run.model_copy(update={"isolated": IsolatedRun(run_id=run_id, state=state)})

    async def _iteration(
        self, number: int, iteration: Iteration, command: str, request: WorkflowRequest, ctx: RequestContext
    ) -> WorkflowIteration:
        files = list(request.file_context or [])
        _progress(ctx, f"Iteration {number}: Aider edits")
        ctx.report_event(EditStarted(iteration=number, files=files))
        await self._step(RUN)
        outcome = self._answer("aider_chat", iteration.edit, "run-chat", ctx.report_reply)
        ctx.report_event(
            EditFinished(
                iteration=number,
                files=files,
                diff=outcome.diff,
                changed_files=outcome.changed_files,
                created_files=outcome.created_files,
                error=None if outcome.error is None else outcome.error.message,
                no_change=not outcome.diff,
            )
        )
        summary = EditSummary(
            status=TaskStatus.COMPLETE, diff=outcome.diff, changed_files=outcome.changed_files
        )
        if iteration.tests is None:
            return WorkflowIteration(iteration=number, prompt=request.goal, files=files, aider=summary)
        _progress(ctx, f"Iteration {number}: testing")
        ctx.report_event(TestRunStarted(iteration=number, command=command, scope=SuiteScope.WHOLE))
        await self._step(TESTS)
        run = iteration.tests
        ctx.report_event(_finished(number, run))
        test = DecidingRun(command=run.command, scope=SuiteScope.WHOLE, exit_code=run.exit_code)
        judge = iteration.judge
        return WorkflowIteration(
            iteration=number, prompt=request.goal, files=files, aider=summary, test=test, judge=judge
        )

    async def pick_test_command(
        self, requested: str | None, ctx: RequestContext
    ) -> ChosenTestCommand | DeclinedTestCommand | None:
        """The real choice (a detected command asked about once, then remembered)."""
        choice = choose_test_command(self.workspace, self.settings, requested)
        if choice is None:
            return None
        return await confirm_test_command(self.workspace, choice, ctx, "AIDER_LSP_TEST_COMMAND")

    async def run_tests(self, command: str | None = None, fallback_files: Sequence[str] = ()) -> CommandRun:
        self.calls.append((TESTS, command))
        await self._step(TESTS)
        return self.test_runs.popleft()

    async def find_context(self, request: ContextGenerationInput) -> AssociativeMatchResult:
        self.calls.append(("find_context", request))
        matches = [
            MatchItem(id=rel, content="", relevance_score=1.0, source_path=rel) for rel in self.context
        ]
        return AssociativeMatchResult(context_summary=f"{len(matches)} files", matches=matches)

    def undo(
        self, run_id: str | None = None, *, force: bool = False, files: list[str] | None = None
    ) -> TaskResult:
        self.calls.append(("undo", files))
        return complete_result("Restored " + ", ".join(files or ["the last edit's files"]) + ".")

    # -- isolated runs --------------------------------------------------------------------------
    def history(self) -> list[RunRecord]:
        return [run.record for run in reversed(self.isolated.values())]

    def apply_run(self, run_id: str, *, force: bool = False) -> RunAction:
        """All or nothing: a file the user changed since the run started (unless `force`) or
        holds unsaved is named, and nothing is written."""
        self.calls.append(("apply_run", {"run_id": run_id, "force": force}))
        run, refused = self._ready(run_id)
        if run is None:
            return refused
        unsaved = set(self.unsaved_files())  # workspace-relative, as the isolated runs compare them
        skipped = []
        for rel, (base, final) in run.sides.items():
            path = self.workspace / rel
            now = path.read_text() if path.exists() else None
            if rel in unsaved:
                skipped.append(SkippedFile(path=rel, reason="unsaved in the editor", kind=SkipReason.UNSAVED))
            elif now not in (base, final) and not force:
                why = "you changed the lines the run changed (line 1)"
                skipped.append(
                    SkippedFile(path=rel, reason=why, kind=SkipReason.CHANGED_SINCE, lines=((1, 1),))
                )
        if skipped:
            return RunAction(
                run_id=run_id, state=RunState.READY, label=run.record.label, skipped=tuple(skipped)
            )
        for rel, (_, final) in run.sides.items():
            (self.workspace / rel).write_text(final)
        self._end(run, RunState.APPLIED)
        return RunAction(
            run_id=run_id,
            state=RunState.APPLIED,
            label=run.record.label,
            written=tuple(run.sides),
            checkpoint_id=run_id,
        )

    def discard_run(self, run_id: str) -> RunAction:
        self.calls.append(("discard_run", run_id))
        run, refused = self._ready(run_id)
        if run is None:
            return refused
        self._end(run, RunState.DISCARDED)
        return RunAction(run_id=run_id, state=RunState.DISCARDED, label=run.record.label)

    def keep_run(self, run_id: str) -> RunAction:
        self.calls.append(("keep_run", run_id))
        run, refused = self._ready(run_id)
        if run is None:
            return refused
        self._end(run, RunState.KEPT)
        return RunAction(
            run_id=run_id,
            state=RunState.KEPT,
            label=run.record.label,
            branch=run.record.branch,
            commit="c0ffee",
        )

    def _ready(self, run_id: str) -> tuple[FakeRun, RunAction] | tuple[None, RunAction]:
        run = self.isolated.get(run_id)
        if run is not None and run.record.state is RunState.READY:
            return run, RunAction(run_id=run_id, state=RunState.READY)
        error = TaskError(reason=ErrorReason.INPUT_VALIDATION_FAILURE, message=f"run {run_id!r} is not ready")
        return None, RunAction(run_id=run_id, state=RunState.DISCARDED, refused=error)

    def _end(self, run: FakeRun, state: RunState) -> None:
        run.record = run.record.model_copy(update={"state": state})
        shutil.rmtree(self.workspace.parent / f"{self.workspace.name}-{run.record.id}", ignore_errors=True)

    # -- the end ---------------------------------------------------------------------------------
    async def aclose(self) -> None:
        self.closed = True

    def kill_children(self) -> None:
        self.killed = True

    async def _step(self, name: str) -> None:
        """A held step waits until it is cancelled (a test cancels it mid-way)."""
        if name in self.hold:
            await asyncio.Event().wait()


class FakeApps:
    """The agent's `make_app`: a FakeApplication per workspace, scripted before the session
    opens it (`app`) or after; every one built is in `built`, in order (a workspace the pool
    closed and reopened is built again)."""

    def __init__(self, settings: Settings = SETTINGS) -> None:
        self.settings = settings
        self.scripted: dict[Path, FakeApplication] = {}
        self.built: list[FakeApplication] = []

    def app(self, workspace: Path) -> FakeApplication:
        """The Application the next session in `workspace` opens (made now, to script it)."""
        root = workspace.resolve()
        if root not in self.scripted:
            self.scripted[root] = FakeApplication(root, self.settings)
        return self.scripted[root]

    def __call__(self, workspace: Path, unsaved_files: UnsavedFiles) -> FakeApplication:
        app = self.scripted.pop(workspace, None) or FakeApplication(workspace, self.settings)
        app.unsaved_files = unsaved_files
        self.built.append(app)
        return app


def with_detected_tests(workspace: Path) -> str:
    """Give the workspace tests that are found, not set (a Makefile's test target): the
    command that is asked about once."""
    (workspace / "Makefile").write_text("test:\n\tpython -m pytest\n", encoding="utf-8")
    return "make test"


def bundled_diff(rel: str, before: str | None, after: str) -> str:
    """One file's part of an edit's diff, in the bundled server's format."""
    header = f"diff --git a/{rel} b/{rel}\n" + ("new file mode 100644\n" if before is None else "")
    lines = difflib.unified_diff(
        (before or "").splitlines(keepends=True),
        after.splitlines(keepends=True),
        "/dev/null" if before is None else f"a/{rel}",
        f"b/{rel}",
    )
    return header + "".join(lines)


def _pieces(text: str, count: int) -> list[str]:
    size = max(1, -(-len(text) // max(1, count)))
    return [text[start : start + size] for start in range(0, len(text), size)]


def _finished(number: int, run: CommandRun) -> TestRunFinished:
    return TestRunFinished(
        iteration=number,
        command=run.command,
        scope=SuiteScope.WHOLE,
        exit_code=run.exit_code,
        stdout=run.stdout,
        stderr=run.stderr,
        findings=list(run.findings),
    )


def _result(iterations: list[WorkflowIteration]) -> WorkflowRun:
    """The typed run as workflow/runs.py returns it: green when the last test passed and the
    judge did not refuse them (its refusal is the run's)."""
    last = iterations[-1].test if iterations else None
    judge = iterations[-1].judge if iterations else None
    green = last is not None and last.exit_code == 0 and judge is None
    diff = "".join(it.aider.diff for it in iterations if it.aider is not None)
    outcome = WorkflowResult(
        status=WorkflowStatus.SUCCESS if green else WorkflowStatus.FAILURE,
        content="the tests pass" if green else "the tests still fail after the retries",
        reason=None if green else ErrorReason.MAX_RETRIES_REACHED,
        iterations=iterations,
        analysis_result=CombinedAnalysisResult(
            verdict=Verdict.SUCCESS if green else Verdict.FAILURE, message=""
        ),
        judge=judge,
    )
    return WorkflowRun(outcome=outcome, changes=RunChanges(diff=diff))


def _progress(ctx: RequestContext, phase: str) -> None:
    """Where the scripted run is, as the loop reports it (workflow/report.py): the typed event
    and its sentence."""
    progress = WorkflowProgress(phase=phase, percentage=0)
    ctx.report_event(progress)
    ctx.report_progress(progress.message, None)


if TYPE_CHECKING:  # mypy keeps the fake an AcpHost as the protocol changes
    from aider_lsp.acp.host import AcpHost

    _checked: AcpHost = FakeApplication(Path())
