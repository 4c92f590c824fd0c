"""The first edit's files: the ones the user chose, else those the workspace index ranks best
for the goal, and whether that choice is confident enough to go without a plan.

Why a module of its own: the choice is a rule of its own (docs/workflow.md, "The first edit at
once") that changes on its own; here it is plain functions of typed inputs (the user's files,
the index's matches, the files held unsaved) with a typed answer, testable without a run.
"""

from __future__ import annotations

import contextlib
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from pydantic import TypeAdapter, ValidationError

from ..aider.launch import AIDER_PROMPT_TOKENS, repo_map_args
from ..config.settings import Settings
from ..guards.files import AccessDenied
from ..models import ContextGenerationInput, MatchItem, OptionalPathList
from .host import WorkflowHost

MEMORY_FILES = 5  # the index's files the planner is told of
PICK_SHARE = 0.5  # the first edit takes the index's files scoring this share of the best's
INDEX_FILES = 6  # ... at most this many
MORE_FILES = 10  # ... or this many where the ranking is flat, while the files fit:
MORE_FILES_TOKENS = 40_000  # the first edit's files in tokens, for a file beyond INDEX_FILES
CHARS_PER_TOKEN = 4  # what a file costs: Aider sends it whole
# Beside Aider's repository map, the first edit sends the best file whole and names the others
# (the map shows their signatures; the model asks for one it needs): files after the best are
# sent whole only while together they add at most EXTRA_SHARE to the request (Aider's prompt,
# its map and the best file), at most WHOLE_FILES in all.
EXTRA_SHARE = 0.25
WHOLE_FILES = 3
LARGE_SHARE = 2.0  # a file over twice Aider's prompt and map is large: whole only when it leads
CLEAR_LEAD = 1.5  # ... a smaller candidate's score by this much (else that one, the large named)
SUMMARY_CHARS = 100  # of a named file's summary, where no definition of it matched the goal
CONFIDENT_SCORE = 0.5  # the best must score this much (and match specifically) to skip the plan
CONFIDENT_FILES = 3  # ... and one of this many first files match specifically


@dataclass(frozen=True)
class FirstFiles:
    """The first edit's files (none: nothing to start on, the plan names them), whether they
    need no plan to back them (the user's, or the index's when it is confident), and the
    index's files the planner is told of."""

    files: list[str]
    confident: bool
    relevant: list[str]
    mentioned: list[Named] = field(default_factory=list)  # named in the first message, not sent whole


@dataclass(frozen=True)
class Named:
    """A file the first message names without sending it, with what the index found in it for
    the goal: the model sees why it may matter and asks for it when it does."""

    path: str
    found: str  # its definitions that matched the goal ("defines a, B"), else its summary


def user_files(file_context: Sequence[str] | str | None) -> list[str] | str:
    """The files the user handed to the run (a list or a JSON array), or what is wrong with
    them (the message of a `file_context` that is not a list of paths)."""
    if file_context in (None, "", []):
        return []
    try:
        return TypeAdapter(OptionalPathList).validate_python(file_context) or []
    except ValidationError as exc:
        return f"file_context: {exc.errors()[0]['msg']}"


def needs_plan(*, asked: bool, command_known: bool, chosen: bool, confident: bool) -> bool:
    """A plan helps when the user asked for one, when the test command is still unknown (the
    plan may name it), or when no file was chosen and the index is not confident."""
    return asked or not command_known or (not chosen and not confident)


def choose(
    chosen: list[str], matches: Sequence[MatchItem], held: Collection[str], *, map_tokens: int = 0
) -> FirstFiles:
    """The user's files when they chose any, else the index's pick among the files an edit
    may take (not those `held` unsaved in the editor: the edit would refuse the whole set);
    `map_tokens`: the size of Aider's repository map (0: no map, see `pick`)."""
    editable = [m for m in matches if m.source_path not in held]
    relevant = [m.source_path for m in editable if m.source_path][:MEMORY_FILES]
    if chosen:
        return FirstFiles(list(chosen), True, relevant)
    found = pick(editable, map_tokens=map_tokens)
    return FirstFiles(found.files, found.confident, relevant, found.mentioned)


