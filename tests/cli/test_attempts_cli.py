"""Several attempts at one goal from a terminal (#52), as a user runs them: `aider-lsp run
--attempts 3`, each attempt edited by another scripted Aider model (one breaks the test, one
fixes it, one changes nothing), the tests choosing; then `apply GROUP_ID` as its own process.
The real bundled Aider, a real git repository with its worktrees."""

from __future__ import annotations

import json
import signal
import subprocess
import threading
from pathlib import Path
from typing import Any

import pytest
from test_isolated_cli import (  # the same repository, environment and commands as isolated runs
    USER_LINE,
    cli,
    fixed,
    git,
    letters,
    model_env,
    run_args,
    source,
    worktrees,
)

from aider_lsp_testing.llm_server import (
    IS_AIDER,
    IS_ANALYSIS,
    ScriptedLLMServer,
    aider_whole,
    all_of,
    held,
    json_output,
    model_is,
    text,
)
from aider_lsp_testing.waiting import wait_until

__all__ = ["letters"]  # the fixture

pytestmark = [pytest.mark.aider, pytest.mark.timeout(500)]

MODELS = {"breaks": "openai/coder-breaks", "fixes": "openai/coder-fixes", "idle": "openai/coder-idle"}
BROKEN = source("alpha").replace("return 'wrong'", "return 'still wrong'")


def attempts_args(root: Path, choose: str, iterations: int = 1) -> list[str]:
    """`run --attempts 3`, each attempt with `iterations` edits at most (one: each red
    attempt asks the analysis, and ends)."""
    models = [arg for model in MODELS.values() for arg in ("--aider-model", model)]
    args = run_args(root, "alpha", "--attempts", "3", "--choose", choose, *models, "--json")
    return [arg if arg != "0" else str(iterations) for arg in args]


def script_attempts(llm_server: ScriptedLLMServer, gate: threading.Event | None) -> None:
    """The fixing model fixes; the others break the test or change nothing, once, then (with a
    `gate`) keep thinking until it opens: a first-green group stops them meanwhile. With a gate
    the fixer answers once both others are on their second edit (their first one's spend is
    counted by then: what a stopped attempt spent is known to be above zero)."""
    first = {"breaks": aider_whole({"alpha.py": BROKEN}), "idle": text("I would leave alpha as it is.")}
    fix = aider_whole({"alpha.py": fixed("alpha")})
    fixer = fix if gate is None else after_the_others_retry(llm_server, fix)
    llm_server.add_rule(all_of(IS_AIDER, model_is("coder-fixes")), fixer)
    for name, reply in first.items():
        match = all_of(IS_AIDER, model_is(MODELS[name].split("/", 1)[1]))
        llm_server.add_rule(match, reply, times=1)
        llm_server.add_rule(match, reply if gate is None else held(gate, reply))
    llm_server.add_rule(
        IS_ANALYSIS, json_output({"verdict": "RETRY", "message": "red", "next_prompt": "again"})
    )


def after_the_others_retry(llm_server: ScriptedLLMServer, reply: Any) -> Any:
    """`reply`, given once the breaking and the idle model have each been asked twice."""

    def others_on_their_second_edit() -> bool:
        asked = [r.get("model") for r in llm_server.chat_requests() if IS_AIDER(r)]
        return asked.count("coder-breaks") >= 2 and asked.count("coder-idle") >= 2

    def answer(request: dict[str, Any]) -> Any:
        wait_until(others_on_their_second_edit, timeout=240)
        return reply

    return answer


def by_model(group: dict[str, Any]) -> dict[str, dict[str, Any]]:
    names = {model: name for name, model in MODELS.items()}
    return {names[attempt["aider_model"]]: attempt for attempt in group["attempts"]}


