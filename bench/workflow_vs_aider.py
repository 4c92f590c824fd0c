"""Our loop vs Aider's own: `aider --test-cmd … --auto-test` against `aider-lsp.workflow.run` on a
warm server and against a cold `aider-lsp run` (a new process, as a terminal user starts it), the
same project and the same scripted model, at 0, 1, 3 and 10 s of model latency (30 s with
`--slow`): the wall time, and the model spend per fix (issue 50).

The story is a two-iteration fix: the calc project (aider_lsp_testing/calc_project.py) has two
bugs; the first edit fixes only `subtract`, the test still fails, the failing output goes back
to the model and the second edit fixes `multiply`. Aider's CLI (the Aider environment's own
`aider` executable, `whole` edit format, no git, no repo map, no streaming) runs the test
command itself and sends its output back (`--auto-test`); it runs twice: as before (calc.py and
test_calc.py named on its command line) and given the right file alone (calc.py), the yardstick
of the spend. Ours warm is a real `aider-lsp serve` over stdio, warmed up by one run first,
driving the bundled Aider server; its planner and analyst are the same scripted model. Ours cold
is `aider-lsp run --json --goal … --test …` in a new process (its index and Aider's tags cache
kept from the run before, as on a user's machine). Aider's CLI gets a HOME with its price cache
filled (from litellm's bundled map, as our server does), so it does not try to download it.
Both of ours get the goal alone (no file named); `--with-file` adds the warm run with the
editor's file (`file_context`).

`--real-repo DIR` (a git clone of python-humanize/humanize) runs a goal-only story on a real
repository instead: naturalsize's decimal and binary bases swapped in src/humanize/filesize.py,
the goal names the function but no file, the test command runs three of its test files
(about a second). Aider runs as in a git repository (git and its repo map on, no commits), once
with no file named and once given the right file (src/humanize/filesize.py); ours as above.
The scripted model fixes the file once the chat holds it and otherwise asks for it (Aider then
adds it and asks again: one more call); printed with each run: whether the first Aider call
already held the file to change.

The scripted model answers every call after `--latency` seconds; an Aider request whose last
message carries a failing test's output ("I ran this command:") gets the right fix, any other
the wrong one; the analyst reads the real exit code. Printed per latency: wall time, model
calls by kind, the calls on the critical path by kind (calls that overlap in time count once,
as the Aider call when one is among them: a plan or an analysis beside an edit costs no wait),
and ours / Aider's. Targets (issue 31): warm <= 0.1 at 0 s, <= 0.45 at 1 s, <= 0.7 at 3 s,
<= 0.85 at 10 s; cold <= 0.9 from 1 s up. Other processes share the machine: run it a few
times (`--repeat`), the medians are printed, and the load average with them.

Model spend (issue 50), counted from the requests the scripted server recorded during each
run (a run owns the requests that arrived between its start and its end; any that arrive
between runs are counted apart and named), per call kind: `aider` (an edit request: the model
name the Aider side uses), `summary` (Aider's background chat summary, same model), `plan` and
`analysis` (ours, told apart by the first line of their templates' instructions,
"user:generate-plan-from-goal" and "user:evaluate-and-retry-analysis" in llm/templates.py, in
the system prompt or a message) and `other` (any other request, e.g. the index's re-ranking).
The token rule (about four characters a token, per request, rounded):

    sent     = (Σ over the request's messages of len(text content) + len(its tool calls'
                arguments)) / 4  +  len(JSON of the tool definitions) / 4 if tools are offered
                +  len(JSON of response_format) / 4 if one is asked
    received = (len(the scripted reply's text) + len(its tool calls' arguments)) / 4

Printed per story (and latency): each run's requests by kind, tokens sent by kind, total sent,
total received, cached tokens ("—": not reported; the scripted server reports none unless a
reply's usage carries them), the ratio of its tokens sent to Aider's given the right file
(goal: ours <= 1.0×), and what the run itself REPORTS beside what the server answered: ours the
result's usage (`notes.workflow.usage`: the planning model's requests and tokens, Aider's edits
and their tokens), Aider's CLI the sum of its "Tokens: … sent, … received." lines (rounded by
Aider to 0.1k); the server's side is the usage its replies carried (prompt + completion
tokens, the figures an honest report adds up; the scripted server's estimate counts the messages
only, not the tools offered, so for a call offering tools it is below the sent figure above).
A difference names calls the run did not count.
`--tokens-only` runs latency 0 once, the warm run with the file named included, and prints
only the spend.
Needs the Aider environment (`aider-lsp setup-aider`).

    .venv/bin/python bench/workflow_vs_aider.py [--latency 0 1 3 10] [--slow] [--repeat 1]
        [--with-file] [--tokens-only] [--real-repo DIR [--first-wrong]]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from aider_lsp.cli.offline_llm import estimated_usage as usage_answered  # what a reply without usage says
from aider_lsp.cli.offline_llm import message_parts
from aider_lsp.config import aider_env
from aider_lsp.llm.templates import ANALYSIS as ANALYSIS_TEMPLATE
from aider_lsp.llm.templates import PLAN as PLAN_TEMPLATE
from aider_lsp_testing.aider_cli import aider_command, aider_environment, aider_home
from aider_lsp_testing.calc_project import (
    BUGGY,
    FIXED,
    HALF_FIXED,
    PLAN,
    TEST_COMMAND,
    analysis_by_exit_code,
    write_calc_project,
)
from aider_lsp_testing.llm_server import (
    IS_AIDER,
    IS_AIDER_SUMMARY,
    IS_ANALYSIS,
    IS_PLAN,
    Matcher,
    Reply,
    ReplyLike,
    ScriptedLLMServer,
    aider_whole,
    all_of,
    any_message_contains,
    json_output,
    last_user_contains,
    last_user_message,
    message_text,
    text,
)
from aider_lsp_testing.raw_lsp import RawLspClient

MODEL = "scripted-coder"
GOAL = "Make the tests in test_calc.py pass."
WARM_TARGETS = {0.0: 0.1, 1.0: 0.45, 3.0: 0.7, 10.0: 0.85}
COLD_TARGET = 0.9  # from 1 s a call up
FAILING_OUTPUT = "I ran this command:"  # how both loops send a failing test's output back
CLI = [sys.executable, "-m", "aider_lsp"]


@dataclass
class Run:
    seconds: float
    calls: Counter[str]
    critical: Counter[str] = field(default_factory=Counter)
    held: bool | None = None  # whether the first Aider call already held the file to change
    spend: Spend | None = None  # what the model was sent and answered, and what the run reported


@dataclass(frozen=True)
class Story:
    """A seeded bug, the goal alone, the test command both loops run."""

    goal: str
    test_command: str
    target: str  # the file the fix changes
    buggy: str
    fixed: str
    aider_files: tuple[str, ...] = ()  # named on Aider's command line
    aider_flags: tuple[str, ...] = ()

    def reset(self, project: Path) -> None:
        (project / self.target).write_text(self.buggy)

    def check_fixed(self, project: Path, who: str) -> None:
        if (project / self.target).read_text() != self.fixed:
            raise SystemExit(f"{who}: {self.target} was not fixed")


CALC = Story(GOAL, TEST_COMMAND, "calc.py", BUGGY, FIXED, aider_files=("calc.py", "test_calc.py"))


class Calls:
    """When each model call was answered, by kind (the scripted server answers after its
    latency: a call ran from `answered - latency` to `answered`)."""

    def __init__(self, marker: str | None = None) -> None:
        self.answered: list[tuple[str, float, float]] = []  # kind, answered at, latency
        self.since = 0.0
        self.marker = marker  # a line only the file to change holds (not the repo map)
        self.held: bool | None = None  # whether the run's first Aider call held it
        # the spend: the server whose recorded requests are counted, where the current run's
        # begin in its log and where the last run's ended, each request's scripted reply (by
        # the recorded request's id), and the kinds of requests that came between runs
        self.server: ScriptedLLMServer | None = None
        self.first = 0
        self.last_end = 0
        self.replies: dict[int, Reply] = {}
        self.strays: list[str] = []

    def clear(self) -> None:
        """A new run: calls that started before it (a stopped analysis of the run before,
        answered late) are not its own; requests recorded since the last run ended are no
        run's (kept as strays)."""
        self.answered.clear()
        self.since = time.perf_counter()
        self.held = None
        if self.server is not None:
            requests = self.server.chat_requests()
            self.strays.extend(kind_of(request) for request in requests[self.last_end :])
            self.first = len(requests)

    def spend(self, reported: Reported | None) -> Spend | None:
        """What the server saw of the run now ending: the requests it recorded since the run
        began, each with its scripted reply."""
        if self.server is None:
            return None
        requests = self.server.chat_requests()
        self.last_end = len(requests)
        return count_spend(requests[self.first :], self.replies, reported)

    def _own(self) -> list[tuple[str, float, float]]:
        return [
            (kind, end, latency) for kind, end, latency in self.answered if end - latency >= self.since - 0.05
        ]

    def timed(
        self, kind: str, server: ScriptedLLMServer, reply: ReplyLike
    ) -> Callable[[dict[str, Any]], ReplyLike]:
        def answer(request: dict[str, Any]) -> ReplyLike:
            if kind == "aider" and self.held is None and self.marker is not None:
                self.held = self.marker in json.dumps(request.get("messages", []))
            self.answered.append((kind, time.perf_counter(), server.latency))
            answer = reply(request) if callable(reply) else reply
            while callable(answer):
                answer = answer(request)
            if isinstance(answer, Reply):
                self.replies[id(request)] = answer  # the server keeps the request: its id stays
            return answer

        return answer

    def by_kind(self) -> Counter[str]:
        return Counter(kind for kind, _, _ in self._own())

    def critical_path(self) -> Counter[str]:
        """The calls a user waits for: calls overlapping in time count once, as the Aider call
        when one is among them (the plan or analysis beside it costs no wait)."""
        spans = sorted((end - latency, end, kind) for kind, end, latency in self._own())
        path: Counter[str] = Counter()
        group: list[str] = []
        group_end = float("-inf")
        for start, end, kind in spans:
            if group and start >= group_end - 1e-3:
                path["aider" if "aider" in group else group[0]] += 1
                group = []
            group.append(kind)
            group_end = max(group_end, end) if len(group) > 1 else end
        if group:
            path["aider" if "aider" in group else group[0]] += 1
        return path


