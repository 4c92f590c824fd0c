"""Failing tests first (suite/narrow.py): the ids each runner prints, and the narrowed command
really running only those tests. Real pytest, unittest, `node --test` and cargo runs in temp
dirs; go is not on this machine, so its output is checked in the shape `go test` prints."""

from __future__ import annotations

import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from aider_lsp.suite.narrow import deselected_exactly, go_ids, narrow, node_ids, rest_of_suite

CALC = "def add(a, b):\n    return a - b\n\n\ndef neg(a):\n    return -a\n"
PYTEST_TESTS = (
    "import pytest\nfrom calc import add, neg\n\n\n"
    "def test_add():\n    assert add(2, 2) == 4\n\n\n"
    "def test_neg():\n    assert neg(1) == -1\n\n\n"
    "@pytest.mark.parametrize('a, b', [(1, 0), (1, 1)])\n"
    "def test_add_param(a, b):\n    assert add(a, b) == a + b\n\n\n"
    "class TestMore:\n    def test_add_zero(self):\n        assert add(0, 5) == 5\n"
)
UNITTEST_TESTS = (
    "import unittest\nfrom calc import add, neg\n\n\n"
    "class CalcTest(unittest.TestCase):\n"
    "    def test_add(self):\n        self.assertEqual(add(2, 2), 4)\n\n"
    "    def test_neg(self):\n        self.assertEqual(neg(1), -1)\n\n"
    "    def test_add_zero(self):\n        self.assertEqual(add(0, 5), 5)\n"
)


def run(command: str, cwd: Path) -> tuple[int, str]:
    done = subprocess.run(shlex.split(command), cwd=cwd, capture_output=True, text=True, timeout=300)
    return done.returncode, done.stdout + done.stderr


def project(tmp_path: Path, tests: dict[str, str]) -> Path:
    root = tmp_path / "proj"
    root.mkdir()
    (root / "calc.py").write_text(CALC)
    for name, text in tests.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return root


def test_pytest_reruns_only_the_failing_node_ids_with_the_users_options(tmp_path: Path) -> None:
    root = project(tmp_path, {"tests/test_calc.py": PYTEST_TESTS, "tests/conftest.py": ""})
    command = f"{sys.executable} -m pytest -q -p no:cacheprovider tests"
    code, output = run(command, root)
    assert code == 1
    narrowed = narrow(command, output)
    assert narrowed is not None
    assert set(narrowed.tests) == {
        "tests/test_calc.py::test_add",
        "tests/test_calc.py::test_add_param[1-1]",
        "tests/test_calc.py::TestMore::test_add_zero",
    }
    assert narrowed.description == "3 failing tests"
    assert "-p no:cacheprovider" in narrowed.command and " tests " not in f"{narrowed.command} "
    code, output = run(narrowed.command, root)
    assert code == 1 and "3 failed" in output and "passed" not in output  # only those ran
    (root / "calc.py").write_text(CALC.replace("a - b", "a + b"))
    code, output = run(narrowed.command, root)
    assert code == 0 and "3 passed" in output


def test_the_rest_of_a_pytest_suite_leaves_out_the_tests_that_passed(tmp_path: Path) -> None:
    tests = (
        "from calc import add, neg\n\n\n"
        "def test_neg():\n    assert neg(1) == -1\n\n\n"
        "def test_add():\n    assert add(2, 2) == 4\n"
    )
    root = project(tmp_path, {"tests/test_calc.py": tests})
    command = f"{sys.executable} -m pytest -q -p no:cacheprovider tests"
    rest = rest_of_suite(command, ["tests/test_calc.py::test_add"])
    assert rest is not None and rest.command.endswith("--deselect tests/test_calc.py::test_add")
    code, output = run(rest.command, root)
    assert code == 0 and "1 passed" in output  # test_neg alone: test_add (failing) was left out
    assert deselected_exactly(output, 1)


def test_a_rest_run_that_left_out_more_than_the_passed_tests_is_told(tmp_path: Path) -> None:
    """pytest deselects by prefix: `::test_add` also leaves out `::test_add_param[1-0]`."""
    root = project(tmp_path, {"tests/test_calc.py": PYTEST_TESTS})
    command = f"{sys.executable} -m pytest -q -p no:cacheprovider tests"
    passed = ["tests/test_calc.py::test_add", "tests/test_calc.py::TestMore::test_add_zero"]
    rest = rest_of_suite(command, passed)
    assert rest is not None
    _, output = run(rest.command, root)
    assert not deselected_exactly(output, len(passed))  # 3 left out, not 2: the whole suite decides


def test_what_has_no_rest_of_the_suite() -> None:
    ids = ["t.py::test_a"]
    assert rest_of_suite("python -m unittest", ids) is None  # unittest cannot leave tests out
    assert rest_of_suite("pytest -k add", ids) is None  # the user's own selection
    assert rest_of_suite("pytest -m=slow", ids) is None
    assert rest_of_suite("pytest", ids, shell=True) is None
    assert rest_of_suite("pytest", []) is None
    assert not deselected_exactly("3 passed in 0.1s", 1)


