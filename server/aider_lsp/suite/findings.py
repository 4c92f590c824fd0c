"""Test and tool output → findings on workspace files (pure: text in, `Finding`s out).

Why one module: after each test run the workflow shows the failures where they are (the
editor as diagnostics, the CLI as `path:line` lines). It reads what the common tools print:
pytest (long, short and line tracebacks, and the short summary), unittest and any Python
traceback, `path:line:col: message` lines (ruff, mypy, gcc/clang, pytest --tb=line), tsc (both
`file(line,col): error TS…` and the pretty `file:line:col - error TS…`) and eslint's stylish
blocks. Paths become workspace-relative; files outside the workspace (the standard library,
site-packages, node_modules) are dropped. When nothing parses, the failure lands on the
files the plan named (line 0: the whole file) with the run's summary line.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from ..models import Finding, Severity

MAX_MESSAGE = 500
MAX_FINDINGS = 200
VENDORED_PARTS = frozenset({"site-packages", "dist-packages", "node_modules", ".venv", "venv", ".tox"})
MAX_PATH_CHARS = 4096  # Linux's PATH_MAX: a longer token cannot name a file
MAX_NAME_CHARS = 255  # NAME_MAX: nor can one with a longer component

PYTEST_HEADER = re.compile(r"^_{3,} (?P<name>.+?) _{3,}$")
PYTEST_SECTION_END = re.compile(r"^(={3,}|-{3,} Captured )")
PYTEST_LOCATION = re.compile(r"^(?P<path>[^\s:]+):(?P<line>\d+): ?(?P<rest>.*)$")
_PYTEST_SUMMARY = re.compile(r"^(?P<kind>FAILED|ERROR) (?P<path>[^\s:]+)::(?P<test>\S+?)(?: - (?P<msg>.*))?$")
_TRACEBACK_START = "Traceback (most recent call last):"
_PY_FRAME = re.compile(r'^\s*File "(?P<path>[^"]+)", line (?P<line>\d+)')
_UNITTEST_HEADER = re.compile(r"^(?P<kind>FAIL|ERROR): (?P<test>\S+)")
_COLON_STYLE = re.compile(
    r"^(?P<path>[^\s:][^\s:]*):(?P<line>\d+)(?::(?P<col>\d+))?(?::| -) ?(?P<msg>.*\S.*)$"
)
_TSC_PAREN = re.compile(r"^(?P<path>[^\s(][^(]*)\((?P<line>\d+),(?P<col>\d+)\): (?P<msg>.+)$")
_ESLINT_ROW = re.compile(
    r"^\s+(?P<line>\d+):(?P<col>\d+)\s+(?P<sev>error|warning)\s+(?P<msg>.+?)(?:\s{2,}(?P<rule>[\w@/-]+))?\s*$"
)
ANSI_ESCAPE = re.compile(r"\x1b\[[0-9;]*m")


@dataclass
class _Collector:
    """Findings as they are found: confined to the workspace, deduplicated, in order."""

    workspace: Path
    findings: list[Finding] = field(default_factory=list)
    _seen: set[tuple[str, int, str]] = field(default_factory=set)

    def relative(self, raw: str) -> str | None:
        """The workspace-relative path of an existing file, None when outside or missing.

        Any line of output may reach here (minified JS, base64, a long hash): a token that
        cannot be a path is skipped before the filesystem is asked, and an error asking it
        (a name too long, a loop of links) means "not a file", never a crashed run."""
        if not _could_be_path(raw):
            return None
        candidate = Path(raw)
        if not candidate.is_absolute():
            candidate = self.workspace / candidate
        try:
            real = candidate.resolve()
            rel = real.relative_to(self.workspace)
            if not real.is_file():
                return None
        except (OSError, ValueError):
            return None
        if VENDORED_PARTS.intersection(rel.parts):
            return None
        return rel.as_posix()

    def add(
        self,
        raw_path: str,
        line: int,
        column: int,
        message: str,
        source: str,
        severity: Severity = Severity.ERROR,
    ) -> bool:
        rel = self.relative(raw_path)
        message = " ".join(message.split())[:MAX_MESSAGE]
        if rel is None or not message or len(self.findings) >= MAX_FINDINGS:
            return False
        key = (rel, line, message)
        if key not in self._seen:
            self._seen.add(key)
            self.findings.append(
                Finding(path=rel, line=line, column=column, message=message, severity=severity, source=source)
            )
        return True


def _could_be_path(raw: str) -> bool:
    """False for tokens no filesystem accepts as a path (too long, a NUL, an over-long name)."""
    if not raw or len(raw) > MAX_PATH_CHARS or "\x00" in raw:
        return False
    return all(len(part.encode("utf-8", "surrogateescape")) <= MAX_NAME_CHARS for part in raw.split("/"))


def parse_test_output(
    stdout: str,
    stderr: str,
    workspace: str | Path,
    *,
    exit_code: int | None = None,
    fallback_files: Sequence[str] = (),
) -> list[Finding]:
    """Every problem the output names on a workspace file; a failed run that names none gives
    one whole-file finding per fallback file with the run's summary."""
    collector = _Collector(Path(workspace).resolve())
    for text in (stdout, stderr):
        lines = ANSI_ESCAPE.sub("", text or "").splitlines()
        used = _pytest_sections(lines, collector)
        used |= _python_tracebacks(lines, collector)
        used |= _eslint_blocks(lines, collector)
        summary = _pytest_summary_lines(lines)
        _located_lines(lines, collector, used | summary)
        _pytest_summary(lines, collector, summary)
    if not collector.findings and exit_code not in (0, None):
        failure = summary_line(stdout, stderr) or f"the test command failed (exit code {exit_code})"
        for path in fallback_files:
            collector.add(path, 0, 0, failure, "tests")
    return collector.findings