@dataclass(frozen=True)
class Pick:
    """The index's choice: files sent whole, files only named, and whether it is confident."""

    files: list[str]
    mentioned: list[Named]
    confident: bool


def pick(matches: Sequence[MatchItem], *, map_tokens: int = 0) -> Pick:
    """The index's files for the first edit, those only named, and whether it is confident.

    The candidates: the index's best MORE_FILES of a kind the goal is about (tests, docs,
    changelogs only when the goal is about them: the index's kind prior says so), and among
    them those whose uncapped score (`raw_score`) is at least PICK_SHARE of the best's.
    With Aider's repository map (`map_tokens` > 0) the best is sent whole (a smaller one where
    a large best does not lead it clearly), the next ones whole only while they add at most
    EXTRA_SHARE to the request (`beside_map`), and the rest are named in the message, each
    with what matched in it: the model asks for one it must see whole (Aider adds it: one
    more request, only then). Without a map the model could not see them at all: the candidates are
    sent whole, at most INDEX_FILES, then up to MORE_FILES while all of them fit
    MORE_FILES_TOKENS (docs/workflow.md, "Which files the first edit takes").
    Confident: the best scores at least CONFIDENT_SCORE and one of the first CONFIDENT_FILES
    candidates matched the goal by a definition (the goal names a function or class the file
    defines) or by its name (the goal mentions the file). Words of the text or the path alone
    are not enough: "make the tests pass" finds every test file by "tests", which says nothing
    about what to change."""
    ranked = [m for m in matches if m.source_path]
    if not ranked:
        return Pick([], [], False)
    candidates = [m for m in ranked if asked_about(m)] or ranked
    floor = raw_score(candidates[0]) * PICK_SHARE
    near = [m for m in candidates[:MORE_FILES] if raw_score(m) >= floor]
    whole = beside_map(near, map_tokens) if map_tokens > 0 else without_map(near)
    named = [m for m in candidates[:MORE_FILES] if m not in whole] if map_tokens > 0 else []
    confident = ranked[0].relevance_score >= CONFIDENT_SCORE and any(
        specific(m) for m in near[:CONFIDENT_FILES]
    )
    return Pick(_paths(whole), [named_file(m) for m in named if m.source_path], confident)


def beside_map(near: Sequence[MatchItem], map_tokens: int) -> list[MatchItem]:
    """The first file (`first_whole`), and the next ones while together they add at most
    EXTRA_SHARE of the request that holds the first alone (Aider's prompt, its map, the file):
    a clear winner is one file; a close second that is small comes along. Measured by
    bench/first_request.py (docs/workflow.md): on three repositories nobody tuned on, the
    file to change within the model's reach in .98 of the first requests, at a median 1.08x
    (p90 1.63x) the request holding it alone (all five whole files: 5.7x)."""
    best = first_whole(near, map_tokens)
    allowance = EXTRA_SHARE * (AIDER_PROMPT_TOKENS + map_tokens + file_tokens(best))
    whole, extra = [best], 0
    for match in near:
        if len(whole) >= WHOLE_FILES:
            break
        if match is best:
            continue
        cost = file_tokens(match)
        if extra + cost <= allowance:
            whole.append(match)
            extra += cost
    return whole


def first_whole(near: Sequence[MatchItem], map_tokens: int) -> MatchItem:
    """The file the first request holds whole: the best, unless it is large (over LARGE_SHARE
    of Aider's request around it, its prompt and map) and does not lead the best smaller
    candidate by CLEAR_LEAD: then that one, and the large file is named. Why: naming a file
    that is the one costs one more request the size of the first (the model asks, Aider
    adds it); sending a large file that is not the one costs the large file, a "hub" module
    the words of many goals match (loguru's `_logger.py`, 25k tokens, against 1-4k targets)."""
    best = near[0]
    large = LARGE_SHARE * (AIDER_PROMPT_TOKENS + map_tokens)
    if file_tokens(best) <= large:
        return best
    smaller = next((match for match in near[1:] if file_tokens(match) <= large), None)
    if smaller is None or raw_score(best) >= CLEAR_LEAD * raw_score(smaller):
        return best
    return smaller


