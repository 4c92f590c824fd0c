"""The first edit's files on repositories the index was never tuned on (issue #43).

A goal-only workflow run starts its first Aider edit on the files the index chooses, before
any model call; the file the goal is about must be among them (a later request for it costs a
model call). This bench measures that choice the way a user meets it, on real histories:

- cases: per repository, the N most recent commits whose subject is a plain goal (no merge,
  no "Bump …", no release or version commit, 3+ words) and that change one or two non-test
  .py files of the package (a folder with `__init__.py`), all of which exist in the parent;
- each case runs on the commit's PARENT: a git repository whose history ends there (bench/
  context.py's TreeMirror; one index per repository, moved forward commit to commit);
- the REAL choice: `app.run_workflow(goal = the commit subject)` with `app.edit` replaced by
  a recorder that keeps the first edit's `files` (and `readonly`) and answers a failed edit, so
  the run stops there; no suite runs (`testsBeforeFirstEdit` off, test command `true`), Aider
  never starts, and the model is never called (its endpoint is a closed port);
- recall: a changed file is among the first edit's files (editable; "in request" counts the
  read-only ones too); with two changed files, either counts. Beside it the index's own top-1/
  3/5 recall for the same goals, and what each file costs: Aider sends an editable (or a
  read-only) file whole, so about its characters / 4 tokens;
- candidate rules (RULES): each takes the goal and the index's ranked matches (top 10, with
  `metadata["why"]` and the signals) and answers the files; measured on the same cases, beside
  today's rule re-implemented (its agreement with the real choice is printed: it checks the
  re-implementation, not the rule).

Tuning and reporting repositories are kept apart: `--tuning` ones are printed as such and are
the only ones a rule may be tuned on; `--repos` are the held-out ones the figures are about.
pallets/click and encode/httpx are never used (kept for acceptance).

Usage: python bench/first_edit.py --repos DIR [DIR …] [--tuning DIR …] [--commits N]
       [--dump FILE] [--load FILE]
A DIR is a git directory, a clone, or a fetched mirror (`/work/.mirror/owner+name`).
Issue #43's figures (--commits 50; each repository's newest qualifying commits, listed by the
run; docs/workflow.md "Which files the first edit takes"): tuning (every set once looked at)
nedbat/coveragepy, andialbrecht/sqlparse, jazzband/tablib, urllib3/urllib3, mkdocs/mkdocs,
python-websockets/websockets, httpie/cli, getpelican/pelican, Bogdanp/dramatiq, PyCQA/pyflakes,
davidhalter/parso, spulec/freezegun, hynek/structlog, agronholm/anyio, celery/kombu; held out
python-attrs/attrs, jd/tenacity, pypa/packaging, Delgan/loguru (set 5) and jpadilla/pyjwt,
python-poetry/tomlkit, arrow-py/arrow, pytest-dev/pluggy (set 6, run once). A new change
needs a new held-out set: fetch it, run it before looking at it.
--dump writes every case with its matches (JSON lines); --load measures the rules on such a
file without running anything again (seconds instead of minutes).
"""

from __future__ import annotations

import argparse
import asyncio
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
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

from aider_lsp.aider.spawn import Spawned
from aider_lsp.app import Application
from aider_lsp.config.settings import load_settings
from aider_lsp.models import (
    AiderEditOutcome,
    AssociativeMatchResult,
    ContextGenerationInput,
    ErrorReason,
    MatchItem,
    Ranking,
    ReplyCallback,
    RequestContext,
    Selection,
    TaskError,
    WorkflowRequest,
)
from aider_lsp.workflow.first_files import pick

sys.path.insert(0, str(Path(__file__).parent))

from context import ACCEPTANCE_REPOS, TreeMirror, clean_subject, git, is_source

