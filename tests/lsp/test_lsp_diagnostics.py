"""Findings (1-based lines and columns, 0 = whole file / none) → LSP diagnostics (0-based ranges),
and the store that keeps them where the code they point at is."""

from __future__ import annotations

from pathlib import Path

from lsprotocol import types
from pygls.workspace import Workspace
from pygls.workspace.position_codec import PositionCodec

from aider_lsp.lsp.diagnostics import DiagnosticStore, to_diagnostic
from aider_lsp.models import Finding, Severity

LINES = ["import os\n", "def f():\n", "    return 'é😋' + x\n"]
UTF16 = PositionCodec(types.PositionEncodingKind.Utf16)


def span(diagnostic: types.Diagnostic) -> tuple[int, int, int, int]:
    start, end = diagnostic.range.start, diagnostic.range.end
    return start.line, start.character, end.line, end.character


def test_a_line_finding_covers_the_line_text_from_its_first_non_blank() -> None:
    diagnostic = to_diagnostic(Finding(path="m.py", line=2, message="boom"), LINES, UTF16)
    assert span(diagnostic) == (1, 0, 1, len("def f():"))
    assert diagnostic.source == "aider-lsp" and diagnostic.code == "tests"
    assert diagnostic.severity == types.DiagnosticSeverity.Error


def test_a_column_starts_the_range_and_positions_count_utf16_units() -> None:
    finding = Finding(path="m.py", line=3, column=20, message="undefined name x", source="ruff")
    diagnostic = to_diagnostic(finding, LINES, UTF16)
    # 'é' is one UTF-16 unit, '😋' two: the line is one unit longer than its characters
    text = "    return 'é😋' + x"
    assert span(diagnostic) == (2, len(text[:19]) + 1, 2, len(text) + 1)
    assert diagnostic.code == "ruff"


def test_whole_file_and_unknown_text() -> None:
    whole = to_diagnostic(
        Finding(path="m.py", line=0, message="advice", severity=Severity.INFORMATION), LINES, UTF16
    )
    assert span(whole) == (0, 0, 0, len("import os"))
    assert whole.severity == types.DiagnosticSeverity.Information
    unreadable = to_diagnostic(Finding(path="gone.py", line=7, column=3, message="x"), [], UTF16)
    assert span(unreadable) == (6, 0, 6, 0)
    past_the_end = to_diagnostic(Finding(path="m.py", line=40, message="x"), LINES, UTF16)
    assert span(past_the_end) == (39, 0, 39, 0)


def test_every_severity_has_its_lsp_severity() -> None:
    lines = ["x = 1"]
    shown = {
        to_diagnostic(Finding(path="a.py", line=1, message="m", severity=severity), lines, UTF16).severity
        for severity in Severity
    }
    assert shown == set(types.DiagnosticSeverity)


class _App:
    """What the store asks of the Application: a confined path."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def resolve_path(self, path: str) -> Path:
        return (self.root / path).resolve()


class _Server:
    """The store's view of the language server: its workspace, the app, what it published."""

    def __init__(self, root: Path) -> None:
        self.workspace = Workspace(root.as_uri())
        self.app = _App(root)
        self.published: list[types.PublishDiagnosticsParams] = []

    def text_document_publish_diagnostics(self, params: types.PublishDiagnosticsParams) -> None:
        self.published.append(params)


def lines_of(published: types.PublishDiagnosticsParams) -> list[int]:
    return sorted(d.range.start.line for d in published.diagnostics)


def test_a_test_run_reported_again_while_the_next_edit_rewrites_the_file_stays_on_its_code(
    tmp_path: Path,
) -> None:
    """The workflow shows a run's failures at once, and again with the analysis, which may come
    after the next edit wrote the file: the failures still point at the code the tests ran,
    and move with it when the editor reloads what the edit wrote."""
    source = tmp_path / "calc.py"
    before = "def add(a, b):\n    return a - b\n"
    source.write_text(before)
    server = _Server(tmp_path)
    uri = source.as_uri()
    server.workspace.put_text_document(types.TextDocumentItem(uri, "python", 1, before))
    store = DiagnosticStore(server)  # type: ignore[arg-type]
    failure = Finding(path="calc.py", line=2, message="AssertionError: -1 != 3")
    report = store.sink("workflow", server.app.resolve_path)

    report([failure])
    assert lines_of(server.published[-1]) == [1]

    after = "import math\n\n" + before  # the next edit inserts two lines above
    source.write_text(after)
    advice = Finding(path="calc.py", message="RETRY: fix add", severity=Severity.INFORMATION)
    report([failure, advice])  # the same run's failure, with the analysis
    assert lines_of(server.published[-1]) == [0, 1]

    reload = types.TextDocumentContentChangePartial(
        range=types.Range(start=types.Position(0, 0), end=types.Position(0, 0)), text="import math\n\n"
    )
    server.workspace.update_text_document(types.VersionedTextDocumentIdentifier(version=2, uri=uri), reload)
    store.follow_edits(uri, [reload])
    assert lines_of(server.published[-1]) == [2, 3]  # the advice moved with its line too

    report([Finding(path="calc.py", line=4, message="AssertionError: -1 != 3")])  # a new run
    assert lines_of(server.published[-1]) == [3]
