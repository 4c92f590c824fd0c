"""The test command a run uses, and why: the user's, the one confirmed for the workspace, or the
one detected (detect.py).

Why an order: a command the user set (the run's own `test_command`, else the `testCommand`
setting) always wins; a command the user confirmed once in the editor is remembered for the
workspace in the user's own state folder (state.py `user_state_dir`: never a file inside the
workspace, which a repository could ship to pre-confirm a command) and wins over detection, so
the question is asked once; a detected command not yet confirmed says so (`needs_confirmation`),
and `confirm_test_command` asks the caller's user once (the editor's question and its answers).
"""

from __future__ import annotations

import json
import logging
from pathlib import Path

from ..config.settings import SECTION, Settings, env_var_for
from ..config.state import user_state_dir
from ..models import Answer, Choice, DeclinedTestCommand, Question, RequestContext
from ..models.suite_command import ChosenTestCommand, CommandSource
from .detect import detect_test_command

log = logging.getLogger(__name__)

REMEMBERED_FILE = "test-command.json"
# the labels of the answers to "aider-lsp will run the tests with `…`" (the LSP's buttons)
USE_TEST_COMMAND, CHANGE_TEST_COMMAND = "Use it", "Change…"
TEST_COMMAND_CHOICES = (
    Choice(answer=Answer.ACCEPT, label=USE_TEST_COMMAND),
    Choice(answer=Answer.DECLINE, label=CHANGE_TEST_COMMAND),
)
NO_SUITE_MESSAGE = (
    "no test command: no test suite recognised in the workspace (pytest, unittest, package.json, "
    "Cargo, Go, Maven, Gradle, a Makefile test target); set {section}.testCommand or {variable}, "
    "or pass one to the run"
)


def no_suite_message() -> str:
    """The message for a workspace where nothing was found: it names the setting."""
    return NO_SUITE_MESSAGE.format(section=SECTION, variable=env_var_for("test_command"))


def choose_test_command(
    root: Path, settings: Settings, requested: str | None = None
) -> ChosenTestCommand | None:
    """The command a run in `root` uses, or None when there is none to use."""
    if requested and requested.strip():
        return ChosenTestCommand(requested, CommandSource.RUN)
    if settings.test_command and settings.test_command.strip():
        return ChosenTestCommand(settings.test_command, CommandSource.SETTING)
    remembered = remembered_test_command(root)
    if remembered is not None:
        return remembered
    detected = detect_test_command(root, editor_python=settings.python_interpreter)
    if detected is None:
        return None
    return ChosenTestCommand(detected.command, CommandSource.DETECTED, detected.rule)


def remembered_test_command(root: Path) -> ChosenTestCommand | None:
    """The command confirmed for this workspace, if any (an unreadable file is no answer)."""
    path = remembered_path(root)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        log.warning("ignoring %s: %s", path, exc)
        return None
    command = data.get("command") if isinstance(data, dict) else None
    if not isinstance(command, str) or not command.strip():
        return None
    rule = data.get("rule")
    return ChosenTestCommand(command, CommandSource.REMEMBERED, rule if isinstance(rule, str) else None)


def remember_test_command(root: Path, command: str, rule: str | None = None) -> ChosenTestCommand:
    """Keep the command the user confirmed (or typed) for the workspace's next runs; a file that
    cannot be written is logged, and the command still used for this run."""
    choice = ChosenTestCommand(command, CommandSource.REMEMBERED, rule)
    path = remembered_path(root)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        record = {"workspace": str(root.resolve()), "command": command, "rule": rule}
        path.write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
    except OSError as exc:
        log.warning("cannot remember the test command in %s: %s", path, exc)
    return choice


def remembered_path(root: Path) -> Path:
    """Where the command the user confirmed for `root` is kept (outside the workspace)."""
    return user_state_dir(root) / REMEMBERED_FILE


async def confirm_test_command(
    root: Path, choice: ChosenTestCommand, ctx: RequestContext, setting: str = "aiderLsp.testCommand"
) -> ChosenTestCommand | DeclinedTestCommand:
    """A detected command is shown once to the user to accept (then remembered for the
    workspace) or change (then the request stops, naming the setting); any other choice is
    the user's own and is used as is. `setting` is the test command's name as the user sets it.

    A caller that cannot ask (ctx.ask is None), or a question left unanswered, uses the
    detected command without remembering it, and the log says so."""
    if not choice.needs_confirmation:
        return choice
    if ctx.ask is None:
        log.info("tests: using the detected %s; set the testCommand setting to change it", choice.describe())
        return choice
    question = Question(
        message=f"aider-lsp will run the tests with {choice.describe()}.", choices=TEST_COMMAND_CHOICES
    )
    answer = await ctx.ask(question)
    if answer is Answer.ACCEPT:
        return remember_test_command(root, choice.command, choice.rule)
    if answer is Answer.DECLINE:
        return DeclinedTestCommand(
            command=choice.command,
            detected_by=choice.rule,
            message=f"set {setting} (or pass a test command to the run) to the command "
            f"that tests this workspace; the one detected was `{choice.command}`",
        )
    if answer is Answer.ONCE:
        log.info("tests: using %s this time, as allowed once", choice.describe())
    else:
        log.info("no answer about the test command: using %s this time", choice.describe())
    return choice
