"""Responsiveness: cheap requests while a workflow runs, beside the same requests idle, same run.

A real `aider-lsp serve` on a temp project whose test fails; the scripted LLM (127.0.0.1) answers
with realistic delays (planning 1.5 s, each Aider edit 1 s, each analysis 1 s, RETRY until the
retries run out) and real Aider edits, real unittest runs. A stream of cheap requests, one after
the other — textDocument/codeAction, executeCommand aider-lsp.system.getContext and
aider-lsp.tools.list in turn — is timed first with nothing running, then while the workflow runs.
Prints p50/p99 latency for both. Target: p99 under load <= 2x idle and < 50 ms.
Needs the Aider environment (`aider-lsp setup-aider`).

    .venv/bin/python bench/responsiveness.py [--idle 300] [--retries 3]
"""

from __future__ import annotations

import argparse
import itertools
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from aider_lsp.config import aider_env
from aider_lsp_testing.calc_project import BUGGY, HALF_FIXED, PLAN, RETRY, write_calc_project
from aider_lsp_testing.llm_server import (
    IS_AIDER,
    IS_ANALYSIS,
    IS_PLAN,
    ReplyLike,
    ScriptedLLMServer,
    aider_whole,
    json_output,
    slow,
)
from aider_lsp_testing.raw_lsp import RawLspClient

NOTES = "def describe():\n    return 'calculator notes'\n"


def setup_project() -> Path:
    root = write_calc_project(Path(tempfile.mkdtemp(prefix="aider-bench-resp-")))
    (root / "notes.py").write_text(NOTES)  # the open document the code actions are asked on
    return root


def scripted_server() -> ScriptedLLMServer:
    server = ScriptedLLMServer().start()
    attempts = itertools.count(1)

    def next_edit(request: dict[str, Any]) -> ReplyLike:
        """Each attempt really changes the file (an unchanged file ends the run as a failed edit)."""
        return slow(1.0, aider_whole({"calc.py": HALF_FIXED + f"# attempt {next(attempts)}\n"}))

    server.add_rule(IS_PLAN, slow(1.5, json_output(PLAN)))
    server.add_rule(IS_ANALYSIS, slow(1.0, json_output(RETRY)))
    server.add_rule(IS_AIDER, next_edit)
    return server


def cheap_requests(client: RawLspClient, notes_uri: str) -> list[Callable[[], dict[str, Any]]]:
    code_action = {
        "textDocument": {"uri": notes_uri},
        "range": {"start": {"line": 1, "character": 4}, "end": {"line": 1, "character": 10}},
        "context": {"diagnostics": []},
    }
    return [
        lambda: client.request("textDocument/codeAction", code_action),
        lambda: client.execute("aider-lsp.system.getContext", {"query": "multiply", "max_results": 5}),
        lambda: client.execute("aider-lsp.tools.list", {}),
    ]


def timed(request: Callable[[], dict[str, Any]]) -> float:
    started = time.perf_counter()
    answer = request()
    elapsed = time.perf_counter() - started
    if "error" in answer:
        raise SystemExit(f"a cheap request failed: {answer['error']}")
    return elapsed


def percentiles(samples: list[float]) -> tuple[float, float]:
    cuts = statistics.quantiles(samples, n=100, method="inclusive")
    return cuts[49] * 1000, cuts[98] * 1000


def run_workflow(client: RawLspClient, retries: int) -> int:
    goal = {
        "goal": "make the tests pass",
        "test_command": f"{sys.executable} -m unittest",
        "max_retries": retries,
    }
    return client.send_request(
        "workspace/executeCommand", {"command": "aider-lsp.workflow.run", "arguments": [goal]}
    )


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--idle", type=int, default=300, help="cheap requests timed with nothing running")
    parser.add_argument("--retries", type=int, default=3)
    parser.add_argument(
        "--settle", type=float, default=10.0, help="seconds between start-up and the first run"
    )
    args = parser.parse_args()
    if not aider_env.is_ready():
        print(f"the Aider environment is missing: run `aider-lsp setup-aider` ({aider_env.env_dir()})")
        return 1
    project = setup_project()
    llm = scripted_server()
    options = {
        "model": "openai:scripted-planner",
        "baseUrl": llm.base_url,
        "apiKey": "bench-key",
        "aiderModel": "openai/scripted-coder",
        "aiderServer": {"args": ["--edit-format", "whole"]},
    }
    client = RawLspClient(
        Path(tempfile.mkstemp(prefix="aider-bench-resp-", suffix=".log")[1]), configuration=options
    )
    try:
        client.initialize(project, options)
        notes_uri = (project / "notes.py").as_uri()
        client.notify(
            "textDocument/didOpen",
            {"textDocument": {"uri": notes_uri, "languageId": "python", "version": 1, "text": NOTES}},
        )
        requests = cheap_requests(client, notes_uri)
        time.sleep(args.settle)  # the background warm-up after `initialized`, as a user would wait
        # one short run first: Aider, the LLM client and the index are warm for both phases
        warm_id = run_workflow(client, 0)
        client.wait_response(warm_id, timeout=300)
        (project / "calc.py").write_text(BUGGY)
        for request in requests:
            timed(request)

        idle = [timed(requests[i % len(requests)]) for i in range(args.idle)]

        run_id = run_workflow(client, args.retries)
        started = time.perf_counter()
        loaded: list[float] = []
        i = 0
        while run_id not in client._responses:
            loaded.append(timed(requests[i % len(requests)]))
            i += 1
        run_seconds = time.perf_counter() - started
        answer = client.wait_response(run_id)
        status = answer.get("result", {}).get("status")
        iterations = len((answer.get("result", {}).get("parsedContent") or {}).get("iterations", []))
        client.shutdown()
    finally:
        client.close()
        llm.stop()
    idle_p50, idle_p99 = percentiles(idle)
    load_p50, load_p99 = percentiles(loaded)
    print("Cheap requests (codeAction, getContext, tools.list in turn), latency:")
    print(f"  idle                 : p50 {idle_p50:6.1f} ms   p99 {idle_p99:6.1f} ms  (n={len(idle)})")
    print(
        f"  during a workflow    : p50 {load_p50:6.1f} ms   p99 {load_p99:6.1f} ms  (n={len(loaded)};"
        f" run {run_seconds:.1f} s, {iterations} iterations, {status})"
    )
    ratio = load_p99 / idle_p99
    ok = ratio <= 2 and load_p99 < 50
    print(f"  p99 load / idle = {ratio:.2f}  (target <= 2 and < 50 ms): {'OK' if ok else 'MISSED'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
