"""The failing output a model is sent (suite/digest.py): real pytest runs in temp projects,
digested as every call after a red run gets them."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from aider_lsp.suite.digest import digest

LIMIT = 8_000


def run_pytest(root: Path, source: str, *args: str) -> str:
    """The output of pytest on one test file holding `source`, as the user's command prints it."""
    (root / "test_story.py").write_text(textwrap.dedent(source))
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--color=no", *args, "test_story.py"],
        cwd=root,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode != 0, done.stdout
    return done.stdout + done.stderr


PARAMETRIZED = """
    import pytest

    def size(n):
        return f"{n} Bytes"

    @pytest.mark.parametrize("n, expected", [(10**k, f"1.0 {u}") for k, u in
        [(3, "kB"), (6, "MB"), (9, "GB"), (12, "TB"), (15, "PB"), (18, "EB"), (21, "ZB"), (24, "YB")]] * 8)
    def test_size(n, expected):
        # a long test body that pytest prints again for every failing case
        # ...................................................................
        # ...................................................................
        assert size(n) == expected

    def test_other():
        assert [1, 2, 3] == [1, 2, 4]
"""


def test_many_cases_of_one_test_keep_the_assertions_and_say_how_many_more(tmp_path: Path) -> None:
    output = run_pytest(tmp_path, PARAMETRIZED)
    digested = digest(output, LIMIT)
    # what a developer reads: which test, the failing statement, expected against actual
    assert "test_size[1000-1.0 kB0]" in digested
    assert ">   assert size(n) == expected" in digested
    assert "E   AssertionError: assert '1000 Bytes' == '1.0 kB'" in digested
    assert "62 more failing cases of test_size: 1000000000-1.0 GB0, " in digested
    # another test function is shown in full, and the run's last line says how it went
    assert "E   assert [1, 2, 3] == [1, 2, 4]" in digested
    assert "65 failed" in digested.splitlines()[-1]
    # the test's source printed again for each case is not sent
    assert "a long test body" not in digested
    assert len(digested) < len(output) / 10


def test_short_tracebacks_and_an_error_inside_the_code_under_test(tmp_path: Path) -> None:
    (tmp_path / "calc.py").write_text("def div(a, b):\n    return a / b\n")
    source = """
        from calc import div

        def test_div():
            print("a lot of captured output " * 50)
            assert div(1, 0) == 0
    """
    output = run_pytest(tmp_path, source, "--tb=short")
    digested = digest(output, LIMIT)
    assert "____ test_div ____" in digested
    assert "calc.py:2: in div" in digested  # where it failed, in the code under test
    assert "E   ZeroDivisionError: division by zero" in digested
    assert "captured output" not in digested


def test_a_collection_error_names_what_could_not_be_imported(tmp_path: Path) -> None:
    output = run_pytest(tmp_path, "from nowhere import thing\n\ndef test_x():\n    pass\n")
    digested = digest(output, LIMIT)
    assert "ERROR collecting test_story.py" in digested
    assert "ModuleNotFoundError: No module named 'nowhere'" in digested


@pytest.mark.parametrize("size", [200, 20_000])
def test_output_that_is_not_pytest_s_keeps_its_head_and_tail(size: int) -> None:
    output = "start\n" + "x" * size + "\nnpm ERR! Test failed at the end"
    digested = digest(output, LIMIT)
    assert digested.startswith("start")
    assert digested.endswith("npm ERR! Test failed at the end")
    assert len(digested) <= LIMIT + 100


def test_many_test_functions_are_named_beyond_the_first_ones(tmp_path: Path) -> None:
    source = "\n".join(f"def test_f{index}():\n    assert {index} == -1\n" for index in range(12))
    digested = digest(run_pytest(tmp_path, source), LIMIT)
    assert "E   assert 0 == -1" in digested
    assert "4 more failures in: test_f8, test_f9, test_f10, test_f11" in digested
