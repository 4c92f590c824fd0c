"""Dev-only test scaffolding for aider-lsp: the scripted LLM server, a raw LSP client, the calc
project, and a fake of the public aider-mcp-server (fake_aider_mcp.py, run as a program).

Why a package of its own: the tests, the benchmarks and the editor client's end-to-end script
all import it by name, and none of it belongs in the product. The editable install puts
`server/` on the path (so a checkout imports it); pyproject.toml excludes it from the wheel.
It imports from `aider_lsp`, never the other way.
"""

from pathlib import Path

# the public aider-mcp-server's shape, as a program (`python FAKE_AIDER_MCP`): no usage, no chats
FAKE_AIDER_MCP = str(Path(__file__).with_name("fake_aider_mcp.py"))
