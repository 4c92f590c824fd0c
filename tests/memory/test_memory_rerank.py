"""Optional LLM re-ranking through the real `internal:associative_matching` template,
over real HTTP to the scripted OpenAI-compatible server."""

from __future__ import annotations

import json
from pathlib import Path

from aider_lsp.app import Application
from aider_lsp.config.settings import Settings
from aider_lsp_testing.llm_server import ScriptedLLMServer, json_output, last_user_message, offers_tool


def _project(root: Path) -> Path:
    (root / "app").mkdir(parents=True)
    (root / "app" / "retry.py").write_text('"""Retry with exponential backoff."""\n')
    (root / "app" / "backoff_docs.md").write_text("# Backoff\n\nExponential backoff notes.\n")
    return root


async def test_rerank_reorders_through_the_template(tmp_path: Path, llm_server: ScriptedLLMServer) -> None:
    root = _project(tmp_path / "proj")
    settings = Settings(model="openai:ranker", base_url=llm_server.base_url, context_rerank=True)
    app = Application(root, settings)
    app.handler.llm.request_retries = 1
    llm_server.add_rule(
        offers_tool("final_result"),
        json_output(
            {
                "context_summary": "notes first",
                "matches": [
                    {
                        "id": "app/backoff_docs.md",
                        "content": "notes",
                        "relevance_score": 0.95,
                        "source_path": "app/backoff_docs.md",
                    },
                    {
                        "id": "app/retry.py",
                        "content": "code",
                        "relevance_score": 0.6,
                        "source_path": "app/retry.py",
                    },
                ],
            }
        ),
    )
    try:
        result = await app.handle_task_command("system:get_context", {"query": "exponential backoff"})
        assert json.loads(result.content) == ["app/backoff_docs.md", "app/retry.py"]
        assert "LLM re-ranking" in result.notes["context_summary"]
        assert result.notes["matches"][0]["relevance_score"] == 0.95
        # the index's uncapped score gives way to the re-ranking's (the first edit reads it)
        assert [m["metadata"]["score"] for m in result.notes["matches"]] == [0.95, 0.6]
        sent = last_user_message(llm_server.requests[-1])
        assert "exponential backoff" in sent and '"source_path": "app/retry.py"' in sent

        # the model fails: the index's ranking answers, and says so
        llm_server.clear_rules()
        fallback = await app.handle_task_command("system:get_context", {"query": "exponential backoff"})
        assert fallback.status.value == "COMPLETE"
        assert "re-ranking failed" in fallback.notes["context_summary"]
        assert set(json.loads(fallback.content)) == {"app/backoff_docs.md", "app/retry.py"}
    finally:
        await app.aclose()


async def test_rerank_is_off_by_default(tmp_path: Path, llm_server: ScriptedLLMServer) -> None:
    root = _project(tmp_path / "proj")
    app = Application(root, Settings(model="openai:ranker", base_url=llm_server.base_url))
    try:
        result = await app.handle_task_command("system:get_context", {"query": "exponential backoff"})
        assert result.status.value == "COMPLETE" and not llm_server.requests
        assert "index bm25" in result.notes["context_summary"]
    finally:
        await app.aclose()
