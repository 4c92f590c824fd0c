"""Whether green tests can still judge a run: the judge must not have been changed.

A passing test command proves nothing when the edit emptied the tests: `python -m unittest`
on a test file rewritten without tests prints "Ran 0 tests … OK" and exits 0. So a green run
is a success only when
- the runner ran at least one test (a count it printed of 0 is never green),
- it ran no fewer tests than before the run (when both counts are known), and
- the run's edits kept every existing test: no test file deleted, no test gone, and no test
  file changed except by added lines (a new test) or where the user handed it to the run.
Otherwise `check` says what went: the files and the tests no longer defined.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Collection, Mapping

from ..memory.extract import is_test_path  # the index's own rule for what a test file is
from ..models import JudgeProblem

_ESC = re.compile(r"\x1b\[[0-9;]*m")
# what runners print of how many tests ran
_UNITTEST = re.compile(r"^Ran (\d+) tests? in ", re.MULTILINE)
_PYTEST_FINAL = re.compile(
    r"^=*\s*((?:no tests ran|\d+ (?:passed|failed|errors?|skipped|xfailed|xpassed|deselected|warnings?))"
    r"[^\n]*?) in [\d.]+s\b",
    re.MULTILINE,
)
_PYTEST_COUNT = re.compile(r"(\d+) (passed|failed|errors?|xfailed|xpassed)")
_JEST = re.compile(r"^Tests:\s+.*?(\d+) total", re.MULTILINE)
_MOCHA = re.compile(r"^\s*(\d+) (passing|failing)\b", re.MULTILINE)
_CARGO = re.compile(r"^test result: \w+\. (\d+) passed; (\d+) failed", re.MULTILINE)
_GO_NONE = re.compile(r"\[no test files\]|^testing: warning: no tests to run", re.MULTILINE)
_GO_RAN = re.compile(r"^(ok|FAIL|---)\s", re.MULTILINE)

_PY_DEF = re.compile(r"^([ \t]*)(?:async[ \t]+)?def[ \t]+(test\w*)[ \t]*\(", re.MULTILINE)
_PY_CLASS = re.compile(r"^class\s+(\w+)", re.MULTILINE)
_JS_TEST = re.compile(r"\b(?:it|test)(?:\.\w+)?\(\s*(['\"`])(.+?)\1")
_GO_TEST = re.compile(r"^func\s+(Test\w+)\s*\(", re.MULTILINE)
_RUST_TEST = re.compile(r"#\[(?:\w+::)?test\]\s*(?:#\[[^\]]*\]\s*)*(?:pub\s+)?(?:async\s+)?fn\s+(\w+)")
_JAVA_TEST = re.compile(r"@Test\b[^{;]*?\s(\w+)\s*\(")


def tests_counted(stdout: str, stderr: str) -> int | None:
    """How many tests the runner says it ran (None: it did not say, in a form known here)."""
    text = _ESC.sub("", f"{stdout}\n{stderr}")
    found = [int(n) for n in _UNITTEST.findall(text)]
    if found:
        return sum(found)
    finals = _PYTEST_FINAL.findall(text)
    if finals:
        final = finals[-1]
        return 0 if final.startswith("no tests ran") else sum(int(n) for n, _ in _PYTEST_COUNT.findall(final))
    jest = _JEST.findall(text)
    if jest:
        return int(jest[-1])
    cargo = _CARGO.findall(text)
    if cargo:
        return sum(int(passed) + int(failed) for passed, failed in cargo)
    mocha = _MOCHA.findall(text)
    if mocha:
        return sum(int(n) for n, _ in mocha)
    if _GO_NONE.search(text) and not _GO_RAN.search(text):
        return 0
    return None


def test_names(path: str, text: str) -> set[str]:
    """The tests a file defines, by name (Python's qualified by their class)."""
    if path.endswith(".py"):
        return _python_tests(text)
    patterns = (_JS_TEST, _GO_TEST, _RUST_TEST, _JAVA_TEST)
    names: set[str] = set()
    for pattern in patterns:
        for match in pattern.finditer(text):
            names.add(match.group(match.lastindex or 1))
    return names


def _python_tests(text: str) -> set[str]:
    classes = [(m.start(), m.group(1)) for m in _PY_CLASS.finditer(text)]
    names: set[str] = set()
    for match in _PY_DEF.finditer(text):
        owner = [name for start, name in classes if start < match.start()]
        indented = bool(match.group(1))
        names.add(f"{owner[-1]}.{match.group(2)}" if indented and owner else match.group(2))
    return names


def _text(data: bytes | None) -> str:
    return "" if data is None else data.decode("utf-8", errors="replace")


def only_added(before: str, after: str) -> bool:
    """Whether `after` is `before` with lines inserted and none removed or changed (a test or
    an import added): the tests that were there still judge as they did."""
    matcher = difflib.SequenceMatcher(None, before.splitlines(), after.splitlines(), autojunk=False)
    return all(tag in ("equal", "insert") for tag, *_ in matcher.get_opcodes())


def check(
    changes: Mapping[str, tuple[bytes | None, bytes | None]],
    *,
    counted: int | None,
    tests_before: int | None,
    users_files: Collection[str] = (),
) -> JudgeProblem | None:
    """Why passing tests cannot call the run a success (None: they can). `changes` holds each
    file the run changed, before the run and now (None: absent); `counted` is how many tests
    the passing run of the whole suite ran (`tests_counted`; None: unknown or not the whole
    suite); `users_files` are the files the user handed to the run (chosen, not merely named
    in the goal: "make the tests in test_calc.py pass" hands no test over to be rewritten).

    Never green: no test run. Not green: fewer tests than before, a test file deleted, a test
    gone or a test file changed other than by added lines (a new test), each unless the user
    handed that file to the run (theirs to change, tests removed included)."""
    existing = sorted(
        path for path, (before, _) in changes.items() if before is not None and is_test_path(path)
    )
    gone = {
        path: sorted(test_names(path, _text(changes[path][0])) - test_names(path, _text(changes[path][1])))
        for path in existing
    }
    removed = sorted(f"{path}::{name}" for path in existing if path not in users_files for name in gone[path])
    handed_over = sum(len(gone[path]) for path in existing if path in users_files)  # theirs to remove
    deleted = [path for path in existing if changes[path][1] is None and path not in users_files]
    edited = [
        path
        for path in existing
        if changes[path][1] is not None
        and path not in users_files
        and not only_added(_text(changes[path][0]), _text(changes[path][1]))
    ]
    reasons: list[str] = []
    if counted == 0:
        reasons.append("the suite ran no test")
    elif counted is not None and tests_before is not None and counted < tests_before - handed_over:
        reasons.append(f"the suite ran {counted} test(s), {tests_before} before the run")
    if edited:
        reasons.append(f"the run changed the tests in {', '.join(edited)}")
    if deleted:
        reasons.append(f"the run deleted {', '.join(deleted)}")
    if not reasons:
        return None
    message = "; ".join(reasons)
    if removed:
        shown = ", ".join(removed[:8]) + (f" and {len(removed) - 8} more" if len(removed) > 8 else "")
        message += f" (tests gone: {shown})"
    touched = sorted({*edited, *deleted, *(item.split("::", 1)[0] for item in removed)})
    return JudgeProblem(
        message=f"the tests pass, but they cannot judge this run: {message}",
        test_files=touched,
        removed_tests=removed,
        tests_before=tests_before,
        tests_now=counted,
    )
