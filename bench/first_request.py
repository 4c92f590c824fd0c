"""What the first Aider request of a goal-only run carries, against the same goal with the
file named (issue #50, "the right file at the price of one").

A goal that names no file makes the run choose the first edit's files (bench/first_edit.py
measures that choice); Aider then sends each of them whole, with its repo map, to the model.
The price is paid in that request, and a file the choice missed costs a round trip (the model
asks for it, Aider adds it, a second request). This bench reads the requests as the model
receives them over HTTP, so whatever the run and Aider do, the choice, the map, read-only
files, is measured, never re-implemented:

- cases: bench/first_edit.py's (per repository the N newest commits whose subject is a plain
  goal and that change 1–2 package .py files), each run on the commit's PARENT, a git
  repository (bench/context.py's TreeMirror), so Aider's repo map is on (`aiderMapTokens`
  1024 at the root of a git repository); one Application per repository, moved forward
  commit to commit, with the REAL bundled Aider server on the scripted model
  (aider_lsp_testing/llm_server.py; the planner and the analyst answered there too);
- per case two runs of `app.run_workflow` (one iteration, test command `true`, no suite
  before the first edit): (a) the goal alone, (b) the goal and the first changed file
  (`file_context`, as a user who names the file sends it);
- the scripted Aider model: when a changed file is whole in the request (after Aider's
  "I have *added these files to the chat*" or its read-only files message: the path, then
  its fenced text) it answers prose with no edit ("No change is needed."), which ends the
  edit; else when one is in the repo map (Aider's "Here are summaries of some files …"
  message, not the user's own message) or named in the user's message with what matched in
  it (a line "- <path>: …", the run's list of files it did not send) it asks for it, as a
  model would ("To make this change I need to edit <path>. Please add it to the chat."),
  Aider adds it and asks again; else the same prose (a miss: nothing in the request leads
  to the file);
- per run: the Aider requests of the first edit, the first request's tokens, the changed file
  whole in it or in its map, the files whole in it (and how many are tests or docs), the
  tokens of all the edit's requests (the round trip included).

Printed per repository and pooled per set (`--tuning` repositories apart from the held-out
`--repos`, as in bench/first_edit.py): recall (whole; reachable = whole or in the map), the
median and p90 of goal-only / named-file tokens for the first request and for the whole first
edit, files whole, the cases with a test or doc file whole, mean and median tokens. Issue
#50's targets: median ≤ 1.5×, p90 ≤ 2.5×, recall ≥ 90%. pallets/click and encode/httpx are
never used (kept for acceptance). Needs the Aider environment (`aider-lsp setup-aider`).

Usage: .venv/bin/python bench/first_request.py [--repos DIR …] [--tuning DIR …] [--commits N]
       [--dump FILE] [--aider-model openai/NAME]
A DIR is a git directory, a clone, or a fetched mirror (`/work/.mirror/owner+name`).
Aider's model is one it knows (default openai/gpt-4.1: the `diff` edit format, its system
prompt and examples, as a user's model has them; a name Aider does not know gets `whole`),
served by the scripted model through `baseUrl`; its requests are told apart by that name.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import logging
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path, PurePosixPath
from typing import Any

from aider_lsp.app import Application
from aider_lsp.config import aider_env
from aider_lsp.config.settings import load_settings
from aider_lsp.models import RequestContext, WorkflowRequest, WorkflowRun
from aider_lsp_testing.llm_server import (
    IS_AIDER_SUMMARY,
    IS_ANALYSIS,
    IS_PLAN,
    Reply,
    ScriptedLLMServer,
    all_of,
    json_output,
    message_text,
    model_is,
    not_,
    text,
)

sys.path.insert(0, str(Path(__file__).parent))

from context import TreeMirror, percentile
from first_edit import Case, on_each_parent, repository_cases

CHARS_PER_TOKEN = 4
PLANNER = "bench-planner"  # the run's own model (plan, analysis): answered, never measured
# Aider's messages (aider/coders/base_prompts.py), the first line of each
CHAT_FILES = "I have *added these files to the chat*"
READ_ONLY_FILES = "Here are some READ ONLY files"
REPO_MAP = "Here are summaries of some files present in my git repository"
FENCES = {"```", "````", "<source>", "<code>", "<pre>", "<codeblock>", "<sourcecode>"}  # Aider's all_fences
NO_CHANGE = "No change is needed."
TARGETS = {"median": 1.5, "p90": 2.5, "recall": 0.9}  # issue #50
TOKEN_RULE = (
    f"tokens = characters of every message's text in the request body (system prompt, examples, "
    f"repo map, files, goal) / {CHARS_PER_TOKEN}"
)
RECALL_RULE = (
    "recall whole = a changed file (either of two) sent whole in the first request (chat or "
    "read-only files); map = not whole, a line of Aider's repo map message; named = neither, "
    "a line of the user's message (the files the run named, each with what matched in it); "
    "reach = any of the three"
)
TEST_DOC_RULE = (
    "test/doc = under tests/ test/ testing/ docs/ doc/, test_*.py, *_test.py, conftest.py, *.md, *.rst"
)


# -- what a request carries ---------------------------------------------------------------------
@dataclass
class Seen:
    """One request read as the model receives it."""

    tokens: int
    whole: list[str]  # workspace files sent whole (chat files, then read-only ones)
    mapped: set[str]  # workspace files named in the repo map message
    named: set[str]  # workspace files the user's message lists ("- <path>: …")


def read_request(request: dict[str, Any], tree: set[str]) -> Seen:
    characters = 0
    whole: list[str] = []
    mapped: set[str] = set()
    named: set[str] = set()
    for message in request.get("messages", []):
        content = message_text(message)
        characters += len(content)
        if message.get("role") != "user":
            continue
        lines = content.split("\n")
        if content.startswith((CHAT_FILES, READ_ONLY_FILES)):  # "\n<path>\n```\n<text>```\n" each
            whole += [
                line
                for line, after in itertools.pairwise(lines)
                if after in FENCES and line in tree and line not in whole
            ]
        elif content.startswith(REPO_MAP):  # "<path>:" then its lines, or "<path>" alone
            mapped |= {line.removesuffix(":") for line in lines} & tree
        else:  # the user's own message: its list of files not sent
            named |= {line[2:].split(": ", 1)[0] for line in lines if line.startswith("- ")} & tree
    return Seen(round(characters / CHARS_PER_TOKEN), whole, mapped, named)


def test_or_doc(path: str) -> bool:
    pure = PurePosixPath(path.lower())
    folders = set(pure.parts[:-1]) & {"tests", "test", "testing", "docs", "doc"}
    name = pure.name
    named = name.startswith("test_") or name.endswith("_test.py") or name == "conftest.py"
    return bool(folders) or named or pure.suffix in (".md", ".rst")


class ScriptedCoder:
    """The scripted model's answer to Aider: prose once a changed file is whole, a request for
    it while only the map or the message's list shows it, prose when nothing leads to it (the
    edit ends there)."""

    def __init__(self) -> None:
        self.targets: list[str] = []
        self.tree: set[str] = set()

    def __call__(self, request: dict[str, Any]) -> Reply:
        seen = read_request(request, self.tree)
        if set(self.targets) & set(seen.whole):
            return text(NO_CHANGE)
        wanted = [path for path in self.targets if path in seen.mapped | seen.named]
        if wanted:
            return text(f"To make this change I need to edit {wanted[0]}. Please add it to the chat.")
        return text(NO_CHANGE)


def scripted_server(aider_name: str, coder: ScriptedCoder) -> ScriptedLLMServer:
    server = ScriptedLLMServer(models=[PLANNER, aider_name]).start()
    plan: dict[str, Any] = {
        "instructions": "bench: the plan is not measured",
        "files": [],
        "test_command": None,
    }
    server.add_rule(all_of(model_is(PLANNER), IS_PLAN), json_output(plan))
    verdict = {"verdict": "FAILURE", "message": "bench: the first edit is measured, the run ends"}
    server.add_rule(all_of(model_is(PLANNER), IS_ANALYSIS), json_output(verdict))
    server.add_rule(all_of(model_is(aider_name), not_(IS_AIDER_SUMMARY)), coder)
    server.add_rule(lambda request: True, text("The user asked for a change; none was made."))  # summaries
    return server


# -- the runs ------------------------------------------------------------------------------------
@dataclass
class FirstEdit:
    """One run's first edit, as Aider sent it."""

    requests: int  # Aider's requests (its model's name), the add-file round trip included
    first_tokens: int
    edit_tokens: int  # every request of the edit
    whole: list[str]  # files whole in the first request
    target_whole: bool
    target_mapped: bool
    target_named: bool
    test_doc: int  # of `whole`, tests and docs
    ended: str  # how the run ended (its status; the reason when it failed otherwise)


