"""Our loop vs Aider's own: `aider --test-cmd … --auto-test` against `aider-lsp.workflow.run` on a
warm server, the same project and the same scripted model, at 0, 1 and 3 s of model latency.

The story is a two-iteration fix: the calc project (aider_lsp_testing/calc_project.py) has two
bugs; the first edit fixes only `subtract`, the test still fails, the failing output goes back
to the model and the second edit fixes `multiply`. Aider's CLI (the Aider environment's own
`aider` executable, `whole` edit format, no git, no repo map, no streaming) runs the test
command itself and sends its output back (`--auto-test`). Ours is a real `aider-lsp serve`
over stdio, warmed up by one run first, driving the bundled Aider server; its planner and
analyst are the same scripted model. Aider's CLI gets a HOME with its price cache filled
(from litellm's bundled map, as our server does), so it does not try to download it. Two
variants of ours: the goal alone (the plan is a model call) and the goal with the editor's
file (`file_context`: no plan call).

The scripted model answers every call after `--latency` seconds; an Aider request whose last
message carries a failing test's output ("I ran this command:") gets the right fix, any other
the wrong one; the analyst reads the real exit code. Printed per latency: wall time, model
calls by kind, and ours / Aider's. Targets: ratio <= 0.1 at 0 s, <= 0.6 at 1 s, <= 1.0 at 3 s.
Other processes share the machine: run it a few times (`--repeat`), the medians are printed.
Needs the Aider environment (`aider-lsp setup-aider`).

    .venv/bin/python bench/workflow_vs_aider.py [--latency 0 1 3] [--repeat 1]
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from aider_lsp import aider_env
from aider_lsp_testing.aider_cli import aider_command, aider_environment, aider_home
from aider_lsp_testing.calc_project import (
    BUGGY,
    FIXED,
    HALF_FIXED,
    PLAN,
    analysis_by_exit_code,
    write_calc_project,
)
from aider_lsp_testing.llm_server import (
    IS_AIDER,
    IS_ANALYSIS,
    IS_PLAN,
    ScriptedLLMServer,
    aider_whole,
    all_of,
    json_output,
    last_user_contains,
)
from aider_lsp_testing.raw_lsp import RawLspClient

MODEL = "scripted-coder"
GOAL = "Make the tests in test_calc.py pass."
TEST_COMMAND = f"{sys.executable} -m unittest"
TARGETS = {0.0: 0.1, 1.0: 0.6, 3.0: 1.0}
FAILING_OUTPUT = "I ran this command:"  # how both loops send a failing test's output back


@dataclass
class Run:
    seconds: float
    calls: Counter[str]


def scripted_server() -> ScriptedLLMServer:
    server = ScriptedLLMServer(models=["scripted-planner", MODEL]).start()
    server.add_rule(IS_PLAN, json_output(PLAN))
    server.add_rule(IS_ANALYSIS, analysis_by_exit_code)
    server.add_rule(all_of(IS_AIDER, last_user_contains(FAILING_OUTPUT)), aider_whole({"calc.py": FIXED}))
    server.add_rule(IS_AIDER, aider_whole({"calc.py": HALF_FIXED}))
    return server


def calls_by_kind(server: ScriptedLLMServer) -> Counter[str]:
    kinds = (
        "plan" if IS_PLAN(r) else "analysis" if IS_ANALYSIS(r) else "aider" for r in server.chat_requests()
    )
    return Counter(kinds)


def reset(project: Path) -> None:
    (project / "calc.py").write_text(BUGGY)


def check_fixed(project: Path, who: str) -> None:
    if (project / "calc.py").read_text() != FIXED:
        raise SystemExit(f"{who}: calc.py was not fixed")


# -- Aider's own loop -----------------------------------------------------------------------
def run_aider(project: Path, server: ScriptedLLMServer, home: Path) -> Run:
    env = aider_environment(server.base_url, home)
    history = Path(tempfile.mkdtemp(prefix="aider-bench-history-"))
    reset(project)
    server.clear_requests()
    started = time.perf_counter()
    subprocess.run(
        aider_command(
            GOAL,
            f"openai/{MODEL}",
            history,
            ["calc.py", "test_calc.py"],
            "--test-cmd",
            TEST_COMMAND,
            "--auto-test",
            "--no-suggest-shell-commands",
            "--no-detect-urls",
        ),
        cwd=project,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        check=True,
    )
    seconds = time.perf_counter() - started
    shutil.rmtree(history, ignore_errors=True)
    check_fixed(project, "aider --auto-test")
    return Run(seconds, calls_by_kind(server))


# -- ours ------------------------------------------------------------------------------------
def run_ours(client: RawLspClient, project: Path, server: ScriptedLLMServer, editor_files: bool) -> Run:
    goal: dict[str, Any] = {"goal": GOAL, "test_command": TEST_COMMAND, "max_retries": 3}
    if editor_files:
        goal["file_context"] = ["calc.py"]
    reset(project)
    server.clear_requests()
    started = time.perf_counter()
    answer = client.execute("aider-lsp.workflow.run", goal, timeout=300)
    seconds = time.perf_counter() - started
    result = answer.get("result") or {}
    if result.get("status") != "COMPLETE":
        raise SystemExit(f"aider-lsp.workflow.run did not succeed: {answer}")
    check_fixed(project, "aider-lsp.workflow.run")
    return Run(seconds, calls_by_kind(server))


def start_ours(project: Path, server: ScriptedLLMServer) -> RawLspClient:
    options = {
        "model": "openai:scripted-planner",
        "baseUrl": server.base_url,
        "apiKey": "bench-key",
        "aiderModel": f"openai/{MODEL}",
        "aiderServer": {"args": ["--edit-format", "whole"]},
        "timeouts": {"aider": 120, "llm": 120},
    }
    log = Path(tempfile.mkstemp(prefix="aider-bench-loop-", suffix=".log")[1])
    client = RawLspClient(log, configuration=options)
    client.initialize(project, options)
    return client


# -- report ----------------------------------------------------------------------------------
def median_run(runs: list[Run]) -> Run:
    ordered = sorted(runs, key=lambda run: run.seconds)
    middle = ordered[len(ordered) // 2]
    return Run(statistics.median(run.seconds for run in runs), middle.calls)


def describe(calls: Counter[str]) -> str:
    order = ("plan", "aider", "analysis")
    return ", ".join(f"{calls[kind]} {kind}" for kind in order if calls[kind]) + f" = {sum(calls.values())}"


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--latency", type=float, nargs="+", default=[0.0, 1.0, 3.0], help="seconds per model call"
    )
    parser.add_argument("--repeat", type=int, default=1, help="runs per latency and side (medians printed)")
    parser.add_argument(
        "--settle", type=float, default=8.0, help="seconds between start-up and the warm-up run"
    )
    args = parser.parse_args()
    if not aider_env.is_ready():
        print(f"the Aider environment is missing: run `aider-lsp setup-aider` ({aider_env.env_dir()})")
        return 1
    base = Path(tempfile.mkdtemp(prefix="aider-bench-loop-"))
    (base / "aider").mkdir()
    (base / "ours").mkdir()
    aider_project = write_calc_project(base / "aider")
    our_project = write_calc_project(base / "ours")
    home = aider_home(base)
    server = scripted_server()
    client = start_ours(our_project, server)
    rows: list[tuple[float, Run, Run, Run]] = []
    try:
        time.sleep(args.settle)  # the background warm-up after `initialized`, as a user would wait
        run_ours(client, our_project, server, editor_files=False)  # warm: Aider, the LLM client, the index
        run_aider(aider_project, server, home)  # warm: the OS's file cache for Aider's imports
        for latency in args.latency:
            server.latency = latency
            theirs, plain, named = [], [], []
            for _ in range(args.repeat):
                theirs.append(run_aider(aider_project, server, home))
                plain.append(run_ours(client, our_project, server, editor_files=False))
                named.append(run_ours(client, our_project, server, editor_files=True))
            rows.append((latency, median_run(theirs), median_run(plain), median_run(named)))
        client.shutdown()
    finally:
        client.close()
        server.stop()
        shutil.rmtree(base, ignore_errors=True)
    report(rows, args.repeat)
    return 0


def report(rows: list[tuple[float, Run, Run, Run]], repeat: int) -> None:
    print(f"Two-iteration fix, scripted model on 127.0.0.1, median of {repeat} run(s) per cell:")
    for latency, theirs, plain, named in rows:
        target = TARGETS.get(latency)
        print(f"\nmodel latency {latency:g} s per call")
        print(f"  aider --auto-test              : {theirs.seconds:6.2f} s   calls: {describe(theirs.calls)}")
        for label, ours in (("workflow.run (goal)", plain), ("workflow.run (goal + file)", named)):
            ratio = ours.seconds / theirs.seconds
            verdict = ""
            if target is not None:
                verdict = f"  (target <= {target:g}: {'OK' if ratio <= target else 'MISSED'})"
            print(
                f"  {label:<30} : {ours.seconds:6.2f} s   calls: {describe(ours.calls)}"
                f"   ratio {ratio:.2f}{verdict}"
            )


if __name__ == "__main__":
    sys.exit(main())
