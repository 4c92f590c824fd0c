"""Every data model that crosses a module boundary, one module per concern.

- envelope: TaskResult, the answer of every command, tool and template (errors reported, not raised)
- caller: what a request's caller gives it (RequestContext: progress, findings, questions)
- args: each tool's argument model (`…Args`, the LSP command, the model's schema, the validation)
- commands: one run of a shell command (CommandRun) and the problems it found (Finding)
- usage: what one model call spent and what a run spent (apart and together)
- edits: what one Aider edit did (AiderEditOutcome), fix-and-retest
- events: a workflow run's steps as they happen (PlanMade, EditStarted, …, its progress, the callback's type)
- question: a question asked of the user and its typed answer (Question, Choice, Answer)
- runs: a workflow run (plan, analysis, iterations, result)
- asks: the loop's questions to the planning model (PlanRequest, AnalysisRequest) and their typed ModelAnswer
- history: undo and the history of runs (RestoreReport, RunChanges, RunRecord)
- context: workspace context for a model call (MatchItem, its Ranking, DataContext, …), IndexStats

Import from `aider_lsp.models` or from the module itself: the names below are the same objects.
"""

from .args import (
    AiderAutomaticArgs,
    AiderInteractiveArgs,
    GetContextArgs,
    OptionalPathList,
    PathList,
    Position,
    Range,
    ReadFilesArgs,
    Selection,
    ShellCommandArgs,
    ToolArgs,
    ToolSpec,
    WorkflowRequest,
    parse_args,
    provider_safe_name,
    validation_message,
)
from .asks import AnalysisRequest, ModelAnswer, PlanRequest
from .caller import (
    FindingsCallback,
    ProgressCallback,
    ReplyCallback,
    RequestContext,
    UnsavedFiles,
)
from .commands import CommandRun, Finding, Severity
from .context import (
    AssociativeMatchResult,
    ContextGenerationInput,
    DataContext,
    Definition,
    HistoryConfigSettings,
    IndexStats,
    MatchItem,
    Ranking,
    Signals,
    Why,
)
from .edits import AiderEditOutcome, FixAndRetest
from .envelope import ErrorReason, TaskError, TaskResult, TaskStatus, complete_result, failed_result
from .events import (
    AnalysisMade,
    EditFinished,
    EditStarted,
    EventCallback,
    PlanFailed,
    PlanMade,
    TestRunFinished,
    TestRunStarted,
    WorkflowEvent,
    WorkflowProgress,
)
from .history import (
    DeclinedTestCommand,
    IsolatedRun,
    IsolatedRunManifest,
    Isolation,
    RestoreReport,
    RunAction,
    RunChanges,
    RunDiff,
    RunFileDiff,
    RunRecord,
    RunState,
    RunStep,
    SkippedFile,
    SkipReason,
    StepAnalysis,
    StepEdit,
    StepTestRun,
    WorkflowRun,
)
from .outcome import capitalised, test_outcome
from .question import Answer, AskCallback, Choice, Question
from .runs import (
    CombinedAnalysisResult,
    DecidingRun,
    DevelopmentPlan,
    EditSummary,
    JudgeProblem,
    SuiteRun,
    SuiteScope,
    Verdict,
    WorkflowIteration,
    WorkflowResult,
    WorkflowStatus,
)
from .suite_command import ChosenTestCommand, CommandSource
from .usage import AiderCallUsage, CallKind, CallKinds, CallUsage, Spend, WorkflowUsage

__all__ = [
    "AiderAutomaticArgs",
    "AiderCallUsage",
    "AiderEditOutcome",
    "AiderInteractiveArgs",
    "AnalysisMade",
    "AnalysisRequest",
    "Answer",
    "AskCallback",
    "AssociativeMatchResult",
    "CallKind",
    "CallKinds",
    "CallUsage",
    "Choice",
    "ChosenTestCommand",
    "CombinedAnalysisResult",
    "CommandRun",
    "CommandSource",
    "ContextGenerationInput",
    "DataContext",
    "DecidingRun",
    "DeclinedTestCommand",
    "Definition",
    "DevelopmentPlan",
    "EditFinished",
    "EditStarted",
    "EditSummary",
    "ErrorReason",
    "EventCallback",
    "Finding",
    "FindingsCallback",
    "FixAndRetest",
    "GetContextArgs",
    "HistoryConfigSettings",
    "IndexStats",
    "IsolatedRun",
    "IsolatedRunManifest",
    "Isolation",
    "JudgeProblem",
    "MatchItem",
    "ModelAnswer",
    "OptionalPathList",
    "PathList",
    "PlanFailed",
    "PlanMade",
    "PlanRequest",
    "Position",
    "ProgressCallback",
    "Question",
    "Range",
    "Ranking",
    "ReadFilesArgs",
    "ReplyCallback",
    "RequestContext",
    "RestoreReport",
    "RunAction",
    "RunChanges",
    "RunDiff",
    "RunFileDiff",
    "RunRecord",
    "RunState",
    "RunStep",
    "Selection",
    "Severity",
    "ShellCommandArgs",
    "Signals",
    "SkipReason",
    "SkippedFile",
    "Spend",
    "StepAnalysis",
    "StepEdit",
    "StepTestRun",
    "SuiteRun",
    "SuiteScope",
    "TaskError",
    "TaskResult",
    "TaskStatus",
    "TestRunFinished",
    "TestRunStarted",
    "ToolArgs",
    "ToolSpec",
    "UnsavedFiles",
    "Verdict",
    "Why",
    "WorkflowEvent",
    "WorkflowIteration",
    "WorkflowProgress",
    "WorkflowRequest",
    "WorkflowResult",
    "WorkflowRun",
    "WorkflowStatus",
    "WorkflowUsage",
    "capitalised",
    "complete_result",
    "failed_result",
    "parse_args",
    "provider_safe_name",
    "test_outcome",
    "validation_message",
]
