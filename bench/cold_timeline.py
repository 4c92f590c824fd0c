"""One cold `aider-lsp run` and one `aider --auto-test` on bench/workflow_vs_aider.py's calc story,
as timelines: when each process started and ended (strace: execve, exit_group), when each model
call came in and was answered, when each progress line and the result were printed.

Why: the cold run's ratio to Aider's loop is made of its start-up, its test runs and its exit;
a timeline says which of them stand on the critical path, where a total does not.
Needs strace and the Aider environment.

    .venv/bin/python bench/cold_timeline.py [--latency 1] [--side cold aider]
"""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import IO, Any

sys.path.insert(0, str(Path(__file__).parent))

from workflow_vs_aider import (
    CALC,
    CLI,
    MODEL,
    Calls,
    aider_command,
    aider_environment,
    aider_home,
    run_cold,
    scripted_server,
    write_calc_project,
)

EXEC = re.compile(r'^(\d+) +([\d.]+) execve\("([^"]+)", \[(.*?)\]')
EXIT = re.compile(r"^(\d+) +([\d.]+) (?:\+\+\+ killed by (\w+)|exit_group\((\d+)\))")


def traced(command: list[str], trace: Path) -> list[str]:
    return [
        "strace",
        "-f",
        "-qq",
        "-ttt",
        "--seccomp-bpf",
        "-e",
        "trace=execve,exit_group,kill",
        "-o",
        str(trace),
        *command,
    ]


def events_of(trace: Path, t0: float) -> list[tuple[float, str]]:
    """Each process's start (its command, shortened) and end, seconds after t0."""
    events: list[tuple[float, str]] = []
    names: dict[str, str] = {}
    for line in trace.read_text(errors="replace").splitlines():
        if (m := EXEC.match(line)) and "ENOENT" not in line:
            pid, at, _path, argv = m.groups()
            names[pid] = " ".join(a.strip('"') for a in argv.split(", ")[:6])[:110]
            events.append((float(at) - t0, f"pid {pid} exec {names[pid]}"))
        elif m := EXIT.match(line):
            pid, at, signal = m.group(1), m.group(2), m.group(3)
            how = f"killed by {signal}" if signal else "exit"
            events.append((float(at) - t0, f"pid {pid} {how} ({names.get(pid, '?')[:60]})"))
    return events


def read_lines(stream: IO[str], t0: float, label: str, into: list[tuple[float, str]]) -> None:
    for line in stream:
        into.append((time.time() - t0, f"{label}: {line.rstrip()[:110]}"))


def run_traced(
    command: list[str], env: dict[str, str], cwd: Path, trace: Path | None
) -> tuple[float, list[Any]]:
    """The command (under strace given a `trace` file); its output lines timestamped as they
    come."""
    lines: list[tuple[float, str]] = []
    t0 = time.time()
    process = subprocess.Popen(
        traced(command, trace) if trace else command,
        env=env,
        cwd=cwd,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    readers = [
        threading.Thread(target=read_lines, args=(process.stdout, t0, "stdout", lines)),
        threading.Thread(target=read_lines, args=(process.stderr, t0, "stderr", lines)),
    ]
    for reader in readers:
        reader.start()
    process.wait()
    end = time.time() - t0
    for reader in readers:
        reader.join()
    lines.append((end, f"process ended (exit {process.returncode})"))
    return t0, lines


def model_events(calls: Calls, t0_perf: float) -> list[tuple[float, str]]:
    events = []
    for kind, end, latency in calls.answered:
        events.append((end - latency - t0_perf, f"MODEL {kind} request"))
        events.append((end - t0_perf, f"MODEL {kind} answered"))
    return events


def cold_command(project: Path) -> list[str]:
    return [*CLI, "run", "--workspace", str(project), "--goal", CALC.goal, "--test", CALC.test_command]


def cold_env(base_url: str) -> dict[str, str]:
    import json
    import os

    env = {k: v for k, v in os.environ.items() if not k.startswith(("AIDER_LSP_", "OPENAI_"))}
    env.update(
        AIDER_LSP_MODEL="openai:scripted-planner",
        AIDER_LSP_BASE_URL=base_url,
        AIDER_LSP_API_KEY="bench-key",
        AIDER_LSP_AIDER_MODEL=f"openai/{MODEL}",
        AIDER_LSP_AIDER_SERVER=json.dumps({"args": ["--edit-format", "whole"]}),
    )
    return env


def timeline(side: str, project: Path, server: Any, calls: Calls, home: Path, trace: Path | None) -> None:
    CALC.reset(project)
    if side == "cold":
        command, env = cold_command(project), cold_env(server.base_url)
    else:
        history = Path(tempfile.mkdtemp(prefix="aider-timeline-history-"))
        command = aider_command(
            CALC.goal,
            f"openai/{MODEL}",
            history,
            list(CALC.aider_files),
            "--test-cmd",
            CALC.test_command,
            "--auto-test",
            "--no-suggest-shell-commands",
            "--no-detect-urls",
        )
        env = aider_environment(server.base_url, home)
    calls.clear()
    t0_perf = time.perf_counter()
    t0, lines = run_traced(command, env, project, trace)
    processes = events_of(trace, t0) if trace else []
    events = sorted(processes + lines + model_events(calls, t0_perf))
    print(f"\n== {side} ==")
    for at, what in events:
        print(f"{at:7.3f}  {what}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--latency", type=float, default=1.0)
    parser.add_argument("--side", nargs="+", default=["cold", "aider"])
    parser.add_argument(
        "--strace",
        action="store_true",
        help="each process's start and end too (strace slows our server's start: seconds, not Aider's)",
    )
    args = parser.parse_args()
    base = Path(tempfile.mkdtemp(prefix="aider-timeline-"))
    try:
        home = aider_home(base)
        calls = Calls()
        server = scripted_server(calls)
        for side in ("cold", "aider"):
            (base / side).mkdir()
        projects = {side: write_calc_project(base / side) for side in ("cold", "aider")}
        run_cold(CALC, projects["cold"], server, calls)  # its index and tags cache, as a second run
        server.latency = args.latency
        for side in args.side:
            trace = base / f"{side}.trace" if args.strace else None
            timeline(side, projects[side], server, calls, home, trace)
        server.stop()
    finally:
        shutil.rmtree(base, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
