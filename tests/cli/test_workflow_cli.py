"""`aider-lsp run`, `demo` and `undo` as a user runs them: real subprocesses, the scripted LLM
over HTTP, the real bundled Aider, real test commands."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from aider_lsp.cli.demo import example_project
from aider_lsp_testing.llm_server import (
    IS_AIDER,
    IS_ANALYSIS,
    IS_PLAN,
    aider_whole,
    fault,
    json_output,
    text,
)
from aider_lsp_testing.waiting import wait_until

CLI = [sys.executable, "-m", "aider_lsp"]
EXAMPLE = Path(str(example_project()))  # a checkout's package data: a plain folder
BUGGY = "def double(x):\n    return x + 2\n"
FIXED = "def double(x):\n    return x * 2\n"
TESTS = (
    "import unittest\n\nfrom mathx import double\n\n\n"
    "class DoubleTest(unittest.TestCase):\n"
    "    def test_double(self):\n"
    "        self.assertEqual(double(5), 10)\n"
)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "proj"
    root.mkdir()
    (root / "mathx.py").write_text(BUGGY)
    (root / "test_mathx.py").write_text(TESTS)
    return root


def clean_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AIDER_LSP_", "OPENAI_", "ANTHROPIC_"))}
    env.update(extra)
    return env


def model_env(llm_server: Any, **extra: str) -> dict[str, str]:
    return clean_env(
        AIDER_LSP_MODEL="openai:scripted-planner",
        AIDER_LSP_BASE_URL=llm_server.base_url,
        AIDER_LSP_API_KEY="test-key",
        AIDER_LSP_AIDER_MODEL="openai/scripted-coder",
        AIDER_LSP_AIDER_SERVER=json.dumps({"args": ["--edit-format", "whole"]}),
        **extra,
    )


def run_cli(*args: str, env: dict[str, str], timeout: float = 240) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*CLI, *args], env=env, capture_output=True, text=True, timeout=timeout)


def test_usage_and_configuration_errors_exit_2(project: Path) -> None:
    no_model = run_cli("run", "--workspace", str(project), "--goal", "fix", "--test", "true", env=clean_env())
    assert no_model.returncode == 2
    assert "AIDER_LSP_MODEL" in no_model.stderr and "Traceback" not in no_model.stderr
    no_aider_model = run_cli(
        "run",
        "--workspace",
        str(project),
        "--goal",
        "fix",
        "--test",
        "true",
        env=clean_env(AIDER_LSP_MODEL="openai:gpt-4.1", OPENAI_API_KEY="sk-test"),
    )
    assert no_aider_model.returncode == 2 and "AIDER_LSP_AIDER_MODEL" in no_aider_model.stderr
    no_goal = run_cli("run", "--workspace", str(project), env=clean_env())
    assert no_goal.returncode == 2 and "--goal" in no_goal.stderr
    blank_goal = run_cli(
        "run", "--workspace", str(project), "--goal", "  ", "--test", "true", env=clean_env()
    )
    assert blank_goal.returncode == 2 and "goal" in blank_goal.stderr
    missing = run_cli(
        "run", "--workspace", str(project / "nope"), "--goal", "x", "--test", "true", env=clean_env()
    )
    assert missing.returncode == 2 and "not a directory" in missing.stderr


def run_with_the_planner_down(
    project: Path, llm_server: Any, *flags: str
) -> subprocess.CompletedProcess[str]:
    """`aider-lsp run` whose planning call fails (500 "planner down") before Aider runs: a
    goal whose words the index finds in no file, so the plan must come first (nothing to edit)."""
    llm_server.add_rule(IS_PLAN, fault(500, {"error": {"message": "planner down"}}))
    goal = ("--goal", "get it right", "--test", f"{sys.executable} -m unittest")
    return run_cli("run", "--workspace", str(project), *goal, *flags, env=model_env(llm_server))


def test_llm_failure_exits_1_and_json_carries_the_reason(project: Path, llm_server: Any) -> None:
    done = run_with_the_planner_down(project, llm_server, "--json")
    assert done.returncode == 1, done.stderr
    result = json.loads(done.stdout)
    assert result["status"] == "FAILED" and result["notes"]["error"]["reason"] == "llm_error"
    assert result["parsedContent"]["status"] == "FAILURE"
    assert (project / "mathx.py").read_text() == BUGGY
    assert "[DEBUG]" not in done.stderr  # the prompts only with --debug (below)


def test_run_debug_shows_the_prompts_and_why_a_call_failed(project: Path, llm_server: Any) -> None:
    done = run_with_the_planner_down(project, llm_server, "--debug")
    assert done.returncode == 1, done.stderr
    assert "[DEBUG] debug mode on" in done.stderr
    assert "[DEBUG] system prompt:" in done.stderr and "write a development plan" in done.stderr
    assert "pydantic-ai v" not in done.stderr  # no library banner in the terminal
    assert "[DEBUG] LLM call failed (llm_error)" in done.stderr and "planner down" in done.stderr
    assert "Traceback" not in done.stderr


@pytest.mark.aider
def test_run_succeeds_exits_0_and_undo_restores(project: Path, llm_server: Any) -> None:
    llm_server.add_rule(IS_PLAN, json_output({"instructions": "double must multiply", "files": ["mathx.py"]}))
    llm_server.add_rule(IS_AIDER, aider_whole({"mathx.py": FIXED}))
    done = run_cli(
        "run",
        "--workspace",
        str(project),
        "--goal",
        "make double double",
        "--test",
        f"{sys.executable} -m unittest",
        env=model_env(llm_server),
    )
    assert done.returncode == 0, done.stderr
    assert "SUCCESS: the tests pass" in done.stdout  # green tests end the run: no analysis call
    assert not any(IS_ANALYSIS(request) for request in llm_server.chat_requests())
    assert "+    return x * 2" in done.stdout  # the diff
    assert "Iteration 1/3: running the whole suite" in done.stderr and "tokens" in done.stderr  # progress
    # the spend, planning/analysis and Aider apart and together, live and in the report
    assert "planning/analysis:" in done.stderr and "; Aider: " in done.stderr
    assert "Spent: " in done.stdout and "Aider: 1 edit(s)" in done.stdout  # by kind of call
    assert (project / "mathx.py").read_text() == FIXED
    undo = run_cli("undo", "--workspace", str(project), env=clean_env())
    assert undo.returncode == 0, undo.stderr
    assert (project / "mathx.py").read_text() == BUGGY


@pytest.mark.aider
def test_a_plan_asked_for_that_fails_is_said_and_the_plan_shown_is_marked_implied(
    project: Path, llm_server: Any
) -> None:
    """A planning model that answers no plan (a local model in the wrong output mode, say): the
    run still ends on the tests, and the user learns why there is no plan."""
    llm_server.add_rule(IS_PLAN, text("Sure! You should make double multiply."))
    llm_server.add_rule(IS_AIDER, aider_whole({"mathx.py": FIXED}))
    done = run_cli(
        "run",
        "--workspace",
        str(project),
        "--goal",
        "make double double",
        "--test",
        f"{sys.executable} -m unittest",
        "--plan",
        "--files",
        "mathx.py",
        env=model_env(llm_server),
    )
    assert done.returncode == 0, done.stderr
    assert "SUCCESS: the tests pass" in done.stdout
    # the planner failed, or (a slow machine) was still at it when the tests passed: said either way
    assert "No plan was made: planning failed" in done.stdout or (
        "No plan was made: the tests passed before it was made" in done.stdout
    )
    assert "Plan (implied by the first edit, not the planner's)" in done.stdout


@pytest.mark.aider
def test_a_reply_that_empties_the_tests_is_no_success_and_undo_takes_back_the_tests_alone(
    project: Path, llm_server: Any
) -> None:
    """A weak model's reply rewrote the test file as code without tests: "Ran 0 tests … OK",
    exit 0. The run does not say SUCCESS, names the tests that went, and undo --files puts
    them back while keeping the rest of the run."""
    emptied = "from mathx import double\n\nprint(double(5))\n"
    llm_server.add_rule(IS_AIDER, aider_whole({"mathx.py": BUGGY + "# touched\n", "test_mathx.py": emptied}))
    llm_server.add_rule(IS_ANALYSIS, json_output({"verdict": "SUCCESS", "message": "the tests pass"}))
    done = run_cli(
        "run",
        "--workspace",
        str(project),
        "--goal",
        "make double double",
        "--files",
        "mathx.py",
        "--max-retries",
        "1",
        "--test",
        f"{sys.executable} -m unittest",
        env=model_env(llm_server),
    )
    assert done.returncode == 1, done.stdout + done.stderr
    assert done.stdout.splitlines()[1].startswith("FAILURE")
    assert "the suite ran no test" in done.stdout and "test_mathx.py::DoubleTest.test_double" in done.stdout
    assert "Aider changed: mathx.py, test_mathx.py" in done.stdout  # what the edit changed, as recorded
    assert f"undo --workspace {project} --files test_mathx.py" in done.stdout
    undo = run_cli("undo", "--workspace", str(project), "--files", "test_mathx.py", env=clean_env())
    assert undo.returncode == 0, undo.stdout + undo.stderr
    assert (project / "test_mathx.py").read_text() == TESTS
    assert (project / "mathx.py").read_text() == BUGGY + "# touched\n"  # the rest of the run stays
    whole = run_cli("undo", "--workspace", str(project), env=clean_env())
    assert whole.returncode == 0, whole.stdout + whole.stderr
    assert (project / "mathx.py").read_text() == BUGGY and (project / "test_mathx.py").read_text() == TESTS


def interrupt_in_slow_tests(
    project: Path, tmp_path: Path, env: dict[str, str], *extra: str
) -> tuple[subprocess.Popen[str], str, int]:
    """`aider-lsp run` whose test command hangs (writing its pid first), Ctrl-C once it runs:
    the process (ended), its stderr and the test process's pid."""
    pid_file = tmp_path / "test.pid"
    (project / "slow_test.py").write_text(
        f"import os, time\nopen({str(pid_file)!r}, 'w').write(str(os.getpid()))\ntime.sleep(120)\n"
    )
    command = [
        "run",
        "--workspace",
        str(project),
        "--goal",
        "fix",
        "--test",
        f"{sys.executable} slow_test.py",
    ]
    process = subprocess.Popen(
        [*CLI, *command, *extra], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        started = wait_until(
            lambda: (pid_file.exists() and pid_file.read_text()) or process.poll() is not None, 150
        )
        assert process.poll() is None, process.communicate()
        assert started, "the test command never started"
        test_pid = int(pid_file.read_text())
        process.send_signal(signal.SIGINT)
        _, stderr = process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
    return process, stderr, test_pid


@pytest.mark.aider
def test_ctrl_c_stops_the_tests_and_leaves_the_run_undoable(
    project: Path, llm_server: Any, tmp_path: Path
) -> None:
    llm_server.add_rule(IS_PLAN, json_output({"instructions": "double must multiply", "files": ["mathx.py"]}))
    llm_server.add_rule(IS_AIDER, aider_whole({"mathx.py": FIXED}))
    env = model_env(llm_server, AIDER_LSP_TESTS_BEFORE_FIRST_EDIT="false")  # Ctrl-C after the edit
    process, stderr, test_pid = interrupt_in_slow_tests(project, tmp_path, env)
    assert process.returncode == 130, stderr
    assert "cancelled" in stderr and "Traceback" not in stderr
    assert wait_until(lambda: not _alive(test_pid)), "the test command outlived the Ctrl-C"
    assert (project / "mathx.py").read_text() == FIXED  # Aider's edit is kept, and undoable
    undo = run_cli("undo", "--workspace", str(project), env=clean_env())
    assert undo.returncode == 0, undo.stdout
    assert (project / "mathx.py").read_text() == BUGGY


def test_ctrl_c_during_the_tests_before_the_first_edit_stops_them_and_changes_nothing(
    project: Path, llm_server: Any, tmp_path: Path
) -> None:
    """The default: the tests run first, beside Aider's start (which a Ctrl-C there once hung).
    Aider's start is held here (a server that never answers, for ten minutes): once Aider is
    ready the first edit would wait for the tests at most a second, so with a real Aider the
    Ctrl-C would have to come before that second ran out; held, the run is in that phase for
    certain when the Ctrl-C comes, and the Ctrl-C must end Aider's start too."""
    aider_pid_file = tmp_path / "aider.pid"
    starting = f"import os, time; open({str(aider_pid_file)!r}, 'w').write(str(os.getpid())); time.sleep(600)"
    env = model_env(llm_server)
    env["AIDER_LSP_AIDER_SERVER"] = json.dumps({"command": sys.executable, "args": ["-c", starting]})
    llm_server.add_rule(IS_AIDER, aider_whole({"mathx.py": FIXED}))
    process, stderr, test_pid = interrupt_in_slow_tests(project, tmp_path, env, "--files", "mathx.py")
    assert process.returncode == 130, stderr
    assert "cancelled" in stderr and "Traceback" not in stderr
    assert wait_until(lambda: not _alive(test_pid)), "the test command outlived the Ctrl-C"
    assert aider_pid_file.exists(), "Aider's start was not under way"
    aider_pid = int(aider_pid_file.read_text())
    try:
        assert wait_until(lambda: not _alive(aider_pid)), "Aider's start outlived the Ctrl-C"
    finally:
        if _alive(aider_pid):
            os.kill(aider_pid, signal.SIGKILL)
    assert (project / "mathx.py").read_text() == BUGGY  # no edit was made
    assert llm_server.chat_requests() == []  # no model was asked


@pytest.mark.aider
def test_demo_runs_the_whole_loop_offline_and_leaves_the_example_buggy() -> None:
    before = {p.name: p.read_text() for p in EXAMPLE.iterdir() if p.is_file()}
    done = run_cli("demo", "--json", env=clean_env())
    assert done.returncode == 0, done.stderr
    assert "OFFLINE DEMO" in done.stderr.splitlines()[0]
    result = json.loads(done.stdout)
    run = result["parsedContent"]
    assert run["status"] == "SUCCESS"
    first, second = run["iterations"]
    assert first["test"]["exit_code"] != 0
    # the analysis beside edit 2 is stopped unrecorded when edit 2's tests pass first
    assert first["analysis"] is None or first["analysis"]["verdict"] == "RETRY"
    assert [(f["path"], f["line"]) for f in first["findings"]] == [("calculator.py", 14)]
    assert second["test"]["exit_code"] == 0
    assert {p.name: p.read_text() for p in EXAMPLE.iterdir() if p.is_file()} == before


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie waiting for its parent counts as gone
        return Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z"
    except OSError:
        return False


def test_undo_refuses_later_work_and_force_restores_it(tmp_path: Path) -> None:
    """The refusal's advice ("undo with force") is something the command line can do."""
    from aider_lsp.guards.files import FileAccessManager
    from aider_lsp.history.checkpoints import CheckpointStore

    a = tmp_path / "a.py"
    a.write_text("A = 0\n")
    store = CheckpointStore(FileAccessManager(tmp_path))
    checkpoint = store.create(["a.py"], label="edit")
    a.write_text("A = 1\n")  # the edit
    store.record_after(checkpoint)
    a.write_text("A = 1  # mine\n")  # the user's later work
    refused = run_cli("undo", "--workspace", str(tmp_path), env=clean_env())
    assert refused.returncode == 1 and "undo with force" in refused.stdout, refused
    assert a.read_text() == "A = 1  # mine\n"
    forced = run_cli("undo", "--workspace", str(tmp_path), "--force", env=clean_env())
    assert forced.returncode == 0, forced
    assert a.read_text() == "A = 0\n"


def test_run_without_a_test_command_prints_the_detected_one(project: Path, llm_server: Any) -> None:
    llm_server.add_rule(IS_PLAN, fault(500, {"error": {"message": "planner down"}}))
    done = run_cli(
        "run",
        "--workspace",
        str(project),
        "--goal",
        "get it right",
        "--json",
        env=model_env(llm_server),
    )
    assert done.returncode == 1, done.stderr  # the planner is down: the run got as far as planning
    assert f"tests: `{sys.executable} -m unittest` (found: test_*.py files using unittest)" in done.stderr


def test_run_in_a_workspace_without_a_suite_names_the_setting(tmp_path: Path, llm_server: Any) -> None:
    (tmp_path / "main.py").write_text("print('hello')\n")
    env = {**model_env(llm_server), "AIDER_LSP_AIDER_SERVER": json.dumps({"command": "true"})}
    done = run_cli("run", "--workspace", str(tmp_path), "--goal", "greet", env=env)
    assert done.returncode == 2
    assert "AIDER_LSP_TEST_COMMAND" in done.stderr and "aiderLsp.testCommand" in done.stderr
    assert "Traceback" not in done.stderr


@pytest.mark.aider
def test_run_with_an_image_shows_it_to_a_vision_model_and_refuses_a_missing_one(
    project: Path, llm_server: Any, tmp_path: Path
) -> None:
    mockup = tmp_path / "mockup.png"
    mockup.write_bytes(b"\x89PNG\r\n\x1a\n a mock-up")
    llm_server.add_rule(IS_AIDER, aider_whole({"mathx.py": FIXED}))
    env = {**model_env(llm_server), "AIDER_LSP_AIDER_MODEL": "openai/gpt-4o"}  # litellm: reads images
    args = (
        "run",
        "--workspace",
        str(project),
        "--goal",
        "double as the mock-up shows",
        "--files",
        "mathx.py",
    )
    tests = ("--test", f"{sys.executable} -m unittest")
    missing = run_cli(*args, *tests, "--image", str(tmp_path / "nope.png"), env=env)
    assert missing.returncode == 2 and "images must name existing image files" in missing.stderr
    assert llm_server.chat_requests() == []
    done = subprocess.run(
        [*CLI, *args, *tests, "--image", "mockup.png"], env=env, capture_output=True, text=True, cwd=tmp_path
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert (project / "mathx.py").read_text() == FIXED
    (edit,) = [request for request in llm_server.chat_requests() if IS_AIDER(request)]
    assert "data:image/png;base64," in json.dumps(edit)  # the relative path, from where the user ran it
