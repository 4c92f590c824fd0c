"""A session's config options: the mode (modes.py), Aider's model, the Workflow's retries and
where a Workflow turn edits (its isolation).

Aider's model is the workspace's (the Application's settings: every session on the folder uses
the one Aider server, which restarts with a new model); its choices are the one the agent's
environment names and, when no OpenAI-compatible endpoint is set, Aider's own short names for
the common models. The retries are the session's own (a Workflow turn's `max_retries`), and so
is the isolation (the `isolation` setting at the start): `worktree` runs each Workflow turn in a
worktree of its own, whose change the user applies, keeps as a branch or discards at its end
(ready_run.py).
"""

from __future__ import annotations

from acp.schema import SessionConfigOptionSelect, SessionConfigSelectOption

from .modes import MODE_OPTION, ConfigOptions, config_options, parse_mode
from .session import AcpSession

AIDER_MODEL_OPTION, RETRIES_OPTION, ISOLATION_OPTION = "aider_model", "max_retries", "isolation"
ATTEMPTS_OPTION, CHOOSE_OPTION = "attempts", "choose"
ATTEMPT_CHOICES = (1, 2, 3, 4)
CHOOSE_CHOICES = {
    "first-green": ("First to pass", "The first attempt whose tests pass wins; the others stop"),
    "compare": (
        "Compare all",
        "All attempts finish, then the tests rank them: green, smaller change, cheaper",
    ),
}
# Aider's aliases (aider/models.py MODEL_ALIASES): offered when no endpoint is configured
AIDER_ALIASES = ("sonnet", "opus", "haiku", "gpt-4.1", "o3", "gemini", "deepseek")
RETRY_CHOICES = (0, 1, 2, 3, 5, 10)
ISOLATION_CHOICES = {
    "none": ("In place", "A Workflow turn edits your files as it goes (/undo takes a run back)"),
    "worktree": (
        "Isolated worktree",
        "A Workflow turn works in a worktree of its own; at its end you apply, keep or discard its change",
    ),
}


class OptionError(ValueError):
    """A config option or value this agent does not have (the message says which it has)."""


def session_options(session: AcpSession) -> ConfigOptions:
    """Every option with the session's current values."""
    return [
        *config_options(session.mode),
        _aider_model(session),
        _retries(session),
        _isolation(session),
        _attempts(session),
        _choose(session),
    ]


def _aider_model(session: AcpSession) -> SessionConfigOptionSelect:
    current = session.app.aider_model() or "(not set)"
    return SessionConfigOptionSelect(
        id=AIDER_MODEL_OPTION,
        name="Aider model",
        description="The model Aider edits with, for every session on this folder",
        category="model",
        type="select",
        current_value=current,
        options=[
            SessionConfigSelectOption(value=name, name=name) for name in _model_choices(session, current)
        ],
    )


def _model_choices(session: AcpSession, current: str) -> list[str]:
    choices = [current, *(() if session.app.settings.base_url else AIDER_ALIASES)]
    return list(dict.fromkeys(choices))


def _retries(session: AcpSession) -> SessionConfigOptionSelect:
    current = str(session.max_retries)
    values = sorted({*RETRY_CHOICES, session.max_retries})
    return SessionConfigOptionSelect(
        id=RETRIES_OPTION,
        name="Retries",
        description="How many times a Workflow turn retries after the tests fail",
        type="select",
        current_value=current,
        options=[SessionConfigSelectOption(value=str(n), name=str(n)) for n in values],
    )


def _isolation(session: AcpSession) -> SessionConfigOptionSelect:
    return SessionConfigOptionSelect(
        id=ISOLATION_OPTION,
        name="Isolation",
        description="Where a Workflow turn edits: your files, or a worktree of its own until you apply it",
        type="select",
        current_value=session.isolation,
        options=[
            SessionConfigSelectOption(value=value, name=name, description=about)
            for value, (name, about) in ISOLATION_CHOICES.items()
        ],
    )


def _attempts(session: AcpSession) -> SessionConfigOptionSelect:
    values = sorted({*ATTEMPT_CHOICES, session.attempts})
    return SessionConfigOptionSelect(
        id=ATTEMPTS_OPTION,
        name="Attempts",
        description="How many attempts a Workflow turn makes at once, each in a worktree; the tests choose",
        type="select",
        current_value=str(session.attempts),
        options=[SessionConfigSelectOption(value=str(n), name=str(n)) for n in values],
    )


def _choose(session: AcpSession) -> SessionConfigOptionSelect:
    return SessionConfigOptionSelect(
        id=CHOOSE_OPTION,
        name="Choose",
        description="How the tests choose among several attempts",
        type="select",
        current_value=session.choose,
        options=[
            SessionConfigSelectOption(value=value, name=name, description=about)
            for value, (name, about) in CHOOSE_CHOICES.items()
        ],
    )


def set_option(session: AcpSession, config_id: str, value: object) -> None:
    """Apply one option; OptionError for an unknown option or value."""
    if config_id == MODE_OPTION:
        mode = parse_mode(value)
        if mode is None:
            raise OptionError(f"unknown mode {value!r}")
        session.mode = mode
    elif config_id == AIDER_MODEL_OPTION:
        if not value or value not in _model_choices(session, session.app.aider_model() or ""):
            raise OptionError(f"unknown Aider model {value!r}: set AIDER_LSP_AIDER_MODEL for another")
        session.app.set_aider_model(str(value))
    elif config_id == RETRIES_OPTION:
        session.max_retries = _retry_count(value)
    elif config_id == ISOLATION_OPTION:
        if value == "none" or value == "worktree":
            session.isolation = value
        else:
            raise OptionError(f"unknown isolation {value!r}: none or worktree")
    elif config_id == ATTEMPTS_OPTION:
        session.attempts = _attempt_count(value)
    elif config_id == CHOOSE_OPTION:
        if value == "first-green" or value == "compare":
            session.choose = value
        else:
            raise OptionError(f"unknown choice {value!r}: first-green or compare")
    else:
        options = (
            MODE_OPTION,
            AIDER_MODEL_OPTION,
            RETRIES_OPTION,
            ISOLATION_OPTION,
            ATTEMPTS_OPTION,
            CHOOSE_OPTION,
        )
        known = ", ".join(options)
        raise OptionError(f"unknown config option {config_id!r}: this agent has {known}")


def _retry_count(value: object) -> int:
    try:
        count = int(str(value))
    except ValueError:
        count = -1
    if not 0 <= count <= 20:
        raise OptionError(f"retries must be a number from 0 to 20, got {value!r}")
    return count


def _attempt_count(value: object) -> int:
    try:
        count = int(str(value))
    except ValueError:
        raise OptionError(f"attempts must be a number from 1 to 8, not {value!r}") from None
    if not 1 <= count <= 8:
        raise OptionError(f"attempts must be from 1 to 8, not {count}")
    return count