NOT_A_GOAL = re.compile(
    r"(?i)^(merge\b|revert\b|\[pre-commit|pre-commit\b)|\b(bump(ed|s)?|releas(e|ed|ing)|changelog)\b"
    r"|\bv?\d+\.\d+\.\d+|\bversion (number|\d)|^(prepare|start|back to|open) .*(release|cycle|development)"
)
SCANNED_COMMITS = 3000  # the newest commits looked at for cases
TOP = 10  # the index's matches each rule chooses from
CHARS_PER_TOKEN = 4
MAP_TOKENS = 1024  # Aider's repository map (aiderMapTokens' default): the bench's folders are git roots
NEVER_CALLED = "http://127.0.0.1:9/v1"  # the discard port: nothing answers, nothing is spent


# -- the cases ---------------------------------------------------------------------------------
@dataclass
class Case:
    """One goal: a commit's subject, asked on its parent; the package files it changed."""

    repo: str
    sha: str
    parent: str
    goal: str
    targets: list[str]


@dataclass
class Measured:
    """A case's answer: the real first edit's files and the index's ranked matches."""

    case: Case
    editable: list[str]
    readonly: list[str]
    matches: list[MatchItem]
    tuning: bool = False
    query_s: tuple[float, float] = (0.0, 0.0)  # the index's answer: as a change goal, as a lookup


def is_goal(subject: str) -> bool:
    """A subject a user could have typed as a goal (not a merge, a bump or a release)."""
    return not NOT_A_GOAL.search(subject) and len(clean_subject(subject).split()) >= 3


def package_file(path: str, tree: set[str]) -> bool:
    """A non-test .py file inside a package (its top folder, or src/<name>, has __init__.py)."""
    parts = PurePosixPath(path).parts
    if not path.endswith(".py") or not is_source(path) or len(parts) < 2:
        return False
    top = parts[:2] if parts[0] == "src" and len(parts) > 2 else parts[:1]
    return "/".join([*top, "__init__.py"]) in tree


def list_cases(name: str, git_dir: Path, count: int) -> list[Case]:
    """The `count` newest cases, oldest first (the index moves forward through them)."""
    log = str(
        git(
            git_dir,
            "log",
            "--no-merges",
            f"-n{SCANNED_COMMITS}",
            "--format=%x01%H %P%x02%s",
            "--name-status",
            "HEAD",
        )
    )
    cases: list[Case] = []
    for block in log.split("\x01")[1:]:
        header, _, body = block.partition("\x02")
        shas = header.split()
        subject, _, names = body.partition("\n")
        if len(shas) != 2 or not is_goal(subject):
            continue
        changed = [line.split("\t") for line in names.splitlines() if "\t" in line]
        sources = [(fields[0], fields[-1]) for fields in changed if is_source(fields[-1])]
        if not 1 <= sum(path.endswith(".py") for _, path in sources) <= 2:
            continue
        tree = set(str(git(git_dir, "ls-tree", "-r", "--name-only", shas[1])).splitlines())
        ours = [(status, path) for status, path in sources if package_file(path, tree)]
        if 1 <= len(ours) <= 2 and all(status == "M" for status, _ in ours):
            cases.append(Case(name, shas[0], shas[1], clean_subject(subject), [path for _, path in ours]))
            if len(cases) == count:
                break
    return list(reversed(cases))


# -- the real choice -----------------------------------------------------------------------------
class FirstEditRecorder:
    """Stands in for `Application.edit`: keeps the first edit's files and fails the edit, which
    ends the run before anything else happens (no tests, no analysis, no Aider)."""

    def __init__(self) -> None:
        self.files: list[str] | None = None
        self.readonly: list[str] = []

    async def __call__(
        self,
        prompt: str,
        files: Sequence[str] = (),
        *,
        readonly: Sequence[str] = (),
        selection: Selection | None = None,
        chat: bool = False,
        session_id: str | None = None,
        on_reply: ReplyCallback | None = None,
        retell: str = "",
    ) -> AiderEditOutcome:
        if self.files is None:
            self.files, self.readonly = list(files), list(readonly)
        error = TaskError(reason=ErrorReason.TOOL_EXECUTION_ERROR, message="bench: first edit recorded")
        return AiderEditOutcome(tool="aider_chat", error=error)


