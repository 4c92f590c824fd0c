"""Aider integration: the MCP bridge to the Aider server (one persistent session, the
process group stopped with the SDK's group kill; an edit counts only files Aider wrote)."""
