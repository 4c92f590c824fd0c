"""The scripted OpenAI-compatible LLM the end-to-end test points the extension at.

It plays both models of the story the test walks through on the example calculator:
`scripted-planner` (plans and analyses for the workflow, pydantic-ai) and `scripted-coder`
(Aider, answering in its whole-file format with the file as it would be after the edit).
The answers are derived from the project's own calculator.py, so a real Aider really edits it.

Prints {"base_url": ...} on one line, then reads commands on stdin: `release` lets the held
Aider answer of the workflow's second iteration through (so the test can look at the failing
iteration's diagnostics while the run waits; `--no-hold` for the editor demo); end of input
stops the server and writes every request it saw to --log.
"""

from __future__ import annotations

import argparse
import json
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from aider_lsp_testing import llm_server as llm

PLANNER = "scripted-planner"
CODER = "scripted-coder"
FILE = "calculator.py"

# What the test types; the rules recognise the requests by them.
EDIT_INSTRUCTION = "Add a docstring to add"
GOAL_FIX = "Make the tests pass"
GOAL_REVIEW = "Mark calculator.py as reviewed"
FIX_SUBTRACT = "Fix subtract in calculator.py"
FIX_AVERAGE = "Make average return 0 for an empty list"
MARK_REVIEWED = "Put the comment '# Reviewed.' on the first line of calculator.py"
REVIEW_VERDICT = "The tests still fail: subtract is reversed and average([]) divides by zero"
# The story of a fix in a file the index does not offer for the goal: the area is wrong because
# of the constant in constants.py, which Aider's reply edits although its chat never held it.
GOAL_AREA = "Make the circle area test pass"
CONSTANTS = "constants.py"
CONSTANTS_FIXED = "PI = 3.14159\n"
# The story of two runs side by side, each in a worktree of its own (isolation.e2e.test.mjs): each
# fixes one function of the file as it was, its Aider answer held until the test has seen both
# under way (`release`).
GOAL_WT_SUBTRACT = "Fix subtract in a worktree"
GOAL_WT_AVERAGE = "Fix average in a worktree"


def replace_once(text: str, old: str, new: str) -> str:
    """`text` with `old` replaced; the example project must still hold `old`."""
    if text.count(old) != 1:
        raise SystemExit(f"scripted_llm: {FILE} no longer contains {old!r} exactly once")
    return text.replace(old, new)


def versions(original: str) -> dict[str, str]:
    """calculator.py after each scripted edit, starting from the example's buggy text."""
    documented = replace_once(original, "def add(a, b):\n", 'def add(a, b):\n    """The sum of a and b."""\n')
    half_fixed = replace_once(documented, "return b - a", "return a - b")
    fixed = replace_once(
        half_fixed, "return sum(values) / len(values)", "return sum(values) / len(values) if values else 0"
    )
    reviewed = "# Reviewed.\n" + documented
    quick_fixed = "# Reviewed.\n" + fixed
    return {
        "documented": documented,
        "half_fixed": half_fixed,
        "fixed": fixed,
        "reviewed": reviewed,
        "quick_fixed": quick_fixed,
        # the two runs side by side, each from the file as it was
        "wt_subtract": replace_once(original, "return b - a", "return a - b"),
        "wt_average": replace_once(
            original, "return sum(values) / len(values)", "return sum(values) / len(values) if values else 0"
        ),
    }


def says(phrase: str) -> Callable[[dict[str, Any]], bool]:
    """Matches a request whose last user message contains `phrase` (any case)."""
    return lambda r: phrase.lower() in llm.last_user_message(r).lower()


def mentions(phrase: str) -> Callable[[dict[str, Any]], bool]:
    """Matches a request any of whose messages contains `phrase` (any case)."""
    return lambda r: any(phrase.lower() in llm.message_text(m).lower() for m in r.get("messages", []))


def asks_for_verdict(request: dict[str, Any]) -> bool:
    """An analysis request: its output schema has a `verdict` (a plan's has not)."""
    return "verdict" in json.dumps([request.get("tools"), request.get("response_format")])


