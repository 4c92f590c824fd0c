"""Every question the agent asks (`session/request_permission`) as a client that keys the choices
by their kind meets it: CodeCompanion shows "Allow always", "Allow", "Reject", "Reject always",
one key a kind, so each question's options have kinds of their own and every outcome is reached
by one; and it previews a change only when the tool call's first content block is its diff.

A real `aider-lsp acp` over stdio, real Aider edits against the scripted model, in a git
repository: the test command found in the workspace (asked first), then three isolated Workflow
turns whose "Apply this change?" is answered Reject (kept as a branch), Reject always
(discarded) and Allow (applied, over the user's own change to the same lines: "Apply anyway?"
answered Allow too)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from aider_lsp_testing.apps import scripted_environment
from aider_lsp_testing.calc_project import BUGGY, FIXED, PLAN, analysis_by_exit_code
from aider_lsp_testing.letters_project import git
from aider_lsp_testing.llm_server import (
    IS_AIDER,
    IS_ANALYSIS,
    IS_PLAN,
    ScriptedLLMServer,
    aider_whole,
    json_output,
)
from aider_lsp_testing.raw_acp import RawAcpClient

USERS = BUGGY.replace("return b - a", "return -(a - b) * -1  # the user's own")
APPLY = "Apply this change"  # "… to calc.py (+1 -1)?"
# each "Apply this change?" in turn: keep it aside, throw it away, apply it
ANSWERS = ["reject_once", "reject_always", "allow_once"]


class KindsOnlyClient:
    """Chooses by kind alone, as CodeCompanion does (its map of kind → option: the last option
    of a kind wins), and the user edits calc.py before the last "Apply this change?"."""

    def __init__(self, calc: Path) -> None:
        self.calc = calc
        self.answers = list(ANSWERS)

    def __call__(self, question: dict[str, Any]) -> str | None:
        by_kind = {option["kind"]: option["optionId"] for option in question["options"]}
        title = question["toolCall"].get("title") or ""
        if title.startswith(APPLY):
            kind = self.answers.pop(0)
            if not self.answers:
                self.calc.write_text(USERS)  # the user saves the same lines while the run is ready
        else:  # the test command, "Apply anyway?"
            kind = "allow_always" if "allow_always" in by_kind else "allow_once"
        return by_kind.get(kind)


def _prompt(client: RawAcpClient, session: str) -> str:
    """One Workflow turn; its reply's text."""
    params = {"sessionId": session, "prompt": [{"type": "text", "text": "make the tests pass"}]}
    turn = client.start_request("session/prompt", params)
    answer = client.wait_response(turn, timeout=240)
    assert "result" in answer, answer
    before = client.around(turn)[0]
    shown = [u for u in before if u.get("sessionUpdate") == "agent_message_chunk"]
    return "".join(chunk["content"].get("text", "") for chunk in shown)


@pytest.mark.aider
def test_every_question_is_answered_by_kind_and_leads_with_its_diff(
    calc_project: Path, llm_server: ScriptedLLMServer, tmp_path: Path
) -> None:
    git(calc_project, "init", "-q")
    git(calc_project, "add", "-A")
    git(calc_project, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "calc")
    llm_server.add_rule(IS_PLAN, json_output(PLAN))
    llm_server.add_rule(IS_ANALYSIS, analysis_by_exit_code)
    llm_server.add_rule(IS_AIDER, aider_whole({"calc.py": FIXED}))
    calc = calc_project / "calc.py"
    # no test command set: the one found in the workspace is asked about
    client = RawAcpClient(tmp_path / "agent.log", scripted_environment(llm_server.base_url))
    client.choose = KindsOnlyClient(calc)
    try:
        session = client.open_session(calc_project, mode="workflow")
        isolated = {"sessionId": session, "configId": "isolation", "value": "worktree"}
        assert "result" in client.request("session/set_config_option", isolated)
        replies = [_prompt(client, session) for _ in ANSWERS]
    finally:
        client.close()
    questions = client.questions()
    for question in questions:
        kinds = [option["kind"] for option in question["options"]]
        assert len(set(kinds)) == len(kinds), (question["toolCall"].get("title"), question["options"])
    titles = [question["toolCall"].get("title") or "" for question in questions]
    assert "unittest" in titles[0] and sum(title.startswith(APPLY) for title in titles) == 3
    assert titles[-1].startswith("Apply anyway? calc.py"), titles
    assert "Kept on branch `aider-lsp/" in replies[0], replies[0]
    assert "aider-lsp/" in git(calc_project, "branch", "--list")
    assert "Discarded" in replies[1], replies[1]
    assert "Applied to your files: calc.py." in replies[2] and calc.read_text() == FIXED, replies[2]
    announced = {u["toolCallId"]: u for u in client.updates() if u.get("sessionUpdate") == "tool_call"}
    for question in (q for q, title in zip(questions, titles, strict=True) if title.startswith(APPLY)):
        call = question["toolCall"]
        # what a client previews: the question's content, or the announced call's when it has none
        for content in (call.get("content"), announced[call["toolCallId"]].get("content")):
            assert content and content[0]["type"] == "diff" and content[0]["path"] == str(calc), content
            assert content[0]["oldText"] == BUGGY and content[0]["newText"] == FIXED
