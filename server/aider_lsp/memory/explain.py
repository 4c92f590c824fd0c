"""Why a file ranked: the MatchItem a scored file becomes, with its typed Ranking (the why and
the numbers behind it), and the one-line form the terminal prints."""

from __future__ import annotations

from ..models import Definition, MatchItem, Ranking, Signals, Why
from . import rank


def why_ranked(item: rank.Scored, words: list[str], definitions: list[tuple[str, int]]) -> Why:
    """What a user needs to trust or correct a match: words, definitions, the past commit
    like the query that changed it, kind, editor."""
    tested = item.tested_by and rank.TESTED_CODE_SHARE * item.test_content > item.content
    demoted = f"{item.row.kind} file (x{item.prior:g}); the query is not about it"
    return Why(
        kind=item.row.kind,
        terms=words,
        definitions=[Definition(name=name, line=line) for name, line in definitions],
        changed_by=item.changed_in or None,
        tested_by=item.tested_by if tested else None,
        demoted=demoted if item.demoted else None,
        named=item.target,
        mentioned=bool(item.mentioned),
        module=bool(item.module),
        open=item.open,
    )


def describe_why(why: Why | None) -> str:
    """One line for the terminal: `defines X (line 3); matches a, b; demoted: test file`."""
    if why is None:
        return "file"
    parts: list[str] = []
    if why.named:
        parts.append("named by you")
    if why.mentioned:
        parts.append("the question mentions it")
    if why.module:
        parts.append("the goal names its module")
    if why.definitions:
        parts.append("defines " + ", ".join(str(definition) for definition in why.definitions))
    if why.terms:
        parts.append("matches " + ", ".join(why.terms))
    if why.tested_by:
        parts.append(f"its test {why.tested_by} matches")
    if why.changed_by:
        parts.append(f"changed by a commit like it: {why.changed_by[:60]}")
    if why.open:
        parts.append("open in the editor")
    if why.demoted:
        parts.append("demoted: " + why.demoted)
    return "; ".join(parts) or (why.kind or "file")


def signals(item: rank.Scored) -> Signals:
    """The numbers behind the score, rounded as the answer shows them."""
    return Signals(
        text=round(item.text, 4),
        definition=round(item.unit, 4),
        tested=round(item.test_content, 4),
        prior=item.prior,
        path=round(item.path, 4),
        identifier=round(item.identifier, 4),
        history=round(item.history, 4),
        changes=round(item.changes, 4),
        recent=round(item.recent, 4),
        churn=round(item.churn, 4),
        fresh=round(item.fresh, 4),
        target=item.target,
        mentioned=round(item.mentioned, 4),
        module=round(item.module, 4),
        open=item.open,
    )


def match_item(item: rank.Scored, words: list[str], definitions: list[tuple[str, int]]) -> MatchItem:
    """A scored file as the answer shows it: its summary, score, why and signals.

    `relevance_score` is the score capped to 0..1 (the MatchItem contract); `ranking.score`
    keeps it uncapped, because the best few files of most questions exceed 1.0 and a choice
    among them by a share of the best (workflow/first_files.py) needs the real ratios."""
    row = item.row
    if row.summary:
        content = row.summary
    elif row.identifiers:
        content = f"{row.language} file defining " + ", ".join(row.identifiers[:12])
    else:
        content = f"{row.language} file"
    return MatchItem(
        id=row.path,
        content=content,
        relevance_score=item.relevance,
        content_type="file_summary",
        source_path=row.path,
        ranking=Ranking(
            score=round(item.total, 4),  # uncapped: the best files often all score 1.0
            size=row.size,
            language=row.language,
            kind=row.kind,
            why=why_ranked(item, words, definitions),
            signals=signals(item),
        ),
    )
