"""Why a file ranked: the MatchItem a scored file becomes, with `metadata["why"]` and the
numbers behind it (`metadata["signals"]`), and the one-line form the terminal prints."""

from __future__ import annotations

from typing import Any

from ..models import MatchItem
from . import rank


def why_ranked(item: rank.Scored, words: list[str], definitions: list[tuple[str, int]]) -> dict[str, Any]:
    """What a user needs to trust or correct a match: words, definitions, the past commit
    like the query that changed it, kind, editor."""
    why: dict[str, Any] = {"kind": item.row.kind}
    if words:
        why["terms"] = words
    if definitions:
        why["definitions"] = [f"{name} (line {line})" for name, line in definitions]
    if item.changed_in:
        why["changed_by"] = item.changed_in
    if item.tested_by and rank.TESTED_CODE_SHARE * item.test_content > item.content:
        why["tested_by"] = item.tested_by
    if item.prior < 1.0:
        why["demoted"] = f"{item.row.kind} file (x{item.prior:g}); the query is not about it"
    if item.target:
        why["named"] = True
    if item.mentioned:
        why["mentioned"] = True
    if item.module:
        why["module"] = True
    if item.open:
        why["open"] = True
    return why


def describe_why(why: dict[str, Any]) -> str:
    """One line for the terminal: `defines X (line 3); matches a, b; demoted: test file`."""
    parts: list[str] = []
    if why.get("named"):
        parts.append("named by you")
    if why.get("mentioned"):
        parts.append("the question mentions it")
    if why.get("module"):
        parts.append("the goal names its module")
    if why.get("definitions"):
        parts.append("defines " + ", ".join(why["definitions"]))
    if why.get("terms"):
        parts.append("matches " + ", ".join(why["terms"]))
    if why.get("tested_by"):
        parts.append(f"its test {why['tested_by']} matches")
    if why.get("changed_by"):
        parts.append(f"changed by a commit like it: {why['changed_by'][:60]}")
    if why.get("open"):
        parts.append("open in the editor")
    if why.get("demoted"):
        parts.append("demoted: " + why["demoted"])
    return "; ".join(parts) or f"{why.get('kind', 'file')}"


def match_item(item: rank.Scored, words: list[str], definitions: list[tuple[str, int]]) -> MatchItem:
    """A scored file as the answer shows it: its summary, score, why and signals.

    `relevance_score` is the score capped to 0..1 (the MatchItem contract); `metadata["score"]`
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
        metadata={
            "language": row.language,
            "size": row.size,
            "kind": row.kind,
            "score": round(item.total, 4),  # uncapped: the best files often all score 1.0
            "why": why_ranked(item, words, definitions),
            "signals": {
                "text": round(item.text, 4),
                "definition": round(item.unit, 4),
                "tested": round(item.test_content, 4),
                "prior": item.prior,
                "path": round(item.path, 4),
                "identifier": round(item.identifier, 4),
                "history": round(item.history, 4),
                "changes": round(item.changes, 4),
                "recent": round(item.recent, 4),
                "churn": round(item.churn, 4),
                "fresh": round(item.fresh, 4),
                "target": item.target,
                "mentioned": round(item.mentioned, 4),
                "module": round(item.module, 4),
                "open": item.open,
            },
        },
    )
