"""aider-lsp: drive Aider from the editor through a language server."""

__version__ = "0.1.0"
