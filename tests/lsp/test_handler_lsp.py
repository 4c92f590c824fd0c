"""End-to-end: the handler's commands behind a real `aider-lsp serve` (pytest-lsp)."""

from __future__ import annotations

from pathlib import Path

from aider_lsp_testing.lsp_session import execute


async def test_prime_context_then_reset(lsp, workspace: Path, llm_server) -> None:
    options = {"model": "openai:scripted-model", "baseUrl": llm_server.base_url}
    async with lsp(workspace, init_options=options) as client:
        primed = await execute(
            client, "aider-lsp.handler.primeContext", {"initial_files": ["pkg/calc.py", ".env"]}
        )
        assert primed["status"] == "COMPLETE", primed
        assert primed["notes"]["file_paths"] == ["pkg/calc.py"]
        assert primed["notes"]["skipped_files"] == [".env"]
        reset = await execute(client, "aider-lsp.handler.reset", {})
        assert reset["status"] == "COMPLETE", reset
        assert reset["notes"]["data_context_cleared"] is True
        again = await execute(client, "aider-lsp.handler.reset", {})
        assert again["notes"]["data_context_cleared"] is False
