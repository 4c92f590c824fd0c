"""The LLM side: BaseHandler (tools offered, data context, history, prompts; handler.py), the
pydantic-ai call manager (interaction.py), which model the settings name and its probe
(model_config.py), the TaskSystem running the templates kept as data (tasks.py,
templates.py), and the loop's two typed questions, the plan and the analysis (asks.py).
The tools a model may call live in tools/."""

from .asks import ModelAsks
from .handler import BaseHandler
from .interaction import LLMInteractionManager
from .model_config import build_model, resolve_model_config
from .tasks import TaskSystem
from .templates import BUILTIN_TEMPLATES, TaskTemplate

__all__ = [
    "BUILTIN_TEMPLATES",
    "BaseHandler",
    "LLMInteractionManager",
    "ModelAsks",
    "TaskSystem",
    "TaskTemplate",
    "build_model",
    "resolve_model_config",
]
