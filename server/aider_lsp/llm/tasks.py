"""TaskSystem: runs templates by name through the BaseHandler.

Why: `handle_task_command("user:…", params)` and the workflow need one place that checks
the parameters (a missing one is an input_validation_failure, never a literal `{{x}}`
sent to a model), renders the template and calls the model with its output type and tools.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ..models import ErrorReason, TaskResult, failed_result
from .handler import BaseHandler
from .templates import BUILTIN_TEMPLATES, TaskTemplate, format_value, render


class TaskSystem:
    """Templates as data, executed through the handler."""

    def __init__(self, handler: BaseHandler, templates: Iterable[TaskTemplate] = BUILTIN_TEMPLATES) -> None:
        self.handler = handler
        self._templates: dict[str, TaskTemplate] = {}
        for template in templates:
            self.register_template(template)

    def register_template(self, template: TaskTemplate) -> None:
        """Add or replace a template; ValueError if it uses undeclared parameters."""
        template.check()
        self._templates[template.name] = template

    def has_template(self, name: str) -> bool:
        return name in self._templates

    def list_templates(self) -> list[dict[str, Any]]:
        return [
            {
                "name": t.name,
                "description": t.description,
                "inputs": list(t.inputs),
                "optional_inputs": list(t.optional_inputs),
                "output": t.output_model.__name__ if t.output_model else "text",
            }
            for t in self._templates.values()
        ]

    def _path_check(self, template: TaskTemplate) -> Any:
        """An output check for the template's path fields (the model fixes bad paths)."""
        if not template.path_fields:
            return None

        def check(output: Any) -> str | None:
            for name in template.path_fields:
                problem = self.handler.check_workspace_paths(getattr(output, name, None), name)
                if problem:
                    return problem
            return None

        return check

    async def execute_template(
        self,
        name: str,
        params: dict[str, Any] | None = None,
        *,
        model_override: str | None = None,
        tools_override: list[str] | None = None,
    ) -> TaskResult:
        """Validate params, render, call the model; the result's parsed_content is the output model."""
        template = self._templates.get(name)
        if template is None:
            return failed_result(ErrorReason.TEMPLATE_NOT_FOUND, f"no template named {name!r}")
        params = {} if params is None else params
        if not isinstance(params, dict):
            return failed_result(
                ErrorReason.INPUT_VALIDATION_FAILURE, "template parameters must be an object"
            )
        missing = [key for key in template.inputs if key not in params]
        if missing:
            return failed_result(
                ErrorReason.INPUT_VALIDATION_FAILURE,
                f"{name} is missing parameter(s): {', '.join(missing)}",
                notes={"missing": missing, "template": name},
            )
        values = {key: format_value(params.get(key)) for key in (*template.inputs, *template.optional_inputs)}
        if "max_results" in template.optional_inputs and params.get("max_results") is None:
            values["max_results"] = "10"
        model = model_override or params.get("model_override")
        if model is not None and not isinstance(model, str):
            return failed_result(ErrorReason.INPUT_VALIDATION_FAILURE, "model_override must be a string")
        tools = (
            tools_override
            if tools_override is not None
            else (list(template.allowed_tools) if template.allowed_tools is not None else None)
        )
        instructions = render(template.instructions, values)
        system_prompt = self.handler.build_system_prompt(
            instructions, include_data_context=template.include_data_context
        )
        result = await self.handler.execute_llm_call(
            render(template.prompt, values),
            system_prompt_override=system_prompt,
            tools_override=tools,
            output_type_override=template.output_model,
            model_override=model,
            history_config=template.history,
            output_check=self._path_check(template),
        )
        if "template" in result.notes:
            return result
        return result.model_copy(update={"notes": {**result.notes, "template": name}})  # a new result
