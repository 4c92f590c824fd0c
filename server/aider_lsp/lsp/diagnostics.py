"""Findings (test failures, analysis advice) shown as LSP diagnostics with `source: "aider-lsp"`.

One store keyed by (producer, uri): a producer (the workflow, …) replaces its own diagnostics
without touching another's, and each publish sends the union for the uri, because
`textDocument/publishDiagnostics` replaces everything the server said about a document.
A uri whose last diagnostic goes is cleared with an empty list. Requests reach the store
through their RequestContext (language_server.py): `report_findings`, `clear_findings`.

Positions are made for the file as the tests read it, and each diagnostic then follows the
document's edits. A set that reports the very same Finding objects again (the workflow shows a
test run's findings at once, and again with the analysis that arrives while the next edit may
be rewriting the file) keeps their diagnostics as they are: the disk may no longer be the text
that test run read.
"""

from __future__ import annotations

import copy
import logging
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lsprotocol import types
from pygls.uris import to_fs_path

if TYPE_CHECKING:
    from ..models import Finding, FindingsCallback
    from .language_server import AiderLanguageServer

log = logging.getLogger(__name__)

SOURCE = "aider-lsp"
Resolver = Callable[[str], Path]  # a workspace-relative path → its real path (AccessDenied outside)
WORKFLOW = "workflow"  # the producer whose findings arrive through RequestContext.report_findings

# by models.Severity's value (a StrEnum finds these keys); models load after initialize
_SEVERITIES: dict[str, types.DiagnosticSeverity] = {
    "error": types.DiagnosticSeverity.Error,
    "warning": types.DiagnosticSeverity.Warning,
    "information": types.DiagnosticSeverity.Information,
    "hint": types.DiagnosticSeverity.Hint,
}


def _line_range(lines: Sequence[str], finding: Finding, units: Any) -> types.Range:
    """Finding lines/columns are 1-based (0 = whole file / no column); LSP's are 0-based.

    A whole-file finding sits on line 0; a line finding covers the line's text (from its column,
    else from its first non-blank character) when the text is known, else an empty range."""
    line = max(finding.line - 1, 0)
    text = lines[line].rstrip("\r\n") if line < len(lines) else ""
    start = min(finding.column - 1, len(text)) if finding.column > 0 else len(text) - len(text.lstrip())
    start_units = units.client_num_units(text[:start])
    end_units = max(units.client_num_units(text), start_units)
    return types.Range(
        start=types.Position(line=line, character=start_units),
        end=types.Position(line=line, character=end_units),
    )


def to_diagnostic(finding: Finding, lines: Sequence[str], units: Any) -> types.Diagnostic:
    """One Finding as an lsprotocol Diagnostic; the tool that said it is the diagnostic's code."""
    return types.Diagnostic(
        range=_line_range(lines, finding, units),
        message=finding.message,
        severity=_SEVERITIES[finding.severity],
        source=SOURCE,
        code=finding.source,
    )


def _before(a: types.Position, b: types.Position) -> bool:
    return (a.line, a.character) <= (b.line, b.character)


def _shifted(
    position: types.Position, change: types.TextDocumentContentChangePartial, units: Any
) -> types.Position:
    """A position at or after the end of `change`, where it is once the change is made."""
    start, end = change.range.start, change.range.end
    inserted = change.text.split("\n")
    last_line = start.line + len(inserted) - 1
    if position.line != end.line:
        return types.Position(line=position.line + last_line - end.line, character=position.character)
    tail = position.character - end.character
    head = units.client_num_units(inserted[-1]) + (start.character if len(inserted) == 1 else 0)
    return types.Position(line=last_line, character=head + tail)


def _follow(
    diagnostic: types.Diagnostic, change: types.TextDocumentContentChangePartial, units: Any
) -> types.Diagnostic | None:
    """The diagnostic after one edit: unchanged before it, moved after it, None when the edit
    touched its own range."""
    rng = diagnostic.range
    if _before(change.range.end, rng.start):  # above it, or before it on its line
        moved = copy.copy(diagnostic)
        moved.range = types.Range(
            start=_shifted(rng.start, change, units), end=_shifted(rng.end, change, units)
        )
        return moved
    if _before(rng.end, change.range.start):  # after it
        return diagnostic
    return None


@dataclass(frozen=True)
class _Shown:
    """A diagnostic and the finding it shows (kept to know a finding reported again)."""

    finding: Finding
    diagnostic: types.Diagnostic