@dataclass
class Measured:
    case: Case
    goal_only: FirstEdit
    named: FirstEdit
    tuning: bool = False
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        return bool(self.goal_only.requests and self.named.requests)


def first_edit_of(
    requests: list[dict[str, Any]], targets: list[str], tree: set[str], ended: str
) -> FirstEdit:
    seen = [read_request(request, tree) for request in requests]
    if not seen:
        return FirstEdit(0, 0, 0, [], False, False, False, 0, ended)
    first = seen[0]
    wanted = set(targets)
    return FirstEdit(
        requests=len(seen),
        first_tokens=first.tokens,
        edit_tokens=sum(s.tokens for s in seen),
        whole=first.whole,
        target_whole=bool(wanted & set(first.whole)),
        target_mapped=bool(wanted & first.mapped),
        target_named=bool(wanted & first.named),
        test_doc=sum(test_or_doc(path) for path in first.whole),
        ended=ended,
    )


def how_it_ended(run: WorkflowRun) -> str:
    if run.outcome is None:
        return f"refused: {run.refused.message if run.refused else '?'}"
    reason = f" {run.outcome.reason.value}" if run.outcome.reason else ""
    return f"{run.outcome.status.value}{reason}"


def bench_application(folder: Path, index: Path, base_url: str, aider_model: str) -> Application:
    settings = load_settings(
        {
            "model": f"openai:{PLANNER}",
            "baseUrl": base_url,  # Aider's too: OPENAI_API_BASE (aider/launch.py)
            "apiKey": "bench-key",
            "aiderModel": aider_model,
            "testsBeforeFirstEdit": False,
            "maxRetries": 1,
            "testCommand": "true",
        },
        environ={},
    )
    return Application.for_one_run(folder, settings, index_path=str(index))


