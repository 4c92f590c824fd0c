"""Aider integration: the bridge to an Aider MCP server, one job per module (bridge: the door;
launch: the command from Settings; session: the process and its one MCP session; failures:
exception → ErrorReason; results: an answer → an outcome; mcp_sdk: the one mcp import)."""
