"""Which command tests a workspace, found from its files (issue 19: no command to type).

Why these rules, in this order: a runner the project configured for itself (pytest's own
config, package.json's `test` script, Cargo, Go, Maven, Gradle) is its truth; test files with no
configuration come next (unittest when they use it, else pytest); a Makefile `test` target comes
last, as it may do more than test and its output cannot be narrowed to failing tests. Only files
at the workspace root are markers (a monorepo's sub-projects are the user's to name). The answer
is an argv, never a shell, with the project's own Python interpreter, and the rule that found it
so a message can say why.
"""

from __future__ import annotations

import configparser
import json
import os
import re
import shlex
import sys
import tomllib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

# folders never searched for test files: environments, dependencies, build output, VCS
SKIPPED_DIRS = frozenset(
    {".git", ".hg", ".svn", ".venv", "venv", "env", ".tox", ".nox", "node_modules", "build", "dist"}
    | {"__pycache__", ".mypy_cache", ".pytest_cache", ".ruff_cache", ".aider-lsp", "target", "site-packages"}
)
MAX_TEST_FILES = 200  # enough to tell unittest from pytest; a big tree is not walked whole
MAX_DEPTH = 4
MAX_DIRS = 2_000  # a big tree is not walked whole: detection runs before every unconfigured run
NPM_PLACEHOLDER = "no test specified"  # `npm init`'s default script fails on purpose
NODE_LOCKFILES = (
    ("package-lock.json", "npm"),
    ("npm-shrinkwrap.json", "npm"),
    ("yarn.lock", "yarn"),
    ("pnpm-lock.yaml", "pnpm"),
    ("bun.lockb", "bun"),
    ("bun.lock", "bun"),
)
MAKE_TEST_TARGET = re.compile(r"^test\s*::?(?!=)", re.MULTILINE)


@dataclass(frozen=True)
class DetectedTestCommand:
    """A test command found in the workspace: what runs, and the rule that found it."""

    argv: tuple[str, ...]
    rule: str  # e.g. "pytest configured in pyproject.toml"

    @property
    def command(self) -> str:
        """The argv as one command line the user can read and paste into a POSIX shell; the
        server splits it back with shlex (shell.py), so it round-trips exactly."""
        return shlex.join(self.argv)


def project_python(root: Path, editor_python: str | None = None, *, windows: bool | None = None) -> str:
    """The interpreter a Python project's tests run with: its own `.venv/` or `venv/`, else the
    one the editor's Python extension picked (when the client passed it), else the server's.

    A venv on POSIX is named relative to the workspace (`.venv/bin/python`: readable, and still
    right when the folder moves; the tests run in the workspace); on Windows, where a relative
    program is not looked up from the child's folder, it is absolute."""
    windows = os.name == "nt" if windows is None else windows
    for folder in (".venv", "venv"):
        relative = Path(folder, "Scripts", "python.exe") if windows else Path(folder, "bin", "python")
        if (root / relative).is_file():
            return str(root / relative) if windows else relative.as_posix()
    return editor_python or sys.executable


def detect_test_command(
    root: Path, *, editor_python: str | None = None, windows: bool | None = None
) -> DetectedTestCommand | None:
    """The test command of the project at `root`, or None when no rule recognises a suite."""
    for rule in _RULES:
        found = rule(root, lambda: project_python(root, editor_python, windows=windows))
        if found is not None:
            return found
    return None


# -- the rules, in order ---------------------------------------------------------------------
PythonFinder = Callable[[], str]


def _pytest_config(root: Path, python: PythonFinder) -> DetectedTestCommand | None:
    """pytest configured in one of the files pytest itself reads, or a root conftest.py."""
    where = _pytest_config_file(root)
    if where is None and (root / "conftest.py").is_file():
        where = "conftest.py"
    if where is None:
        return None
    return DetectedTestCommand((python(), "-m", "pytest"), f"pytest configured in {where}")


def _pytest_config_file(root: Path) -> str | None:
    if (root / "pytest.ini").is_file() or (root / ".pytest.ini").is_file():
        return "pytest.ini"
    tool = _toml(root / "pyproject.toml").get("tool")
    if isinstance(tool, dict) and isinstance(tool.get("pytest"), dict):
        return "pyproject.toml"
    for name, section in (("tox.ini", "pytest"), ("setup.cfg", "tool:pytest")):
        if section in _ini_sections(root / name):
            return name
    return None


def _node(root: Path, python: PythonFinder) -> DetectedTestCommand | None:
    """package.json's `test` script, with the package manager its lockfile names."""
    package = _json(root / "package.json")
    scripts = package.get("scripts")
    script = scripts.get("test") if isinstance(scripts, dict) else None
    if not isinstance(script, str) or not script.strip() or NPM_PLACEHOLDER in script:
        return None
    manager, why = _package_manager(root, package)
    # `bun test` is bun's own runner, not the script: `bun run test` runs the script
    argv = ("bun", "run", "test") if manager == "bun" else (manager, "test")
    return DetectedTestCommand(argv, f"the test script in package.json ({why})")


