"""The three ways a prompt is used, offered both as session modes and as a select config
option (clients show one or the other; both stay in step).

Ask: Aider answers about the code and edits nothing. Edit: one turn of the session's kept
Aider chat, like Aider's own prompt. Workflow: the prompt is the goal of a run (plan, edit,
the tests judge, retry).
"""

from __future__ import annotations

from enum import StrEnum

from acp.schema import (
    SessionConfigOptionBoolean,
    SessionConfigOptionSelect,
    SessionConfigSelectOption,
    SessionMode,
    SessionModeState,
)

MODE_OPTION = "mode"  # the config option's id


class Mode(StrEnum):
    ASK = "ask"
    EDIT = "edit"
    WORKFLOW = "workflow"


DEFAULT_MODE = Mode.EDIT
_DESCRIPTIONS = {
    Mode.ASK: ("Ask", "Aider answers about the code; nothing is edited."),
    Mode.EDIT: ("Edit", "One turn of this session's Aider chat: Aider edits the files."),
    Mode.WORKFLOW: ("Workflow", "The prompt is the goal: plan, edit, run the tests, retry until green."),
}


def parse_mode(value: object) -> Mode | None:
    """The mode a client named, or None when it names none of ours."""
    try:
        return Mode(str(value))
    except ValueError:
        return None


def mode_state(current: Mode) -> SessionModeState:
    """The session modes, `current` selected."""
    modes = [
        SessionMode(id=mode.value, name=name, description=about)
        for mode, (name, about) in _DESCRIPTIONS.items()
    ]
    return SessionModeState(current_mode_id=current.value, available_modes=modes)


ConfigOptions = list[SessionConfigOptionSelect | SessionConfigOptionBoolean]


def config_options(current: Mode) -> ConfigOptions:
    """The same choice as a select config option (category "mode")."""
    options = [
        SessionConfigSelectOption(value=mode.value, name=name, description=about)
        for mode, (name, about) in _DESCRIPTIONS.items()
    ]
    return [
        SessionConfigOptionSelect(
            id=MODE_OPTION,
            name="Mode",
            description="How a prompt is used: ask, edit, or run the workflow to green tests.",
            category="mode",
            type="select",
            current_value=current.value,
            options=options,
        )
    ]