async def aider_not_started(early: Spawned | None = None) -> bool:
    """Stands in for `Application.start_aider`: the bench never needs Aider."""
    return False


def bench_application(folder: Path, index: Path) -> Application:
    settings = load_settings(
        {
            "model": "openai:never-called",
            "baseUrl": NEVER_CALLED,
            "apiKey": "unused",
            "aiderModel": "openai/never-called",
            "testsBeforeFirstEdit": False,
            "maxRetries": 1,
        },
        environ={},
    )
    return Application.for_one_run(folder, settings, index_path=str(index))


async def first_edit(app: Application, goal: str) -> tuple[list[str], list[str]]:
    """The files and read-only files of the run's first edit for `goal` (the real choice)."""
    recorder = FirstEditRecorder()
    app.edit = recorder
    request = WorkflowRequest(goal=goal, test_command="true", max_retries=1, plan=False)
    await app.run_workflow(request, RequestContext())
    return recorder.files or [], recorder.readonly


async def measure_repository(name: str, git_dir: Path, cases: list[Case], work: Path) -> list[Measured]:
    """Each case on its parent, one Application and index for the repository."""
    folder = work / re.sub(r"\W+", "-", name)
    folder.mkdir()
    mirror = TreeMirror(git_dir, folder)
    app = bench_application(folder, work / f"{folder.name}.sqlite3")
    app.start_aider = aider_not_started
    measured: list[Measured] = []
    try:
        async for case in on_each_parent(app, mirror, cases):
            editable, readonly = await first_edit(app, case.goal)
            found, goal_s = await timed_query(app, case.goal, edit_goal=True)  # as runs ask
            _, lookup_s = await timed_query(app, case.goal, edit_goal=False)
            measured.append(
                Measured(case, editable, readonly, list(found.matches), query_s=(goal_s, lookup_s))
            )
    finally:
        await app.aclose()
    return measured


async def on_each_parent(app: Application, mirror: TreeMirror, cases: list[Case]) -> AsyncIterator[Case]:
    """Each case with the workspace at its commit's parent and the index told (indexed whole
    the first time, then the files that changed, as an editor's watcher reports them)."""
    for position, case in enumerate(cases):
        written, removed = mirror.checkout(case.parent)
        if position == 0:
            await app.index_workspace()
        else:  # HEAD moved: an editor's file watcher reports .git/HEAD with the files
            await app.files_changed([*written, ".git/HEAD"], removed)
        yield case


async def timed_query(
    app: Application, goal: str, *, edit_goal: bool
) -> tuple[AssociativeMatchResult, float]:
    """The index's top matches for `goal` and the seconds the answer took."""
    start = time.perf_counter()
    found = await app.find_context(ContextGenerationInput(query=goal, max_results=TOP, edit_goal=edit_goal))
    return found, time.perf_counter() - start


# -- candidate rules ----------------------------------------------------------------------------
@dataclass
class Choice:
    editable: list[str]
    readonly: list[str] = field(default_factory=list)


Rule = Callable[[str, list[MatchItem]], Choice]
TEST_WORDS = frozenset({"test", "tests", "testing", "pytest", "unittest", "coverage", "fixture"})
DOC_WORDS = frozenset({"doc", "docs", "documentation", "readme", "typo", "typos", "changelog"})


def paths(matches: Sequence[MatchItem]) -> list[str]:
    return [m.source_path for m in matches if m.source_path]


def why(match: MatchItem) -> dict[str, Any]:
    return match.ranking.why.as_metadata() if match.ranking else {}


def kind(match: MatchItem) -> str:
    ranking = match.ranking
    return ((ranking.kind or ranking.why.kind) if ranking else "") or "code"


