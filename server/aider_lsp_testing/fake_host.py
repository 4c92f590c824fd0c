"""A small in-memory WorkflowHost: the loop's decisions tested in milliseconds.

Why: the real host drives Aider and the user's test command (seconds to a minute a run); the
orchestrator's rules (the tests are the judge, a no-change edit retried, the analysis beside the
next edit, the budget before each model call, failing tests first, cancel in each phase) are
decisions over typed answers, so a fake that answers from scripts shows each rule alone.
Edits write their files into a real (temporary) workspace and add them to the run's checkpoint
as the Aider executor does, so the run's diff and undo are the real ones. Every call is logged
in `calls`; a phase named in `hold` waits (until cancelled) so a test can cancel it mid-way.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from aider_lsp.config.settings import Settings, load_settings
from aider_lsp.guards.budget import RunBudget
from aider_lsp.guards.files import FileAccessManager
from aider_lsp.history.checkpoints import ACTIVE_CHECKPOINT, CheckpointStore, snapshot_files
from aider_lsp.llm.asks import answer_of
from aider_lsp.models import (
    AiderEditOutcome,
    AnalysisRequest,
    AssociativeMatchResult,
    CallUsage,
    CombinedAnalysisResult,
    CommandRun,
    ContextGenerationInput,
    Definition,
    DevelopmentPlan,
    ErrorReason,
    MatchItem,
    ModelAnswer,
    PlanRequest,
    Ranking,
    ReplyCallback,
    Signals,
    TaskError,
    TaskResult,
    Verdict,
    Why,
    WorkflowUsage,
    complete_result,
    failed_result,
)
from aider_lsp.workflow.host import WorkflowHost

PLAN = "plan"
EDIT = "edit"
TEST = "test"
ANALYSIS = "analysis"


@dataclass(frozen=True)
class ScriptedEdit:
    """One Aider edit's script: the files it writes (path → text), or its error; `reply` is
    Aider's prose; `answered` False means no well-formed answer came (the server failed)."""

    writes: dict[str, str] = field(default_factory=dict)
    reply: str = ""
    error: TaskError | None = None
    answered: bool = True
    usage: CallUsage | None = None


def writes(path: str, text: str, *, tokens: int = 0) -> ScriptedEdit:
    """An edit that writes `text` to `path` (spending `tokens` of Aider's when given)."""
    usage = CallUsage(input_tokens=tokens) if tokens else None
    return ScriptedEdit(writes={path: text}, usage=usage)


def no_change(reply: str = "I would change multiply.") -> ScriptedEdit:
    """Aider answered in prose and changed no file (a failed attempt, retried)."""
    return ScriptedEdit(reply=reply)


def edit_fails(message: str, reason: ErrorReason = ErrorReason.CONNECTION_ERROR) -> ScriptedEdit:
    """An edit that failed before changing anything (no well-formed answer)."""
    return ScriptedEdit(error=TaskError(reason=reason, message=message), answered=False)


def green_run(command: str = "pytest") -> CommandRun:
    return CommandRun(command=command, exit_code=0, stdout="1 passed")


def rest_run(deselected: int, *, failing: str | None = None) -> CommandRun:
    """A pytest run of the rest of the suite that left out `deselected` tests: green, or red
    with `failing` (a node id) failed."""
    if failing is not None:
        return CommandRun(
            command="pytest",
            exit_code=1,
            stdout=f"FAILED {failing} - boom\n1 failed, {deselected} deselected",
        )
    return CommandRun(command="pytest", exit_code=0, stdout=f"5 passed, {deselected} deselected")


def red_run(*failing: str, command: str = "pytest") -> CommandRun:
    """A red run whose pytest summary names `failing` (node ids) as failed."""
    lines = [f"FAILED {node} - assert 2 == 4" for node in failing] or ["1 failed"]
    return CommandRun(command=command, exit_code=1, stdout="\n".join(lines))


def analysis(verdict: Verdict, message: str = "why", next_prompt: str | None = None) -> TaskResult:
    """The analysis template's answer (RETRY gets a next prompt unless one is given)."""
    if verdict is Verdict.RETRY and next_prompt is None:
        next_prompt = "try again"
    parsed = CombinedAnalysisResult(verdict=verdict, message=message, next_prompt=next_prompt)
    return complete_result(parsed.model_dump_json(), parsed=parsed)


def plan(instructions: str, files: Sequence[str], test_command: str | None = "pytest") -> TaskResult:
    """The planning template's answer."""
    parsed = DevelopmentPlan(instructions=instructions, files=list(files), test_command=test_command)
    return complete_result(parsed.model_dump_json(), parsed=parsed)


