"""`aider-lsp demo`: the whole loop on the example calculator, offline, with a scripted model.

Why: a new user without a key should see what the project does: a first Aider edit at once
on the files the index finds for the goal (it names the test file: no plan is needed), which
leaves a test failing, the failing output sent back to Aider (the analysis judging it
beside), the second edit, the green test.
The model is a minimal OpenAI-compatible server (offline_llm.py) on 127.0.0.1 answering from
`scripted_answers`; the planner, the analyst and Aider (the REAL bundled Aider, `openai/<name>`
on that server, `whole` edit format) all talk to it over HTTP. The analyst reads the real exit
code of the real test run. The example ships inside the package (examples/calculator, read with
importlib.resources, so an installed wheel runs the demo too) and is copied to a temporary
folder first: the shipped copy stays buggy.
"""

from __future__ import annotations

import shutil
import sys
import tempfile
from collections.abc import Callable
from importlib.resources import files
from importlib.resources.abc import Traversable
from pathlib import Path
from typing import Any

from ..config.settings import load_settings
from .offline_llm import OfflineLLMServer, Reply, aider_whole, json_output, last_user_message, system_prompt
from .run import EXIT_USAGE, run_workflow_command

EXAMPLE = "calculator"
GOAL = "Make the tests in test_calculator.py pass."
PLAN_INSTRUCTIONS = "In calculator.py, fix subtract: it must return a - b (it returns b - a)."
RETRY_PROMPT = "average([]) raises ZeroDivisionError: make average return 0 for an empty list."


def example_project() -> Traversable:
    """The example calculator shipped inside the package (buggy on purpose)."""
    return files("aider_lsp") / "examples" / EXAMPLE


def scripted_answers(source: str) -> Callable[[dict[str, Any]], Reply | None]:
    """The planner, Aider and analyst answers for the calculator whose text is `source`."""
    subtract_fixed = source.replace("return b - a", "return a - b")
    both_fixed = subtract_fixed.replace(
        "    return sum(values) / len(values)",
        "    if not values:\n        return 0\n    return sum(values) / len(values)",
    )
    plan = {"instructions": PLAN_INSTRUCTIONS, "files": ["calculator.py"], "test_command": None}

    def answer(request: dict[str, Any]) -> Reply | None:
        system, asked = system_prompt(request), last_user_message(request)
        if "write a development plan" in system:
            return json_output(plan)
        if "judge whether the goal has been reached" in system:
            return _analysis(asked)
        # the goal itself (with the failures the tests showed before it), or a plan's instructions:
        # the first attempt fixes subtract only, so the demo shows the retry
        if GOAL in asked or "fix subtract" in asked:
            return aider_whole({"calculator.py": subtract_fixed})
        if "make average return 0" in asked or "ZeroDivisionError" in asked:  # the retry: the failing output
            return aider_whole({"calculator.py": both_fixed})
        return None

    return answer


def _analysis(asked: str) -> Reply:
    """SUCCESS when the real test run passed, else RETRY with the next instruction."""
    if "Exit code: 0" in asked:
        return json_output(
            {"verdict": "SUCCESS", "message": "All the tests pass: subtract and average are fixed."}
        )
    message = "test_average_of_nothing_is_zero still fails with ZeroDivisionError in average()."
    if "ZeroDivisionError" not in asked:
        message = "The tests still fail."
    return json_output(
        {"verdict": "RETRY", "message": message, "next_prompt": RETRY_PROMPT, "next_files": ["calculator.py"]}
    )


def copy_tree(source: Traversable, dest: Path) -> None:
    """Copy a package resource folder (a plain folder or inside a zip) to `dest`, caches left out."""
    dest.mkdir(parents=True)
    for item in source.iterdir():
        if item.name in ("__pycache__", ".aider-lsp"):
            continue
        if item.is_dir():
            copy_tree(item, dest / item.name)
        else:
            (dest / item.name).write_bytes(item.read_bytes())


def run_demo(example: Path | None = None, *, as_json: bool = False, keep: bool = True) -> int:
    """Copy the example, serve the scripted model, run the workflow on the copy."""
    source: Traversable = example.expanduser().resolve() if example else example_project()
    if not source.joinpath("calculator.py").is_file():
        print(
            f"aider-lsp demo: the example project is missing: {source} (pass --example DIR)",
            file=sys.stderr,
        )
        return EXIT_USAGE
    print(
        "aider-lsp demo: OFFLINE DEMO with a scripted model on 127.0.0.1 (no key, no network; the "
        "edits are made by the real Aider) — set AIDER_LSP_MODEL and AIDER_LSP_AIDER_MODEL "
        "to use your own model.",
        file=sys.stderr,
    )
    workspace = Path(tempfile.mkdtemp(prefix="aider-lsp-demo-")) / source.name
    copy_tree(source, workspace)
    print(f"aider-lsp demo: working on a copy of {source} in {workspace}", file=sys.stderr)
    answers = scripted_answers((workspace / "calculator.py").read_text())
    try:
        with OfflineLLMServer(answers, models=["scripted-planner", "scripted-coder"]) as server:
            settings = load_settings(
                {
                    "model": "openai:scripted-planner",
                    "baseUrl": server.base_url,
                    "apiKey": "demo-no-key",
                    "aiderModel": "openai/scripted-coder",
                    "aiderServer": {"args": ["--edit-format", "whole"]},
                },
                environ={},
                names="environment",
            )
            request = {"goal": GOAL, "test_command": f"{sys.executable} -m unittest", "max_retries": 3}
            return run_workflow_command(workspace, request, as_json=as_json, settings=settings)
    finally:
        if not keep:
            shutil.rmtree(workspace.parent, ignore_errors=True)