def scripted_server(calls: Calls) -> ScriptedLLMServer:
    server = ScriptedLLMServer(models=["scripted-planner", MODEL]).start()
    calls.server = server

    def rule(matcher: Matcher, kind: str, reply: ReplyLike) -> None:
        server.add_rule(matcher, calls.timed(kind, server, reply))

    rule(IS_PLAN, "plan", json_output(PLAN))
    rule(IS_ANALYSIS, "analysis", analysis_by_exit_code)
    rule(all_of(IS_AIDER, last_user_contains(FAILING_OUTPUT)), "aider", aider_whole({"calc.py": FIXED}))
    rule(IS_AIDER, "aider", aider_whole({"calc.py": HALF_FIXED}))
    return server


def measured(calls: Calls, seconds: float, reported: Reported | None = None) -> Run:
    return Run(seconds, calls.by_kind(), calls.critical_path(), calls.held, calls.spend(reported))


# -- model spend (issue 50) ------------------------------------------------------------------
# ours told apart by the first line of their templates' instructions (the system prompt)
PLAN_WORDS = PLAN_TEMPLATE.instructions.splitlines()[0]
ANALYSIS_WORDS = ANALYSIS_TEMPLATE.instructions.splitlines()[0]
KINDS = ("aider", "summary", "plan", "analysis", "other")
AIDER_KINDS = ("aider", "summary")  # the Aider model's requests; the others are the planning model's
# Aider's usage report after each of its model calls (aider/coders/base_coder.py), its figures
# rounded to 0.1k from 1000 up
AIDER_TOKENS = re.compile(
    r"Tokens: ([\d.]+k?) sent(?:, ([\d.]+k?) cache write)?(?:, ([\d.]+k?) cache hit)?, ([\d.]+k?) received\."
)


