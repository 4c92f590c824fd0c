"""The house's import rules (docs/architecture.md "The rules between the layers"), read from the
source with `ast`: every import statement, at the top, in a function or under TYPE_CHECKING.

- A front end (cli/, lsp/, acp/) asks the Application: it imports no service package, and of
  the modules at the package's root only those a front end may ask (the Application, what it
  asks before opening one, the shared values, the settings, the wire form of results, …).
- Nothing below the front ends imports one (`__main__` starts the CLI).
- Only the front ends import app.py: a service never reaches up to the composition root (the
  workflow names what it needs in workflow/host.py).
"""

from __future__ import annotations

import ast
import sys
from collections.abc import Iterator
from pathlib import Path

import aider_lsp

PACKAGE = Path(aider_lsp.__file__).parent
DATA = PACKAGE / "examples"  # the demo's project: a user's code, not ours

FRONT_ENDS = {"cli", "lsp", "acp"}
SERVICES = {"workflow", "llm", "tools", "aider", "memory", "suite", "isolation", "history"}
SHARED = {"models"}  # the typed values every layer shares
# what every service stands on: processes, configuration and set-up, what is refused
FOUNDATION = {"processes", "config", "guards"}

# The modules at the package's root, or of the foundation, a front end may import, and why.
FRONT_END_MAY_ASK = {
    "app": "the Application: every call a front end makes",
    "preflight": "what a front end asks before (or without) opening an Application",
    "workspaces": "the pool of Applications alive, one per folder (LSP and ACP)",
    "results": "typed answers → TaskResult, the front ends' shared wire form",
    "host": "the calls every client of the Application makes (acp/host.py derives from it)",
    "config.settings": "the settings a front end reads from its protocol and hands the Application",
    "config.credentials": "the sign-in `aider-lsp login` stores",
    "config.providers": "which variable holds which provider's key (the doctor's lines)",
    "config.endpoints": "an endpoint probed for its models (login, doctor)",
    "config.aider_env": "Aider's own environment: made by `setup-aider`, described by the doctor",
    "guards.files": "the file rules' typed refusals (AccessDenied, Refusal)",
    "config.state": "where the user's state folder is (ACP transcripts)",
    "processes.process_start": "the CLI leaves the folder it was started in",
}

# Known breaks, each with what would end it; the test fails when one is fixed, so the list
# shrinks with the code. None left.
KNOWN_BREAKS: dict[tuple[str, str], str] = {}


def _modules() -> Iterator[tuple[Path, tuple[str, ...]]]:
    """Each source file and its dotted name's parts under aider_lsp (a package: its folder)."""
    for path in sorted(PACKAGE.rglob("*.py")):
        if path.is_relative_to(DATA):
            continue
        parts = path.relative_to(PACKAGE).with_suffix("").parts
        yield path, parts[:-1] if parts[-1] == "__init__" else parts


def _imports(path: Path, module: tuple[str, ...]) -> Iterator[tuple[str, ...]]:
    """What `path` imports from aider_lsp, as parts under it: `from ..suite.choose import X` →
    ("suite", "choose", "X"), `from .. import preflight` → ("preflight",)."""
    package = module if path.name == "__init__.py" else module[:-1]
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                parts = tuple(alias.name.split("."))
                if parts[0] == "aider_lsp":
                    yield parts[1:]
        elif isinstance(node, ast.ImportFrom):
            named = tuple(node.module.split(".")) if node.module else ()
            if node.level == 0 and named[:1] != ("aider_lsp",):
                continue
            base = named[1:] if node.level == 0 else package[: len(package) - node.level + 1] + named
            for alias in node.names:
                yield (*base, alias.name)


def _layer(module: tuple[str, ...]) -> str:
    return module[0] if module else ""


def _all_imports() -> list[tuple[str, tuple[str, ...], tuple[str, ...]]]:
    found = []
    for path, module in _modules():
        for imported in _imports(path, module):
            found.append((str(path.relative_to(PACKAGE)), module, imported))
    return found


def _root_modules() -> set[str]:
    return {path.stem for path in PACKAGE.glob("*.py")}


def test_every_package_has_a_layer() -> None:
    """A new package is placed in the house (front end, service or shared) before it is used."""
    packages = {path.parent.name for path in PACKAGE.glob("*/__init__.py") if path.parent != DATA}
    assert packages - FRONT_ENDS - SERVICES - SHARED - FOUNDATION == set()