def goal_words(goal: str) -> set[str]:
    return {word.lower() for word in re.findall(r"[A-Za-z]+", goal)}


def within(matches: Sequence[MatchItem], share: float, limit: int) -> list[MatchItem]:
    """The first `limit` matches scoring at least `share` of the best."""
    ranked = [m for m in matches if m.source_path]
    if not ranked:
        return []
    floor = ranked[0].relevance_score * share
    return [m for m in ranked[:limit] if m.relevance_score >= floor]


def code_first(goal: str, matches: Sequence[MatchItem]) -> list[MatchItem]:
    """Code files first; test, doc and changelog files after them unless the goal is about them."""
    words = goal_words(goal)
    wanted = {"code", "config"}
    if words & TEST_WORDS:
        wanted.add("test")
    if words & DOC_WORDS:
        wanted |= {"doc", "changelog"}
    return [m for m in matches if kind(m) in wanted] + [m for m in matches if kind(m) not in wanted]


def before_43(goal: str, matches: list[MatchItem]) -> Choice:
    """The rule before issue #43: of the best 5, at most 3 whose capped score (relevance_score,
    1.0 for the best in most cases) is at least half the best's."""
    return Choice(paths(within(matches[:5], 0.5, 3)))


def uncapped_share(share: float, most: int) -> Rule:
    """At most `most` files whose uncapped score (`ranking.score`) is at least `share` of
    the best's: #43's first rule with share 0.5 and 6 files."""

    def rule(goal: str, matches: list[MatchItem]) -> Choice:
        ranked = [m for m in matches if m.source_path]
        if not ranked:
            return Choice([])
        floor = raw(ranked[0]) * share
        return Choice(paths([m for m in ranked[:most] if raw(m) >= floor]))

    return rule


def raw(match: MatchItem) -> float:
    return match.ranking.score if match.ranking else match.relevance_score


def today(goal: str, matches: list[MatchItem]) -> Choice:
    """Today's rule, the real one (workflow/first_files.py `pick`) on the bench's matches."""
    return Choice(pick(matches, map_tokens=MAP_TOKENS).files)


def top(k: int) -> Rule:
    return lambda goal, matches: Choice(paths(matches)[:k])


def top1_then_readonly(k: int) -> Rule:
    """The best file to edit, the next ones read-only (Aider sends both whole)."""

    def rule(goal: str, matches: list[MatchItem]) -> Choice:
        ranked = paths(matches)
        return Choice(ranked[:1], ranked[1:k])

    return rule


def code_top(k: int) -> Rule:
    def rule(goal: str, matches: list[MatchItem]) -> Choice:
        return Choice(paths(code_first(goal, matches))[:k])

    return rule


def code_names(goal: str) -> set[str]:
    """The names a goal writes as code: `quoted`, snake_case, CamelCase, a capitalised word
    inside the sentence (`File`), each part of a dotted name."""
    names = {name for quoted in re.findall(r"`([^`]+)`", goal) for name in re.findall(r"\w+", quoted)}
    for position, word in enumerate(re.findall(r"[A-Za-z_][\w.]*", goal)):
        for part in filter(None, word.split(".")):
            camel = re.search(r"[a-z][A-Z]|[A-Z]\w*[A-Z]", part)
            if "_" in part.strip("_") or camel or (position > 0 and part[0].isupper() and len(part) > 2):
                names.add(part)
    return names


def defined_names(match: MatchItem) -> set[str]:
    """The names of the definitions that matched (`why`: `Class.method (line 3)`)."""
    found = match.ranking.why.definitions if match.ranking else []
    return {part for d in found for part in d.name.split(".")}


def named_first(k: int) -> Rule:
    """Files defining a name the goal writes as code first, then the index's order."""

    def rule(goal: str, matches: list[MatchItem]) -> Choice:
        names = code_names(goal)
        first = [m for m in matches if names & defined_names(m)]
        return Choice(paths([*first, *(m for m in matches if m not in first)])[:k])

    return rule


