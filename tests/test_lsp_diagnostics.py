"""Findings (1-based lines and columns, 0 = whole file / none) → LSP diagnostics (0-based ranges)."""

from __future__ import annotations

from lsprotocol import types
from pygls.workspace.position_codec import PositionCodec

from aider_lsp.lsp.diagnostics import to_diagnostic
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
