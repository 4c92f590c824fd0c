"""A failing run's output as a model needs it (pure: text in, text out).

Why: the failing output goes to every model call that follows a red run (the first edit after
the tests-first run, each retry, each analysis), and each one pays for it. pytest's long
tracebacks repeat a test's source for every failure: 60 failing cases of one parametrized test
printed 258 KB, and a head-and-tail cut of it kept a decorator's source and a list of cut-off
`FAILED` lines, none of the assertions. The digest keeps what a developer reads: each failure's
name, its `E` lines (the assertion, expected against actual) and where it failed; the cases of
one parametrized test once or twice, with how many more failed; the run's last line. Output
that is not pytest's keeps its head and tail (`clip`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from .findings import ANSI_ESCAPE, PYTEST_HEADER, PYTEST_LOCATION, PYTEST_SECTION_END

ERROR_LINES = 6  # of a failure's `E` lines
LOCATIONS = 2  # the innermost `path:line:` lines of a failure
CASES_SHOWN = 2  # failures of one test function shown in full; the others are counted
CASE_NAMES = 400  # characters of the other cases' names (their parameters say what they test)
TESTS_SHOWN = 8  # test functions shown; the others are named
_SECTIONS = re.compile(r"^={3,} (FAILURES|ERRORS) ={3,}$")
_RESULT = re.compile(r"\b\d+ (failed|passed|errors?|skipped|xfailed|xpassed|deselected)\b")


@dataclass
class Failure:
    """One `____ name ____` section of pytest's output, reduced."""

    name: str
    errors: list[str] = field(default_factory=list)
    locations: list[str] = field(default_factory=list)
    statement: str = ""  # the line pytest marks `>` last: the statement that failed
    last_lines: list[str] = field(default_factory=list)  # where it has no `E` line

    @property
    def test(self) -> str:
        """The test function the case belongs to (parameters left out)."""
        return self.name.split("[", 1)[0]

    def lines(self) -> list[str]:
        """The failure as shown: its name, where it failed, what it asserted."""
        body = self.errors[:ERROR_LINES] or self.last_lines
        more = len(self.errors) - ERROR_LINES
        tail = [f"E   [... {more} more E lines]"] if more > 0 else []
        statement = [self.statement] if self.statement else []
        return [f"____ {self.name} ____", *self.locations[-LOCATIONS:], *statement, *body, *tail]


def clip(text: str, limit: int) -> str:
    """Head and tail of a long output: the failure is usually at the end."""
    if len(text) <= limit:
        return text
    half = limit // 2
    return f"{text[:half]}\n[... {len(text) - limit} characters omitted ...]\n{text[-half:]}"


def digest(output: str, limit: int) -> str:
    """The failures of a pytest run as a model reads them, at most `limit` characters; any
    other output (or a pytest run with no failure sections) is its head and tail."""
    lines = ANSI_ESCAPE.sub("", output).splitlines()
    failures = pytest_failures(lines)
    if not failures:
        return clip(output, limit)
    text = "\n".join([*shown(failures), *result_line(lines)])
    return clip(text, limit)


def pytest_failures(lines: list[str]) -> list[Failure]:
    """Every failure and error section after pytest's `=== FAILURES ===` / `=== ERRORS ===`."""
    failures: list[Failure] = []
    inside = False
    current: Failure | None = None
    for line in lines:
        if _SECTIONS.match(line):
            inside, current = True, None
            continue
        if not inside:
            continue
        header = PYTEST_HEADER.match(line)
        if header and not set(header.group("name")) <= set("_ "):
            current = Failure(header.group("name"))
            failures.append(current)
        elif PYTEST_SECTION_END.match(line):
            current = None  # a captured-output block or the next section: not the failure's
            inside = not line.startswith("=") or bool(_SECTIONS.match(line))
        elif current is not None:
            _read(current, line)
    return failures


def _read(failure: Failure, line: str) -> None:
    """One line of a failure's section into what the digest keeps of it."""
    if line.startswith("E "):
        if line[1:].strip():
            failure.errors.append("E   " + line[1:].strip())
    elif PYTEST_LOCATION.match(line):
        failure.locations.append(line.strip())
    elif line.startswith(">"):
        failure.statement = ">   " + line[1:].strip()
    elif line.strip():
        failure.last_lines = [*failure.last_lines[-2:], line.rstrip()]


def shown(failures: list[Failure]) -> list[str]:
    """The failures grouped by test function: CASES_SHOWN of each in full and a count of the
    rest; TESTS_SHOWN functions, then the others by name."""
    by_test: dict[str, list[Failure]] = {}
    for failure in failures:
        by_test.setdefault(failure.test, []).append(failure)
    lines: list[str] = []
    for test, cases in list(by_test.items())[:TESTS_SHOWN]:
        for case in cases[:CASES_SHOWN]:
            lines.extend(case.lines())
        if len(cases) > CASES_SHOWN:
            lines.append(_more_cases(test, cases[CASES_SHOWN:]))
    others = list(by_test)[TESTS_SHOWN:]
    if others:
        count = sum(len(by_test[test]) for test in others)
        lines.append(f"[... {count} more failures in: {', '.join(others)}]")
    return lines


def _more_cases(test: str, cases: list[Failure]) -> str:
    """One line for the cases not shown: how many, and the first ones' parameters."""
    names, length = [], 0
    for case in cases:
        params = case.name[len(test) :].strip("[]")
        if not params or length + len(params) > CASE_NAMES:
            break
        names.append(params)
        length += len(params) + 2
    listed = f": {', '.join(names)}{', …' if len(names) < len(cases) else ''}" if names else ""
    return f"[... {len(cases)} more failing cases of {test}{listed}]"


def result_line(lines: list[str]) -> list[str]:
    """pytest's closing line (`60 failed, 251 passed in 1.24s`), when the output has one."""
    for line in reversed(lines):
        if _RESULT.search(line):
            return [line.strip(" =")]
    return []
