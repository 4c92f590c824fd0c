"""A cancel in any phase of a workflow run ends every process of the run, over LSP
(`$/cancelRequest`), ACP (`session/cancel`) and the command line (Ctrl-C), and the front end
answers "cancelled" without waiting for the phase to end. Each case is a real front-end
subprocess, the real Aider, the scripted models, and a run held in one phase: the tests before
the first edit, Aider's start, the plan, an edit, the tests after it, the analysis.

The phase is held for longer than the test waits (a model's answer until the test ends, a test
command or an Aider start for ten minutes): a front end that waited for it would not answer, and
a process the cancel did not end would still run, when the test's cap is reached. How soon
either happens is not asserted (these machines are shared and busy).

"Every process of the run": whatever the front end had started below it when the cancel went,
except what outlives a run by design in the servers that stay (the index's worker processes,
and the workspace's Aider server when it was not working for the run: it serves the next run
warm). A cancelled edit's Aider server is stopped (the edit must not land later)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from aider_lsp_testing.apps import scripted_environment
from aider_lsp_testing.calc_project import HALF_FIXED, PLAN, TEST_COMMAND
from aider_lsp_testing.llm_server import (
    IS_AIDER,
    IS_ANALYSIS,
    IS_PLAN,
    ScriptedLLMServer,
    aider_whole,
    held,
    json_output,
)
from aider_lsp_testing.raw_acp import RawAcpClient
from aider_lsp_testing.raw_lsp import RawLspClient, alive, children_of
from aider_lsp_testing.waiting import wait_until

pytestmark = pytest.mark.aider

CLI = [sys.executable, "-m", "aider_lsp"]
GOAL = "Fix subtract and multiply in calc.py"
VAGUE_GOAL = "write some documentation"  # the index finds no file for it: the plan comes first
HELD = 600  # seconds a held test command or Aider start would take: far past CAP
CAP = 60  # seconds the test waits for the answer and for the run's processes to end: a safety net
REACH = 120  # seconds to reach the phase (Aider starts cold)


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


@dataclass
class Phase:
    """A run held in one phase: its settings, its scripted models, and when it is there."""

    name: str
    goal: str = GOAL
    settings: dict[str, str] = field(default_factory=dict)
    arrange: Callable[[ScriptedLLMServer], None] = lambda llm: None
    reached: Callable[[ScriptedLLMServer, set[str]], bool] = lambda llm, commands: False
    aider_working: bool = False  # Aider's server works for the run then: it must end too
    own_process: bool = True  # the run has a process of its own then (a test, Aider's start or edit)


def _sleeper(token: str) -> str:
    return f"{sys.executable} -c \"import time; time.sleep({HELD}); '{token}'\""


def _hung_server(token: str) -> str:
    """An Aider server that never starts serving."""
    return json.dumps(
        {"command": sys.executable, "args": ["-c", f"import time; time.sleep({HELD}); '{token}'"]}
    )


def _asked(kind: Callable[[dict[str, Any]], bool]) -> Callable[[ScriptedLLMServer, set[str]], bool]:
    return lambda llm, commands: any(kind(request) for request in llm.chat_requests())


def _running(token: str) -> Callable[[ScriptedLLMServer, set[str]], bool]:
    return lambda llm, commands: any(token in command for command in commands)


def phases(token: str, let_go: threading.Event | None = None) -> list[Phase]:
    """The phases; a held model answer comes once `let_go` is set (at the end of the test)."""
    gate = let_go or threading.Event()
    quick_edit = lambda llm: llm.add_rule(IS_AIDER, aider_whole({"calc.py": HALF_FIXED}))  # noqa: E731
    failing = f'{sys.executable} -c "raise SystemExit(1)"'
    return [
        Phase(
            "the tests before the first edit",
            settings={"AIDER_LSP_TESTS_BEFORE_FIRST_EDIT": "true", "AIDER_LSP_TEST_COMMAND": _sleeper(token)},
            reached=_running(token),
        ),
        Phase(
            "Aider's start",
            settings={"AIDER_LSP_AIDER_SERVER": _hung_server(token), "AIDER_LSP_TEST_COMMAND": TEST_COMMAND},
            reached=_running(token),
            aider_working=True,
        ),
        Phase(
            "the plan",
            goal=VAGUE_GOAL,
            settings={"AIDER_LSP_TEST_COMMAND": TEST_COMMAND},
            arrange=lambda llm: llm.add_rule(IS_PLAN, held(gate, json_output(PLAN))),
            reached=_asked(IS_PLAN),
            own_process=False,
        ),
        Phase(
            "an edit",
            settings={"AIDER_LSP_TEST_COMMAND": TEST_COMMAND},
            arrange=lambda llm: llm.add_rule(IS_AIDER, held(gate, aider_whole({"calc.py": HALF_FIXED}))),
            reached=_asked(IS_AIDER),
            aider_working=True,
        ),
        Phase(
            "the tests after an edit",
            settings={"AIDER_LSP_TEST_COMMAND": _sleeper(token)},
            arrange=quick_edit,
            reached=_running(token),
        ),
        Phase(
            "the analysis",
            settings={"AIDER_LSP_TEST_COMMAND": failing, "AIDER_LSP_MAX_RETRIES": "0"},
            arrange=lambda llm: (quick_edit(llm), llm.add_rule(IS_ANALYSIS, held(gate, json_output({})))),
            reached=_asked(IS_ANALYSIS),
            own_process=False,
        ),
    ]


PHASES = [phase.name for phase in phases("")]


class FrontEnd:
    """One front end running one workflow run: start it, cancel it, see its answer."""

    pid: int

    def answered(self, timeout: float) -> str:
        """How the front end ended the run ("cancelled" when it says so)."""
        raise NotImplementedError

    def cancel(self) -> None:
        raise NotImplementedError

    def close(self) -> None:
        raise NotImplementedError


class Lsp(FrontEnd):
    def __init__(self, project: Path, goal: str, env: dict[str, str], log: Path) -> None:
        self.client = RawLspClient(log, env=env)
        self.pid = self.client.process.pid
        self.client.initialize(project, {})
        params = {"command": "aider-lsp.workflow.run", "arguments": [{"goal": goal}]}
        self.msg_id = self.client.send_request("workspace/executeCommand", params)

    def cancel(self) -> None:
        self.client.notify("$/cancelRequest", {"id": self.msg_id})

    def answered(self, timeout: float) -> str:
        answer = self.client.wait_response(self.msg_id, timeout)
        error = answer.get("error") or (answer.get("result") or {}).get("notes", {}).get("error") or {}
        return "cancelled" if "cancel" in json.dumps(error).lower() else json.dumps(answer)[:300]

    def close(self) -> None:
        self.client.close()


class Acp(FrontEnd):
    def __init__(self, project: Path, goal: str, env: dict[str, str], log: Path) -> None:
        self.client = RawAcpClient(log, env)
        self.pid = self.client.process.pid
        self.session = self.client.open_session(project, mode="workflow")
        prompt = {"sessionId": self.session, "prompt": [{"type": "text", "text": goal}]}
        self.msg_id = self.client.start_request("session/prompt", prompt)

    def cancel(self) -> None:
        self.client.send({"method": "session/cancel", "params": {"sessionId": self.session}})

    def answered(self, timeout: float) -> str:
        answer = self.client.wait_response(self.msg_id, timeout)
        return str((answer.get("result") or {}).get("stopReason") or answer)[:300]

    def close(self) -> None:
        self.client.close()


class Cli(FrontEnd):
    def __init__(self, project: Path, goal: str, env: dict[str, str], log: Path) -> None:
        self.log = log
        command = [*CLI, "run", "--workspace", str(project), "--goal", goal]
        self.process = subprocess.Popen(
            command, env=env, stdout=subprocess.DEVNULL, stderr=log.open("wb"), cwd=project
        )
        self.pid = self.process.pid

    def cancel(self) -> None:
        self.process.send_signal(signal.SIGINT)

    def answered(self, timeout: float) -> str:
        code = self.process.wait(timeout)
        said = self.log.read_text(errors="replace")
        return "cancelled" if code == 130 and "cancelled" in said else f"exit {code}: {said[-300:]}"

    def close(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait(10)


FRONT_ENDS: dict[str, type[FrontEnd]] = {"lsp": Lsp, "acp": Acp, "cli": Cli}


@pytest.fixture
def started(
    request: pytest.FixtureRequest, calc_project: Path, llm_server: ScriptedLLMServer, tmp_path: Path
) -> Iterator[tuple[FrontEnd, Phase]]:
    front_end, phase_name = request.param
    token = f"held-{uuid.uuid4().hex}"
    let_go = threading.Event()
    phase = next(p for p in phases(token, let_go) if p.name == phase_name)
    phase.arrange(llm_server)
    env = scripted_environment(llm_server.base_url, **phase.settings)
    running = FRONT_ENDS[front_end](calc_project, phase.goal, env, tmp_path / "front-end.log")
    try:
        yield running, phase
    finally:
        let_go.set()
        running.close()
        _kill_held(token)


def _kill_held(token: str) -> None:
    """A failed case leaves nothing of its held phase running on this machine."""
    for entry in os.listdir("/proc"):
        if entry.isdigit() and token in _cmdline(int(entry)):
            try:
                os.kill(int(entry), signal.SIGKILL)
            except OSError:
                pass


def _reach(front_end: FrontEnd, phase: Phase, llm: ScriptedLLMServer) -> set[int]:
    """Wait until the run is in the phase; the processes below the front end then."""
    deadline = time.monotonic() + REACH
    while time.monotonic() < deadline:
        below = children_of(front_end.pid)
        if phase.reached(llm, {_cmdline(pid) for pid in below}):
            return below
        time.sleep(0.05)
    raise AssertionError(f"the run never reached {phase.name}")


def _may_outlive(front_end: FrontEnd, phase: Phase, pid: int) -> bool:
    """What outlives a run by design: in the servers that stay (LSP, ACP) the index's workers,
    and the workspace's Aider server when it was not working for the run."""
    if isinstance(front_end, Cli):
        return False
    command = _cmdline(pid)
    return "multiprocessing" in command or ("aider_mcp" in command and not phase.aider_working)


@pytest.mark.parametrize(
    "started",
    [(front_end, phase) for front_end in FRONT_ENDS for phase in PHASES],
    ids=[f"{front_end}-{phase.replace(' ', '-')}" for front_end in FRONT_ENDS for phase in PHASES],
    indirect=True,
)
def test_a_cancel_ends_every_process_of_the_run_and_is_answered(
    started: tuple[FrontEnd, Phase], llm_server: ScriptedLLMServer
) -> None:
    front_end, phase = started
    below = _reach(front_end, phase, llm_server)
    run = {pid for pid in below if not _may_outlive(front_end, phase, pid)}
    assert run or not phase.own_process, f"no process of the run in {phase.name}: {below}"
    front_end.cancel()
    # the phase would hold the run far past the cap: answered at all is answered without it
    assert front_end.answered(timeout=CAP) == "cancelled"
    wait_until(lambda: not any(alive(pid) for pid in run), CAP)
    left = [_cmdline(pid) for pid in run if alive(pid)]
    assert not left, f"still running after the cancel in {phase.name}: {left}"