async def run_once(
    app: Application,
    server: ScriptedLLMServer,
    coder: ScriptedCoder,
    case: Case,
    aider_name: str,
    *,
    named: bool,
) -> FirstEdit:
    server.clear_requests()
    coder.targets = case.targets
    request = WorkflowRequest(
        goal=case.goal,
        test_command="true",
        max_retries=1,
        plan=False,
        file_context=[case.targets[0]] if named else None,
    )
    run = await app.run_workflow(request, RequestContext())
    sent = [r for r in server.chat_requests() if r.get("model") == aider_name and not IS_AIDER_SUMMARY(r)]
    return first_edit_of(sent, case.targets, coder.tree, how_it_ended(run))


async def measure_repository(
    cases: list[Case], git_dir: Path, work: Path, server: ScriptedLLMServer, coder: ScriptedCoder, model: str
) -> list[Measured]:
    """Each case on its parent, both runs, one Application for the repository."""
    folder = work / re.sub(r"\W+", "-", cases[0].repo)
    folder.mkdir()
    mirror = TreeMirror(git_dir, folder)
    if not (folder / ".git").is_dir():
        raise SystemExit(f"{folder}: not the root of a git repository, Aider's repo map would be off")
    app = bench_application(folder, work / f"{folder.name}.sqlite3", server.base_url, model)
    aider_name = model.split("/", 1)[1]
    measured: list[Measured] = []
    try:
        async for case in on_each_parent(app, mirror, cases):
            coder.tree = set(mirror.blobs)
            started = time.perf_counter()
            goal_only = await run_once(app, server, coder, case, aider_name, named=False)
            named = await run_once(app, server, coder, case, aider_name, named=True)
            item = Measured(case, goal_only, named, seconds=time.perf_counter() - started)
            measured.append(item)
            print(f"  {progress_line(item)}", flush=True)
    finally:
        await app.aclose()
    return measured


def where(edit: FirstEdit) -> str:
    """Where the first request has a changed file: whole, in the map, named in the message."""
    if edit.target_whole:
        return "whole"
    if edit.target_mapped:
        return "map"
    return "named" if edit.target_named else "MISS"


def progress_line(item: Measured) -> str:
    goal, named = item.goal_only, item.named
    ratio = f"{goal.first_tokens / named.first_tokens:.2f}x" if item.ok else "n/a"
    return (
        f"{item.case.sha[:8]} {where(goal):5} first {goal.first_tokens}/{named.first_tokens} tok ({ratio}), "
        f"edit {goal.edit_tokens}/{named.edit_tokens}, requests {goal.requests}/{named.requests}, "
        f"{len(goal.whole)} whole ({goal.test_doc} test/doc), {item.seconds:.0f} s: {item.case.goal[:60]!r}"
        + ("" if item.ok else f" [ended: {goal.ended} / {named.ended}]")
    )


