"""The first edit's files: the ones the user chose, else those the workspace index ranks best
for the goal, and whether that choice is confident enough to go without a plan.

Why a module of its own: the choice is a rule of its own (docs/workflow.md, "The first edit at
once") that changes on its own; here it is plain functions of typed inputs (the user's files,
the index's matches, the files held unsaved) with a typed answer, testable without a run.
"""

from __future__ import annotations

import contextlib
from collections.abc import Collection, Sequence
from dataclasses import dataclass

from pydantic import TypeAdapter, ValidationError

from ..files import AccessDenied
from ..models import ContextGenerationInput, MatchItem, OptionalPathList
from .host import WorkflowHost

MEMORY_FILES = 5  # the index's files the planner is told of
PICK_SHARE = 0.5  # the first edit takes the index's files scoring this share of the best's
INDEX_FILES = 6  # ... at most this many
MORE_FILES = 10  # ... or this many where the ranking is flat, while the files fit:
MORE_FILES_TOKENS = 40_000  # the first edit's files in tokens, for a file beyond INDEX_FILES
CHARS_PER_TOKEN = 4  # what a file costs: Aider sends it whole
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


def choose(chosen: list[str], matches: Sequence[MatchItem], held: Collection[str]) -> FirstFiles:
    """The user's files when they chose any, else the index's pick among the files an edit
    may take (not those `held` unsaved in the editor: the edit would refuse the whole set)."""
    editable = [m for m in matches if m.source_path not in held]
    relevant = [m.source_path for m in editable if m.source_path][:MEMORY_FILES]
    if chosen:
        return FirstFiles(list(chosen), True, relevant)
    files, confident = pick(editable)
    return FirstFiles(files, confident, relevant)


def pick(matches: Sequence[MatchItem]) -> tuple[list[str], bool]:
    """The index's files for the first edit and whether it is confident about them.

    The files: those whose uncapped score (`raw_score`) is at least PICK_SHARE of the best's,
    at most INDEX_FILES, then up to MORE_FILES while all of them fit MORE_FILES_TOKENS. Aider
    sends each whole, so a file costs its text; the share keeps the count low when one file
    stands out and lets it grow where the ranking is flat, which is where the file to change
    is often fourth to tenth; the budget keeps a flat ranking of large files from filling the
    model's context (docs/workflow.md, "Which files the first edit takes").
    Confident: the best scores at least CONFIDENT_SCORE and one of the first CONFIDENT_FILES
    files matched the goal by a definition (the goal names a function or class the file
    defines) or by its name (the goal mentions the file). Words of the text or the path alone
    are not enough: "make the tests pass" finds every test file by "tests", which says nothing
    about what to change."""
    ranked = [m for m in matches if m.source_path]
    if not ranked:
        return [], False
    floor = raw_score(ranked[0]) * PICK_SHARE
    picked: list[MatchItem] = []
    tokens = 0
    for match in ranked[:MORE_FILES]:
        if raw_score(match) < floor:
            continue
        cost = file_tokens(match)
        if len(picked) >= INDEX_FILES and tokens + cost > MORE_FILES_TOKENS:
            break
        picked.append(match)
        tokens += cost
    first_few = picked[:CONFIDENT_FILES]
    confident = ranked[0].relevance_score >= CONFIDENT_SCORE and any(specific(m) for m in first_few)
    return [m.source_path for m in picked if m.source_path], confident


def raw_score(match: MatchItem) -> float:
    """The index's score before the 0..1 cap (`metadata["score"]`; the capped one where a
    match carries none, as an LLM re-ranking's or another source's)."""
    score = (match.metadata or {}).get("score")
    return float(score) if isinstance(score, int | float) else match.relevance_score


def file_tokens(match: MatchItem) -> int:
    """About what the file costs in Aider's request: its size as indexed, in tokens."""
    size = (match.metadata or {}).get("size")
    return int(size) // CHARS_PER_TOKEN if isinstance(size, int | float) else 0


def specific(match: MatchItem) -> bool:
    """The index found the file by a definition or by its name, not by common words alone."""
    signals = (match.metadata or {}).get("signals", {})
    return bool(signals.get("definition") or signals.get("mentioned") or signals.get("target"))


async def find(
    host: WorkflowHost, goal: str, chosen: list[str], open_files: list[str], *, ask_index: bool
) -> FirstFiles:
    """The first edit's files (`choose`), the index asked when `ask_index` (it is not when the
    user chose files and no plan will be made: nothing would read its answer)."""
    matches = await index_matches(host, goal, open_files, chosen) if ask_index else []
    return choose(chosen, matches, held_unsaved(host))


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
