"""`aider-lsp demo`: the whole loop on the example calculator, offline, with a scripted model.

Why: a new user without a key should see what the project does: a plan, a first Aider edit
that leaves a test failing, the analysis asking for a retry, the second edit, the green test.
The model is the scripted OpenAI-compatible server the tests use, on 127.0.0.1; the planner,
the analyst and Aider (the REAL bundled Aider, `openai/<name>` on that server, `whole` edit
format) all talk to it over HTTP. The analyst reads the real exit code of the real test run.
The example is copied to a temporary folder first: the shipped copy stays buggy.
"""

from __future__ import annotations

import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

from ..scripted_llm import (
    Reply,
    ScriptedLLMServer,
    aider_whole,
    all_of,
    json_output,
    last_user_contains,
    last_user_message,
    not_,
    system_prompt_contains,
)
from ..settings import load_settings
from .cli import EXIT_USAGE, run_workflow_command

EXAMPLE = Path(__file__).resolve().parents[3] / "examples" / "calculator"
GOAL = "Make the tests in test_calculator.py pass."
PLAN_INSTRUCTIONS = "In calculator.py, fix subtract: it must return a - b (it returns b - a)."
RETRY_PROMPT = "average([]) raises ZeroDivisionError: make average return 0 for an empty list."
IS_PLAN = system_prompt_contains("write a development plan")
IS_ANALYSIS = system_prompt_contains("judge whether the goal has been reached")
IS_AIDER = all_of(not_(IS_PLAN), not_(IS_ANALYSIS))


def script_calculator(server: ScriptedLLMServer, source: str) -> None:
    """The scripted planner, Aider replies and analyst for examples/calculator."""
    subtract_fixed = source.replace("return b - a", "return a - b")
    both_fixed = subtract_fixed.replace(
        "    return sum(values) / len(values)",
        "    if not values:\n        return 0\n    return sum(values) / len(values)",
    )
    server.add_rule(
        IS_PLAN,
        json_output({"instructions": PLAN_INSTRUCTIONS, "files": ["calculator.py"], "test_command": None}),
    )
    server.add_rule(
        all_of(IS_AIDER, last_user_contains("make average return 0")),
        aider_whole({"calculator.py": both_fixed}),
    )
    server.add_rule(
        all_of(IS_AIDER, last_user_contains("fix subtract")), aider_whole({"calculator.py": subtract_fixed})
    )
    server.add_rule(IS_ANALYSIS, _analyst)


def _analyst(request: dict[str, Any]) -> Reply:
    """SUCCESS when the real test run passed, else RETRY with the next instruction."""
    asked = last_user_message(request)
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


def run_demo(example: Path | None = None, *, as_json: bool = False, keep: bool = True) -> int:
    """Copy the example, serve the scripted model, run the workflow on the copy."""
    source_dir = (example or EXAMPLE).expanduser().resolve()
    if not (source_dir / "calculator.py").is_file():
        print(
            f"aider-lsp demo: the example project is missing: {source_dir} (pass --example DIR)",
            file=sys.stderr,
        )
        return EXIT_USAGE
    print(
        "aider-lsp demo: OFFLINE DEMO with a scripted model on 127.0.0.1 (no key, no network; the "
        "edits are made by the real Aider) — set AIDER_LSP_MODEL and AIDER_LSP_AIDER_MODEL "
        "to use your own model.",
        file=sys.stderr,
    )
    workspace = Path(tempfile.mkdtemp(prefix="aider-lsp-demo-")) / source_dir.name
    shutil.copytree(source_dir, workspace, ignore=shutil.ignore_patterns("__pycache__", ".aider-lsp"))
    print(f"aider-lsp demo: working on a copy of {source_dir} in {workspace}", file=sys.stderr)
    try:
        with ScriptedLLMServer(models=["scripted-planner", "scripted-coder"]) as server:
            script_calculator(server, (workspace / "calculator.py").read_text())
            settings = load_settings(
                {
                    "model": "openai:scripted-planner",
                    "baseUrl": server.base_url,
                    "apiKey": "demo-no-key",
                    "aiderModel": "openai/scripted-coder",
                    "aiderServer": {"args": ["--edit-format", "whole"]},
                },
                environ={},
            )
            request = {"goal": GOAL, "test_command": f"{sys.executable} -m unittest", "max_retries": 3}
            return run_workflow_command(workspace, request, as_json=as_json, settings=settings)
    finally:
        if not keep:
            shutil.rmtree(workspace.parent, ignore_errors=True)
