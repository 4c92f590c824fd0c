"""The user's settings as the editor sends them: initializationOptions, the `aiderLsp`
section pulled with workspace/configuration, and didChangeConfiguration.

A bad value is shown to the user by name and ignored: only the bad setting keeps its previous
value (or its default), the others (the model, its URL…) still apply. A bad `AIDER_LSP_*`
variable keeps the previous settings whole. Problems are shown once the editor's settings are
all known (after the configuration pull that follows `initialized`), and a problem arriving
again from another source (initializationOptions, the pull, didChangeConfiguration) is shown
once, until it changes.

The settings module (pydantic) is imported by the functions that use it: they run once the
client is initialized, and answering initialize should cost only pygls.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from lsprotocol import types
from pygls.capabilities import get_capability

if TYPE_CHECKING:
    from .language_server import AiderLanguageServer

log = logging.getLogger(__name__)


def apply_settings(ls: AiderLanguageServer, explicit: dict[str, Any]) -> None:
    """Validate and apply settings; the problems become the server's current settings problem."""
    from ..settings import Settings, settings_over

    settings, problems = settings_over(explicit, ls.settings)
    if problems:
        fallback = "ignored" if settings is not None else "the previous settings stay"
        ls.settings_problem = f"aider-lsp: {'; '.join(problems)} ({fallback})"
    else:
        ls.settings_problem = None
    if ls.configured.is_set():
        show_settings_problem(ls)
    if settings is None:
        if ls.settings is None:  # the first settings are bad as a whole: start from the defaults
            ls.settings = Settings()
        return
    ls.settings = settings
    if ls.app is not None:
        ls.app.update_settings(settings)


def show_settings_problem(ls: AiderLanguageServer) -> None:
    """Show the current settings problem unless it is the one shown last."""
    problem = ls.settings_problem
    if problem is not None and problem != ls.settings_problem_shown:
        ls.window_show_message(types.ShowMessageParams(types.MessageType.Error, problem))
    ls.settings_problem_shown = problem


async def pull_configuration(ls: AiderLanguageServer) -> None:
    """Read the `aiderLsp` section when the client supports workspace/configuration."""
    from ..settings import SECTION

    if not get_capability(ls.client_capabilities, "workspace.configuration", False):
        return
    try:
        configs = await ls.workspace_configuration_async(
            types.ConfigurationParams(items=[types.ConfigurationItem(section=SECTION)])
        )
    except Exception as exc:  # a client that fails this request is not fatal
        log.warning("workspace/configuration failed: %s", exc)
        return
    section = configs[0] if configs and isinstance(configs[0], dict) else {}
    apply_settings(ls, {**ls.init_options, **section})


def register(server: AiderLanguageServer) -> None:
    @server.feature(types.WORKSPACE_DID_CHANGE_CONFIGURATION)
    async def on_configuration_changed(
        ls: AiderLanguageServer, params: types.DidChangeConfigurationParams
    ) -> None:
        from ..settings import SECTION

        settings = params.settings
        if isinstance(settings, dict) and isinstance(settings.get(SECTION), dict):
            apply_settings(ls, {**ls.init_options, **settings[SECTION]})
        else:
            await pull_configuration(ls)