def without_map(near: Sequence[MatchItem]) -> list[MatchItem]:
    """At most INDEX_FILES, then up to MORE_FILES while all of them fit MORE_FILES_TOKENS: the
    share keeps the count low when one file stands out; the budget keeps a flat ranking of
    large files from filling the model's context."""
    picked: list[MatchItem] = []
    tokens = 0
    for match in near:
        cost = file_tokens(match)
        if len(picked) >= INDEX_FILES and tokens + cost > MORE_FILES_TOKENS:
            break
        picked.append(match)
        tokens += cost
    return picked


def _paths(matches: Sequence[MatchItem]) -> list[str]:
    return [m.source_path for m in matches if m.source_path]


def named_file(match: MatchItem) -> Named:
    """The file as the first message names it: its definitions that matched the goal (their
    names, which Aider's map also ranks up), else the start of its summary."""
    found = match.ranking.why.definitions if match.ranking else []  # another source's: none
    definitions = [definition.name for definition in found]
    if definitions:
        return Named(match.source_path or "", "defines " + ", ".join(definitions))
    summary = " ".join(match.content.split())
    if len(summary) > SUMMARY_CHARS:
        summary = summary[: SUMMARY_CHARS - 1].rstrip() + "…"
    return Named(match.source_path or "", summary)


def asked_about(match: MatchItem) -> bool:
    """Whether the file is of a kind the goal is about: code, or a test, doc or changelog file
    the goal names or asks about (the index's kind prior is 1.0 then, below it otherwise)."""
    return match.ranking is None or match.ranking.signals.prior >= 1.0


def map_tokens_for(settings: Settings, workspace: Path) -> int:
    """The size of Aider's repository map in an edit's request: the bundled server shows it
    where the workspace is the root of a git repository (`aiderMapTokens`); 0 otherwise (a
    server of the user's own: its map is unknown, so the first edit does not count on it)."""
    if settings.aider_server.command:
        return 0
    args = repo_map_args(settings, workspace)
    return int(args[-1]) if args else 0


def raw_score(match: MatchItem) -> float:
    """The index's score before the 0..1 cap (`ranking.score`; the capped one where a match
    carries no ranking, as another source's)."""
    return match.ranking.score if match.ranking else match.relevance_score


def file_tokens(match: MatchItem) -> int:
    """About what the file costs in Aider's request: its size as indexed, in tokens."""
    return match.ranking.size // CHARS_PER_TOKEN if match.ranking else 0


def specific(match: MatchItem) -> bool:
    """The index found the file by a definition or by its name, not by common words alone."""
    if match.ranking is None:
        return False
    signals = match.ranking.signals
    return bool(signals.definition or signals.mentioned or signals.target)


async def find(
    host: WorkflowHost, goal: str, chosen: list[str], open_files: list[str], *, ask_index: bool
) -> FirstFiles:
    """The first edit's files (`choose`), the index asked when `ask_index` (it is not when the
    user chose files and no plan will be made: nothing would read its answer)."""
    matches = await index_matches(host, goal, open_files, chosen) if ask_index else []
    map_tokens = map_tokens_for(host.settings, host.workspace)
    return choose(chosen, matches, held_unsaved(host), map_tokens=map_tokens)


async def index_matches(
    host: WorkflowHost, goal: str, open_files: list[str], chosen: list[str]
) -> list[MatchItem]:
    """The index's best files for the goal; the files open in the editor are candidates (a
    small boost), never the answer: the file that merely happens to be open is a hint."""
    request = ContextGenerationInput(
        query=goal,
        open_files=open_files,
        target_files=chosen,
        max_results=max(MEMORY_FILES, MORE_FILES),
        edit_goal=True,
    )
    found = await host.find_context(request)
    return list(found.matches)


def held_unsaved(host: WorkflowHost) -> set[str]:
    """The workspace files the editor holds with unsaved changes, now (relative paths)."""
    held: set[str] = set()
    for path in host.unsaved():
        with contextlib.suppress(AccessDenied):
            held.add(host.relative_path(path))
    return held