def summary_line(stdout: str, stderr: str) -> str:
    """The last meaningful line of a run (pytest's `1 failed in 0.1s`, unittest's `FAILED (…)`)."""
    for text in (stdout, stderr):
        for line in reversed(ANSI_ESCAPE.sub("", text or "").splitlines()):
            stripped = line.strip(" =")
            if stripped and not set(stripped) <= set("-=_.*"):
                return stripped
    return ""


def _pytest_sections(lines: list[str], out: _Collector) -> set[int]:
    """pytest's `____ test_x ____` sections (long and short tracebacks): the innermost frame
    inside the workspace, with the `E   ` lines as the message."""
    used: set[int] = set()
    index = 0
    while index < len(lines):
        header = PYTEST_HEADER.match(lines[index])
        if not header or set(header.group("name")) <= set("_ "):
            index += 1
            continue
        end = index + 1
        while (
            end < len(lines)
            and not PYTEST_HEADER.match(lines[end])
            and not PYTEST_SECTION_END.match(lines[end])
        ):
            end += 1
        section = range(index, end)
        used.update(section)
        located: tuple[str, int] | None = None
        errors: list[str] = []
        exception = ""
        for number in section:
            line = lines[number]
            if line.startswith("E "):
                errors.append(line[1:].strip())
                continue
            match = PYTEST_LOCATION.match(line)
            if match and out.relative(match.group("path")) is not None:
                located = (match.group("path"), int(match.group("line")))
                rest = match.group("rest").strip()
                if rest and not rest.startswith("in "):
                    exception = rest
        if located is not None:
            detail = errors[0] if errors else exception or "failed"
            if exception and errors and exception not in errors[0]:
                detail = f"{exception}: {errors[0]}"
            out.add(located[0], located[1], 0, f"{header.group('name')}: {detail}", "pytest")
        index = end
    return used


