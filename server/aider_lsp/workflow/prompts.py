"""What each model call of a run is told: the planner, the analysis, and each Aider edit (the
goal, then the failing output as Aider's own `--auto-test` loop words it, digested).

Why here: the wording is what a model reads and a test can check on its own; the loop decides
when to ask, this module what is said.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..models import (
    AiderEditOutcome,
    AnalysisRequest,
    CombinedAnalysisResult,
    CommandRun,
    JudgeProblem,
    PlanRequest,
    Verdict,
)
from ..suite.digest import clip, digest
from .first_files import Named
from .iteration import Iteration, changed

# the failing output as each call gets it: pytest's failures digested (suite/digest.py: each
# failure's assertion and place, one parametrized test's cases once), any other output's head
# and tail, at most these many characters
OUTPUT_FOR_ANALYSIS = 12_000  # of each test stream the analysis sees
OUTPUT_FOR_AIDER = 8_000  # of the failing output an edit after a red run sends Aider
REPLY_FOR_ANALYSIS = 2_000  # of an Aider reply that changed nothing
MENTIONED = (
    "Other files that may be involved, not in the chat "
    "(if you need to see or change one of them, ask me to add it to the chat):\n{files}"
)
# what Aider's own --auto-test loop sends its chat after a failing test (aider/prompts.py run_output)
RUN_OUTPUT = "I ran this command:\n\n{command}\n\nAnd got this output:\n\n{output}\n"


def first_prompt(goal: str, context: str, mentioned: Sequence[Named] = ()) -> str:
    """The first edit's message: the goal, the user's context, and the files the index found
    but did not send whole (first_files.py), a line each with what matched the goal in it:
    the model sees why each may matter (Aider's map ranks the files and names a message
    mentions up, but shows what fits its budget only) and asks for the one it must see."""
    parts = [goal, context.strip()]
    if mentioned:
        lines = "\n".join(
            f"- {named.path}: {named.found}" if named.found else f"- {named.path}" for named in mentioned
        )
        parts.append(MENTIONED.format(files=lines))
    return "\n\n".join(part for part in parts if part)


def plan_request(
    goal: str, context: str, chosen: list[str], open_files: list[str], relevant: list[str]
) -> PlanRequest:
    """The planner gets the goal, the user's context, the open files and the index's best."""
    parts = [context.strip() or "(none)"]
    if open_files:
        parts.append("Files open in the editor: " + ", ".join(open_files))
    if relevant:
        parts.append("Workspace files most relevant to the goal: " + ", ".join(relevant))
    return PlanRequest(goal=goal, context_string="\n".join(parts), file_context=chosen or None)


NOTE = "A note from me, added while you work on this; take it into account:\n{notes}"


def with_notes(prompt: str, notes: Sequence[str]) -> str:
    """An edit's message with the notes the user added while the run was under way (steer)."""
    said = "\n".join(f"- {note}" for note in notes)
    return f"{prompt}\n\n{NOTE.format(notes=said)}" if notes else prompt


def with_failures(prompt: str, run: CommandRun) -> str:
    """The first edit's message with what fails before it (the suite run at the start)."""
    output = digest("\n".join(part for part in (run.stdout, run.stderr) if part.strip()), OUTPUT_FOR_AIDER)
    return f"{prompt}\n\n{RUN_OUTPUT.format(command=run.command, output=output)}"


def retry_prompt(
    it: Iteration, advice: CombinedAnalysisResult | None, *, command: str, instructions: str | None
) -> str:
    """What the next edit sends Aider: the failing output as Aider's own loop sends it (or
    that the last reply changed nothing), the latest analysis's instructions, and the
    `instructions` again when Aider keeps no chat (the server has no sessions)."""
    test, outcome = it.test, it.outcome
    if test is None:
        why = f" ({outcome.error.message})" if outcome is not None and outcome.error else ""
        message = f"Your last reply changed no file{why}. Make the change now, as the edit format requires."
    else:
        output = "\n".join(part for part in (test.stdout, test.stderr) if part.strip())
        if test.timed_out:
            output += f"\n[killed at the timeout after {test.duration_s:.0f} s]"
        # the command that ran: the failing tests alone, or the whole suite
        message = RUN_OUTPUT.format(command=test.command or command, output=digest(output, OUTPUT_FOR_AIDER))
        if it.judge is not None:
            message += f"\n{judge_prompt(it.judge)}"
    if advice is not None and advice.verdict is Verdict.RETRY and advice.next_prompt:
        message += f"\n\n{advice.next_prompt}"
    if instructions is not None:
        message = f"{instructions}\n\n{message}"
    return message


def judge_prompt(problem: JudgeProblem) -> str:
    """What the next edit is told when passing tests were not the judge they should be."""
    files = f" ({', '.join(problem.test_files)})" if problem.test_files else ""
    return (
        f"That is not a pass: {problem.message.removeprefix('the tests pass, but ')}. The tests are the "
        f"judge: put back the tests you changed or removed{files} exactly as they were, and make them "
        "pass by changing the code under test, not the tests."
    )


def with_files(files: list[str], advice: CombinedAnalysisResult | None) -> list[str]:
    """The files for the next edit: these plus what the latest analysis named."""
    extra = [path for path in (advice.next_files or []) if path not in files] if advice else []
    return [*files, *extra]


def analysis_request(
    it: Iteration, *, goal: str, context: str, command: str, max_iterations: int
) -> AnalysisRequest:
    """What the analysis template is told of an iteration."""
    test, aider = it.test, it.outcome
    if test is None:
        exit_code = "none (not run: the edit changed no file)"
    elif test.exit_code is None:
        exit_code = "none (killed at the timeout)"
    elif it.judge is not None:
        exit_code = f"{test.exit_code}, but {it.judge.message}"
    else:
        exit_code = str(test.exit_code)
    return AnalysisRequest(
        original_goal=goal,
        initial_task_context=context or "(none)",
        aider_instructions=it.prompt,
        aider_status=aider_status(aider),
        aider_diff=(aider.diff if aider is not None else "") or "(no change)",
        test_command=command,
        test_stdout=digest(test.stdout, OUTPUT_FOR_ANALYSIS) if test else "",
        test_stderr=digest(test.stderr, OUTPUT_FOR_ANALYSIS) if test else "",
        test_exit_code=exit_code,
        previous_files=it.files,
        iteration=it.number,
        max_retries=max_iterations,
    )


def aider_status(outcome: AiderEditOutcome | None) -> str:
    """The analysis's one line about the edit."""
    if outcome is None:
        return "failed"
    if changed(outcome):
        return "edited the files"
    detail = outcome.error.message if outcome.error else "Aider made no change to the files"
    reply = outcome.reply.strip()
    replied = f"; Aider replied: {clip(reply, REPLY_FOR_ANALYSIS)}" if reply else ""
    return f"changed nothing: {detail}{replied}"