def indexed(
    path: str,
    score: float,
    *,
    definition: float = 0.0,
    text: float = 1.0,
    uncapped: float | None = None,
    size: int = 0,
    prior: float = 1.0,
    defines: Sequence[str] = (),
    summary: str = "",
) -> MatchItem:
    """One file as the index answers it: its score (capped to 0..1; `uncapped` the score before
    the cap, `score` when not given), its size in bytes, the signals that found it (a
    `definition` match makes the index confident, text alone does not; a `prior` below 1: a
    test or doc file the goal is not about), the definitions in it that matched (`defines`)
    and its summary."""
    why = Why(kind="code", definitions=[Definition(name=name, line=1) for name in defines])
    return MatchItem(
        id=path,
        content=summary or path,
        relevance_score=score,
        content_type="file_summary",
        source_path=path,
        ranking=Ranking(
            score=score if uncapped is None else uncapped,
            size=size,
            kind="code",
            why=why,
            signals=Signals(text=text, definition=definition, prior=prior),
        ),
    )


def product_settings(**changes: object) -> Settings:
    """The product's defaults (no environment read), with the changes a test names (camelCase,
    as an editor sends them): what a fast test runs on, so that a changed default fails one."""
    return load_settings(dict(changes), environ={})


# what the fast decision tests run on: the product's defaults but the suite run before the first
# edit (their scripted test runs are the edits'; test_workflow_tests_first.py runs with it on)
WITHOUT_TESTS_FIRST = product_settings(testsBeforeFirstEdit=False)


def model_fails(
    message: str = "the model answered 500", reason: ErrorReason = ErrorReason.LLM_ERROR
) -> TaskResult:
    return failed_result(reason, message)


