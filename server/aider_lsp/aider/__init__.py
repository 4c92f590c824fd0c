"""Aider integration: the MCP bridge to the Aider server."""
