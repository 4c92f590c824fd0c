"""The bundled Aider MCP server (runs in the Aider environment; imports nothing from aider_lsp)."""

__all__: list[str] = []