def test_first_green_names_the_fixing_attempt_and_stops_the_others(
    letters: Path, llm_server: ScriptedLLMServer
) -> None:
    gate = threading.Event()
    script_attempts(llm_server, gate)
    env = model_env(llm_server)
    try:
        args = attempts_args(letters, "first-green", iterations=2)  # the others get to a second edit
        done = subprocess.run(args, env=env, capture_output=True, text=True)
    finally:
        gate.set()
    assert done.returncode == 0, done.stdout + done.stderr
    group = json.loads(done.stdout)["notes"]["group"]
    attempts = by_model(group)
    assert group["winner"] == attempts["fixes"]["run_id"] and "passed the tests first" in group["reason"]
    assert attempts["fixes"]["green"] and attempts["fixes"]["state"] == "ready"
    assert attempts["fixes"]["lines_changed"] == 2 and attempts["fixes"]["tokens"] > 0
    for name in ("breaks", "idle"):
        stopped = attempts[name]
        assert stopped["stopped"] == "attempt 2 passed the tests first", stopped
        # what it spent up to the stop is counted: its first edit, answered before the fix
        assert stopped["state"] == "discarded" and stopped["tokens"] > 0, stopped
    assert (letters / "alpha.py").read_text() == source("alpha"), "nothing is applied by itself"
    listed = git(letters, "worktree", "list") + git(letters, "branch")
    assert all(attempts[name]["run_id"] not in listed for name in ("breaks", "idle"))
    assert worktrees(letters) == 2, "the winner's tree waits; the stopped ones are gone"


def test_compare_ranks_all_three_and_applying_the_group_takes_the_winner(
    letters: Path, llm_server: ScriptedLLMServer
) -> None:
    script_attempts(llm_server, None)
    env = model_env(llm_server)
    done = subprocess.run(attempts_args(letters, "compare"), env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
    group = json.loads(done.stdout)["notes"]["group"]
    attempts = by_model(group)
    assert group["winner"] == attempts["fixes"]["run_id"]
    assert all(attempt["stopped"] is None for attempt in attempts.values()), "all finished"
    assert [attempts[name]["green"] for name in ("breaks", "fixes", "idle")] == [False, True, False]
    assert attempts["breaks"]["state"] == "ready" and attempts["idle"]["state"] == "discarded"
    assert "the tests fail" in attempts["breaks"]["tests"] and "the tests pass" in attempts["fixes"]["tests"]

    alpha = letters / "alpha.py"
    alpha.write_text(USER_LINE + alpha.read_text())  # the user's edit meanwhile
    applied = cli(letters, "apply", group["group_id"], "--json", env=env)
    assert applied.returncode == 0, applied.stdout + applied.stderr
    notes = json.loads(applied.stdout)["notes"]
    winner, other = attempts["fixes"]["run_id"], attempts["breaks"]["run_id"]
    assert notes["run_id"] == winner and notes["discarded"] == [other]
    assert alpha.read_text() == USER_LINE + fixed("alpha")
    history = json.loads(cli(letters, "history", "--json", env=env).stdout)["notes"]["runs"]
    states = {run["id"]: run["state"] for run in history}
    assert states[winner] == "applied" and states[other] == "discarded"
    (listed,) = [run for run in history if run["id"] == other]  # named as its attempt after the run
    assert (listed["group_id"], listed["attempt"], listed["aider_model"]) == (
        group["group_id"],
        1,
        MODELS["breaks"],
    )
    assert worktrees(letters) == 1 and "aider-lsp/" not in git(letters, "branch")


def test_ctrl_c_stops_every_attempt_and_leaves_no_tree(letters: Path, llm_server: ScriptedLLMServer) -> None:
    """A cancel of the group stops each attempt under way: its processes, its tree and branch go."""
    gate = threading.Event()
    llm_server.add_rule(IS_AIDER, held(gate, aider_whole({"alpha.py": fixed("alpha")})))
    env = model_env(llm_server)
    models = [arg for model in ("openai/one", "openai/two") for arg in ("--aider-model", model)]
    group = subprocess.Popen(
        run_args(letters, "alpha", "--attempts", "2", *models),
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        both = wait_until(lambda: sum(map(IS_AIDER, llm_server.chat_requests())) >= 2, 200)
        assert both, "the two attempts' edits never began"
        group.send_signal(signal.SIGINT)
        _, stderr = group.communicate(timeout=120)
    finally:
        gate.set()
        if group.poll() is None:
            group.kill()
    assert group.returncode == 130, stderr
    assert "Traceback" not in stderr
    assert (letters / "alpha.py").read_text() == source("alpha")
    assert worktrees(letters) == 1 and "aider-lsp/" not in git(letters, "branch")
