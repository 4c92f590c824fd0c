"""suite/judge.py: how many tests a runner says it ran, which tests a
file defines, and when a passing run cannot call a run a success."""

from __future__ import annotations

import pytest

from aider_lsp.suite import judge


@pytest.mark.parametrize(
    ("stdout", "stderr", "ran"),
    [
        ("", "Ran 0 tests in 0.000s\n\nOK\n", 0),
        ("", "....\n----\nRan 4 tests in 0.002s\n\nFAILED (failures=1)\n", 4),
        ("..F\n1 failed, 2 passed in 0.05s\n", "", 3),
        ("===== 3 passed, 1 skipped, 2 deselected in 0.10s =====\n", "", 3),
        ("==== no tests ran in 0.01s ====\n", "", 0),
        ("\x1b[32m===== 5 passed in 0.2s =====\x1b[0m\n", "", 5),
        ("Tests:       1 failed, 4 passed, 5 total\n", "", 5),
        ("  3 passing (12ms)\n  1 failing\n", "", 4),
        ("test result: ok. 3 passed; 0 failed; 0 ignored\ntest result: ok. 2 passed; 1 failed;", "", 6),
        ("?   \texample.com/m\t[no test files]\n", "", 0),
        ("all good\n", "", None),
    ],
)
def test_the_count_each_runner_prints_is_read(stdout: str, stderr: str, ran: int | None) -> None:
    assert judge.tests_counted(stdout, stderr) == ran


def test_a_python_files_tests_are_named_with_their_class() -> None:
    text = "class CalcTest:\n    def test_add(self):\n        pass\n\ndef test_free():\n    pass\n"
    assert judge.test_names("t.py", text) == {"CalcTest.test_add", "test_free"}
    assert judge.test_names("a.test.ts", "it('adds', () => {});\ntest(\"subtracts\", f)") == {
        "adds",
        "subtracts",
    }


TESTS = b"def test_a():\n    assert 1\n\n\ndef test_b():\n    assert 2\n"


def test_only_added_lines_keep_the_judge_and_a_test_gone_does_not() -> None:
    added = {"test_x.py": (TESTS, TESTS + b"\n\ndef test_c():\n    assert 3\n")}
    assert judge.check(added, counted=3, tests_before=2) is None
    gone = {"test_x.py": (TESTS, b"def test_a():\n    assert 1\n")}
    problem = judge.check(gone, counted=1, tests_before=2)
    assert (
        problem is not None
        and problem.removed_tests == ["test_x.py::test_b"]
        and problem.test_files == ["test_x.py"]
    )
    assert judge.check(gone, counted=1, tests_before=2, users_files=["test_x.py"]) is None  # theirs to remove
    assert judge.check({}, counted=0, tests_before=None) is not None  # no test run is never green
    assert judge.check({"calc.py": (b"a", b"b")}, counted=2, tests_before=2) is None
