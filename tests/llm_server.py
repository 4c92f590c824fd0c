"""The scripted LLM server the tests use; it lives in the package (`aider-lsp demo` serves it too)."""

from aider_lsp.scripted_llm import *  # noqa: F403
from aider_lsp.scripted_llm import __all__  # noqa: F401
