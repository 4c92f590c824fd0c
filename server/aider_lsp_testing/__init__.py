"""Dev-only test scaffolding for aider-lsp: the scripted LLM server, a raw LSP client, the calc project.

Why a package of its own: the tests, the benchmarks and the editor client's end-to-end script
all import it by name, and none of it belongs in the product. The editable install puts
`server/` on the path (so a checkout imports it); pyproject.toml excludes it from the wheel.
It imports from `aider_lsp`, never the other way.
"""
