"""Task templates as data: name, instructions with {{param}}, inputs, output model, tools, history.

Why data: the workflow, the memory helper and the editor call templates by name; what a
template asks the model lives here, in one reviewable place, not in code paths.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel

from ..models import AssociativeMatchResult, CombinedAnalysisResult, DevelopmentPlan, HistoryConfigSettings

PLACEHOLDER = re.compile(r"\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}")

# Templates are one-shot by default: each call carries all the context it needs, and the
# interactive conversation is not polluted by workflow calls.
ONE_SHOT = HistoryConfigSettings(use_session_history=False, record_in_session_history=False)


@dataclass(frozen=True)
class TaskTemplate:
    """One template; `instructions` go into the system prompt, `prompt` is the user message."""

    name: str
    description: str
    instructions: str
    prompt: str
    inputs: tuple[str, ...]
    optional_inputs: tuple[str, ...] = ()
    output_model: type[BaseModel] | None = None
    allowed_tools: tuple[str, ...] | None = None  # None: the handler's read-only defaults
    history: HistoryConfigSettings = field(default_factory=lambda: ONE_SHOT)
    include_data_context: bool = True
    path_fields: tuple[str, ...] = ()  # output fields that must name editable workspace files

    def placeholders(self) -> set[str]:
        return set(PLACEHOLDER.findall(self.instructions)) | set(PLACEHOLDER.findall(self.prompt))

    def check(self) -> None:
        """A template may only use declared inputs (caught at registration, not at call time)."""
        unknown = self.placeholders() - set(self.inputs) - set(self.optional_inputs)
        if unknown:
            raise ValueError(f"template {self.name} uses undeclared parameters: {sorted(unknown)}")


def format_value(value: Any) -> str:
    """How a parameter value appears in a prompt."""
    if value is None:
        return "(none)"
    if isinstance(value, str):
        return value
    if isinstance(value, BaseModel):
        return value.model_dump_json(indent=2)
    if isinstance(value, (list, tuple, dict)):
        return json.dumps(value, indent=2, default=str)
    return str(value)


def render(text: str, values: dict[str, str]) -> str:
    """Single-pass substitution: `{{x}}` inside a value is never expanded again."""
    return PLACEHOLDER.sub(lambda m: values.get(m.group(1), m.group(0)), text)


PLAN = TaskTemplate(
    name="user:generate-plan-from-goal",
    description="Turn the user's goal into a development plan for Aider.",
    instructions=(
        "Your job now: write a development plan that Aider (an AI pair programmer that edits files) "
        "will carry out.\n"
        "- `instructions`: clear, complete, self-contained editing instructions for Aider.\n"
        "- `files`: the workspace-relative paths of the files Aider must edit or create "
        "(only files inside the workspace).\n"
        "- `test_command`: a command that verifies the change, or null if you do not know one.\n"
        "Answer only through the structured output."
    ),
    prompt=(
        "Goal:\n{{goal}}\n\nContext:\n{{context_string}}\n\nFiles the user pointed at:\n{{file_context}}"
    ),
    inputs=("goal", "context_string"),
    optional_inputs=("file_context",),
    output_model=DevelopmentPlan,
    path_fields=("files",),
)

ANALYSIS = TaskTemplate(
    name="user:evaluate-and-retry-analysis",
    description="Judge an Aider edit and its test run: SUCCESS, RETRY with a new prompt, or FAILURE.",
    instructions=(
        "Your job now: judge whether the goal has been reached after an Aider edit and a test run.\n"
        "- verdict SUCCESS: the tests pass and the goal is met.\n"
        "- verdict RETRY: another Aider attempt can fix it; `next_prompt` MUST give Aider precise "
        "instructions that address the failing output; `next_files` lists the files to edit "
        "(omit it to keep the current files).\n"
        "- verdict FAILURE: more attempts will not help (explain why in `message`).\n"
        "This is iteration {{iteration}} of at most {{max_retries}} retries; when no retries are "
        "left prefer SUCCESS or FAILURE.\n"
        "Answer only through the structured output."
    ),
    prompt=(
        "Original goal:\n{{original_goal}}\n\n"
        "Initial task context:\n{{initial_task_context}}\n\n"
        "Instructions given to Aider:\n{{aider_instructions}}\n\n"
        "Aider status: {{aider_status}}\n\n"
        "Aider diff:\n{{aider_diff}}\n\n"
        "Files in the edit: {{previous_files}}\n\n"
        "Test command: {{test_command}}\n"
        "Exit code: {{test_exit_code}}\n"
        "--- test stdout ---\n{{test_stdout}}\n--- end stdout ---\n"
        "--- test stderr ---\n{{test_stderr}}\n--- end stderr ---"
    ),
    inputs=(
        "original_goal",
        "initial_task_context",
        "aider_instructions",
        "aider_status",
        "aider_diff",
        "test_command",
        "test_stdout",
        "test_stderr",
        "test_exit_code",
        "previous_files",
        "iteration",
        "max_retries",
    ),
    output_model=CombinedAnalysisResult,
    path_fields=("next_files",),
)

ANALYZE_AIDER = TaskTemplate(
    name="user:analyze-aider-result",
    description="Judge an Aider edit against the goal when there is no test run.",
    instructions=(
        "Your job now: judge whether the Aider edit below achieves the goal.\n"
        "- verdict SUCCESS: the diff implements the goal.\n"
        "- verdict RETRY: give Aider precise `next_prompt` instructions for what is missing or wrong "
        "(and `next_files` if other files must change).\n"
        "- verdict FAILURE: the goal cannot be reached this way (explain in `message`).\n"
        "Answer only through the structured output."
    ),
    prompt=(
        "Goal:\n{{original_goal}}\n\n"
        "Instructions given to Aider:\n{{aider_instructions}}\n\n"
        "Aider status: {{aider_status}}\n\n"
        "Aider diff:\n{{aider_diff}}\n\n"
        "Files in the edit: {{previous_files}}"
    ),
    inputs=("original_goal", "aider_instructions", "aider_status", "aider_diff"),
    optional_inputs=("previous_files",),
    output_model=CombinedAnalysisResult,
    path_fields=("next_files",),
)

ASSOCIATIVE_MATCHING = TaskTemplate(
    name="internal:associative_matching",
    description="Re-rank candidate workspace items by relevance to a query.",
    instructions=(
        "Your job now: pick the candidates that are relevant to the query and score each from 0 "
        "(irrelevant) to 1 (essential). Return them in `matches`, most relevant first, keeping each "
        "candidate's `id`, `source_path` and `content_type` unchanged; `content` may be a short "
        "reason. Omit irrelevant candidates. Summarise what the relevant items are about in "
        "`context_summary`. Return at most {{max_results}} matches."
    ),
    prompt="Query:\n{{query}}\n\nCandidates (JSON):\n{{candidates}}",
    inputs=("query", "candidates"),
    optional_inputs=("max_results",),
    output_model=AssociativeMatchResult,
    allowed_tools=(),
    include_data_context=False,
)

BUILTIN_TEMPLATES: tuple[TaskTemplate, ...] = (PLAN, ANALYSIS, ANALYZE_AIDER, ASSOCIATIVE_MATCHING)
