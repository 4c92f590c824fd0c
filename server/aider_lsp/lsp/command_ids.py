"""The id of every command the server offers, apart from what runs them (commands.py).

Light on purpose: registering the commands with pygls (before answering initialize) needs only
their ids; their argument models and the Application load after initialize.
"""

from __future__ import annotations

from enum import StrEnum


class CommandId(StrEnum):
    """The id of every command the server offers (workspace/executeCommand)."""

    READ_FILES = "aider-lsp.system.readFiles"
    LIST_TOOLS = "aider-lsp.tools.list"
    GET_CONTEXT = "aider-lsp.system.getContext"
    PRIME_CONTEXT = "aider-lsp.handler.primeContext"
    RESET = "aider-lsp.handler.reset"
    AIDER_AUTOMATIC = "aider-lsp.aider.automatic"
    AIDER_INTERACTIVE = "aider-lsp.aider.interactive"
    AIDER_LIST_MODELS = "aider-lsp.aider.listModels"
    WORKFLOW_RUN = "aider-lsp.workflow.run"
    WORKFLOW_UNDO = "aider-lsp.workflow.undo"
    WORKFLOW_STEER = "aider-lsp.workflow.steer"
    RUNS_APPLY = "aider-lsp.runs.apply"
    RUNS_DISCARD = "aider-lsp.runs.discard"
    RUNS_KEEP_BRANCH = "aider-lsp.runs.keepBranch"
    RUNS_PREPARE = "aider-lsp.runs.prepare"
    HISTORY_LIST = "aider-lsp.history.list"
    HISTORY_DIFF = "aider-lsp.history.diff"
    RUN_TESTS = "aider-lsp.system.runTests"
    CLEAR_DIAGNOSTICS = "aider-lsp.diagnostics.clear"
