"""Code actions that hand a problem or a selection to Aider.

Computing them is cheap (the document is in memory, no LLM or Aider call): each action only
points at a command that does the work when the user chooses it.
- "Fix with Aider" (quickfix) on each diagnostic in range, ours or another tool's
  → `aider-lsp.aider.automatic` with the diagnostic's message, source, range and code; on
  one of our test failures also `rerun_failing_tests`: the tests that failed re-run after the
  edit and their diagnostics are replaced or cleared;
- "Run Aider workflow on this file" (source) → `aider-lsp.workflow.run`;
- "Edit selection with Aider" (refactor.rewrite), for a non-empty range → the client's
  `aider-lsp.client.editSelection`, which asks the user for the instruction. Only a client that
  says it has that command gets it (`capabilities.experimental.aiderLsp.clientCommands`, sent
  by the VS Code extension): Neovim or Helix never see an action they cannot run.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from lsprotocol import types

from .command_ids import CommandId
from .diagnostics import SOURCE

if TYPE_CHECKING:
    from .language_server import AiderLanguageServer

FIX_TITLE = "Fix with Aider"
WORKFLOW_TITLE = "Run Aider workflow on this file"
EDIT_SELECTION_TITLE = "Edit selection with Aider"
CLIENT_EDIT_SELECTION = "aider-lsp.client.editSelection"  # the client's command, not the server's
EXPERIMENTAL_KEY = "aiderLsp"  # capabilities.experimental.aiderLsp.clientCommands: [command id, …]
KINDS = [
    types.CodeActionKind.QuickFix,
    types.CodeActionKind.RefactorRewrite,
    types.CodeActionKind.Source,
]
GOAL_PROBLEMS = 10  # at most this many problems are listed in a workflow goal


def _wanted(kind: str, only: Sequence[str] | None) -> bool:
    """The client's `only` filter: a kind matches itself and its sub-kinds."""
    return not only or any(kind == base or kind.startswith(f"{base}.") for base in only)


def _range_dict(rng: types.Range) -> dict[str, Any]:
    return {
        "start": {"line": rng.start.line, "character": rng.start.character},
        "end": {"line": rng.end.line, "character": rng.end.character},
    }


def _short(message: str, limit: int = 60) -> str:
    first = message.strip().splitlines()[0] if message.strip() else "problem"
    return first if len(first) <= limit else first[: limit - 1] + "…"


def _fix_action(
    uri: str, rel: str, lines: Sequence[str], diagnostic: types.Diagnostic, title: str, folder: str
) -> types.CodeAction:
    start, end = diagnostic.range.start, diagnostic.range.end
    where = f"line {start.line + 1}" + (f", column {start.character + 1}" if start.character else "")
    source = diagnostic.source or "a tool"
    code = f" [{diagnostic.code}]" if diagnostic.code not in (None, "") else ""
    prompt = f"Fix this problem that {source}{code} reports in {rel} at {where}: {diagnostic.message}"
    text = "".join(lines[start.line : end.line + 1]).rstrip("\n")
    selection: dict[str, Any] = {"uri": uri, "range": _range_dict(diagnostic.range)}
    if text.strip():
        selection["text"] = text
    argument: dict[str, Any] = {
        "prompt": prompt,
        "file_context": [rel],
        "selection": selection,
        "folder": folder,
    }
    if is_test_failure(diagnostic):
        argument["rerun_failing_tests"] = True  # its diagnostic goes when the fix makes it pass
    return types.CodeAction(
        title=title,
        kind=types.CodeActionKind.QuickFix,
        diagnostics=[diagnostic],
        command=types.Command(title=title, command=CommandId.AIDER_AUTOMATIC, arguments=[argument]),
    )


def is_test_failure(diagnostic: types.Diagnostic) -> bool:
    """One of ours from a test run (the analysis's advice is not a test that can pass)."""
    return diagnostic.source == SOURCE and diagnostic.code not in (None, "", "analysis")