def test_unittest_reruns_only_the_failing_dotted_ids(tmp_path: Path) -> None:
    root = project(tmp_path, {"test_calc.py": UNITTEST_TESTS})
    command = f"{sys.executable} -m unittest -v"
    code, output = run(command, root)
    assert code == 1
    narrowed = narrow(command, output)
    assert narrowed is not None
    assert narrowed.tests == ("test_calc.CalcTest.test_add", "test_calc.CalcTest.test_add_zero")
    code, output = run(narrowed.command, root)
    assert code == 1 and "Ran 2 tests" in output


def test_unittest_older_header_and_discovery_elsewhere() -> None:
    old = "FAIL: test_add (test_calc.CalcTest)\n----\nTraceback ...\n"
    narrowed = narrow("python -m unittest discover", old)
    assert narrowed is not None and narrowed.tests == ("test_calc.CalcTest.test_add",)
    # ids printed relative to another start directory cannot be imported from the root
    assert narrow("python -m unittest discover -s tests", old) is None
    # a module that failed to import: nothing to name, the suite runs whole
    broken = "ERROR: test_calc (unittest.loader._FailedTest.test_calc)\n"
    assert narrow("python -m unittest", broken) is None


@pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed")
def test_node_test_runner_reruns_only_the_failing_tests_in_their_files(tmp_path: Path) -> None:
    root = tmp_path / "js"
    (root / "test").mkdir(parents=True)
    header = "const test = require('node:test');\nconst assert = require('node:assert');\n"
    (root / "test" / "math.test.js").write_text(
        header + "test('adds numbers', () => assert.strictEqual(1 + 1, 2));\n"
        "test('multiplies (numbers)', () => assert.strictEqual(2 * 3, 5));\n"
        "test.describe('suite one', () => {\n"
        "  test.it('inner fails', () => assert.ok(false));\n  test.it('inner ok', () => {});\n});\n"
    )
    (root / "test" / "green.test.js").write_text(header + "test('always green', () => {});\n")
    code, output = run("node --test test/", root)
    assert code == 1
    narrowed = narrow("node --test test/", output)
    assert narrowed is not None
    math = str(root / "test" / "math.test.js")
    # not the suite, not the file: the two tests, in their file
    assert narrowed.tests == (f"{math}::multiplies (numbers)", f"{math}::inner fails")
    code, output = run(narrowed.command, root)
    assert code == 1 and "# fail 2" in output and "# pass 0" in output
    assert "always green" not in output  # the green file was not even loaded


def test_node_spec_reporter_names() -> None:
    spec = (
        "✖ multiplies (numbers) (1.2ms)\n✔ adds (0.3ms)\n✖ failing tests:\n\n✖ multiplies (numbers) (1.2ms)\n"
    )
    assert node_ids(spec.splitlines()) == ("multiplies (numbers)",)


@pytest.mark.skipif(shutil.which("cargo") is None, reason="cargo is not installed")
def test_cargo_test_reruns_only_the_failing_tests(tmp_path: Path) -> None:
    done = subprocess.run(["cargo", "new", "--lib", "-q", "calcrs"], cwd=tmp_path, capture_output=True)
    if done.returncode != 0:
        pytest.skip(f"cargo cannot make a crate here: {done.stderr!r}")
    root = tmp_path / "calcrs"
    (root / "src" / "lib.rs").write_text(
        "pub fn add(a: i32, b: i32) -> i32 { a - b }\n#[cfg(test)]\nmod tests {\n    use super::*;\n"
        "    #[test] fn adds() { assert_eq!(add(2, 2), 4); }\n"
        "    #[test] fn adds_zero() { assert_eq!(add(2, 0), 2); }\n"
        "    #[test] fn adds_more() { assert_eq!(add(3, 2), 5); }\n}\n"
    )
    code, output = run("cargo test --offline", root)
    if "could not compile" in output or code not in (0, 101):
        pytest.skip(f"cargo cannot build offline here: {output[-300:]}")
    narrowed = narrow("cargo test --offline", output)
    assert narrowed is not None and set(narrowed.tests) == {
        "tests::adds",
        "tests::adds_more",
    }  # run in parallel
    code, output = run(narrowed.command, root)
    assert "2 failed" in output and "1 filtered out" in output


def test_go_test_names_in_their_packages() -> None:
    output = (
        "--- FAIL: TestAdd (0.00s)\n    calc_test.go:9: got 0, want 4\n"
        "--- FAIL: TestTable (0.00s)\n    --- FAIL: TestTable/zero (0.00s)\n"
        "FAIL\nFAIL\texample.com/calc\t0.004s\nok  \texample.com/other\t0.002s\n"
    )
    assert go_ids(output.splitlines()) == ("example.com/calc TestAdd", "example.com/calc TestTable")
    narrowed = narrow("go test -count=1 ./...", output)
    assert narrowed is not None
    assert shlex.split(narrowed.command) == [
        "go",
        "test",
        "-count=1",
        "-run",
        "^(TestAdd|TestTable)$",
        "example.com/calc",
    ]


def test_what_is_never_narrowed() -> None:
    failing = "FAILED tests/test_x.py::test_y - assert 0\n"
    assert narrow("npm test", failing) is None  # a script: what it runs is not ours to change
    assert narrow("make test", failing) is None
    assert narrow("pytest -q", failing, shell=True) is None  # a shell command line
    assert narrow("pytest -q", "ERROR collecting tests/test_x.py\n1 error\n") is None  # nothing named
    many = "".join(f"FAILED tests/test_x.py::test_{n}\n" for n in range(500))
    assert narrow("pytest", many) is None  # so many: the whole suite is about as fast