def token_budget(budget: int, most: int) -> Rule:
    """Files in the index's order while their text (what Aider sends) fits `budget` tokens;
    at least one, at most `most`."""

    def rule(goal: str, matches: list[MatchItem]) -> Choice:
        chosen: list[str] = []
        spent = 0
        for path, size in sized(matches)[:most]:
            if chosen and spent + size // CHARS_PER_TOKEN > budget:
                break
            chosen.append(path)
            spent += size // CHARS_PER_TOKEN
        return Choice(chosen)

    return rule


def sized(matches: Sequence[MatchItem]) -> list[tuple[str, int]]:
    return [(m.source_path, m.ranking.size if m.ranking else 0) for m in matches if m.source_path]


RULES: dict[str, Rule] = {
    "today: >= 0.5 x best, <=6, <=10 in 40k tokens": today,
    "#43 round 1: <=6, uncapped >= 0.5 x best": uncapped_share(0.5, 6),
    "before #43: <=3 within 0.5 of best 5": before_43,
    **{f"<={k}, uncapped >= {s} x best": uncapped_share(s, k) for k, s in ((4, 0.5), (6, 0.7), (8, 0.5))},
    **{f"top-{k}": top(k) for k in (1, 2, 3, 4, 5, 6, 8)},
    "top-1 + 2 read-only": top1_then_readonly(3),
    "code first, top-3": code_top(3),
    "goal's code names first, top-3": named_first(3),
    **{f"<= {b // 1000}k tokens, <= 6 files": token_budget(b, 6) for b in (15_000, 20_000, 25_000, 30_000)},
}


# -- figures ------------------------------------------------------------------------------------
@dataclass
class Figures:
    cases: int
    recall: float  # a changed file among the editable files
    in_request: float  # … among the editable or read-only files
    files: float  # files per first edit (both kinds)
    tokens: float  # mean tokens per first edit, its files' text


def size_of(measured: Measured, path: str) -> int:
    """A file's size as the index saw it on the parent (0 when not among the matches)."""
    for match in measured.matches:
        if match.source_path == path:
            return match.ranking.size if match.ranking else 0
    return 0


def figures(measured: list[Measured], choose: Callable[[Measured], Choice]) -> Figures:
    hits = reached = files = tokens = 0
    for item in measured:
        choice = choose(item)
        targets = set(item.case.targets)
        hits += bool(targets & set(choice.editable))
        reached += bool(targets & {*choice.editable, *choice.readonly})
        chosen = [*choice.editable, *choice.readonly]
        files += len(chosen)
        tokens += sum(size_of(item, path) for path in chosen) // CHARS_PER_TOKEN
    n = max(1, len(measured))
    return Figures(len(measured), hits / n, reached / n, files / n, tokens / n)


def index_recall(measured: list[Measured], k: int) -> float:
    found = sum(bool(set(item.case.targets) & set(paths(item.matches)[:k])) for item in measured)
    return found / max(1, len(measured))


def extra_file_tokens(measured: list[Measured]) -> list[int]:
    """What each file after the first of the real first edits costs (its text, ≈ chars/4)."""
    return [
        size_of(item, path) // CHARS_PER_TOKEN
        for item in measured
        for path in [*item.editable, *item.readonly][1:]
    ]


