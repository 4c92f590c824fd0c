"""The calc project whose test fails, and its scripted plan and analyses (tests and benchmarks).

Why shared: the workflow tests, the LSP workflow tests and the responsiveness benchmark all
walk the same story: a plan fixes `subtract`, the multiply test still fails, the analyst asks
for a retry, the second edit fixes `multiply`.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from .llm_server import Reply, json_output, last_user_message

BUGGY = "def subtract(a, b):\n    return b - a\n\n\ndef multiply(a, b):\n    return a + b\n"
HALF_FIXED = "def subtract(a, b):\n    return a - b\n\n\ndef multiply(a, b):\n    return a + b\n"
FIXED = "def subtract(a, b):\n    return a - b\n\n\ndef multiply(a, b):\n    return a * b\n"
TESTS = (
    "import unittest\n\nfrom calc import multiply, subtract\n\n\n"
    "class CalcTest(unittest.TestCase):\n"
    "    def test_subtract(self):\n"
    "        self.assertEqual(subtract(5, 3), 2)\n\n"
    "    def test_multiply(self):\n"
    "        self.assertEqual(multiply(3, 4), 12)\n"
)
MULTIPLY_ASSERT_LINE = 11
TEST_COMMAND = f"{sys.executable} -m unittest"
PLAN = {"instructions": "Fix subtract in calc.py", "files": ["calc.py"], "test_command": None}
RETRY = {
    "verdict": "RETRY",
    "message": "multiply still fails",
    "next_prompt": "Make multiply return the product",
}
SUCCESS = {"verdict": "SUCCESS", "message": "all tests pass"}


def write_calc_project(parent: Path) -> Path:
    """The calc project whose multiply test fails, as `parent`/calcproj."""
    root = parent / "calcproj"
    root.mkdir()
    (root / "calc.py").write_text(BUGGY)
    (root / "test_calc.py").write_text(TESTS)
    return root


def analysis_by_exit_code(request: dict[str, Any]) -> Reply:
    """The scripted analyst reads the real test result it is given."""
    passed = "Exit code: 0" in last_user_message(request)
    return json_output(SUCCESS if passed else RETRY)
