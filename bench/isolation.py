"""The cost of isolation (#41): a workflow run in a worktree of its own against one in place.

1. Time from the request to Aider's first model call, in place (the workspace's Aider server
   warm, as in an editor after its warm-up) against isolated, alternated in one process on one
   scripted model server, on this repository and on a repository of >= 2,000 files (`--big`:
   a git clone of sphinx-doc/sphinx, fetched once; nothing is downloaded here). Isolated twice:
   from a spare tree that had `--settle` seconds to get ready (isolation/prepare.py: what runs
   started at a user's pace meet, and the first one when `isolation` is the default), and with
   no spare (a session's first isolated run otherwise: a worktree made, the index copied, a new
   Aider server and its repository map on the tree); and prepared `--typing` seconds before
   (`runs.prepare`, what an editor sends while the user types the goal of a session's first
   run in a worktree). Each run's goal names no file: the index
   chooses the first edit's files, and Aider answers with no change, so the run ends after one
   green test run (`python -c pass`). Printed: the medians and the differences (goal: <= 0.5 s
   more).
2. Three isolated runs at once against the same three one after the other (the letters
   project: one fix each, its own test; every model call answered after `--latency` seconds,
   as a real model's): wall time, and the peak memory of this process and all its children
   (the Aider servers, a spare's), sampled every 50 ms from /proc. And what one idle Aider
   server holds: this process tree's memory before and after one starts and warms up.

Other processes share the machine: the load average is printed beside the figures.
Needs the Aider environment (`aider-lsp setup-aider`).

    .venv/bin/python bench/isolation.py [--repeat 3] [--settle 20]
        [--big /work/.mirror/sphinx-doc+sphinx/repo]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from aider_lsp.app import Application
from aider_lsp.models import Isolation, RequestContext, WorkflowRequest
from aider_lsp_testing.apps import scripted_app
from aider_lsp_testing.letters_project import (
    MODULES,
    goal,
    module_test_command,
    script_fixes,
    write_letters_project,
)
from aider_lsp_testing.llm_server import (
    IS_AIDER,
    IS_ANALYSIS,
    IS_PLAN,
    ScriptedLLMServer,
    aider_whole,
    json_output,
)

REPO = Path(__file__).resolve().parent.parent
PASS = f"{sys.executable} -c pass"
GOAL = "make the configuration reader accept an empty value"


class FirstCalls:
    """When each Aider request arrived (the scripted server's thread appends)."""

    def __init__(self) -> None:
        self.times: list[float] = []

    def reply(self, request: dict[str, Any]) -> Any:
        self.times.append(time.monotonic())
        return aider_whole({})


def clone(source: Path, where: Path) -> Path:
    """A local clone of `source` (a work tree or a bare repository) at its HEAD."""
    target = where / source.name.replace(".", "_")
    subprocess.run(["git", "clone", "--quiet", str(source), str(target)], check=True)
    return target


async def time_to_first_call(app: Application, calls: FirstCalls, isolation: Isolation) -> float:
    """Seconds from the request to Aider's first model call."""
    request = WorkflowRequest(goal=GOAL, test_command=PASS, isolation=isolation, max_retries=0)
    before = len(calls.times)
    started = time.monotonic()
    run = await app.run_workflow(request, RequestContext())
    if len(calls.times) == before:
        raise RuntimeError(f"Aider was never called: {run.message}")
    return calls.times[before] - started


async def first_call_costs(
    root: Path, server: ScriptedLLMServer, calls: FirstCalls, repeat: int, settle: float, typing: float
) -> dict[str, list[float]]:
    """Each repeat: in place; isolated with no spare tree (a session's first isolated run);
    isolated with a spare prepared `typing` seconds before (the editor's `runs.prepare` while the
    goal is typed); isolated with a spare that had `settle` seconds to get ready (runs started at
    a user's pace)."""
    app = scripted_app(root, server.base_url)
    runs = app.isolated_runs
    try:
        await app.index_workspace()
        before = tree_rss_kb(os.getpid())
        await app.start_aider()
        await asyncio.sleep(settle)
        print(
            f"  one Aider server, idle after its warm-up: {(tree_rss_kb(os.getpid()) - before) / 1024:.0f} MB"
        )
        await time_to_first_call(app, calls, Isolation.NONE)  # the first edit's own warm-up
        seconds: dict[str, list[float]] = {"none": [], "cold": [], "typed": [], "spare": []}
        for _ in range(repeat):
            seconds["none"].append(await time_to_first_call(app, calls, Isolation.NONE))
            await runs.aclose()  # no spare: made at the request
            runs.spares = False
            seconds["cold"].append(await time_to_first_call(app, calls, Isolation.WORKTREE))
            await runs.aclose()  # the spare made after that run: gone, as in a new session
            runs.spares = True
            await runs.prepare()  # the editor's, when it asks for the goal
            await asyncio.sleep(typing)
            seconds["typed"].append(await time_to_first_call(app, calls, Isolation.WORKTREE))
            await runs.prepare()
            await asyncio.sleep(settle)
            seconds["spare"].append(await time_to_first_call(app, calls, Isolation.WORKTREE))
        return seconds
    finally:
        await app.aclose()


def tree_rss_kb(pid: int) -> int:
    """The resident memory of `pid` and every process below it, in kB."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                parent = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            children.setdefault(parent, []).append(int(entry.name))
    total, todo = 0, [pid]
    while todo:
        current = todo.pop()
        todo.extend(children.get(current, []))
        try:
            for line in Path(f"/proc/{current}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1])
        except OSError:
            continue
    return total


@contextmanager
def peak_memory() -> Iterator[list[int]]:
    """Samples this process tree's memory every 50 ms while the block runs; [peak kB]."""
    peak = [0]
    running = True

    async def sample() -> None:
        while running:
            peak[0] = max(peak[0], tree_rss_kb(os.getpid()))
            await asyncio.sleep(0.05)

    task = asyncio.get_running_loop().create_task(sample())
    try:
        yield peak
    finally:
        running = False
        task.cancel()


async def three_runs(where: Path, server: ScriptedLLMServer, at_once: bool) -> tuple[float, int]:
    """Wall seconds and peak kB of the three letters runs, at once or one after the other."""
    root = write_letters_project(where)
    app = scripted_app(root, server.base_url)
    try:
        await app.index_workspace()
        requests = [
            WorkflowRequest(
                goal=goal(name), test_command=module_test_command(name), isolation=Isolation.WORKTREE
            )
            for name in MODULES
        ]
        with peak_memory() as peak:
            started = time.monotonic()
            if at_once:
                runs = await asyncio.gather(
                    *(app.run_workflow(request, RequestContext()) for request in requests)
                )
            else:
                runs = [await app.run_workflow(request, RequestContext()) for request in requests]
            wall = time.monotonic() - started
        if not all(run.ok for run in runs):
            raise RuntimeError("; ".join(run.message for run in runs))
        return wall, peak[0]
    finally:
        await app.aclose()


def scripted_server(calls: FirstCalls) -> ScriptedLLMServer:
    server = ScriptedLLMServer().start()
    script_fixes(server)  # the letters' fixes first: their goals name the module
    server.add_rule(IS_PLAN, json_output({"instructions": GOAL, "files": [], "test_command": None}))
    server.add_rule(IS_ANALYSIS, json_output({"verdict": "SUCCESS", "message": "done"}))
    server.add_rule(IS_AIDER, calls.reply)
    return server


def files_in(root: Path) -> int:
    return len(
        subprocess.run(["git", "ls-files"], cwd=root, capture_output=True, text=True).stdout.splitlines()
    )


async def main(args: argparse.Namespace) -> None:
    calls = FirstCalls()
    server = scripted_server(calls)
    try:
        with tempfile.TemporaryDirectory() as scratch:
            os.environ["XDG_STATE_HOME"] = str(Path(scratch) / "state")
            sources = [REPO, *([Path(args.big)] if args.big else [])]
            print(f"load average {os.getloadavg()[0]:.2f}; {args.repeat} runs each, alternated")
            for source in sources:
                root = clone(source, Path(scratch))
                seconds = await first_call_costs(root, server, calls, args.repeat, args.settle, args.typing)
                medians = {key: statistics.median(values) for key, values in seconds.items()}
                every = {key: [round(value, 2) for value in values] for key, values in seconds.items()}
                name = "aider-lsp" if source == REPO else source.name
                print(
                    f"{name} ({files_in(root)} files), request → Aider's first call: in place "
                    f"{medians['none']:.2f} s; isolated from a spare tree {medians['spare']:.2f} s "
                    f"(+{medians['spare'] - medians['none']:.2f} s); isolated with no spare (a session's "
                    f"first) {medians['cold']:.2f} s (+{medians['cold'] - medians['none']:.2f} s); "
                    f"prepared while its goal is typed ({args.typing:g} s) {medians['typed']:.2f} s "
                    f"(+{medians['typed'] - medians['none']:.2f} s); "
                    f"all: {every}"
                )
            server.latency = args.latency  # a real model's answers take seconds: runs at once overlap them
            for at_once in (False, True):
                wall, peak = await three_runs(Path(tempfile.mkdtemp(dir=scratch)), server, at_once)
                label = "at once" if at_once else "one after the other"
                memory = f"peak {peak / 1024:.0f} MB (this process and its children)"
                print(f"three isolated runs {label}: {wall:.1f} s wall, {memory}")
            print(f"load average {os.getloadavg()[0]:.2f}")
    finally:
        server.stop()


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--settle", type=float, default=20.0, help="seconds a spare tree gets before a run")
    parser.add_argument("--typing", type=float, default=8.0, help="seconds a user types a first run's goal")
    parser.add_argument("--latency", type=float, default=3.0, help="seconds per model call in the three runs")
    parser.add_argument("--big", default=None, help="a git repository of >= 2,000 files (e.g. sphinx's)")
    return parser.parse_args()


if __name__ == "__main__":
    asyncio.run(main(parse_args()))