@dataclass(frozen=True)
class Reported:
    """What a run said it spent: requests as it counts them (ours: the planning model's
    requests plus Aider's edits, an edit being one or more requests), tokens, cached tokens
    (None: not said), and the figures by side, for the reader."""

    requests: int
    tokens: int
    detail: str
    cached: int | None = None


@dataclass
class Spend:
    """What the server saw of one run, by call kind: requests, tokens sent (the docstring's
    rule), and the usage its replies carried (prompt + completion tokens); tokens received;
    cached prompt tokens the replies carried (None: none said); requests no rule answered."""

    requests: Counter[str]
    sent: Counter[str]
    answered: Counter[str]
    received: int
    cached: int | None
    unanswered: int
    reported: Reported | None

    @property
    def total_sent(self) -> int:
        return sum(self.sent.values())


def kind_of(request: dict[str, Any]) -> str:
    """aider / summary (the Aider model's name), plan / analysis (their templates' words),
    other."""
    if request.get("model") == MODEL:
        return "summary" if IS_AIDER_SUMMARY(request) else "aider"
    said = "\n".join(message_text(message) for message in request.get("messages", []))
    if PLAN_WORDS in said:
        return "plan"
    if ANALYSIS_WORDS in said:
        return "analysis"
    return "other"


def tokens(chars: int) -> int:
    return round(chars / 4)


def sent_tokens(request: dict[str, Any]) -> int:
    """The messages' text and tool calls' arguments, the tools offered, the output format asked."""
    chars = 0
    for message in request.get("messages", []):
        chars += len(message_text(message))
        for call in message.get("tool_calls") or []:
            chars += len(str((call.get("function") or {}).get("arguments") or ""))
    for extra in ("tools", "response_format"):
        if request.get(extra):
            chars += len(json.dumps(request[extra]))
    return tokens(chars)


def cached_in(usage: dict[str, Any]) -> int | None:
    """Cached prompt tokens in a usage record, in the spellings providers use (None: not said)."""
    details = usage.get("prompt_tokens_details")
    if isinstance(details, dict) and isinstance(details.get("cached_tokens"), int):
        return int(details["cached_tokens"])
    for key in ("cached_tokens", "cache_read_input_tokens", "prompt_cache_hit_tokens"):
        if isinstance(usage.get(key), int):
            return int(usage[key])
    return None