class DiagnosticStore:
    """The server's aider-lsp diagnostics: (producer, uri) → diagnostics, published on change."""

    def __init__(self, ls: AiderLanguageServer) -> None:
        self._ls = ls
        self._entries: dict[tuple[str, str], list[_Shown]] = {}
        # uri -> the text its diagnostics' positions refer to (the file as the tests read it)
        self._anchors: dict[str, str] = {}

    def for_uri(self, uri: str) -> list[types.Diagnostic]:
        """Every producer's diagnostics on one document (code actions read them)."""
        path = to_fs_path(uri)
        return [
            shown.diagnostic
            for (_, key_uri), entries in self._entries.items()
            if key_uri == uri or (path is not None and to_fs_path(key_uri) == path)
            for shown in entries
        ]

    def replace(self, producer: str, findings: list[Finding], resolve: Resolver) -> None:
        """The producer's new set of findings replaces its previous one (empty = clear); `resolve`
        finds a finding's file (its paths are relative to the producer's workspace folder).
        A finding of its previous set reported again keeps its diagnostic; a new one on a
        document that keeps some is placed against the text those refer to."""
        shown_before = {
            id(shown.finding): (uri, shown)
            for (owner, uri), entries in self._entries.items()
            if owner == producer
            for shown in entries
        }
        grouped: dict[str, list[_Shown]] = {}
        new: list[Finding] = []
        for finding in findings:
            uri, shown = shown_before.get(id(finding), ("", None))
            if shown is not None and shown.finding is finding:
                grouped.setdefault(uri, []).append(shown)
            else:
                new.append(finding)
        kept_uris = set(grouped)
        located_paths: dict[str, tuple[str, str] | None] = {}
        for finding in new:
            if finding.path not in located_paths:  # each file is read once per set
                located_paths[finding.path] = self._locate(finding.path, resolve)
            located = located_paths[finding.path]
            if located is None:
                log.info("a finding outside the workspace is not shown: %s", finding.path)
                continue
            uri, text = located
            if uri in kept_uris:  # the text the kept ones refer to
                text = self._anchors.get(uri, text)
            self._anchors[uri] = text
            diagnostic = to_diagnostic(finding, text.splitlines(), self._ls.workspace.position_codec)
            grouped.setdefault(uri, []).append(_Shown(finding, diagnostic))
        stale = {uri for (owner, uri) in self._entries if owner == producer and uri not in grouped}
        for uri in stale:
            del self._entries[(producer, uri)]
        for uri, diagnostics in grouped.items():
            self._entries[(producer, uri)] = diagnostics
        for uri in stale | set(grouped):
            self._publish(uri)

    def clear(self) -> int:
        """Clear every aider-lsp diagnostic; returns how many documents were cleared."""
        uris = {uri for (_, uri) in self._entries}
        self._entries.clear()
        for uri in uris:
            self._publish(uri)
        return len(uris)

    def follow_edits(self, uri: str, changes: Sequence[types.TextDocumentContentChangeEvent]) -> None:
        """The user edited a document that has our diagnostics: each moves with the lines
        inserted or removed above it, and one whose own text was edited is dropped (what it
        said may be fixed, or no longer where it points); then they are published again
        against the document's new version. A whole-document change drops them all."""
        keys = [key for key in self._entries if key[1] == uri]
        if not keys:
            return
        text = self._ls.workspace.get_text_document(uri).source
        if self._anchors.get(uri) == text:
            # the editor caught up with the file the tests read (it reloaded what Aider wrote):
            # the positions were made for this text
            self._publish(uri)
            return
        self._anchors[uri] = text
        units = self._ls.workspace.position_codec
        for key in keys:
            entries: list[_Shown] | None = self._entries[key]
            for change in changes:
                if entries is None:
                    break
                if not isinstance(change, types.TextDocumentContentChangePartial):
                    entries = None
                    break
                entries = [
                    _Shown(shown.finding, moved)
                    for shown in entries
                    if (moved := _follow(shown.diagnostic, change, units)) is not None
                ]
            if entries:
                self._entries[key] = entries
            else:
                del self._entries[key]
        self._publish(uri)

    def sink(self, producer: str, resolve: Resolver) -> FindingsCallback:
        """A RequestContext.report_findings for one producer (one per workspace folder)."""
        return lambda findings: self.replace(producer, findings, resolve)

    def _open_document(self, path: Path) -> Any | None:
        for document in list(self._ls.workspace.text_documents.values()):
            doc_path = to_fs_path(document.uri)
            if doc_path is not None and os.path.realpath(doc_path) == str(path):
                return document
        return None

    def _locate(self, relative: str, resolve: Resolver) -> tuple[str, str] | None:
        """The finding's document uri (the editor's own spelling when open) and the file's text
        as the tests read it, from the disk: an open document may not have reloaded what an
        edit wrote yet (its didChange comes later, and must not move the diagnostics then)."""
        from ..guards.files import AccessDenied  # the file rules load after initialize, with the app

        try:
            path = resolve(relative)
        except AccessDenied:  # outside the workspace, a bad path: not ours to show
            return None
        document = self._open_document(path)
        uri = document.uri if document is not None else path.as_uri()
        try:
            return uri, path.read_bytes().decode("utf-8", errors="replace")  # its own line endings
        except OSError:  # deleted or unreadable: the finding still shows, on an empty range
            return uri, document.source if document is not None else ""

    def _publish(self, uri: str) -> None:
        diagnostics = [
            shown.diagnostic for (_, key), items in self._entries.items() if key == uri for shown in items
        ]
        if not diagnostics:
            self._anchors.pop(uri, None)
        path = to_fs_path(uri)
        document = self._open_document(Path(os.path.realpath(path))) if path else None
        version = document.version if document is not None else None
        try:
            self._ls.text_document_publish_diagnostics(
                types.PublishDiagnosticsParams(uri=uri, diagnostics=diagnostics, version=version)
            )
        except Exception as exc:  # no transport any more (shutting down)
            log.warning("could not publish diagnostics for %s: %s", uri, exc)