# -- figures ------------------------------------------------------------------------------------
@dataclass
class Figures:
    cases: int
    failed: int  # a run without an Aider request (left out of the ratios)
    recall: float
    mapped: float  # not whole, in the map
    named: float  # neither, in the message's list
    reachable: float
    first: list[float]  # goal-only / named, first request
    edit: list[float]  # … the whole first edit
    files: float
    test_doc_cases: int
    requests: tuple[float, float]
    first_tokens: tuple[list[int], list[int]]  # goal-only, named
    edit_tokens: tuple[list[int], list[int]]


def figures(items: list[Measured]) -> Figures:
    ok = [m for m in items if m.ok]
    n = max(1, len(ok))
    return Figures(
        cases=len(items),
        failed=len(items) - len(ok),
        recall=sum(m.goal_only.target_whole for m in ok) / n,
        mapped=sum(not m.goal_only.target_whole and m.goal_only.target_mapped for m in ok) / n,
        named=sum(where(m.goal_only) == "named" for m in ok) / n,
        reachable=sum(where(m.goal_only) != "MISS" for m in ok) / n,
        first=[m.goal_only.first_tokens / m.named.first_tokens for m in ok],
        edit=[m.goal_only.edit_tokens / m.named.edit_tokens for m in ok],
        files=sum(len(m.goal_only.whole) for m in ok) / n,
        test_doc_cases=sum(m.goal_only.test_doc > 0 for m in ok),
        requests=(
            sum(m.goal_only.requests for m in ok) / n,
            sum(m.named.requests for m in ok) / n,
        ),
        first_tokens=([m.goal_only.first_tokens for m in ok], [m.named.first_tokens for m in ok]),
        edit_tokens=([m.goal_only.edit_tokens for m in ok], [m.named.edit_tokens for m in ok]),
    )


def med(values: list[float] | list[int]) -> float:
    return statistics.median(values) if values else float("nan")


def p90(values: list[float]) -> float:
    return percentile(values, 90) if values else float("nan")


def mean(values: list[int]) -> float:
    return statistics.mean(values) if values else float("nan")


def groups_of(measured: list[Measured]) -> list[tuple[str, list[Measured]]]:
    """Each repository, then each set pooled (held-out, tuning) where it has cases."""
    rows: dict[tuple[str, bool], list[Measured]] = {}
    for item in measured:
        rows.setdefault((item.case.repo, item.tuning), []).append(item)
    named = [(f"{repo} ({'tuning' if tuning else 'held'})", items) for (repo, tuning), items in rows.items()]
    for tuning, label in ((False, "HELD-OUT, pooled"), (True, "TUNING, pooled")):
        pooled = [item for item in measured if item.tuning is tuning]
        if pooled:
            named.append((label, pooled))
    return named


def report(measured: list[Measured], aider_model: str, say: Callable[[str], None] = print) -> None:
    say(f"\nThe first Aider request of a workflow run (real Aider, {aider_model}, repo map 1024), as sent")
    say(f"  {TOKEN_RULE}")
    say(f"  {RECALL_RULE}")
    say(f"  ratios: goal-only / goal + the first changed file named, per case; {TEST_DOC_RULE}")
    say(
        f"\n{'':40}{'n':>4}{'fail':>5}{'whole':>7}{'map':>6}{'named':>7}{'reach':>7}"
        f"{'1st x med':>11}{'p90':>6}{'edit x med':>12}{'p90':>6}{'files':>7}{'t/d':>5}{'req':>10}"
    )
    groups = groups_of(measured)
    for label, items in groups:
        f = figures(items)
        requests = f"{f.requests[0]:.2f}/{f.requests[1]:.2f}"
        say(
            f"{label:40}{f.cases:>4}{f.failed:>5}{f.recall:>7.2f}{f.mapped:>6.2f}{f.named:>7.2f}"
            f"{f.reachable:>7.2f}{med(f.first):>11.2f}"
            f"{p90(f.first):>6.2f}{med(f.edit):>12.2f}{p90(f.edit):>6.2f}{f.files:>7.2f}"
            f"{f.test_doc_cases:>5}{requests:>10}"
        )
    say("  (files: mean files whole in the goal-only first request; t/d: cases with a test or doc file")
    say("   whole in it; req: mean Aider requests of the first edit, goal-only / named)")
    say(f"\nTokens, goal-only / named: {'mean':>26}{'median':>20}")
    say(f"{'':40}{'first request':>16}{'first edit':>16}{'first request':>16}{'first edit':>16}")
    for label, items in groups:
        f = figures(items)
        cells = [
            f"{mean(f.first_tokens[0]):.0f}/{mean(f.first_tokens[1]):.0f}",
            f"{mean(f.edit_tokens[0]):.0f}/{mean(f.edit_tokens[1]):.0f}",
            f"{med(f.first_tokens[0]):.0f}/{med(f.first_tokens[1]):.0f}",
            f"{med(f.edit_tokens[0]):.0f}/{med(f.edit_tokens[1]):.0f}",
        ]
        say(f"{label:40}" + "".join(f"{cell:>16}" for cell in cells))
    say("")
    for label, items in groups:
        if label.endswith("pooled"):
            say(f"targets (#50) {label}: {verdicts(figures(items))}")


