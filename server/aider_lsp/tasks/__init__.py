"""TaskSystem and its templates (plan, analysis, associative matching)."""

from .system import TaskSystem
from .templates import BUILTIN_TEMPLATES, TaskTemplate

__all__ = ["BUILTIN_TEMPLATES", "TaskSystem", "TaskTemplate"]