def count_spend(
    requests: list[dict[str, Any]], replies: dict[int, Reply], reported: Reported | None
) -> Spend:
    spend = Spend(Counter(), Counter(), Counter(), 0, None, 0, reported)
    for request in requests:
        kind = kind_of(request)
        spend.requests[kind] += 1
        spend.sent[kind] += sent_tokens(request)
        reply = replies.get(id(request))
        if reply is None:
            spend.unanswered += 1
            continue
        content, calls, _ = message_parts(request, reply)
        arguments = sum(len(call["function"]["arguments"]) for call in calls)
        spend.received += tokens(len(content or "") + arguments)
        # what the server's answer says it used: the reply's own usage, else its estimate
        usage: dict[str, Any] = dict(reply.usage or usage_answered(request, content, calls))
        spend.answered[kind] += int(usage.get("prompt_tokens", 0)) + int(usage.get("completion_tokens", 0))
        cached = cached_in(usage)
        if cached is not None:
            spend.cached = (spend.cached or 0) + cached
    return spend


def reported_by_ours(result: dict[str, Any]) -> Reported | None:
    """A workflow result's usage (`notes.workflow.usage`, WorkflowUsage's wire), read as the
    wire carries it: the planning model's keys at the top, `aider`, `all`, and (where the run
    counts them) Aider's requests and the calls by kind (`calls`: plan, edit, analysis)."""
    wire = ((result.get("notes") or {}).get("workflow") or {}).get("usage")
    if not isinstance(wire, dict):
        return None
    aider = wire.get("aider") or {}
    together = wire.get("all") or {}
    edits = int(aider.get("edits", 0)) + int(aider.get("unreported", 0))
    unreported = f", {aider['unreported']} unreported" if aider.get("unreported") else ""
    aider_requests = f", {aider['requests']} request(s)" if "requests" in aider else ""
    detail = (
        f"planning model {wire.get('requests', 0)} request(s) · {wire.get('total_tokens', 0)} tokens; "
        f"Aider {edits} edit(s){unreported}{aider_requests} · {aider.get('total_tokens', 0)} tokens"
    )
    kinds = wire.get("calls") or {}
    if kinds:
        detail += "; by kind: " + " · ".join(
            f"{kind} {spent.get('calls', 0)} call(s) {spent.get('requests', 0)} req {wire_tokens(spent)} tok"
            for kind, spent in kinds.items()
        )
    # the run's own count of requests: the planning model's, and Aider's where it counts them
    # (else its edits, each one or more requests)
    requests = int(wire.get("requests", 0)) + int(aider.get("requests") or edits)
    cached = together.get("cached_tokens")
    return Reported(requests, int(together.get("total_tokens", 0)), detail, cached)


def wire_tokens(spent: dict[str, Any]) -> int:
    """A kind of call's tokens on the wire: in, out, and estimated where no answer said."""
    return sum(int(spent.get(key, 0)) for key in ("input_tokens", "output_tokens", "estimated_tokens"))


def reported_by_aider(stdout: str) -> Reported | None:
    """Aider's CLI: the sum of its "Tokens: … sent, … received." lines, one per model call."""

    def count(figure: str | None) -> int:
        if not figure:
            return 0
        return round(float(figure[:-1]) * 1000) if figure.endswith("k") else int(figure)

    lines = AIDER_TOKENS.findall(stdout)
    if not lines:
        return None
    sent = sum(count(line[0]) for line in lines)
    received = sum(count(line[3]) for line in lines)
    hits = [count(line[2]) for line in lines if line[2]]
    detail = f"{len(lines)} usage line(s): {sent} sent, {received} received (rounded by Aider)"
    return Reported(len(lines), sent + received, detail, sum(hits) if hits else None)


# -- a goal-only story on a real repository --------------------------------------------------
REAL_TARGET = "src/humanize/filesize.py"
REAL_RIGHT = "base = 1024 if (gnu or binary) else 1000"
REAL_SEEDED = "base = 1000 if (gnu or binary) else 1024"  # decimal and binary bases swapped
REAL_WRONG = "base = 1000 if binary else 1024"  # `--first-wrong`: the first fix, still wrong
REAL_DESCRIPTION = f"{REAL_TARGET}: naturalsize's decimal and binary bases swapped"
REAL_GOAL = (
    "naturalsize gives wrong sizes: naturalsize(3000000) should be '3.0 MB' and "
    "naturalsize(3000, True) '2.9 KiB'. Make the failing tests pass."
)
REAL_TESTS = (
    f"{sys.executable} -m pytest -q -p no:cacheprovider -p no:asyncio --color=no -o pythonpath=src "
    "tests/test_filesize.py tests/test_number.py tests/test_lists.py"
)
# what a model answers when the file to change is not in the chat (Aider then offers to add it)
ASK_FOR_FILE = f"To fix this I need to edit {REAL_TARGET}. Please add it to the chat."
# Aider as a user runs it in a git repository: git and its repo map on (the quiet flags turn
# both off), no commits, .gitignore left alone
AIDER_IN_A_REPO = ("--git", "--no-gitignore", "--no-dirty-commits", "--map-tokens", "1024")
GIT = ["git", "-c", "user.name=bench", "-c", "user.email=bench@example.com"]