def script(server: Any, original: str, gate: threading.Event) -> None:
    """Every rule of the story, most specific first."""
    v = versions(original)
    planner, coder = llm.model_is(PLANNER), llm.model_is(CODER)
    analysis, plan = llm.all_of(planner, asks_for_verdict), llm.all_of(planner, llm.not_(asks_for_verdict))

    # The runs side by side: each run's own Aider chat names its goal; a plan, if one is asked, is the goal.
    def held(text: str) -> Callable[[dict[str, Any]], Any]:
        def answer(request: dict[str, Any]) -> Any:
            gate.wait()
            return llm.aider_whole({FILE: text})

        return answer

    for goal, version in ((GOAL_WT_SUBTRACT, v["wt_subtract"]), (GOAL_WT_AVERAGE, v["wt_average"])):
        a_plan = {"instructions": goal, "files": [FILE], "test_command": None}
        server.add_rule(llm.all_of(plan, mentions(goal)), llm.json_output(a_plan))
        server.add_rule(llm.all_of(coder, mentions(goal)), held(version))

    server.add_rule(
        llm.all_of(plan, mentions(GOAL_REVIEW)),
        llm.json_output({"instructions": MARK_REVIEWED, "files": [FILE], "test_command": None}),
    )
    server.add_rule(
        plan, llm.json_output({"instructions": FIX_SUBTRACT, "files": [FILE], "test_command": None})
    )
    server.add_rule(
        llm.all_of(analysis, mentions(GOAL_REVIEW)),
        llm.json_output({"verdict": "FAILURE", "message": REVIEW_VERDICT}),
    )

    def judge(request: dict[str, Any]) -> Any:
        if "Exit code: 0" in llm.last_user_message(request):
            return llm.json_output({"verdict": "SUCCESS", "message": "All tests pass."})
        return llm.json_output(
            {
                "verdict": "RETRY",
                "message": "average([]) raises ZeroDivisionError",
                "next_prompt": FIX_AVERAGE,
            }
        )

    server.add_rule(analysis, judge)

    def held_fix(request: dict[str, Any]) -> Any:
        gate.wait()
        return llm.aider_whole({FILE: v["fixed"]})

    # The circle area story: whatever the chat holds, the reply fixes constants.py.
    server.add_rule(llm.all_of(coder, mentions(GOAL_AREA)), llm.aider_whole({CONSTANTS: CONSTANTS_FIXED}))
    # The workflow's own loop: the editor named the file and the test command, so its first edit
    # is the goal itself (no plan), and a retry is a turn of the same Aider chat carrying the
    # failing output ("I ran this command: …", as Aider's --auto-test loop says it).
    retry = says("I ran this command")
    # the review story's retry: its chat began with the goal (the editor's file chosen) or the plan's words
    reviewing = llm.any_of(mentions(GOAL_REVIEW), mentions(MARK_REVIEWED))
    server.add_rule(llm.all_of(coder, retry, reviewing), llm.aider_whole({FILE: v["reviewed"]}))
    server.add_rule(llm.all_of(coder, retry), held_fix)
    server.add_rule(llm.all_of(coder, says(GOAL_REVIEW)), llm.aider_whole({FILE: v["reviewed"]}))
    server.add_rule(llm.all_of(coder, says(GOAL_FIX)), llm.aider_whole({FILE: v["half_fixed"]}))
    # The same story through a plan (a workflow without the editor's file):
    server.add_rule(llm.all_of(coder, says(EDIT_INSTRUCTION)), llm.aider_whole({FILE: v["documented"]}))
    server.add_rule(llm.all_of(coder, says(FIX_SUBTRACT)), llm.aider_whole({FILE: v["half_fixed"]}))
    server.add_rule(llm.all_of(coder, says(FIX_AVERAGE)), held_fix)
    server.add_rule(llm.all_of(coder, says(MARK_REVIEWED)), llm.aider_whole({FILE: v["reviewed"]}))
    # Anything else Aider is asked is the quick fix of a diagnostic.
    server.add_rule(coder, llm.aider_whole({FILE: v["quick_fixed"]}))


def summary(request: dict[str, Any]) -> dict[str, Any]:
    """What the log keeps of a request: enough to see which rule it met."""
    return {
        "model": request.get("model"),
        "last_user": llm.last_user_message(request)[-1500:],
        "verdict_schema": asks_for_verdict(request),
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--project", type=Path, required=True, help="the folder holding calculator.py")
    parser.add_argument("--log", type=Path, help="where to write the requests seen, at exit")
    parser.add_argument("--print-versions", action="store_true", help="print the scripted file texts as JSON")
    parser.add_argument("--no-hold", action="store_true", help="never hold an answer back (the editor demo)")
    args = parser.parse_args()
    original = (args.project / FILE).read_text()
    if args.print_versions:
        print(json.dumps({"original": original, **versions(original)}))
        return
    gate = threading.Event()
    if args.no_hold:
        gate.set()
    server = llm.ScriptedLLMServer(models=[PLANNER, CODER])
    script(server, original, gate)
    server.start()
    print(json.dumps({"base_url": server.base_url}), flush=True)
    try:
        for line in sys.stdin:
            if line.strip() == "release":
                gate.set()
    finally:
        gate.set()
        if args.log:
            args.log.write_text(
                json.dumps(
                    {
                        "requests": [summary(r) for r in server.chat_requests()],
                        "unmatched": [summary(r) for r in server.unmatched],
                    },
                    indent=1,
                )
            )
        server.stop()


if __name__ == "__main__":
    main()
