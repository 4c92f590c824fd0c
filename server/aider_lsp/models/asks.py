"""The loop's two questions to the planning model, typed: what each is told (PlanRequest,
AnalysisRequest: the templates' inputs, named) and what comes back (ModelAnswer: the model's
typed output, or the error that stopped it, and what the call spent).

Why typed: the seeds' `handle_task_command(id, params)` answers `parsedContent: any`; inside the
server the loop reads a DevelopmentPlan or a CombinedAnalysisResult, never a dictionary.
"""

from __future__ import annotations

from typing import Generic, TypeVar

from pydantic import BaseModel

from .envelope import TaskError
from .runs import CombinedAnalysisResult, DevelopmentPlan
from .usage import CallUsage

Output = TypeVar("Output", DevelopmentPlan, CombinedAnalysisResult)


class PlanRequest(BaseModel):
    """What the planner is told: the goal, the user's context (with the open files and the
    index's best), and the files the user chose."""

    goal: str
    context_string: str
    file_context: list[str] | None = None


class AnalysisRequest(BaseModel):
    """What the analysis is told of one iteration: the goal, the edit and the test run."""

    original_goal: str
    initial_task_context: str
    aider_instructions: str
    aider_status: str
    aider_diff: str
    test_command: str
    test_stdout: str
    test_stderr: str
    test_exit_code: str
    previous_files: list[str]
    iteration: int
    max_retries: int


class ModelAnswer(BaseModel, Generic[Output]):
    """A model's answer: `value` when it answered in the form asked, else `error`; `usage` what
    the call spent either way (None: the call never reached the model); `text` its raw answer
    (a failure's details)."""

    value: Output | None = None
    error: TaskError | None = None
    usage: CallUsage | None = None
    text: str = ""
