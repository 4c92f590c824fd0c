"""The LLM layer: BaseHandler (tools, data context, history, prompts), the pydantic-ai call
manager (llm.py) and model resolution and probing (model_config.py)."""

from .base import BaseHandler
from .llm import LLMInteractionManager
from .model_config import build_model, resolve_model_config

__all__ = ["BaseHandler", "LLMInteractionManager", "build_model", "resolve_model_config"]
