"""Failing tests first: which tests failed in a run, and the test command narrowed to them.

A real suite takes seconds to minutes; after an edit only the tests that failed before need
to run until they pass (then the whole suite, once: a run is green only on the whole suite).
The ids come from the output each runner prints by default:

- pytest: the short summary's `FAILED path::test` / `ERROR path::test` lines → node ids;
- unittest: `FAIL: test_x (module.Class.test_x)` (or the older `(module.Class)`) → dotted ids;
- node's test runner (`node --test`): TAP `not ok N - name` or spec `✖ name` → a
  `--test-name-pattern` of the exact names;
- cargo test: `test path::name ... FAILED` → the names with `--exact`;
- go test: `--- FAIL: TestName` with `FAIL\tpkg` → `-run '^(A|B)$'` over those packages.

A runner not in this list (npm/yarn/pnpm scripts, make, gradle, …) or a command run through a
shell is never narrowed: it runs whole, as before. Nothing here runs a command.

Once the failing tests pass, the rest of the suite (`rest_of_suite`) is all that is left to
run: where the runner can leave tests out by id (pytest `--deselect`), the tests that just
passed are left out. pytest deselects by prefix (`::test_a` also leaves out `::test_ab`), so
a rest run counts: green only when it deselected exactly those (`deselected_exactly`), else
the whole suite decides.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import PurePath

MAX_IDS = 200  # more failures than this: the whole suite is about as fast, and argv stays short

_PYTEST_SUMMARY = re.compile(r"^(?:FAILED|ERROR) (\S+::\S.*?)(?: - .*)?$")
_UNITTEST_HEADER = re.compile(r"^(?:FAIL|ERROR): (\w+) \(([\w.]+)\)")
_TAP_NOT_OK = re.compile(r"^\s*not ok \d+ - (.+?)(?:\s+#\s*(?:SKIP|TODO).*)?$")
_TAP_OK = re.compile(r"^\s*ok \d+ - ")
_TAP_LOCATION = re.compile(r"^\s*location: '(.+?):\d+:\d+'$")
_SPEC_FAILED = re.compile(r"^\s*✖ (.+?)(?: \([\d.]+m?s\))?$")
_NOT_A_TEST = re.compile(r"(\.[cm]?[jt]sx?|:)$")  # a test file, or the spec reporter's "failing tests:"
_CARGO_FAILED = re.compile(r"^test (\S+) \.\.\. FAILED$")
_GO_FAILED = re.compile(r"^\s*--- FAIL: (\S+)")
_GO_PACKAGE = re.compile(r"^FAIL\t(\S+)")
_PYTEST_DESELECTED = re.compile(r"\b(\d+) deselected\b")
# pytest options that choose tests themselves: a rest run's deselected count would mix theirs in
_PYTEST_SELECTING = ("-k", "-m", "--deselect", "--lf", "--last-failed", "--ff", "--sw", "--stepwise")

# pytest options that take a value in the next argument (so that value is not a path)
_PYTEST_VALUED = frozenset(
    {"-k", "-m", "-p", "-c", "-o", "-W", "-n", "-r", "--rootdir", "--maxfail", "--deselect", "--ignore",
     "--ignore-glob", "--confcutdir", "--basetemp", "--durations", "--tb", "--junitxml", "--log-level",
     "--dist", "--cov", "--cov-report", "--cov-config", "--import-mode", "--override-ini"}
)  # fmt: skip

# node options that take a value in the next argument
_NODE_VALUED = frozenset(
    {"-r", "--require", "--import", "--loader", "--experimental-loader", "--test-reporter",
     "--test-reporter-destination", "--test-concurrency", "--test-timeout", "-C", "--conditions"}
)  # fmt: skip

# unittest options kept when it runs named tests (discovery's options are not)
_UNITTEST_FLAGS = frozenset(
    {"-v", "--verbose", "-q", "--quiet", "-b", "--buffer", "-f", "--failfast", "-c", "--catch", "--locals"}
)


@dataclass(frozen=True)
class Narrowed:
    """The command that runs only the failing tests, and what it runs (for progress lines)."""

    command: str
    tests: tuple[str, ...]

    @property
    def description(self) -> str:
        count = len(self.tests)
        return f"{count} failing test{'s' if count != 1 else ''}"


def narrow(command: str, output: str, *, shell: bool = False) -> Narrowed | None:
    """`command` narrowed to the tests that failed in `output` (its last run's stdout and
    stderr), or None: not a runner this module knows, run through a shell, or no failing
    test it can name (a collection error, a crash, a timeout): then the suite runs whole."""
    if shell:
        return None
    try:
        argv = shlex.split(command)
    except ValueError:
        return None
    runner = _runner(argv)
    if runner is None:
        return None
    ids_of, narrowed = _RUNNERS[runner]
    ids = ids_of(output.splitlines())
    if not ids or len(ids) > MAX_IDS:
        return None
    new_argv = narrowed(argv, ids)
    return None if new_argv is None else Narrowed(shlex.join(new_argv), ids)


def failing_tests(command: str, output: str) -> tuple[str, ...] | None:
    """The tests that failed in `output` (a run of `command`), as the runner names them, or
    None: not a runner this module knows, so the failures cannot be counted (a shell command
    is read as its own words: a count needs no narrowed command)."""
    try:
        argv = shlex.split(command)
    except ValueError:
        return None
    runner = _runner(argv)
    return None if runner is None else _RUNNERS[runner][0](output.splitlines())


def rest_of_suite(command: str, passed: Sequence[str], *, shell: bool = False) -> Narrowed | None:
    """`command` without the tests that just `passed` (pytest node ids), or None: another
    runner, a shell, no ids, or options that select tests themselves (`-k`, `-m`, …)."""
    if shell or not passed or len(passed) > MAX_IDS:
        return None
    try:
        argv = shlex.split(command)
    except ValueError:
        return None
    if _runner(argv) != "pytest":
        return None
    options = argv[3:] if PurePath(argv[0]).name.startswith("python") else argv[1:]  # not python's -m
    if any(arg.split("=", 1)[0] in _PYTEST_SELECTING for arg in options):
        return None
    deselect = [part for test_id in passed for part in ("--deselect", test_id)]
    return Narrowed(shlex.join([*argv, *deselect]), tuple(passed))


def deselected_exactly(output: str, count: int) -> bool:
    """A rest run left out exactly `count` tests (pytest's "N deselected"): no other test was
    left out with them by a shared prefix."""
    found = _PYTEST_DESELECTED.findall(output)
    return bool(found) and int(found[-1]) == count


def _runner(argv: Sequence[str]) -> str | None:
    """Which runner a command is: by its program, or `python -m <module>`."""
    if not argv:
        return None
    program = PurePath(argv[0]).name
    if program.startswith("python") and len(argv) > 2 and argv[1] == "-m":
        program = argv[2]
    elif program in ("pytest", "py.test"):
        program = "pytest"
    if program in ("pytest", "unittest"):
        return program
    if program == "node" and "--test" in argv:
        return "node"
    if program == "cargo" and len(argv) > 1 and argv[1] == "test":
        return "cargo"
    if program == "go" and len(argv) > 1 and argv[1] == "test":
        return "go"
    return None


def _unique(items: Sequence[str]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(items))


# -- pytest -----------------------------------------------------------------------------------
def pytest_ids(lines: Sequence[str]) -> tuple[str, ...]:
    return _unique([m.group(1) for line in lines if (m := _PYTEST_SUMMARY.match(line))])


def _pytest_argv(argv: list[str], ids: Sequence[str]) -> list[str]:
    """The user's options kept, the paths they named replaced by the node ids."""
    start = 3 if PurePath(argv[0]).name.startswith("python") else 1
    kept = argv[:start]
    takes_value = False
    for arg in argv[start:]:
        if takes_value:
            kept.append(arg)
            takes_value = False
        elif arg.startswith("-"):
            kept.append(arg)
            takes_value = arg in _PYTEST_VALUED
        # else: a path or node id the user named: the failing ids replace it
    return [*kept, *ids]


# -- unittest ---------------------------------------------------------------------------------
def unittest_ids(lines: Sequence[str]) -> tuple[str, ...]:
    ids: list[str] = []
    for line in lines:
        match = _UNITTEST_HEADER.match(line)
        if not match:
            continue
        name, where = match.groups()
        if where.startswith("unittest."):  # a module that failed to import (_FailedTest)
            return ()
        ids.append(where if where.endswith(f".{name}") else f"{where}.{name}")
    return _unique(ids)


def _unittest_argv(argv: list[str], ids: Sequence[str]) -> list[str] | None:
    """`python -m unittest [options] <ids>`. Discovery from another start or top folder names
    tests relative to it (not importable from the workspace root): not narrowed."""
    rest = argv[3:]
    if rest and rest[0] == "discover":
        rest = rest[1:]
        if any(arg in ("-s", "--start-directory", "-t", "--top-level-directory") for arg in rest):
            return None
        if any(not arg.startswith("-") for arg in rest):  # positional start directory / pattern
            return None
    options = [arg for arg in rest if arg in _UNITTEST_FLAGS]
    return [*argv[:3], *options, *ids]


# -- node --test ------------------------------------------------------------------------------
def node_ids(lines: Sequence[str]) -> tuple[str, ...]:
    """The failing tests, as `file::name` when TAP gives the test's location (then only those
    files run), else the name. A failing suite (its `not ok` follows its children's, indented
    deeper) and a failing file are not tests of their own."""
    found: list[list[str]] = []  # [name, file]
    current: list[str] | None = None  # the failing test whose YAML block is being read
    deeper_than = -1  # the indent of the last result line
    for line in lines:
        indent = len(line) - len(line.lstrip())
        if match := _TAP_NOT_OK.match(line):
            current = [match.group(1).strip(), ""] if indent >= deeper_than else None
            if current is not None:
                found.append(current)
            deeper_than = indent
        elif _TAP_OK.match(line):
            current, deeper_than = None, indent
        elif current is not None and not current[1] and (match := _TAP_LOCATION.match(line)):
            current[1] = match.group(1)
        elif match := _SPEC_FAILED.match(line):
            found.append([match.group(1).strip(), ""])
    return _unique(
        [f"{file}::{name}" if file else name for name, file in found if name and not _NOT_A_TEST.search(name)]
    )


def _node_test(test_id: str) -> tuple[str, str]:
    """(file, name) of a `node_ids` id; file is "" when the output gave none."""
    file, _, name = test_id.partition("::")
    return (file, name) if name and _NOT_A_TEST.search(file) else ("", test_id)


def _node_argv(argv: list[str], ids: Sequence[str]) -> list[str]:
    """`--test-name-pattern` of the exact names; the failing tests' files instead of the
    user's (node starts a process per file: the name pattern alone still loads every file)."""
    tests = [_node_test(test_id) for test_id in ids]
    pattern = "^(?:" + "|".join(re.escape(name) for _, name in tests) + ")$"
    files = _unique([file for file, _ in tests])
    at = argv.index("--test") + 1
    options = argv[:at]
    if all(files):
        takes_value = False
        for arg in argv[at:]:
            if takes_value or arg.startswith("-"):
                options.append(arg)
                takes_value = not takes_value and arg in _NODE_VALUED
        return [*options, f"--test-name-pattern={pattern}", *files]
    return [*options, f"--test-name-pattern={pattern}", *argv[at:]]


# -- cargo test -------------------------------------------------------------------------------
def cargo_ids(lines: Sequence[str]) -> tuple[str, ...]:
    return _unique([m.group(1) for line in lines if (m := _CARGO_FAILED.match(line))])


def _cargo_argv(argv: list[str], ids: Sequence[str]) -> list[str] | None:
    """libtest takes several name filters; `--exact` keeps `a::b` from also running `a::bc`."""
    if "--" in argv:
        at = argv.index("--")
        before, after = argv[:at], argv[at + 1 :]
    else:
        before, after = argv, []
    if any(not arg.startswith("-") for arg in before[2:]):  # the user's own name filter
        return None
    return [*before, "--", *[arg for arg in after if arg != "--exact"], "--exact", *ids]


# -- go test ----------------------------------------------------------------------------------
def go_ids(lines: Sequence[str]) -> tuple[str, ...]:
    """`package TestName` pairs, as one id each (the package comes after its tests)."""
    pending: list[str] = []
    ids: list[str] = []
    for line in lines:
        if match := _GO_FAILED.match(line):
            name = match.group(1)
            if "/" not in name:  # subtests run with their parent
                pending.append(name)
        elif match := _GO_PACKAGE.match(line):
            ids.extend(f"{match.group(1)} {name}" for name in pending)
            pending = []
    return _unique(ids)


def _go_argv(argv: list[str], ids: Sequence[str]) -> list[str] | None:
    if "-run" in argv or any(arg.startswith("-run=") for arg in argv):
        return None
    packages = _unique([item.split(" ", 1)[0] for item in ids])
    names = _unique([item.split(" ", 1)[1] for item in ids])
    options = [arg for arg in argv[2:] if arg.startswith("-")]
    return [*argv[:2], *options, "-run", "^(" + "|".join(map(re.escape, names)) + ")$", *packages]


_RUNNERS: dict[
    str,
    tuple[Callable[[Sequence[str]], tuple[str, ...]], Callable[[list[str], Sequence[str]], list[str] | None]],
] = {
    "pytest": (pytest_ids, _pytest_argv),
    "unittest": (unittest_ids, _unittest_argv),
    "node": (node_ids, _node_argv),
    "cargo": (cargo_ids, _cargo_argv),
    "go": (go_ids, _go_argv),
}