def workflow_goal(rel: str, problems: Sequence[types.Diagnostic]) -> str:
    """The workflow's goal for one file: its known problems, else 'make the tests pass'."""
    if not problems:
        return f"Make the tests pass (start from {rel})."
    listed = [
        f"- line {d.range.start.line + 1}: {d.message.strip()} ({d.source or 'unknown source'})"
        for d in problems[:GOAL_PROBLEMS]
    ]
    more = len(problems) - len(listed)
    tail = [f"- … and {more} more"] if more > 0 else []
    return "\n".join([f"Fix these problems in {rel} and make the tests pass:", *listed, *tail])


def client_commands(capabilities: types.ClientCapabilities | None) -> frozenset[str]:
    """The client-side commands the client says it has (an experimental capability of ours);
    anything malformed counts as none."""
    experimental = capabilities.experimental if capabilities is not None else None
    ours = experimental.get(EXPERIMENTAL_KEY) if isinstance(experimental, dict) else None
    listed = ours.get("clientCommands") if isinstance(ours, dict) else None
    if not isinstance(listed, list):
        return frozenset()
    return frozenset(item for item in listed if isinstance(item, str))


def _edit_selection_action(uri: str, rng: types.Range) -> types.CodeAction:
    argument = {"uri": uri, "range": _range_dict(rng)}
    return types.CodeAction(
        title=EDIT_SELECTION_TITLE,
        kind=types.CodeActionKind.RefactorRewrite,
        command=types.Command(
            title=EDIT_SELECTION_TITLE, command=CLIENT_EDIT_SELECTION, arguments=[argument]
        ),
    )


def _unique(items: Sequence[types.Diagnostic]) -> list[types.Diagnostic]:
    seen: set[tuple[int, str, str | None]] = set()
    kept: list[types.Diagnostic] = []
    for item in items:
        key = (item.range.start.line, item.message, item.source)
        if key not in seen:
            seen.add(key)
            kept.append(item)
    return kept


def code_actions(ls: AiderLanguageServer, params: types.CodeActionParams) -> list[types.CodeAction] | None:
    """The actions for a range; None when the file is not in the workspace or nothing applies."""
    uri = params.text_document.uri
    located = ls.documents.locate(uri)
    if located is None:
        return None
    folder, rel = located[0].as_uri(), located[1]  # paths relative to the document's own folder
    only = params.context.only
    try:
        lines = ls.workspace.get_text_document(uri).lines  # in memory when open
    except OSError:
        lines = []
    actions: list[types.CodeAction] = []
    if _wanted(types.CodeActionKind.QuickFix, only):
        in_range = params.context.diagnostics
        for diagnostic in in_range:
            title = FIX_TITLE if len(in_range) == 1 else f"{FIX_TITLE}: {_short(diagnostic.message)}"
            actions.append(_fix_action(uri, rel, lines, diagnostic, title, folder))
    rng = params.range
    if (
        _wanted(types.CodeActionKind.RefactorRewrite, only)
        and rng.start != rng.end
        and CLIENT_EDIT_SELECTION in client_commands(ls.client_capabilities)
    ):
        actions.append(_edit_selection_action(uri, rng))
    if _wanted(types.CodeActionKind.Source, only):
        problems = _unique([*ls.diagnostic_store.for_uri(uri), *params.context.diagnostics])
        argument = {"goal": workflow_goal(rel, problems), "file_context": [rel], "folder": folder}
        actions.append(
            types.CodeAction(
                title=WORKFLOW_TITLE,
                kind=types.CodeActionKind.Source,
                command=types.Command(
                    title=WORKFLOW_TITLE, command=CommandId.WORKFLOW_RUN, arguments=[argument]
                ),
            )
        )
    return actions or None


def register(server: AiderLanguageServer) -> None:
    """Serve textDocument/codeAction with the kinds declared up front."""

    @server.feature(types.TEXT_DOCUMENT_CODE_ACTION, types.CodeActionOptions(code_action_kinds=KINDS))
    def on_code_action(
        ls: AiderLanguageServer, params: types.CodeActionParams
    ) -> list[types.CodeAction] | None:
        return code_actions(ls, params)
