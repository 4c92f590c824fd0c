"""What a front end asks before (or without) opening an Application: how the settings configure
the planning model and Aider, which test command a workspace would get, and Aider's server
spawned ahead of the Application.

Why apart from app.py: app.py imports every service (about 0.3 s more than these answers need),
and `aider-lsp run` spawns Aider's server before that import so that Aider's start overlaps it;
`aider-lsp doctor` answers most of its lines without an Application at all. Each answer imports
the room that gives it when asked, as the CLI did. A front end asks here or the Application,
never a service behind them (tests/core/test_layers.py holds it).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .aider.spawn import Spawned
    from .config.settings import Settings
    from .llm.model_config import ModelConfig
    from .models.suite_command import ChosenTestCommand

    EarlyAider = Spawned  # Aider's server process, started ahead, for `Application.warm_up`


def model_config(settings: Settings) -> ModelConfig:
    """The planning model as the settings name it (llm/model_config.py): its id, provider,
    endpoint, where its key comes from, or the problem that stops it, naming the setting."""
    from .llm.model_config import resolve_model_config

    return resolve_model_config(settings)


def model_problem(settings: Settings, model_id: str) -> str | None:
    """Why the planning model `model_id` cannot be built as configured (the provider's own
    client refusing its environment included), or None."""
    from .llm.model_config import LLMConfigurationError, build_model

    try:
        build_model(settings)
    except LLMConfigurationError as exc:
        return str(exc)
    except Exception as exc:  # a provider's own client refusing its environment
        return f"cannot use model {model_id!r}: {exc}"
    return None


def aider_model(settings: Settings) -> str | None:
    """Aider's model as the settings name it (`aiderModel`, else derived from `model`)."""
    from .aider.launch import aider_model_for

    return aider_model_for(settings)


def chosen_test_command(workspace: Path, settings: Settings) -> ChosenTestCommand | None:
    """The command a run would test `workspace` with, and why (set, confirmed or detected)."""
    from .suite.choose import choose_test_command

    return choose_test_command(workspace, settings)


def no_suite_message() -> str:
    """What to say when a workspace has no test command to run."""
    from .suite.choose import no_suite_message as message

    return message()


async def spawn_aider(settings: Settings, workspace: Path) -> EarlyAider | None:
    """Aider's server started for `workspace` ahead of the Application, which adopts it
    (`Application.warm_up(early)`); None when the settings do not start one."""
    from .aider.spawn import spawn_early

    return await spawn_early(settings, workspace)


def discard_aider(early: EarlyAider) -> None:
    """Stop Aider's server spawned ahead of a run that does not start."""
    from .aider.spawn import discard

    discard(early)
