"""The product's module names: none reads like a test (issue 28).

Why: a module named `test_*.py` is collected by `pytest server/`, and aider-lsp's own index
classifies it as a test of some other file (memory/extract.py `file_kind`), so aider-lsp
mis-ranks its own repository. The demo's example project (`examples/`) is data, a user's
project with its own tests, and is left out.
"""

from __future__ import annotations

from pathlib import Path

import aider_lsp

PACKAGE = Path(aider_lsp.__file__).parent
DATA = PACKAGE / "examples"


def test_no_product_module_is_named_like_a_test() -> None:
    named_like_tests = [
        str(path.relative_to(PACKAGE)) for path in PACKAGE.rglob("test_*.py") if not path.is_relative_to(DATA)
    ]
    assert named_like_tests == []


def test_the_guard_sees_the_package() -> None:
    """The guard above passes vacuously if it looks in the wrong place."""
    assert (PACKAGE / "app.py").is_file()
    assert any(DATA.rglob("test_*.py"))  # the example project's own tests: found, and left out
