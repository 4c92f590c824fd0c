"""Every data model that crosses a module boundary, in one place.

TaskResult is how every command, tool and template answers; errors are reported in it, never
raised to the user. Each tool's contract is one pydantic model here (`…Args`): the LSP
command's argument, the JSON schema offered to a model and the executor's validation all
come from it.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Collection, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from enum import StrEnum
from typing import Annotated, Any, TypeVar

from pydantic import (
    AliasChoices,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    ValidationError,
    computed_field,
    field_validator,
    model_validator,
)
from pydantic.json_schema import SkipJsonSchema

# Progress sink shared by long services: (message, percentage or None).
ProgressCallback = Callable[[str, int | None], None]
# The editor's files with unsaved changes (workspace-relative), asked for at each edit.
UnsavedFiles = Callable[[], Collection[str]]


class Severity(StrEnum):
    ERROR = "error"
    WARNING = "warning"
    INFORMATION = "information"
    HINT = "hint"


class Finding(BaseModel):
    """One problem found in a file (a failing test, a compiler error, the analysis' advice).

    Protocol-free: the LSP layer turns findings into diagnostics, the CLI prints them.
    `line` and `column` are 1-based as tools print them; 0 means "the whole file"."""

    path: str
    line: int = Field(default=0, ge=0)
    column: int = Field(default=0, ge=0)
    message: str
    severity: Severity = Severity.ERROR
    source: str = "tests"  # the tool that said it: pytest, ruff, mypy, tsc, gcc, analysis, …


# Ask the user to pick one of the actions for a message (the editor's window/showMessageRequest):
# the action chosen, or None when the user dismissed the question or the editor could not show it.
AskCallback = Callable[[str, Sequence[str]], Awaitable[str | None]]

# Sink for a run's current findings: each call REPLACES the previous set (an empty list clears).
FindingsCallback = Callable[[list[Finding]], None]


def _no_progress(message: str, percentage: int | None) -> None:
    """Default progress sink: nothing to report to."""


def _no_findings(findings: list[Finding]) -> None:
    """Default findings sink: nobody shows them."""


def _nothing_to_clear() -> int:
    """Default findings clearer: nothing is shown, so no document is cleared."""
    return 0


def _no_cancelled_answer(result: TaskResult) -> None:
    """Default: a cancelled request is answered by its caller's generic "cancelled"."""


@dataclass
class RequestContext:
    """What the caller (the editor, the CLI) gives a request: where to report progress and
    findings (test failures, analysis; the LSP layer publishes them as diagnostics), how to
    clear every finding shown (returns how many documents it cleared), and the
    workspace-relative paths open in the editor (a ranking hint), and how to ask the user a
    question (None: this caller cannot ask, e.g. the CLI or a client without
    window/showMessageRequest). Unsaved buffers are not here: the Application asks its
    `unsaved_files` provider at each edit.
    `answer_cancelled` takes what a command did before it was cancelled (a run's changed files,
    for the user to undo): the answer the caller sends when it still answers a cancelled request."""

    report_progress: ProgressCallback = _no_progress
    report_findings: FindingsCallback = _no_findings
    clear_findings: Callable[[], int] = _nothing_to_clear
    open_files: list[str] = field(default_factory=list)
    answer_cancelled: Callable[[TaskResult], None] = _no_cancelled_answer
    ask: AskCallback | None = None


class TaskStatus(StrEnum):
    COMPLETE = "COMPLETE"
    CONTINUATION = "CONTINUATION"
    FAILED = "FAILED"


class ErrorReason(StrEnum):
    """Why a task failed; `notes.error.reason` holds one of these values."""

    INPUT_VALIDATION_FAILURE = "input_validation_failure"
    CONFIGURATION_ERROR = "configuration_error"
    CONNECTION_ERROR = "connection_error"
    EXECUTION_TIMEOUT = "execution_timeout"
    TOOL_EXECUTION_ERROR = "tool_execution_error"
    LLM_ERROR = "llm_error"
    OUTPUT_FORMAT_FAILURE = "output_format_failure"
    CONTEXT_RETRIEVAL_FAILURE = "context_retrieval_failure"
    PROTOCOL_ERROR = "protocol_error"
    TEMPLATE_NOT_FOUND = "template_not_found"
    ACCESS_DENIED = "access_denied"
    CANCELLED = "cancelled"
    UNEXPECTED_ERROR = "unexpected_error"
    # a workflow run's own endings
    BUDGET_EXCEEDED = "budget_exceeded"
    MAX_RETRIES_REACHED = "max_retries_reached"
    GOAL_NOT_REACHED = "goal_not_reached"


class TaskError(BaseModel):
    type: str = "TASK_FAILURE"
    reason: ErrorReason
    message: str


class TaskResult(BaseModel):
    """The answer of every command, tool and template.

    `error` is the typed error; on the wire it is `notes.error` (the seeds' shape). The two are
    made one at construction (either may be given), so reading `error` validates nothing."""

    model_config = ConfigDict(populate_by_name=True)

    status: TaskStatus
    content: str = ""
    notes: dict[str, Any] = Field(default_factory=dict)
    parsed_content: Any | None = Field(default=None, alias="parsedContent")
    error: TaskError | None = Field(default=None, exclude=True)
    # the LLM layer refused or stopped the call because the run's budget is spent (typed for
    # the workflow, which ends with budget_exceeded; the wire keeps `notes.budget_exhausted`)
    budget_exhausted: bool = Field(default=False, exclude=True)

    @model_validator(mode="after")
    def _one_error(self) -> TaskResult:
        """`error` and `notes.error` say the same thing from the start."""
        if self.error is not None:
            self.notes["error"] = self.error.model_dump(mode="json")
        elif self.notes.get("error"):
            self.error = TaskError.model_validate(self.notes["error"])
        return self

    @property
    def ok(self) -> bool:
        return self.status is not TaskStatus.FAILED

    def to_wire(self) -> dict[str, Any]:
        """JSON-ready dict with the wire's camelCase `parsedContent`."""
        return self.model_dump(mode="json", by_alias=True)


def failed_result(
    reason: ErrorReason | str,
    message: str,
    *,
    content: str | None = None,
    notes: dict[str, Any] | None = None,
    error_type: str = "TASK_FAILURE",
) -> TaskResult:
    """Build the one FAILED TaskResult shape: `notes.error = {type, reason, message}`."""
    return TaskResult(
        status=TaskStatus.FAILED,
        content=message if content is None else content,
        notes=dict(notes or {}),
        error=TaskError(type=error_type, reason=ErrorReason(reason), message=message),
    )


def complete_result(
    content: str = "", *, notes: dict[str, Any] | None = None, parsed: Any | None = None
) -> TaskResult:
    return TaskResult(
        status=TaskStatus.COMPLETE, content=content, notes=dict(notes or {}), parsedContent=parsed
    )


class AiderUsage(BaseModel):
    """An Aider edit's own model calls, as the bundled server reports them (an extension of the
    public contract: a server that says nothing has `usage` None, never zero)."""

    prompt_tokens: int = Field(default=0, ge=0)
    completion_tokens: int = Field(default=0, ge=0)
    cost: float | None = None


class AiderEditOutcome(BaseModel):
    """What one Aider edit (`aider_ai_code` / `aider_chat`) did, as the bridge judged it from the
    files themselves, never from the server's `success` alone.

    The bridge fills the edit's fields; the executor makes the outcome of an edit it stopped
    before Aider ran, and adds what undo covers (checkpoint, files, fallback) to a new copy.
    `to_task_result()` is the one place it becomes the seeds' TaskResult; `server_success`
    None means no well-formed answer came (a failure with `error`).
    """

    model_config = ConfigDict(frozen=True)

    tool: str
    success: bool = False  # an editable file really changed and the server said so
    server_success: bool | None = None
    diff: str = ""
    changed_files: list[str] = Field(default_factory=list)
    created_files: list[str] = Field(default_factory=list)
    files_outside_editable: list[str] = Field(default_factory=list)  # as the server reported them
    conflicts: list[str] = Field(default_factory=list)  # saved by someone else during the edit
    reply: str = ""
    usage: AiderUsage | None = None  # None: not reported
    # the server's other keys, passed on as it sent them (session_id, turn, errors,
    # declined_files, refused_files, reverted_files)
    server_report: dict[str, Any] = Field(default_factory=dict)
    payload: dict[str, Any] | None = None  # the server's JSON answer (`parsedContent`)
    diagnostics: dict[str, Any] = Field(default_factory=dict)  # server_stderr, raw, server_result
    error: TaskError | None = None
    # why the executor stopped the edit before Aider ran (with `error`)
    refused: list[str] = Field(default_factory=list)  # secret or outside files: the reasons
    unsaved_files: list[str] = Field(default_factory=list)  # open with unsaved changes
    # added by the executor
    files: list[str] | None = None
    checkpoint_id: str | None = None
    not_covered_by_undo: list[str] = Field(default_factory=list)
    fallback: str | None = None

    @property
    def session_id(self) -> str | None:
        """The Aider chat this edit continued or started (`aider_chat` only)."""
        kept = self.server_report.get("session_id")
        return kept if isinstance(kept, str) and kept and self.fallback is None else None

    def to_task_result(self) -> TaskResult:
        """The seeds' TaskResult: FAILED with `notes.error` when `error` is set; a chat turn
        answers with its reply (and diff), an edit with its diff."""
        notes = self._notes()
        if self.error is not None:
            notes["error"] = self.error.model_dump(mode="json")
            return TaskResult(status=TaskStatus.FAILED, content=self.error.message, notes=notes)
        content = self.diff
        if self.tool == "aider_chat":
            content = self.reply + (f"\n\n{self.diff}" if self.diff else "")
        return complete_result(content, notes=notes, parsed=self.payload)

    def _notes(self) -> dict[str, Any]:
        """The wire's notes keys, in the order clients have always seen them."""
        notes: dict[str, Any] = dict(self.diagnostics)
        if self.refused:
            notes["refused"] = list(self.refused)
        if self.unsaved_files:
            notes["unsaved_files"] = list(self.unsaved_files)
        if self.server_success is not None:
            notes.update(
                tool=self.tool,
                success=self.success,
                server_success=self.server_success,
                diff=self.diff,
                changed_files=list(self.changed_files),
                files_outside_editable=list(self.files_outside_editable),
                created_files=list(self.created_files),
                reply=self.reply,
            )
            notes.update(self.server_report)
            if self.conflicts:
                notes["conflicts"] = list(self.conflicts)
            if self.usage is not None:
                notes["usage"] = self.usage.model_dump()
        if self.fallback is not None:  # the server keeps no chats: no session to continue
            notes["session_id"] = None
            notes["fallback"] = self.fallback
        if self.not_covered_by_undo:
            notes["not_covered_by_undo"] = list(self.not_covered_by_undo)
        if self.checkpoint_id is not None:
            notes["checkpoint_id"] = self.checkpoint_id
        if self.files is not None:
            notes["files"] = list(self.files)
        return notes


class DevelopmentPlan(BaseModel):
    """What the planner hands to Aider: instructions, the files to edit, and how to test."""

    instructions: str = Field(min_length=1)
    files: list[str] = Field(default_factory=list)
    test_command: str | None = None

    @field_validator("files")
    @classmethod
    def _relative_paths(cls, files: list[str]) -> list[str]:
        for path in files:
            if path.startswith("/"):
                raise ValueError(f"{path} is an absolute path: files must be relative to the workspace")
            if not path or "\x00" in path:
                raise ValueError(f"files must be relative paths inside the workspace: {path!r}")
        return files


class Verdict(StrEnum):
    SUCCESS = "SUCCESS"
    RETRY = "RETRY"
    FAILURE = "FAILURE"


class CombinedAnalysisResult(BaseModel):
    """The analysis after a test run. RETRY must say what to try next."""

    verdict: Verdict
    message: str
    next_prompt: str | None = None
    next_files: list[str] | None = None

    @model_validator(mode="after")
    def _retry_needs_prompt(self) -> CombinedAnalysisResult:
        if self.verdict is Verdict.RETRY and not (self.next_prompt or "").strip():
            raise ValueError("a RETRY verdict requires next_prompt")
        return self


class MatchItem(BaseModel):
    id: str
    content: str
    relevance_score: float = Field(ge=0.0, le=1.0)
    content_type: str = "file_content"
    source_path: str | None = None
    metadata: dict[str, Any] | None = None


class AssociativeMatchResult(BaseModel):
    context_summary: str
    matches: list[MatchItem] = Field(default_factory=list)
    error: str | None = None


class DataContext(BaseModel):
    retrieved_at: datetime = Field(default_factory=lambda: datetime.now(UTC))
    source_query: str | None = None
    items: list[MatchItem] = Field(default_factory=list)
    overall_summary: str | None = None


class ContextGenerationInput(BaseModel):
    """A request for relevant workspace context."""

    query: str | None = None
    template_description: str | None = None
    inputs: dict[str, Any] = Field(default_factory=dict)
    history: str | None = None
    target_files: list[str] = Field(default_factory=list)
    open_files: list[str] = Field(default_factory=list)
    max_results: int = Field(default=10, ge=1, le=200)

    @property
    def effective_query(self) -> str:
        """The text to search for: the query, else the description, else the inputs."""
        if self.query and self.query.strip():
            return self.query.strip()
        if self.template_description and self.template_description.strip():
            return self.template_description.strip()
        return " ".join(str(value) for value in self.inputs.values()).strip()


class HistoryConfigSettings(BaseModel):
    use_session_history: bool = True
    history_turns_to_include: int | None = Field(default=None, ge=0)
    record_in_session_history: bool = True


class ToolSpec(BaseModel):
    """A tool as the registry knows it: canonical id (`aider:automatic`) and its JSON schema."""

    name: str = Field(min_length=1)
    description: str
    input_schema: dict[str, Any] = Field(default_factory=lambda: {"type": "object"})
    read_only: bool = True

    @property
    def provider_name(self) -> str:
        """The spelling LLM providers accept (no ':'): `aider:automatic` → `aider_automatic`."""
        return provider_safe_name(self.name)

    @classmethod
    def for_args(
        cls, name: str, description: str, args: type[BaseModel], *, read_only: bool = True
    ) -> ToolSpec:
        """A tool whose schema is its argument model's JSON schema."""
        return cls(
            name=name, description=description, input_schema=args.model_json_schema(), read_only=read_only
        )


def provider_safe_name(name: str) -> str:
    return "".join(ch if ch.isalnum() or ch in "_-" else "_" for ch in name)


# -- tool contracts ------------------------------------------------------------------------
def _json_array_string(value: Any) -> Any:
    """A list of paths may come as a JSON-array string (models and scripts send both);
    an empty string means "not given"."""
    if value == "":
        return None
    if isinstance(value, str):
        try:
            return json.loads(value)
        except json.JSONDecodeError:
            raise ValueError("must be a list of paths or a JSON array string") from None
        except RecursionError:  # `[[[[…` a hundred thousand deep: refused, not a crash
            raise ValueError("is a JSON string nested too deeply: send a flat list of paths") from None
    return value


PathList = Annotated[list[str], BeforeValidator(_json_array_string)]
OptionalPathList = Annotated[list[str] | None, BeforeValidator(_json_array_string)]


class ToolArgs(BaseModel):
    """Base of each tool's argument model. Unknown fields are ignored here (a model may add
    some); the LSP commands built on these models refuse them."""

    model_config = ConfigDict(populate_by_name=True)


class ReadFilesArgs(ToolArgs):
    file_paths: PathList = Field(description="Workspace-relative paths of the files to read.")


class ShellCommandArgs(ToolArgs):
    command: str = Field(description="The command line to run in the workspace.")
    timeout: float | None = Field(default=None, gt=0, description="Seconds before it is stopped.")


class GetContextArgs(ToolArgs):
    query: str = Field(description="What the files should be about.")
    history: str | list[str] | None = Field(
        default=None, description="Recent conversation, used as a weaker hint."
    )
    target_files: PathList = Field(
        default_factory=list, description="Files already known to matter; they rank first."
    )
    max_results: int | None = Field(default=None, ge=1, le=200)
    # the editor's open files, a ranking hint the LSP layer adds (not offered to a model)
    open_files: SkipJsonSchema[PathList] = Field(default_factory=list)

    @property
    def history_text(self) -> str | None:
        return "\n".join(self.history) if isinstance(self.history, list) else self.history


_FILE_CONTEXT = "Workspace-relative files Aider may edit (a list or a JSON-array string)."


class Position(BaseModel):
    line: int = Field(ge=0)
    character: int = Field(ge=0)


class Range(BaseModel):
    """An editor range (0-based lines and characters, as LSP sends them)."""

    start: Position
    end: Position


class Selection(BaseModel):
    """The editor's selection an edit is about: its file, range and text."""

    uri: str
    range: Range | None = None
    text: str | None = None


class AiderAutomaticArgs(ToolArgs):
    prompt: str = Field(description="What to change, precisely.")
    file_context: OptionalPathList = Field(default=None, description=_FILE_CONTEXT)
    # files Aider may read but not edit (programmatic callers; not offered to a model)
    readonly_files: SkipJsonSchema[OptionalPathList] = None


class AiderInteractiveArgs(ToolArgs):
    query: str | None = Field(
        default=None,
        validation_alias=AliasChoices("query", "prompt"),
        description="The message to Aider (`prompt` is accepted too).",
    )
    file_context: OptionalPathList = Field(default=None, description=_FILE_CONTEXT)
    session_id: str | None = Field(default=None, description="Continue this session.")
    end_session: bool = Field(default=False, description="End the session instead.")


ArgsT = TypeVar("ArgsT", bound=BaseModel)


def validation_message(exc: ValidationError) -> str:
    """One line naming each bad field: `file_context: must be a list of paths …`."""
    problems = []
    for error in exc.errors():
        where = ".".join(str(part) for part in error["loc"]) or "argument"
        problems.append(f"missing {where}" if error["type"] == "missing" else f"{where}: {error['msg']}")
    return "; ".join(problems)


def parse_args(model: type[ArgsT], params: dict[str, Any]) -> ArgsT | TaskResult:
    """A tool's arguments, or a FAILED input_validation_failure naming the fields (never raised)."""
    try:
        return model.model_validate(params)
    except ValidationError as exc:
        return failed_result(ErrorReason.INPUT_VALIDATION_FAILURE, validation_message(exc))


class WorkflowRequest(BaseModel):
    """What the editor or the CLI asks of a workflow run (plan → edit → test → analyse)."""

    goal: str = Field(min_length=1)
    context: str = ""
    test_command: str | None = None
    max_retries: int | None = Field(default=None, ge=0, le=20)  # None: settings.maxRetries
    file_context: OptionalPathList = None  # a list or a JSON-array string
    # a plan the user asked for: it runs beside the first edit and shapes the second (without
    # it, a plan runs only where the index has no confident answer or no test command is known)
    plan: bool = False

    @field_validator("goal")
    @classmethod
    def _goal_not_blank(cls, goal: str) -> str:
        if not goal.strip():
            raise ValueError("the goal is empty: say what the code should do")
        return goal


class WorkflowStatus(StrEnum):
    SUCCESS = "SUCCESS"
    FAILURE = "FAILURE"


class AiderSpend(BaseModel):
    """What Aider's own model calls spent, summed over edits. `edits` counts the edits whose
    server reported usage, `unreported` those whose server said nothing (the public
    aider-mcp-server): with no reported edit at all the spend is unknown, never zero."""

    prompt_tokens: int = 0
    completion_tokens: int = 0
    total_tokens: int = 0
    cost: float | None = None
    edits: int = 0
    unreported: int = 0

    @property
    def reported(self) -> bool:
        """Whether anything is known: some edit reported, or no edit ran at all."""
        return self.edits > 0 or self.unreported == 0

    def plus(self, usage: AiderUsage | None) -> AiderSpend:
        """These totals and one more edit's usage (None: the server reported none)."""
        if usage is None:
            return self.model_copy(update={"unreported": self.unreported + 1})
        cost = self.cost if usage.cost is None else (self.cost or 0.0) + usage.cost
        return AiderSpend(
            prompt_tokens=self.prompt_tokens + usage.prompt_tokens,
            completion_tokens=self.completion_tokens + usage.completion_tokens,
            total_tokens=self.total_tokens + usage.prompt_tokens + usage.completion_tokens,
            cost=cost,
            edits=self.edits + 1,
            unreported=self.unreported,
        )

    def since(self, start: AiderSpend) -> AiderSpend:
        """What was spent between `start` and these totals."""
        return AiderSpend(
            prompt_tokens=self.prompt_tokens - start.prompt_tokens,
            completion_tokens=self.completion_tokens - start.completion_tokens,
            total_tokens=self.total_tokens - start.total_tokens,
            cost=None if self.cost is None else self.cost - (start.cost or 0.0),
            edits=self.edits - start.edits,
            unreported=self.unreported - start.unreported,
        )

    def describe(self) -> str:
        """`Aider: 1234 tokens · $0.0120` (or `cost n/a`), `Aider: not reported`."""
        if not self.reported:
            return "Aider: not reported"
        money = f"${self.cost:.4f}" if self.cost is not None else "cost n/a"
        return f"Aider: {self.total_tokens} tokens · {money}"


class UsageTotal(BaseModel):
    """Planning/analysis and Aider together: what the budget counts."""

    total_tokens: int = 0
    cost: float | None = None


class Budget(BaseModel):
    """A run's cap on tokens and/or cost (aiderLsp.budget). Why one value: the rule ("spent
    reaches the cap") and the message the user reads are the same wherever a run is stopped,
    by the LLM layer before a call or by the workflow between steps."""

    model_config = ConfigDict(frozen=True)

    max_tokens: int | None = None
    max_cost: float | None = None

    @property
    def capped(self) -> bool:
        return self.max_tokens is not None or self.max_cost is not None

    def exceeded(self, spent: UsageTotal) -> str | None:
        """Why no further call may run, naming the setting to raise; None while within."""
        if self.max_tokens is not None and spent.total_tokens >= self.max_tokens:
            return (
                f"the token budget of {self.max_tokens} is used up ({spent.total_tokens} used): raise "
                "aiderLsp.budget.maxTokens (tokens per run, planning/analysis and Aider together), "
                "or give a smaller goal"
            )
        cost = spent.cost or 0.0
        if self.max_cost is not None and cost >= self.max_cost:
            return (
                f"the cost budget of {self.max_cost:g} is used up ({cost:.4f} used): raise "
                "aiderLsp.budget.maxCost (cost per run, planning/analysis and Aider together), "
                "or give a smaller goal"
            )
        return None

    def remaining_tokens(self, spent: UsageTotal) -> int | None:
        """The tokens the next call may spend (its limit in the model library), None: no cap."""
        return None if self.max_tokens is None else max(1, self.max_tokens - spent.total_tokens)


class WorkflowUsage(BaseModel):
    """What a run spent. The top-level fields are the planning/analysis model's (the shape
    clients have always read); `aider` is Aider's own calls, `all` both together (the budget)."""

    input_tokens: int = 0
    output_tokens: int = 0
    total_tokens: int = 0
    requests: int = 0
    cost: float | None = None
    aider: AiderSpend = Field(default_factory=AiderSpend)

    @computed_field  # type: ignore[prop-decorator]  # pydantic's documented idiom
    @property
    def all(self) -> UsageTotal:
        """Both together; cost None only when neither side knows its price."""
        costs = [c for c in (self.cost, self.aider.cost) if c is not None]
        return UsageTotal(
            total_tokens=self.total_tokens + self.aider.total_tokens, cost=sum(costs) if costs else None
        )

    def since(self, start: WorkflowUsage) -> WorkflowUsage:
        """What was spent between `start` and these totals."""
        cost = None if self.cost is None else self.cost - (start.cost or 0.0)
        return WorkflowUsage(
            input_tokens=self.input_tokens - start.input_tokens,
            output_tokens=self.output_tokens - start.output_tokens,
            total_tokens=self.total_tokens - start.total_tokens,
            requests=self.requests - start.requests,
            cost=cost,
            aider=self.aider.since(start.aider),
        )

    def describe(self) -> str:
        """`1500 tokens · $0.0100 (planning/analysis 300 tokens · $0.0010; Aider: 1200 tokens · …)`."""
        total = self.all
        money = f"${total.cost:.4f}" if total.cost is not None else "cost n/a"
        own = f"${self.cost:.4f}" if self.cost is not None else "cost n/a"
        return (
            f"{total.total_tokens} tokens · {money} "
            f"(planning/analysis: {self.total_tokens} tokens · {own}; {self.aider.describe()})"
        )


class SuiteScope(StrEnum):
    """Which tests a run of the test command ran."""

    FAILING = "failing"  # only those that failed in the run before (failing tests first)
    REST = "rest"  # the suite without those, once they pass: with them, a whole suite's worth
    WHOLE = "whole"  # the whole suite: the run that decides


class SuiteRun(BaseModel):
    """One run of the test command in an iteration: which tests, why, and how it ended."""

    model_config = ConfigDict(frozen=True)

    scope: SuiteScope
    command: str
    why: str
    tests: list[str] = Field(default_factory=list)  # the narrowed run's test ids
    exit_code: int | None = None
    duration_s: float = 0.0


def _absent_when_none(value: object) -> bool:
    """Keys the wire has always left out when they have no value (not sent as null)."""
    return value is None


class EditSummary(BaseModel):
    """What a run's history keeps of one Aider edit (an iteration's `aider` on the wire): an
    edit that changed nothing is FAILED (a failed attempt, its `error` says why), with Aider's
    usage when its server reported it (None: not reported)."""

    model_config = ConfigDict(frozen=True)

    status: TaskStatus
    diff: str = ""
    changed_files: list[str] = Field(default_factory=list)
    created_files: list[str] = Field(default_factory=list)
    usage: AiderUsage | None = None
    error: TaskError | None = Field(default=None, exclude_if=_absent_when_none)
    session_id: str | None = Field(default=None, exclude_if=_absent_when_none)  # the run's Aider chat


class DecidingRun(BaseModel):
    """The test run that decided an iteration (an iteration's `test` on the wire): the last of
    its runs, with its output for the reader and the analysis."""

    model_config = ConfigDict(frozen=True)

    command: str
    scope: SuiteScope
    exit_code: int | None = None
    timed_out: bool = False
    duration_s: float = 0.0
    stdout: str = ""
    stderr: str = ""


class WorkflowIteration(BaseModel):
    """One edit → test → analysis round, as the run's history records it (each step's outcome
    makes a new record: none is changed once made)."""

    model_config = ConfigDict(frozen=True)

    iteration: int
    prompt: str
    files: list[str]
    aider: EditSummary | None = None  # None only before its edit answered
    test: DecidingRun | None = None  # None: nothing to test (the edit changed no file)
    test_runs: list[SuiteRun] = Field(default_factory=list)  # every run, in order
    findings: list[Finding] = Field(default_factory=list)
    analysis: CombinedAnalysisResult | None = None
    # why the run did not follow the analysis's verdict (SUCCESS over a failing test)
    overruled: str | None = None


class WorkflowResult(BaseModel):
    """A run's outcome: the seed's shape plus the history and what it spent."""

    status: WorkflowStatus
    content: str
    reason: ErrorReason | None = None
    details: str | None = None
    plan: DevelopmentPlan | None = None
    final_aider_result: EditSummary | None = None
    analysis_result: CombinedAnalysisResult | None = None
    iterations: list[WorkflowIteration] = Field(default_factory=list)
    usage: WorkflowUsage = Field(default_factory=WorkflowUsage)


# -- typed results inside; results.py turns each into the seeds' TaskResult at the boundary ----
class CommandRun(BaseModel):
    """One run of a shell command (the user's test command): what happened and the output as
    kept (long output keeps its head and tail). `error` is set when the command could not run
    (bad or missing command, cannot start) or was killed at its timeout (`timed_out`, no exit
    code); a non-zero exit is not an error: the analysis needs its output. `findings` are the
    failures it printed on file:line, when the caller asked for them. `ended_processes` are
    the processes ended with the run ("PID COMMAND"): what the command left running when it
    exited, or all of it at the timeout."""

    model_config = ConfigDict(frozen=True)

    command: str
    exit_code: int | None = None
    duration_s: float = 0.0
    stdout: str = ""
    stderr: str = ""
    timed_out: bool = False
    findings: tuple[Finding, ...] = ()
    ended_processes: tuple[str, ...] = ()
    error: TaskError | None = None

    @property
    def ran(self) -> bool:
        """The command started (it finished, or was killed at the timeout)."""
        return self.error is None or self.timed_out

    @property
    def passed(self) -> bool:
        return self.error is None and self.exit_code == 0


class SkipReason(StrEnum):
    """Why an undo left a file alone."""

    UNSAVED = "unsaved"  # open in the editor with unsaved changes
    CHANGED_SINCE = "changed_since"  # changed since the edit: the user's later work
    UNWRITABLE = "unwritable"  # an OS error or a path no longer allowed


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


class FixAndRetest(BaseModel):
    """ "Fix with Aider" on a failing test: the edit, then the tests that failed run again
    (None: the edit failed, or there was nothing to re-run)."""

    model_config = ConfigDict(frozen=True)

    edit: AiderEditOutcome
    retest: CommandRun | None = None


class RunRecord(BaseModel):
    """One run or edit of the history (`aider-lsp history`, `aider-lsp.history.list`): its id
    for undo, when, what was asked, how it ended, what it changed and spent."""

    model_config = ConfigDict(frozen=True)

    id: str
    created: float
    kind: str  # "workflow" or "edit"
    label: str
    status: str | None = None  # SUCCESS / FAILURE / COMPLETE / FAILED, as the run ended
    iterations: int | None = None
    files: tuple[str, ...] = ()
    spend: str | None = None  # what it spent, as the run's report says it
    duration_s: float | None = None
    undone: float | None = None