def test_front_ends_ask_the_application_only() -> None:
    roots = _root_modules()
    breaks: dict[tuple[str, str], str] = {}
    for where, module, imported in _all_imports():
        if _layer(module) not in FRONT_ENDS or not imported:
            continue
        top = imported[0]
        if top in SERVICES:
            breaks[(where, ".".join(imported[:2]))] = "a service"
        elif top in roots and top not in FRONT_END_MAY_ASK and top != "__init__":
            breaks[(where, top)] = "a root module a front end may not ask"
        elif top in FOUNDATION and ".".join(imported[:2]) not in FRONT_END_MAY_ASK:
            breaks[(where, ".".join(imported[:2]))] = "a part of the foundation a front end may not ask"
    unexpected = {key: why for key, why in breaks.items() if key not in KNOWN_BREAKS}
    assert unexpected == {}
    fixed = set(KNOWN_BREAKS) - set(breaks)
    assert fixed == set(), "fixed: take them off KNOWN_BREAKS"


def test_nothing_below_the_front_ends_imports_one() -> None:
    upward = [
        (where, ".".join(imported))
        for where, module, imported in _all_imports()
        if module not in {("__main__",)}
        and _layer(module) not in FRONT_ENDS
        and imported
        and imported[0] in FRONT_ENDS
    ]
    assert upward == []


def test_the_foundation_imports_no_layer_above_it() -> None:
    """processes/, config/ and guards/ stand under every service: they import the shared values
    and each other only (a service they imported could not import them back)."""
    upward = [
        (where, ".".join(imported[:2]))
        for where, module, imported in _all_imports()
        if _layer(module) in FOUNDATION and imported and imported[0] not in FOUNDATION | SHARED
    ]
    assert upward == []


def test_only_the_front_ends_import_the_application() -> None:
    reaching_up = [
        where
        for where, module, imported in _all_imports()
        if imported[:1] == ("app",) and _layer(module) not in FRONT_ENDS and module != ("app",)
    ]
    assert reaching_up == []


def test_the_reader_sees_imports() -> None:
    """The rules above pass vacuously if the reader misses imports: it finds the known ones."""
    found = {(where, imported) for where, _, imported in _all_imports()}
    assert ("cli/run.py", ("app", "Application")) in found  # in a function
    assert ("acp/host.py", ("host", "Host")) in found
    assert ("acp/host.py", ("models", "suite_command", "ChosenTestCommand")) in found  # under TYPE_CHECKING
    assert ("lsp/documents.py", ("lsp", "indexing")) in found  # `from . import indexing`
    assert ("cli/doctor.py", ("preflight",)) in found  # `from .. import preflight`
    assert ("__main__.py", ("cli", "main", "main")) in found


def test_the_one_module_shared_with_the_bundled_server_needs_only_the_standard_library() -> None:
    """aider_lsp imports aider_mcp/snapshots.py (the edits' diff format) though the bundled
    server lives in Aider's environment: safe while it imports the standard library alone."""
    shared = PACKAGE.parent / "aider_mcp" / "snapshots.py"
    tree = ast.parse(shared.read_text(encoding="utf-8"))
    imported = {
        (node.module or "").split(".")[0] if isinstance(node, ast.ImportFrom) else alias.name.split(".")[0]
        for node in ast.walk(tree)
        if isinstance(node, ast.Import | ast.ImportFrom)
        for alias in node.names
    }
    imported.discard("__future__")
    assert imported <= sys.stdlib_module_names, imported - sys.stdlib_module_names


def test_the_composition_root_and_every_function_stay_short() -> None:
    """app.py wires (at most 250 lines); a function longer than 60 lines does several jobs that
    want names of their own (the bundled Aider server's too)."""
    assert len((PACKAGE / "app.py").read_text(encoding="utf-8").splitlines()) <= 250
    long = [
        f"{path.relative_to(PACKAGE.parent)}:{node.name} ({node.end_lineno - node.lineno + 1} lines)"
        for path in sorted(PACKAGE.parent.rglob("*.py"))
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
        and node.end_lineno is not None
        and node.end_lineno - node.lineno + 1 > 60
    ]
    assert long == []