def real_story(source: Path) -> Story:
    """The seeded bug in `source` (a clone of python-humanize/humanize)."""
    fixed = subprocess.run(
        ["git", "-C", str(source), "show", f"HEAD:{REAL_TARGET}"], capture_output=True, text=True, check=True
    ).stdout
    if REAL_RIGHT not in fixed:
        raise SystemExit(f"{source}: {REAL_TARGET} has no line {REAL_RIGHT!r} to seed the bug in")
    buggy = fixed.replace(REAL_RIGHT, REAL_SEEDED)
    return Story(REAL_GOAL, REAL_TESTS, REAL_TARGET, buggy, fixed, aider_flags=AIDER_IN_A_REPO)


def real_project(source: Path, where: Path, story: Story) -> Path:
    """A clone with the bug committed: the project as its user has it (the version file that
    the package build writes is committed too, so the tests import it)."""
    root = where / source.name
    subprocess.run(["git", "clone", "--quiet", str(source), str(root)], check=True)
    (root / "src" / "humanize" / "_version.py").write_text('__version__ = "0.0.0+bench"\n')
    story.reset(root)
    subprocess.run([*GIT, "add", "-f", "src/humanize/_version.py", REAL_TARGET], cwd=root, check=True)
    subprocess.run([*GIT, "commit", "--quiet", "-m", "bench: the seeded bug"], cwd=root, check=True)
    return root


def real_server(calls: Calls, story: Story, *, first_wrong: bool = False) -> ScriptedLLMServer:
    """The model of the real story: Aider's reply fixes the file once the chat holds it, and
    asks for it otherwise (`first_wrong`: the first fix is wrong, the fix of the wrong one
    right); the plan names it; the analyst reads the exit code."""
    server = ScriptedLLMServer(models=["scripted-planner", MODEL]).start()
    calls.server = server
    plan = {"instructions": "Fix naturalsize's bases", "files": [REAL_TARGET], "test_command": None}

    def rule(matcher: Matcher, kind: str, reply: ReplyLike) -> None:
        server.add_rule(matcher, calls.timed(kind, server, reply))

    rule(IS_PLAN, "plan", json_output(plan))
    rule(IS_ANALYSIS, "analysis", real_analysis)
    # Aider summarizes a long chat (a whole file is one) in the background: answered, or it
    # retries for a minute
    rule(IS_AIDER_SUMMARY, "summary", text("The user asked to fix naturalsize; it was fixed."))
    holds_the_file = all_of(IS_AIDER, any_message_contains(REAL_SEEDED))
    if first_wrong:
        rule(
            all_of(IS_AIDER, any_message_contains(REAL_WRONG)),
            "aider",
            aider_whole({REAL_TARGET: story.fixed}),
        )
        wrong = story.buggy.replace(REAL_SEEDED, REAL_WRONG)
        rule(holds_the_file, "aider", aider_whole({REAL_TARGET: wrong}))
    rule(holds_the_file, "aider", aider_whole({REAL_TARGET: story.fixed}))
    rule(IS_AIDER, "aider", text(ASK_FOR_FILE))
    return server


def real_analysis(request: dict[str, Any]) -> ReplyLike:
    if "Exit code: 0" in last_user_message(request):
        return json_output({"verdict": "SUCCESS", "message": "the tests pass"})
    retry = f"Fix naturalsize in {REAL_TARGET}: decimal sizes use 1000, binary 1024"
    return json_output({"verdict": "RETRY", "message": "tests still fail", "next_prompt": retry})


# -- Aider's own loop -----------------------------------------------------------------------
def run_aider(
    story: Story,
    project: Path,
    server: ScriptedLLMServer,
    calls: Calls,
    home: Path,
    files: tuple[str, ...] | None = None,
) -> Run:
    """Aider's CLI with the story's files named (`files`: these instead, e.g. the right one)."""
    env = aider_environment(server.base_url, home)
    history = Path(tempfile.mkdtemp(prefix="aider-bench-history-"))
    story.reset(project)
    calls.clear()
    started = time.perf_counter()
    done = subprocess.run(
        aider_command(
            story.goal,
            f"openai/{MODEL}",
            history,
            list(story.aider_files if files is None else files),
            "--test-cmd",
            story.test_command,
            "--auto-test",
            "--no-suggest-shell-commands",
            "--no-detect-urls",
            *story.aider_flags,
        ),
        cwd=project,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        check=True,
    )
    seconds = time.perf_counter() - started
    shutil.rmtree(history, ignore_errors=True)
    story.check_fixed(project, "aider --auto-test")
    return measured(calls, seconds, reported_by_aider(done.stdout))