def report(measured: list[Measured], say: Callable[[str], None] = print) -> None:
    groups = group_by_repo(measured)
    say("\nThe real first edit (app.run_workflow, the edit recorded) and the index's own ranking")
    say(
        f"{'repository':34}{'set':>8}{'n':>4}{'recall':>8}{'files':>7}{'tok/edit':>9}{'R@1':>7}{'R@3':>7}{'R@5':>7}"
    )
    for (repo, tuning), items in groups.items():
        real = figures(items, lambda m: Choice(m.editable, m.readonly))
        cells = "".join(f"{index_recall(items, k):>7.2f}" for k in (1, 3, 5))
        say(
            f"{repo:34}{'tuning' if tuning else 'held':>8}{real.cases:>4}{real.recall:>8.2f}"
            f"{real.files:>7.2f}{real.tokens:>9.0f}{cells}"
        )
    extra = extra_file_tokens([m for m in measured if not m.tuning])
    if extra:
        say(
            f"each file after the first (held-out, real choice): median {statistics.median(extra):.0f}, "
            f"mean {statistics.mean(extra):.0f} tokens ({len(extra)} files; whole text / {CHARS_PER_TOKEN})"
        )
    timed = [item.query_s for item in measured if item.query_s[0]]
    if timed:
        goal_p50 = statistics.median(goal for goal, _ in timed) * 1000
        lookup_p50 = statistics.median(lookup for _, lookup in timed) * 1000
        say(
            f"the index's answer, p50: {goal_p50:.1f} ms asked as a change goal, {lookup_p50:.1f} ms as a "
            f"lookup (x{goal_p50 / max(lookup_p50, 1e-9):.2f}; {len(timed)} goals, one after the other)"
        )
    clipped = sum(all(m.relevance_score >= 1.0 for m in item.matches[:3]) for item in measured)
    best = sum(bool(item.matches) and item.matches[0].relevance_score >= 1.0 for item in measured)
    say(f"relevance 1.0 (clipped): the best file in {best}/{len(measured)} cases, the best 3 in {clipped}")
    agree = sum(today(m.case.goal, m.matches).editable == m.editable for m in measured)
    say(f"today's rule on the bench's matches = the run's real choice in {agree}/{len(measured)} cases")
    report_rules(groups, say)


def group_by_repo(measured: list[Measured]) -> dict[tuple[str, bool], list[Measured]]:
    groups: dict[tuple[str, bool], list[Measured]] = {}
    for item in measured:
        groups.setdefault((item.case.repo, item.tuning), []).append(item)
    return groups


def report_rules(groups: dict[tuple[str, bool], list[Measured]], say: Callable[[str], None]) -> None:
    """Each rule: recall (in request) and files per edit per repository, then per set."""
    say("\nCandidate rules: recall editable (in request) / files per edit / tokens per edit")
    names = [repo.split("/")[-1][:14] for repo, _ in groups]
    say(f"{'rule':36}" + "".join(f"{name:>22}" for name in names) + f"{'held-out':>22}{'tuning':>22}")
    for label, rule in RULES.items():
        cells = [_cell(rule_figures(items, rule)) for items in groups.values()]
        for tuning in (False, True):
            pooled = [m for (_, t), items in groups.items() if t is tuning for m in items]
            cells.append(_cell(rule_figures(pooled, rule)) if pooled else "-")
        say(f"{label:36}" + "".join(f"{cell:>22}" for cell in cells))


def rule_figures(measured: list[Measured], rule: Rule) -> Figures:
    return figures(measured, lambda m: rule(m.case.goal, m.matches))


def _cell(f: Figures) -> str:
    return f"{f.recall:.2f}({f.in_request:.2f})/{f.files:.1f}/{f.tokens / 1000:.1f}k"


def misses(measured: list[Measured], rule: Rule, say: Callable[[str], None] = print) -> None:
    for item in measured:
        choice = rule(item.case.goal, item.matches)
        if not set(item.case.targets) & set(choice.editable):
            say(f"  miss {item.case.repo} {item.case.sha[:8]} {item.case.goal!r}: want {item.case.targets}")
            for match in item.matches[:5]:
                say(f"      {match.relevance_score:.2f} {kind(match):5} {match.source_path} {why(match)}")


# -- the run -------------------------------------------------------------------------------------
def git_dir_of(location: Path) -> Path:
    for candidate in (location / "repo", location / ".git", location):
        if (candidate / "HEAD").is_file():
            return candidate
    raise SystemExit(f"{location}: no git repository there")


