"""What several attempts at one goal cost against one run (#52): wall time, peak memory and
model spend, on the letters project (one module to fix, its own test), real Aider and git
worktrees, a scripted model answering every call after `--latency` seconds (a real model's
answers take seconds: attempts at once overlap them).

The models: `coder-fixes` fixes the module at once; `coder-breaks` breaks the test in its
first edit and fixes it in the retry; `coder-idle` never changes a thing. Four ways to reach
the goal, each in a new workspace, alternated `--repeat` times:
- one isolated run whose model is right (`coder-fixes`): the baseline;
- one isolated run whose model is wrong at first (`coder-breaks`: a retry);
- three attempts, first-green (breaks, fixes, idle): the fixing one wins, the others stop;
- three attempts, compare: all finish, the tests rank them.
Printed per way: the medians, and the ratios against the baseline. Tokens are the scripted
server's counts of every request (chars / 4), each Aider server's own count beside them.

    .venv/bin/python bench/attempts.py [--repeat 3] [--latency 2]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from aider_lsp.models import Choose, Isolation, RequestContext, WorkflowRequest
from aider_lsp_testing.apps import scripted_app
from aider_lsp_testing.letters_project import MODULES, fixed, goal, module_test_command, write_letters_project
from aider_lsp_testing.llm_server import (
    IS_AIDER,
    IS_ANALYSIS,
    IS_PLAN,
    ScriptedLLMServer,
    aider_whole,
    all_of,
    json_output,
    last_user_message,
    model_is,
    text,
)

sys.path.insert(0, str(Path(__file__).parent))

from isolation import peak_memory

AGAIN = "make the test of alpha pass"  # the analysis's instruction for a retry
BROKEN = MODULES["alpha"][0].replace("return 'b'", "return 'still b'")
MODELS = ("openai/coder-breaks", "openai/coder-fixes", "openai/coder-idle")


@dataclass
class Way:
    """One way to reach the goal: its label, the Aider model of a single run or the attempts'."""

    label: str
    model: str
    attempts: int = 1
    choose: Choose = Choose.FIRST_GREEN


WAYS = (
    Way("one run, its model right", "openai/coder-fixes"),
    Way("one run, its model wrong at first", "openai/coder-breaks"),
    Way("3 attempts, first-green", "", 3, Choose.FIRST_GREEN),
    Way("3 attempts, compare", "", 3, Choose.COMPARE),
)


@dataclass
class Figures:
    seconds: float
    peak_mb: float
    tokens: int  # the scripted server's count of every request
    requests: int
    aider_reported: int  # the Aider servers' own count
    green: bool


def scripted_server(latency: float) -> ScriptedLLMServer:
    server = ScriptedLLMServer(latency=latency).start()
    fix = aider_whole({"alpha.py": fixed("alpha")})
    server.add_rule(all_of(IS_AIDER, model_is("coder-fixes")), fix)
    first_edit = all_of(IS_AIDER, lambda request: last_user_message(request).startswith(goal("alpha")))
    server.add_rule(all_of(first_edit, model_is("coder-breaks")), aider_whole({"alpha.py": BROKEN}))
    server.add_rule(all_of(IS_AIDER, model_is("coder-breaks")), fix)  # a retry: it fixes
    server.add_rule(all_of(IS_AIDER, model_is("coder-idle")), text("I would leave alpha as it is."))
    server.add_rule(IS_ANALYSIS, json_output({"verdict": "RETRY", "message": "red", "next_prompt": AGAIN}))
    server.add_rule(
        IS_PLAN, json_output({"instructions": goal("alpha"), "files": ["alpha.py"], "test_command": None})
    )
    return server


async def reach(way: Way, where: Path, server: ScriptedLLMServer) -> Figures:
    """The goal reached one way in a new letters workspace; what it cost."""
    root = write_letters_project(where)
    app = scripted_app(
        root, server.base_url, aiderModel=way.model or MODELS[0], maxIsolatedRuns=3, maxRetries=2
    )
    request = WorkflowRequest(
        goal=goal("alpha"),
        test_command=module_test_command("alpha"),
        file_context=["alpha.py"],
        isolation=Isolation.WORKTREE,
        attempts=way.attempts,
        choose=way.choose,
        aider_models=list(MODELS) if way.attempts > 1 else [],
    )
    before = len(server.chat_requests())
    try:
        await app.index_workspace()
        with peak_memory() as peak:
            started = time.monotonic()
            run = await app.run_workflow(request, RequestContext())
            seconds = time.monotonic() - started
        requests = server.chat_requests()[before:]
        spent = app.spent()
        return Figures(
            seconds=seconds,
            peak_mb=peak[0] / 1024,
            tokens=sum(len(str(request.get("messages", ""))) for request in requests) // 4,
            requests=len(requests),
            aider_reported=spent.aider.total_tokens,
            green=run.ok,
        )
    finally:
        await app.aclose()


def _median(values: list[Figures], field: str) -> float:
    return statistics.median(float(getattr(figures, field)) for figures in values)


async def main(args: argparse.Namespace) -> None:
    server = scripted_server(args.latency)
    figures: dict[str, list[Figures]] = {way.label: [] for way in WAYS}
    try:
        with tempfile.TemporaryDirectory() as scratch:
            os.environ["XDG_STATE_HOME"] = str(Path(scratch) / "state")
            print(
                f"load average {os.getloadavg()[0]:.2f}; "
                f"latency {args.latency:g} s a call; {args.repeat} each"
            )
            for _ in range(args.repeat):
                for way in WAYS:
                    figures[way.label].append(await reach(way, Path(tempfile.mkdtemp(dir=scratch)), server))
    finally:
        server.stop()
    base = figures[WAYS[0].label]
    for way in WAYS:
        got = figures[way.label]
        ratio = {
            field: _median(got, field) / max(_median(base, field), 1e-9)
            for field in ("seconds", "peak_mb", "tokens")
        }
        print(
            f"{way.label}: {_median(got, 'seconds'):.1f} s ({ratio['seconds']:.2f}×), peak "
            f"{_median(got, 'peak_mb'):.0f} MB ({ratio['peak_mb']:.2f}×), "
            f"{_median(got, 'tokens'):.0f} tokens "
            f"({ratio['tokens']:.2f}×) in {_median(got, 'requests'):.0f} requests (Aider's own count "
            f"{_median(got, 'aider_reported'):.0f}); reached the goal {sum(f.green for f in got)}/{len(got)}"
        )
    print(f"load average {os.getloadavg()[0]:.2f}")


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--latency", type=float, default=2.0, help="seconds per model call")
    return parser.parse_args()


if __name__ == "__main__":
    asyncio.run(main(parse_args()))