# -- ours ------------------------------------------------------------------------------------
def run_ours(
    story: Story, client: RawLspClient, project: Path, calls: Calls, editor_files: bool = False
) -> Run:
    goal: dict[str, Any] = {"goal": story.goal, "test_command": story.test_command, "max_retries": 3}
    if editor_files:
        goal["file_context"] = [story.target]
    story.reset(project)
    calls.clear()
    started = time.perf_counter()
    answer = client.execute("aider-lsp.workflow.run", goal, timeout=300)
    seconds = time.perf_counter() - started
    result = answer.get("result") or {}
    if result.get("status") != "COMPLETE":
        raise SystemExit(f"aider-lsp.workflow.run did not succeed: {answer}")
    story.check_fixed(project, "aider-lsp.workflow.run")
    return measured(calls, seconds, reported_by_ours(result))


def run_cold(
    story: Story, project: Path, server: ScriptedLLMServer, calls: Calls, *, tests_first: bool = True
) -> Run:
    """`aider-lsp run` in a new process: its start-up, Aider's server's and the loop."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AIDER_LSP_", "OPENAI_"))}
    env.update(
        AIDER_LSP_TESTS_BEFORE_FIRST_EDIT=str(tests_first).lower(),
        AIDER_LSP_MODEL="openai:scripted-planner",
        AIDER_LSP_BASE_URL=server.base_url,
        AIDER_LSP_API_KEY="bench-key",
        AIDER_LSP_AIDER_MODEL=f"openai/{MODEL}",
        AIDER_LSP_AIDER_SERVER=json.dumps({"args": ["--edit-format", "whole"]}),
    )
    story.reset(project)
    calls.clear()
    command = [*CLI, "run", "--json", "--workspace", str(project), "--goal", story.goal]
    started = time.perf_counter()
    done = subprocess.run(
        [*command, "--test", story.test_command],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    seconds = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"aider-lsp run failed ({done.returncode}): {done.stderr[-2000:]}")
    story.check_fixed(project, "aider-lsp run")
    try:
        reported = reported_by_ours(json.loads(done.stdout))
    except ValueError:
        reported = None  # not the JSON `--json` promises: shown as not reported
    return measured(calls, seconds, reported)


def start_ours(project: Path, server: ScriptedLLMServer, *, tests_first: bool = True) -> RawLspClient:
    options = {
        "testsBeforeFirstEdit": tests_first,
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
    held = {run.held for run in runs}
    return Run(
        statistics.median(run.seconds for run in runs),
        middle.calls,
        middle.critical,
        held.pop() if len(held) == 1 else None,
        middle.spend,
    )


def describe(calls: Counter[str]) -> str:
    order = ("plan", "aider", "analysis", "summary")
    return ", ".join(f"{calls[kind]} {kind}" for kind in order if calls[kind]) + f" = {sum(calls.values())}"


@dataclass
class Row:
    latency: float
    theirs: Run  # Aider's CLI with the story's files named (calc: calc.py and test_calc.py; real: none)
    right: Run  # Aider's CLI given the right file alone: the spend's yardstick
    warm: Run
    cold: Run
    named: Run | None

    def sides(self, story: Story) -> list[tuple[str, Run]]:
        """Each run with its label, Aider's first."""
        runs = [
            (f"aider --auto-test, {named_files(story.aider_files)}", self.theirs),
            (f"aider --auto-test, right file ({story.target})", self.right),
            ("ours, warm (workflow.run)", self.warm),
            ("ours, cold (aider-lsp run)", self.cold),
        ]
        if self.named is not None:
            runs.append(("ours, warm, goal + file", self.named))
        return runs


def named_files(files: tuple[str, ...]) -> str:
    return f"files named ({', '.join(files)})" if files else "goal only"


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--latency", type=float, nargs="+", default=[0.0, 1.0, 3.0, 10.0], help="seconds per model call"
    )
    parser.add_argument("--slow", action="store_true", help="add 30 s a call (minutes per run)")
    parser.add_argument("--with-file", action="store_true", help="also the warm run with the editor's file")
    parser.add_argument("--repeat", type=int, default=1, help="runs per latency and side (medians printed)")
    parser.add_argument(
        "--settle", type=float, default=8.0, help="seconds between start-up and the warm-up run"
    )
    parser.add_argument(
        "--no-tests-first",
        action="store_true",
        help="ours with testsBeforeFirstEdit off: the first edit gets the goal alone, as Aider's",
    )
    parser.add_argument(
        "--tokens-only",
        action="store_true",
        help="the model spend alone: latency 0, once, the warm run with the file named included",
    )
    parser.add_argument(
        "--real-repo",
        type=Path,
        help="a git clone of python-humanize/humanize: its seeded-bug story instead of the calc one",
    )
    parser.add_argument(
        "--first-wrong",
        action="store_true",
        help="with --real-repo: the first fix is wrong and the second right (a run with a retry)",
    )
    args = parser.parse_args()
    if args.tokens_only:
        args.latency, args.slow, args.repeat, args.with_file = [0.0], False, 1, True
    return args