def verdicts(f: Figures) -> str:
    def mark(value: float, limit: float, above: bool = False) -> str:
        met = value >= limit if above else value <= limit
        return f"{value:.2f} {'met' if met else 'NOT met'}"

    first, edit = f"{mark(med(f.first), TARGETS['median'])}", f"{mark(med(f.edit), TARGETS['median'])}"
    return (
        f"first request median {first}, p90 {mark(p90(f.first), TARGETS['p90'])}; "
        f"first edit median {edit}, p90 {mark(p90(f.edit), TARGETS['p90'])}; "
        f"reach {mark(f.reachable, TARGETS['recall'], True)} (whole {f.recall:.2f}, map {f.mapped:.2f}, "
        f"named {f.named:.2f})"
    )


# -- the run -------------------------------------------------------------------------------------
async def collect(
    locations: list[Path], tuning: set[Path], count: int, work: Path, model: str
) -> list[Measured]:
    coder = ScriptedCoder()
    server = scripted_server(model.split("/", 1)[1], coder)
    measured: list[Measured] = []
    try:
        for location, name, git_dir, cases in repository_cases(locations, count):
            if not cases:
                continue
            started = time.perf_counter()
            for item in await measure_repository(cases, git_dir, work, server, coder, model):
                item.tuning = location in tuning
                measured.append(item)
            print(f"{name}: {time.perf_counter() - started:.0f} s", flush=True)
    finally:
        server.stop()
    return measured


def dump(measured: list[Measured], target: Path) -> None:
    with target.open("w", encoding="utf-8") as handle:
        for item in measured:
            handle.write(json.dumps(asdict(item)) + "\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repos", type=Path, nargs="*", default=[], help="held-out repositories")
    parser.add_argument(
        "--tuning", type=Path, nargs="*", default=[], help="repositories the choice may be tuned on"
    )
    parser.add_argument("--commits", type=int, default=20, help="cases per repository")
    parser.add_argument("--dump", type=Path, help="write every case's two runs here (JSON lines)")
    parser.add_argument(
        "--aider-model",
        default="openai/gpt-4.1",
        help="Aider's model (openai/NAME, served by the scripted model): its edit format and prompts",
    )
    args = parser.parse_args()
    if not args.aider_model.startswith("openai/"):
        parser.error("--aider-model must be openai/NAME (the scripted model serves it)")
    if not aider_env.is_ready():
        raise SystemExit(
            f"the Aider environment is missing: run `aider-lsp setup-aider` ({aider_env.env_dir()})"
        )
    logging.basicConfig(level=logging.ERROR)
    work = Path(tempfile.mkdtemp(prefix="aider-lsp-first-request-"))
    os.environ["XDG_STATE_HOME"] = str(work / "state")  # nothing of the bench in the user's state
    try:
        locations = [*args.tuning, *args.repos]
        measured = asyncio.run(collect(locations, set(args.tuning), args.commits, work, args.aider_model))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    if args.dump:
        dump(measured, args.dump)
    report(measured, args.aider_model)


if __name__ == "__main__":
    os.environ.setdefault("PYTHONHASHSEED", "0")
    try:
        main()
    except subprocess.CalledProcessError as exc:
        raise SystemExit(f"git failed: {exc.cmd}: {exc.stderr!r}") from exc
