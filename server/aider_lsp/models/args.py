"""Each tool's contract as one pydantic model (`…Args`): the LSP command's argument, the JSON
schema offered to a model and the executor's validation all come from it. Arguments are parsed
into these at a front end's edge (`parse_args`: a FAILED input_validation_failure, never raised).
"""

from __future__ import annotations

import json
import os
from typing import Annotated, Any, TypeVar

from pydantic import (
    AliasChoices,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
)
from pydantic.json_schema import SkipJsonSchema

from .envelope import ErrorReason, TaskResult, failed_result
from .history import Choose, Isolation


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
    # where the run edits: the user's files, or a worktree of its own (None: the setting)
    isolation: Isolation | None = None
    # several attempts at the goal, each in a worktree of its own, the tests choosing (None: the
    # settings' `attempts` and `choose`); `aider_models`: the models the attempts edit with, in turn
    attempts: int | None = Field(default=None, ge=1, le=8)
    choose: Choose | None = None
    aider_models: list[str] = Field(default_factory=list, max_length=8)
    # image files (absolute paths: an ACP prompt's pasted images are saved outside the
    # workspace) shown to Aider's model with each edit of the run; one that reads none refuses
    images: list[str] = Field(default_factory=list, max_length=8)

    @field_validator("goal")
    @classmethod
    def _goal_not_blank(cls, goal: str) -> str:
        if not goal.strip():
            raise ValueError("the goal is empty: say what the code should do")
        return goal

    @field_validator("images")
    @classmethod
    def _images_are_files(cls, images: list[str]) -> list[str]:
        for image in images:
            if not os.path.isabs(image) or not os.path.isfile(image):
                raise ValueError(f"images must name existing image files by absolute path, got {image!r}")
        return images