def main() -> int:
    args = parse_args()
    if not aider_env.is_ready():
        print(f"the Aider environment is missing: run `aider-lsp setup-aider` ({aider_env.env_dir()})")
        return 1
    base = Path(tempfile.mkdtemp(prefix="aider-bench-loop-"))
    sides = ("aider", "ours", "cold")
    for side in sides:
        (base / side).mkdir()
    try:
        home = aider_home(base)
        if args.real_repo is None:
            calls = Calls()
            server = scripted_server(calls)
            projects = {side: write_calc_project(base / side) for side in sides}
            rows, loads = bench_story(args, CALC, projects, server, calls, home)
            reports(args, CALC, rows, loads, calls, "Two-iteration fix")
        else:
            story = real_story(args.real_repo)
            calls = Calls(marker=REAL_SEEDED)
            server = real_server(calls, story, first_wrong=args.first_wrong)
            projects = {side: real_project(args.real_repo, base / side, story) for side in sides}
            rows, loads = bench_story(args, story, projects, server, calls, home)
            title = f"A seeded bug in python-humanize ({REAL_DESCRIPTION})"
            reports(args, story, rows, loads, calls, title)
    finally:
        shutil.rmtree(base, ignore_errors=True)
    return 0


def bench_story(
    args: argparse.Namespace,
    story: Story,
    projects: dict[str, Path],
    server: ScriptedLLMServer,
    calls: Calls,
    home: Path,
) -> tuple[list[Row], list[float]]:
    """Each latency's rows for one story, after a warm-up run of each side."""
    tests_first = not args.no_tests_first
    client = start_ours(projects["ours"], server, tests_first=tests_first)
    latencies = [*args.latency, *([30.0] if args.slow else [])]
    rows: list[Row] = []
    loads: list[float] = []
    try:
        time.sleep(args.settle)  # the background warm-up after `initialized`, as a user would wait
        run_ours(story, client, projects["ours"], calls)  # warm: Aider, the LLM client, the index
        run_aider(story, projects["aider"], server, calls, home)  # warm: the OS's cache of Aider's imports
        # its index and tags cache, as a user's second run
        run_cold(story, projects["cold"], server, calls, tests_first=tests_first)
        for latency in latencies:
            server.latency = latency
            rows.append(measure(args, story, latency, projects, client, server, calls, home))
            loads.append(os.getloadavg()[0])
        client.shutdown()
    finally:
        client.close()
        server.stop()
    return rows, loads


def measure(
    args: argparse.Namespace,
    story: Story,
    latency: float,
    projects: dict[str, Path],
    client: RawLspClient,
    server: ScriptedLLMServer,
    calls: Calls,
    home: Path,
) -> Row:
    """One latency's runs, each side in turn (`--repeat` times), as medians."""
    theirs, right, warm, cold, named = [], [], [], [], []
    for _ in range(args.repeat):
        theirs.append(run_aider(story, projects["aider"], server, calls, home))
        right.append(run_aider(story, projects["aider"], server, calls, home, files=(story.target,)))
        warm.append(run_ours(story, client, projects["ours"], calls))
        cold.append(run_cold(story, projects["cold"], server, calls, tests_first=not args.no_tests_first))
        if args.with_file:
            named.append(run_ours(story, client, projects["ours"], calls, editor_files=True))
    return Row(
        latency,
        median_run(theirs),
        median_run(right),
        median_run(warm),
        median_run(cold),
        median_run(named) if named else None,
    )


def reports(
    args: argparse.Namespace, story: Story, rows: list[Row], loads: list[float], calls: Calls, title: str
) -> None:
    """The timing (unless `--tokens-only`), then the spend."""
    if not args.tokens_only:
        report(story, rows, args.repeat, loads, title)
    for row in rows:
        report_spend(story, row, title)
    if calls.strays:
        print(
            f"\n{len(calls.strays)} request(s) arrived between runs, counted in none "
            f"(before the first run, or a run's late calls): {describe(Counter(calls.strays))}"
        )