class FakeHost:
    """A WorkflowHost answering from scripts (queues consumed in order) over a real workspace."""

    def __init__(
        self, workspace: Path, settings: Settings | None = None, *, tokens_per_call: int = 0
    ) -> None:
        self._workspace = workspace
        # the product's defaults unless a test says otherwise: a default changed fails a fast test
        self._settings = settings or product_settings()
        self._files = FileAccessManager(workspace)
        self._checkpoints = CheckpointStore(self._files)
        self.edits: deque[ScriptedEdit] = deque()
        self.test_runs: deque[CommandRun] = deque()
        self.plans: deque[TaskResult] = deque()
        self.analyses: deque[TaskResult] = deque()
        self.plan_requests: list[PlanRequest] = []  # what each plan call was told
        self.analysis_requests: list[AnalysisRequest] = []  # what each analysis call was told
        self.tokens_per_call = tokens_per_call  # what each plan or analysis call spends
        self.usage = WorkflowUsage()
        self.budget: tuple[int | None, float | None] | None = None
        self.calls: list[str] = []  # "plan", "edit", "test:<command>", "analysis", in call order
        self.prompts: list[str] = []  # each edit's prompt
        self.edit_files: list[tuple[list[str], list[str]]] = []  # each edit's files and those it dropped
        self.edit_images: list[list[str]] = []  # each edit's image files
        # calls that wait until cancelled: a phase ("edit": every edit) or one call ("edit#2")
        self.hold: set[str] = set()
        self.entered: dict[str, asyncio.Event] = {}
        self.ended_chats: list[str] = []
        self.matches: list[MatchItem] = []  # what the index answers (best first)
        self.unsaved_paths: list[str] = []  # open in the editor with unsaved changes
        self.context_requests: list[ContextGenerationInput] = []
        self.durations: dict[str, float] = {}  # what `suite_seconds` answers (earlier runs' times)
        self._sessions = 0

    # -- what the orchestrator reads ------------------------------------------------------------
    @property
    def settings(self) -> Settings:
        return self._settings

    @property
    def workspace(self) -> Path:
        return self._workspace

    @property
    def checkpoints(self) -> CheckpointStore:
        return self._checkpoints

    def spent(self) -> WorkflowUsage:
        return self.usage

    def set_budget(self, max_tokens: int | None, max_cost: float | None) -> RunBudget:
        self.budget = (max_tokens, max_cost)
        return RunBudget(max_tokens, max_cost, self.spent, self._settings.name)

    def clear_budget(self) -> None:
        self.budget = None

    def resolve_path(self, path: str) -> Path:
        return self._files.resolve(path)

    def relative_path(self, path: str) -> str:
        return self._files.relative(path)

    # -- the steps ---------------------------------------------------------------------------
    def entered_event(self, phase: str) -> asyncio.Event:
        """Set when a call of `phase` ("edit", or one call: "edit#2") starts (a test waits for
        it before cancelling)."""
        return self.entered.setdefault(phase, asyncio.Event())

    async def _enter(self, phase: str) -> None:
        """A call starts: it yields to the loop once, as real I/O does (so a step running
        beside gets its turn), and waits until cancelled when held."""
        number = sum(1 for call in self.calls if call.split(":", 1)[0] == phase)
        self.entered_event(phase).set()
        self.entered_event(f"{phase}#{number}").set()
        await asyncio.sleep(0)
        if phase in self.hold or f"{phase}#{number}" in self.hold:
            await asyncio.get_running_loop().create_future()  # until cancelled

    async def make_plan(self, request: PlanRequest) -> ModelAnswer[DevelopmentPlan]:
        self.plan_requests.append(request)
        return answer_of(await self._answer(PLAN, self.plans), DevelopmentPlan)

    async def analyse(self, request: AnalysisRequest) -> ModelAnswer[CombinedAnalysisResult]:
        self.analysis_requests.append(request)
        return answer_of(await self._answer(ANALYSIS, self.analyses), CombinedAnalysisResult)

    async def _answer(self, phase: str, queue: deque[TaskResult]) -> TaskResult:
        """The scripted answer of a plan or analysis call, read by the product's own reader."""
        self.calls.append(phase)
        await self._enter(phase)
        self._spend(self.tokens_per_call)
        if not queue:
            raise AssertionError(f"unscripted {phase} call")
        return queue.popleft()

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
        self.calls.append(EDIT)
        self.prompts.append(prompt)
        self.edit_files.append((list(files), list(dropped)))
        self.edit_images.append(list(images))
        await self._enter(EDIT)
        if not self.edits:
            raise AssertionError("unscripted edit")
        script = self.edits.popleft()
        if session_id is None:
            self._sessions += 1
            session_id = f"chat-{self._sessions}"
        self.usage = self.usage.model_copy(update={"aider": self.usage.aider.plus(script.usage)})
        if script.error is not None:
            answered = False if script.answered else None  # Aider ran and said why (or never answered)
            return AiderEditOutcome(
                tool="aider_chat", error=script.error, files=list(files), server_success=answered
            )
        return self._apply(script, files, session_id)

    def _apply(self, script: ScriptedEdit, files: Sequence[str], session_id: str) -> AiderEditOutcome:
        """Write the script's files as Aider would, inside the run's checkpoint; a file written
        outside `files` is reported as the bundled server does (`files_outside_editable`)."""
        paths = list(dict.fromkeys([*files, *script.writes]))
        active = ACTIVE_CHECKPOINT.get()
        if active is not None:
            self._checkpoints.add(active, paths)
        before = snapshot_files(self._files.resolve, paths)
        for path, text in script.writes.items():
            self._files.resolve(path).parent.mkdir(parents=True, exist_ok=True)
            self._files.resolve(path).write_text(text)
        written = [p for p, text in script.writes.items() if before.get(p) != text.encode()]
        changed = [p for p in written if p in files and before.get(p) is not None]
        created = [p for p in written if before.get(p) is None]
        return AiderEditOutcome(
            tool="aider_chat",
            success=bool(changed or created),
            server_success=True,
            diff="".join(f"--- {p}\n" for p in [*changed, *created]),
            changed_files=changed,
            created_files=created,
            reply=script.reply,
            usage=script.usage,
            server_report={"session_id": session_id},
            files=list(files),
            files_outside_editable=[p for p in written if p not in files],
        )

    async def end_chat(self, session_id: str) -> None:
        self.ended_chats.append(session_id)

    async def run_tests(self, command: str | None = None, fallback_files: Sequence[str] = ()) -> CommandRun:
        self.calls.append(f"{TEST}:{command}")
        await self._enter(TEST)
        if not self.test_runs:
            raise AssertionError(f"unscripted test run: {command}")
        run = self.test_runs.popleft()
        return run.model_copy(update={"command": command or run.command})

    def suite_seconds(self, command: str) -> float | None:
        return self.durations.get(command)

    async def find_context(self, request: ContextGenerationInput) -> AssociativeMatchResult:
        self.context_requests.append(request)
        return AssociativeMatchResult(context_summary="", matches=list(self.matches))

    def unsaved(self) -> Collection[str]:
        return list(self.unsaved_paths)

    async def start_aider(self) -> bool:
        return True

    def _spend(self, tokens: int) -> None:
        if tokens:
            call = CallUsage(input_tokens=tokens, requests=1)
            self.usage = self.usage.model_copy(update={"planning": self.usage.planning.plus(call)})


if TYPE_CHECKING:  # mypy keeps the fake a WorkflowHost as the protocol changes
    _checked: WorkflowHost = FakeHost(Path())
