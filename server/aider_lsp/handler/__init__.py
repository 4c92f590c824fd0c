"""BaseHandler (tools, data context, history, prompts) and the pydantic-ai LLM manager."""

from .base import BaseHandler
from .llm import LLMInteractionManager, build_model, resolve_model_config

__all__ = ["BaseHandler", "LLMInteractionManager", "build_model", "resolve_model_config"]
