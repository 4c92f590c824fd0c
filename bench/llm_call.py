"""LLM layer overhead: median latency of one call through the handler vs the raw openai client.

All calls go to the scripted server on 127.0.0.1 (aider_lsp_testing.llm_server), so the figure is the
layer's own cost (pydantic-ai agent run, prompt building, validation, usage accounting),
not a provider's. Printed beside the floor measured in the same run: a raw
`AsyncOpenAI.chat.completions.create` to the same server. Also prints the first-call cost
(lazy import of pydantic-ai) measured in a fresh process.
"""

from __future__ import annotations

import asyncio
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from aider_lsp_testing.llm_server import ScriptedLLMServer, any_request, json_output, offers_tool, text

RUNS = 40


async def _median(fn, runs: int = RUNS) -> float:
    await fn()  # warm-up
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        await fn()
        times.append(time.perf_counter() - started)
    return statistics.median(times)


async def main() -> None:
    import openai

    from aider_lsp.app import Application
    from aider_lsp.config.settings import Settings
    from aider_lsp.models import HistoryConfigSettings

    with ScriptedLLMServer() as server, tempfile.TemporaryDirectory() as tmp:
        server.add_rule(
            offers_tool("final_result"), json_output({"instructions": "do it", "files": ["a.py"]})
        )
        server.add_rule(any_request, text("plain answer"))
        (Path(tmp) / "a.py").write_text("x = 1\n")
        app = Application(tmp, Settings(model="openai:bench", base_url=server.base_url))
        one_shot = HistoryConfigSettings(use_session_history=False, record_in_session_history=False)
        client = openai.AsyncOpenAI(base_url=server.base_url, api_key="x")

        async def raw() -> None:
            await client.chat.completions.create(
                model="bench",
                messages=[{"role": "system", "content": "s"}, {"role": "user", "content": "hi"}],
            )

        async def handler_text() -> None:
            result = await app.handler.execute_llm_call(
                "hi", system_prompt_override="s", tools_override=[], history_config=one_shot
            )
            assert result.ok, result

        async def template() -> None:
            result = await app.tasks.execute_template(
                "user:generate-plan-from-goal", {"goal": "g", "context_string": "c"}
            )
            assert result.ok, result

        floor = await _median(raw)
        text_call = await _median(handler_text)
        plan_call = await _median(template)
        await client.close()

    print(f"raw openai client call (floor):     {floor * 1000:7.2f} ms")
    print(f"handler text call:                  {text_call * 1000:7.2f} ms  ({text_call / floor:.2f}x floor)")
    print(f"plan template (structured output):  {plan_call * 1000:7.2f} ms  ({plan_call / floor:.2f}x floor)")

    probe = (
        "import time,sys; t=time.perf_counter(); import aider_lsp.app; "
        "print(time.perf_counter()-t, 'pydantic_ai' in sys.modules)"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True
    ).stdout.split()
    first = subprocess.run(
        [
            sys.executable,
            "-c",
            "import time; t=time.perf_counter(); import pydantic_ai.agent; print(time.perf_counter()-t)",
        ],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    print(
        f"import aider_lsp.app:               {float(out[0]) * 1000:7.1f} ms  "
        f"(pydantic_ai imported: {out[1]})"
    )
    print(f"deferred to the first LLM call:     {float(first) * 1000:7.1f} ms  (import pydantic_ai.agent)")


if __name__ == "__main__":
    asyncio.run(main())
