"""The loop's typed calls to the planning model: the plan of a goal, the analysis of an
iteration. Each runs its template (llm/templates.py) and answers a ModelAnswer: the model's
output as its own type, or the error that stopped it, with what the call spent.

Why apart from the TaskSystem: templates are run by id for the seeds' `handle_task_command`
(any template, `parsedContent: any`); the loop asks these two questions only, and reads their
answers as the types it decides on.
"""

from __future__ import annotations

from pydantic import ValidationError

from ..models import (
    AnalysisRequest,
    CallUsage,
    CombinedAnalysisResult,
    DevelopmentPlan,
    ErrorReason,
    ModelAnswer,
    PlanRequest,
    TaskError,
    TaskResult,
)
from ..models.asks import Output
from .tasks import TaskSystem
from .templates import ANALYSIS, PLAN


class ModelAsks:
    """The plan and the analysis, asked through the templates of one TaskSystem."""

    def __init__(self, tasks: TaskSystem) -> None:
        self._tasks = tasks

    async def plan(self, request: PlanRequest) -> ModelAnswer[DevelopmentPlan]:
        result = await self._tasks.execute_template(PLAN.name, request.model_dump())
        return answer_of(result, DevelopmentPlan)

    async def analysis(self, request: AnalysisRequest) -> ModelAnswer[CombinedAnalysisResult]:
        result = await self._tasks.execute_template(ANALYSIS.name, request.model_dump())
        return answer_of(result, CombinedAnalysisResult)


def answer_of(result: TaskResult, output: type[Output]) -> ModelAnswer[Output]:
    """A template's TaskResult read as `output` (its parsed content, else its JSON text); an
    answer in another form is an output_format_failure."""
    wire = (result.notes or {}).get("usage")
    usage = CallUsage.model_validate(wire) if isinstance(wire, dict) else None
    if not result.ok:
        error = result.error or TaskError(reason=ErrorReason.UNEXPECTED_ERROR, message=result.content)
        return ModelAnswer(error=error, usage=usage, text=result.content)
    parsed = result.parsed_content
    if isinstance(parsed, output):
        return ModelAnswer(value=parsed, usage=usage, text=result.content)
    try:
        value = output.model_validate_json(result.content)
    except ValidationError as exc:
        message = f"the model's answer is not a {output.__name__}: {exc.errors()[0]['msg']}"
        error = TaskError(reason=ErrorReason.OUTPUT_FORMAT_FAILURE, message=message)
        return ModelAnswer(error=error, usage=usage, text=result.content)
    return ModelAnswer(value=value, usage=usage, text=result.content)