def _python_tracebacks(lines: list[str], out: _Collector) -> set[int]:
    """`Traceback (most recent call last):` blocks (unittest, pytest --tb=native, crashes):
    the innermost frame inside the workspace, with the exception line."""
    used: set[int] = set()
    test_name = ""
    index = 0
    while index < len(lines):
        header = _UNITTEST_HEADER.match(lines[index])
        if header:
            test_name = header.group("test")
        if lines[index].strip() != _TRACEBACK_START:
            index += 1
            continue
        frames: list[tuple[str, int]] = []
        end = index + 1
        while end < len(lines) and (lines[end].startswith((" ", "\t")) or not lines[end].strip()):
            frame = _PY_FRAME.match(lines[end])
            if frame:
                frames.append((frame.group("path"), int(frame.group("line"))))
            end += 1
        exception = lines[end].strip() if end < len(lines) else "exception"
        used.update(range(index, min(end + 1, len(lines))))
        inside = [frame for frame in frames if out.relative(frame[0]) is not None]
        if inside:
            path, line = inside[-1]
            message = f"{test_name}: {exception}" if test_name else exception
            out.add(path, line, 0, message, "unittest" if test_name else "python")
        test_name = ""
        index = end + 1
    return used


def _eslint_blocks(lines: list[str], out: _Collector) -> set[int]:
    """eslint's stylish format: a file path on its own line, then `line:col  severity  msg  rule`."""
    used: set[int] = set()
    current: str | None = None
    for number, line in enumerate(lines):
        row = _ESLINT_ROW.match(line)
        if row and current is not None:
            rule = row.group("rule")
            message = row.group("msg") + (f" ({rule})" if rule else "")
            severity = Severity.WARNING if row.group("sev") == "warning" else Severity.ERROR
            out.add(current, int(row.group("line")), int(row.group("col")), message, "eslint", severity)
            used.add(number)
            continue
        stripped = line.strip()
        current = stripped if stripped and " " not in stripped and out.relative(stripped) else None
        if current is not None:
            used.add(number)
    return used


def _pytest_summary_lines(lines: list[str]) -> set[int]:
    return {number for number, line in enumerate(lines) if _PYTEST_SUMMARY.match(line.strip())}


def _pytest_summary(lines: list[str], out: _Collector, summary: set[int]) -> None:
    """`FAILED path::test - message` (pytest -q / -rf) for files no traceback located: the
    line of the test's `def`."""
    located = {finding.path for finding in out.findings}
    for number in sorted(summary):
        match = _PYTEST_SUMMARY.match(lines[number].strip())
        if not match:
            continue
        rel = out.relative(match.group("path"))
        if rel is None or rel in located:
            continue
        test = match.group("test")
        message = f"{test}: {match.group('msg') or match.group('kind').lower()}"
        out.add(rel, _definition_line(out.workspace / rel, test), 0, message, "pytest")


def _definition_line(path: Path, test: str) -> int:
    """The line of `def <last part of the test id>` (0 when not found)."""
    name = re.split(r"[:.\[]", test.split("::")[-1])[0]
    try:
        for number, text in enumerate(path.read_text(errors="replace").splitlines(), 1):
            if re.match(rf"\s*(async\s+)?def {re.escape(name)}\b", text):
                return number
    except OSError:
        pass
    return 0


def _located_lines(lines: Iterable[str], out: _Collector, used: set[int]) -> None:
    """`path:line[:col]: message` (ruff, mypy, gcc/clang, pytest --tb=line, tsc --pretty) and
    `path(line,col): message` (tsc)."""
    for number, line in enumerate(lines):
        if number in used:
            continue
        stripped = line.strip()
        match = _TSC_PAREN.match(stripped) or _COLON_STYLE.match(stripped)
        if not match:
            continue
        message = match.group("msg").strip()
        column = int(match.group("col") or 0)
        out.add(
            match.group("path"),
            int(match.group("line")),
            column,
            message,
            _source(message),
            _severity(message),
        )


def _severity(message: str) -> Severity:
    head = message.lower()[:40]
    if re.search(r"\bwarning\b", head):
        return Severity.WARNING
    if re.search(r"\b(note|info)\b", head):
        return Severity.INFORMATION
    return Severity.ERROR


def _source(message: str) -> str:
    if re.search(r"\berror TS\d+", message):
        return "tsc"
    if re.match(r"(error|warning|note):", message) and "[" in message and message.rstrip().endswith("]"):
        return "mypy"
    return "tests"