def report(story: Story, rows: list[Row], repeat: int, loads: list[float], title: str) -> None:
    print(f"{title}, the goal alone, scripted model on 127.0.0.1, median of {repeat} run(s) per cell")
    print(f"(1-minute load average after each latency: {', '.join(f'{load:.1f}' for load in loads)})")
    for row in rows:
        print(f"\nmodel latency {row.latency:g} s per call")
        sides = row.sides(story)
        width = max(len(label) for label, _ in sides)
        for label, run in sides:
            ratio = run.seconds / row.theirs.seconds
            shown = "" if run is row.theirs else f"   ratio {ratio:.2f}{verdict(row.latency, label, ratio)}"
            path = describe(run.critical) if row.latency > 0 else "n/a at 0 s"
            print(f"  {label:<{width}}: {run.seconds:6.2f} s   calls: {describe(run.calls)}", end="")
            held = "" if run.held is None else f"   first edit held {'the file' if run.held else 'no file'}"
            print(f"   critical path: {path}{shown}{held}")
    print("\n| s a call | Aider's loop | ours, warm | warm / Aider | cold `aider-lsp run` | cold / Aider |")
    print("|---|---|---|---|---|---|")
    for row in rows:
        theirs, warm, cold = row.theirs.seconds, row.warm.seconds, row.cold.seconds
        print(
            f"| {row.latency:g} | {theirs:.1f} s | {warm:.2f} s | {warm / theirs:.2f} "
            f"| {cold:.1f} s | {cold / theirs:.2f} |"
        )


def report_spend(story: Story, row: Row, title: str) -> None:
    """One latency's spend table: tokens sent per fix, by kind, against Aider given the right
    file; then what each run reported beside what the server answered."""
    print(f"\n{title}: model spend per fix at {row.latency:g} s a call (tokens: characters / 4)")
    print(
        "| run | requests by kind | tokens sent by kind | sent | received | cached "
        "| sent / Aider + right file | reported by the run · server's usage |"
    )
    print("|---|---|---|---|---|---|---|---|")
    yardstick = row.right.spend
    notes: list[str] = []
    for label, run in row.sides(story):
        spend = run.spend
        if spend is None:
            continue
        ratio = "—"
        if yardstick is not None and yardstick.total_sent:
            times = spend.total_sent / yardstick.total_sent
            goal = f" ({'OK' if times <= 1.0 else 'MISSED'} ≤ 1.0×)" if label.startswith("ours") else ""
            ratio = f"{times:.2f}×{goal}"
        requests = describe_kinds(spend.requests, spend.requests)
        sent = describe_kinds(spend.requests, spend.sent)
        cached = "—" if spend.cached is None else str(spend.cached)
        print(
            f"| {label} | {requests} | {sent} | {spend.total_sent} | {spend.received} | {cached} "
            f"| {ratio} | {against(spend)} |"
        )
        notes.append(f"  {label}: {spend_detail(spend)}")
    print("\nReported by each run, beside the usage the server answered it with, by model:")
    print("\n".join(notes))


def describe_kinds(requests: Counter[str], figures: Counter[str]) -> str:
    """`aider 2 · plan 1 · analysis 2`: a figure for each kind the run made requests of."""
    return " · ".join(f"{kind} {figures[kind]}" for kind in KINDS if requests[kind]) or "none"


def against(spend: Spend) -> str:
    """`4 req · 5321 tok / 5 req · 6002 tok (Δ -681)`: the run's figures, then the server's."""
    seen = f"{sum(spend.requests.values())} req · {sum(spend.answered.values())} tok"
    if spend.reported is None:
        return f"not reported / {seen}"
    reported = spend.reported
    gap = reported.tokens - sum(spend.answered.values())
    return f"{reported.requests} req · {reported.tokens} tok / {seen} (Δ {gap:+d})"


def spend_detail(spend: Spend) -> str:
    """The run's own words, then the server's usage by model (and any request no rule answered)."""
    said = "not reported" if spend.reported is None else spend.reported.detail
    if spend.reported is not None and spend.reported.cached is not None:
        said += f", {spend.reported.cached} cached"

    def side(kinds: tuple[str, ...]) -> str:
        count = sum(spend.requests[kind] for kind in kinds)
        used = sum(spend.answered[kind] for kind in kinds)
        present = Counter({kind: spend.requests[kind] for kind in kinds})
        shown = describe_kinds(present, present)
        return f"{count} request(s) ({shown}) · {used} tokens"

    planning = tuple(kind for kind in KINDS if kind not in AIDER_KINDS)
    seen = f"planning model {side(planning)}; Aider model {side(AIDER_KINDS)}"
    missing = f"; {spend.unanswered} request(s) no rule answered" if spend.unanswered else ""
    return f"run: {said}. server: {seen}{missing}."


def verdict(latency: float, label: str, ratio: float) -> str:
    """The issue's target for this cell, met or missed."""
    target = COLD_TARGET if "cold" in label and latency >= 1 else None
    if "warm" in label and "file" not in label:
        target = WARM_TARGETS.get(latency)
    if target is None:
        return ""
    return f"  (target <= {target:g}: {'OK' if ratio <= target else 'MISSED'})"


if __name__ == "__main__":
    sys.exit(main())