def _package_manager(root: Path, package: dict[str, Any]) -> tuple[str, str]:
    for lockfile, manager in NODE_LOCKFILES:
        if (root / lockfile).is_file():
            return manager, lockfile
    declared = package.get("packageManager")
    if isinstance(declared, str) and declared.split("@")[0] in {"npm", "yarn", "pnpm", "bun"}:
        return declared.split("@")[0], f"packageManager {declared}"
    return "npm", "no lockfile: npm"


def _cargo(root: Path, python: PythonFinder) -> DetectedTestCommand | None:
    if (root / "Cargo.toml").is_file():
        return DetectedTestCommand(("cargo", "test"), "Cargo.toml")
    return None


def _go(root: Path, python: PythonFinder) -> DetectedTestCommand | None:
    if (root / "go.mod").is_file():
        return DetectedTestCommand(("go", "test", "./..."), "go.mod")
    return None


def _maven(root: Path, python: PythonFinder) -> DetectedTestCommand | None:
    if (root / "mvnw").is_file():
        return DetectedTestCommand(("./mvnw", "test"), "the Maven wrapper mvnw")
    if (root / "pom.xml").is_file():
        return DetectedTestCommand(("mvn", "test"), "pom.xml")
    return None


def _gradle(root: Path, python: PythonFinder) -> DetectedTestCommand | None:
    if (root / "gradlew").is_file():
        return DetectedTestCommand(("./gradlew", "test"), "the Gradle wrapper gradlew")
    for name in ("build.gradle", "build.gradle.kts", "settings.gradle", "settings.gradle.kts"):
        if (root / name).is_file():
            return DetectedTestCommand(("gradle", "test"), name)
    return None


def _python_test_files(root: Path, python: PythonFinder) -> DetectedTestCommand | None:
    """test_*.py files without a pytest configuration: unittest when every one of them uses it,
    else pytest (which also runs unittest's TestCases)."""
    files = list(_test_files(root))
    if not files:
        return None
    if not all(_uses_unittest(path) for path in files):
        return DetectedTestCommand((python(), "-m", "pytest"), "test_*.py files written for pytest")
    return DetectedTestCommand(
        (python(), "-m", "unittest", *_discover_args(root, files)), "test_*.py files using unittest"
    )


def _makefile(root: Path, python: PythonFinder) -> DetectedTestCommand | None:
    for name in ("GNUmakefile", "makefile", "Makefile"):
        path = root / name
        if path.is_file() and MAKE_TEST_TARGET.search(_text(path)):
            return DetectedTestCommand(("make", "test"), f"the test target in {name}")
    return None


Rule = Callable[[Path, PythonFinder], DetectedTestCommand | None]
_RULES: tuple[Rule, ...] = (
    _pytest_config,
    _node,
    _cargo,
    _go,
    _maven,
    _gradle,
    _python_test_files,
    _makefile,
)


# -- reading the workspace's files (a file that cannot be read is a file that says nothing) ----
def _text(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""


def _toml(path: Path) -> dict[str, Any]:
    if not path.is_file():
        return {}
    try:
        return tomllib.loads(_text(path))
    except tomllib.TOMLDecodeError:
        return {}


def _json(path: Path) -> dict[str, Any]:
    if not path.is_file():
        return {}
    try:
        data = json.loads(_text(path))
    except ValueError:
        return {}
    return data if isinstance(data, dict) else {}


def _ini_sections(path: Path) -> list[str]:
    if not path.is_file():
        return []
    parser = configparser.ConfigParser(interpolation=None, strict=False)
    try:
        parser.read_string(_text(path))
    except configparser.Error:
        return []
    return parser.sections()


def _test_files(root: Path) -> Iterator[Path]:
    """test_*.py / *_test.py files, breadth-first, skipping environments and build output."""
    found = visited = 0
    level = [root]
    for _ in range(MAX_DEPTH + 1):
        below: list[Path] = []
        for folder in level:
            visited += 1
            if visited > MAX_DIRS:
                return
            try:
                entries = sorted(folder.iterdir())
            except OSError:
                continue
            for entry in entries:
                if entry.is_dir() and not entry.is_symlink():
                    if entry.name not in SKIPPED_DIRS and not entry.name.startswith("."):
                        below.append(entry)
                elif _is_test_file(entry):
                    yield entry
                    found += 1
                    if found >= MAX_TEST_FILES:
                        return
        level = below


def _is_test_file(path: Path) -> bool:
    return path.suffix == ".py" and (path.name.startswith("test_") or path.stem.endswith("_test"))


def _uses_unittest(path: Path) -> bool:
    text = _text(path)
    return "unittest" in text and "import pytest" not in text


def _discover_args(root: Path, files: list[Path]) -> tuple[str, ...]:
    """`python -m unittest` finds tests at the root and in packages; tests in one folder that is
    not a package need `discover -s FOLDER` (unittest no longer enters namespace folders)."""
    folders = {path.parent for path in files}
    if all(_importable(root, folder) for folder in folders):
        return ()
    if len(folders) == 1:
        return ("discover", "-s", next(iter(folders)).relative_to(root).as_posix())
    return ()


def _importable(root: Path, folder: Path) -> bool:
    while folder != root:
        if not (folder / "__init__.py").is_file():
            return False
        folder = folder.parent
    return True
