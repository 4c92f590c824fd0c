"""The test-output parser on outputs captured from the real tools (tests/suite/fixtures/test_output)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from aider_lsp.models import Finding
from aider_lsp.suite.findings import parse_test_output, summary_line

FIXTURES = Path(__file__).parent / "fixtures" / "test_output"


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    shutil.copytree(FIXTURES / "project", root)
    return root


def parse(name: str, workspace: Path, *, stream: str = "stdout", **kwargs: object) -> list[Finding]:
    text = (FIXTURES / name).read_text().replace("{WORKSPACE}", str(workspace))
    stdout, stderr = (text, "") if stream == "stdout" else ("", text)
    return parse_test_output(stdout, stderr, workspace, exit_code=1, **kwargs)  # type: ignore[arg-type]


def located(findings: list[Finding]) -> list[tuple[str, int, int]]:
    return [(f.path, f.line, f.column) for f in findings]


def test_pytest_long_tracebacks_land_on_the_innermost_workspace_frame(workspace: Path) -> None:
    findings = parse("pytest_long.txt", workspace)
    assert located(findings) == [("test_calc_pytest.py", 5, 0), ("pkg/calc.py", 6, 0)]
    assert findings[0].message == "test_subtract: AssertionError: assert -2 == 2"
    assert findings[1].message == "test_divide_by_zero_is_none: ZeroDivisionError: division by zero"
    assert {f.source for f in findings} == {"pytest"} and {f.severity.value for f in findings} == {"error"}


def test_pytest_short_tracebacks(workspace: Path) -> None:
    findings = parse("pytest_short.txt", workspace)
    assert located(findings) == [("test_calc_pytest.py", 5, 0), ("pkg/calc.py", 6, 0)]
    assert findings[0].message == "test_subtract: assert -2 == 2"


def test_pytest_line_tracebacks(workspace: Path) -> None:
    findings = parse("pytest_line.txt", workspace)
    assert located(findings) == [("test_calc_pytest.py", 5, 0), ("pkg/calc.py", 6, 0)]
    assert findings[1].message == "ZeroDivisionError: division by zero"


def test_pytest_summary_only_points_at_the_test_definition(workspace: Path) -> None:
    findings = parse("pytest_q_no_tb.txt", workspace)
    assert located(findings) == [("test_calc_pytest.py", 4, 0), ("test_calc_pytest.py", 8, 0)]
    assert findings[0].message == "test_subtract: assert -2 == 2"


def test_unittest_tracebacks(workspace: Path) -> None:
    findings = parse("unittest.txt", workspace, stream="stderr")
    assert located(findings) == [("pkg/calc.py", 6, 0), ("test_calc_unittest.py", 8, 0)]
    assert findings[0].message.endswith("ZeroDivisionError: division by zero")
    assert "test_divide_by_zero_is_none" in findings[0].message
    assert findings[1].message.endswith("AssertionError: -2 != 2")


def test_ruff(workspace: Path) -> None:
    findings = parse("ruff.txt", workspace)
    assert located(findings) == [("lint_me.py", 1, 8)]
    assert findings[0].message == "F401 [*] `os` imported but unused"


def test_mypy(workspace: Path) -> None:
    findings = parse("mypy.txt", workspace)
    assert located(findings) == [("lint_me.py", 5, 12)]
    assert findings[0].message.startswith("error: Incompatible return value type")
    assert findings[0].source == "mypy"


def test_gcc_errors_warnings_and_notes(workspace: Path) -> None:
    findings = parse("gcc.txt", workspace, stream="stderr")
    assert located(findings) == [("hello.c", 5, 20), ("hello.c", 5, 20), ("hello.c", 4, 9)]
    assert [f.severity.value for f in findings] == ["error", "information", "warning"]
    assert "‘missing’ undeclared" in findings[0].message


@pytest.mark.parametrize("name", ["tsc.txt", "tsc_pretty.txt"])
def test_tsc_both_formats(workspace: Path, name: str) -> None:
    findings = parse(name, workspace)
    assert located(findings) == [("web/app.ts", 1, 7), ("web/app.ts", 5, 7)]
    assert "TS2322" in findings[0].message and "not assignable" in findings[0].message
    assert {f.source for f in findings} == {"tsc"}


def test_eslint_stylish(workspace: Path) -> None:
    findings = parse("eslint.txt", workspace)
    assert located(findings) == [("web/app.js", 1, 7), ("web/app.js", 5, 1), ("web/app.js", 5, 19)]
    assert findings[0].message == "'unused' is assigned a value but never used (no-unused-vars)"
    assert [f.severity.value for f in findings] == ["error", "warning", "error"]


def test_files_outside_the_workspace_are_dropped(workspace: Path, tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere.py"
    elsewhere.write_text("x = 1\n")
    output = (
        f"{elsewhere}:1:1: E999 outside\n"
        "/usr/lib/python3.11/json/__init__.py:3:1: stdlib\n"
        "missing.py:2:1: no such file\n"
        "lint_me.py:1:8: F401 inside\n"
    )
    assert located(parse_test_output(output, "", workspace, exit_code=1)) == [("lint_me.py", 1, 8)]


def test_a_frame_outside_the_workspace_is_skipped_for_the_innermost_inside(workspace: Path) -> None:
    output = (
        "Traceback (most recent call last):\n"
        f'  File "{workspace}/pkg/calc.py", line 2, in subtract\n'
        "    return b - a\n"
        '  File "/usr/lib/python3.11/json/decoder.py", line 337, in decode\n'
        "    obj, end = self.raw_decode(s, idx=_w(s, 0).end())\n"
        "ValueError: boom\n"
    )
    findings = parse_test_output("", output, workspace, exit_code=1)
    assert located(findings) == [("pkg/calc.py", 2, 0)] and findings[0].message == "ValueError: boom"


def test_nothing_parsed_falls_back_on_the_plan_files(workspace: Path) -> None:
    output = "checking...\nsomething went wrong somewhere\n=== 3 failed ===\n"
    findings = parse_test_output(
        output, "", workspace, exit_code=2, fallback_files=["pkg/calc.py", "nope.py"]
    )
    assert located(findings) == [("pkg/calc.py", 0, 0)]
    assert findings[0].message == "3 failed"
    assert parse_test_output(output, "", workspace, exit_code=0, fallback_files=["pkg/calc.py"]) == []


def test_summary_line() -> None:
    assert summary_line("a\n==== 2 failed in 0.1s ====\n\n", "") == "2 failed in 0.1s"
    assert summary_line("", "Ran 2 tests\n\nFAILED (failures=1)\n") == "FAILED (failures=1)"


@pytest.mark.parametrize(
    "line",
    [
        "A" * 300,  # minified JS, base64, a long hash on a line of its own (eslint's file line)
        "B" * 300 + ":12: error",  # a colon-style location with an impossible file name
        "x/" * 3000 + "y:1: error",  # longer than PATH_MAX
        'File "' + "C" * 400 + '", line 3',
        "FAILED " + "D" * 400 + "::test_x - boom",
        "bad\x00name.py:3: error",
    ],
)
def test_lines_that_cannot_name_a_file_are_skipped_not_fatal(workspace: Path, line: str) -> None:
    stdout = f"Traceback (most recent call last):\n  {line}\nValueError: x\n{line}\n"
    findings = parse_test_output(stdout, line, workspace, exit_code=1, fallback_files=["calc.py"])
    assert all(len(finding.path) < 300 for finding in findings)