def repo_name(location: Path) -> str:
    name = location.resolve().name
    if name in ("repo", ".git"):
        name = location.resolve().parent.name
    return name.replace("+", "/")


def repository_cases(locations: list[Path], count: int) -> Iterator[tuple[Path, str, Path, list[Case]]]:
    """Each repository's location, name, git directory and cases (acceptance ones skipped),
    its commit span printed as it is reached."""
    for location in locations:
        name = repo_name(location)
        if any(word in name.lower() for word in ACCEPTANCE_REPOS):
            print(f"{name}: kept for acceptance, not used")
            continue
        git_dir = git_dir_of(location)
        cases = list_cases(name, git_dir, count)
        head = str(git(git_dir, "rev-parse", "HEAD")).strip()
        span = f"{cases[0].sha[:10]}..{cases[-1].sha[:10]}" if cases else "-"
        print(f"{name}: {len(cases)} cases, commits {span} (HEAD {head[:10]})", flush=True)
        yield location, name, git_dir, cases


async def collect(locations: list[Path], tuning: set[Path], count: int, work: Path) -> list[Measured]:
    measured: list[Measured] = []
    for location, name, git_dir, cases in repository_cases(locations, count):
        for item in await measure_repository(name, git_dir, cases, work):
            item.tuning = location in tuning
            measured.append(item)
    return measured


def dump(measured: list[Measured], target: Path) -> None:
    with target.open("w", encoding="utf-8") as handle:
        for item in measured:
            line = {
                "case": item.case.__dict__,
                "editable": item.editable,
                "readonly": item.readonly,
                "tuning": item.tuning,
                "query_s": list(item.query_s),
                "matches": [m.model_dump(mode="json") for m in item.matches],
            }
            handle.write(json.dumps(line) + "\n")


def load(source: Path) -> list[Measured]:
    measured: list[Measured] = []
    for line in source.read_text(encoding="utf-8").splitlines():
        data = json.loads(line)
        # the dump carries the ranking in the wire's metadata keys: back to the typed field
        matches = [
            item.model_copy(update={"ranking": Ranking.from_metadata(item.metadata), "metadata": None})
            for item in map(MatchItem.model_validate, data["matches"])
        ]
        measured.append(
            Measured(
                Case(**data["case"]),
                data["editable"],
                data["readonly"],
                matches,
                data["tuning"],
                tuple(data.get("query_s", (0.0, 0.0))),
            )
        )
    return measured


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repos", type=Path, nargs="*", default=[], help="held-out repositories")
    parser.add_argument(
        "--tuning", type=Path, nargs="*", default=[], help="repositories rules may be tuned on"
    )
    parser.add_argument("--commits", type=int, default=25, help="cases per repository")
    parser.add_argument("--dump", type=Path, help="write the cases and their matches here (JSON lines)")
    parser.add_argument("--load", type=Path, help="measure the rules on a --dump file, running nothing")
    parser.add_argument("--misses", help="print the misses of this rule (its label in the table)")
    args = parser.parse_args()
    logging.basicConfig(level=logging.ERROR)
    if args.load:
        measured = load(args.load)
    else:
        work = Path(tempfile.mkdtemp(prefix="aider-lsp-first-edit-"))
        os.environ["XDG_STATE_HOME"] = str(work / "state")  # nothing of the bench in the user's state
        try:
            locations = [*args.tuning, *args.repos]
            measured = asyncio.run(collect(locations, set(args.tuning), args.commits, work))
        finally:
            shutil.rmtree(work, ignore_errors=True)
        if args.dump:
            dump(measured, args.dump)
    report(measured)
    if args.misses:
        misses(measured, RULES[args.misses])


if __name__ == "__main__":
    os.environ.setdefault("PYTHONHASHSEED", "0")
    try:
        main()
    except subprocess.CalledProcessError as exc:
        raise SystemExit(f"git failed: {exc.cmd}: {exc.stderr!r}") from exc
