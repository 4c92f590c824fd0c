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
    from pathlib import Path

    from ..config.settings import Settings
    from .language_server import AiderLanguageServer

log = logging.getLogger(__name__)


def validated(
    ls: AiderLanguageServer, explicit: dict[str, Any], previous: Settings | None
) -> Settings | None:
    """`explicit` over the environment, each bad value dropped; the problems become the server's
    current settings problem (shown once the editor's settings are all known)."""
    from ..config.settings import settings_over

    settings, problems = settings_over(explicit, previous)
    if problems:
        fallback = "ignored" if settings is not None else "the previous settings stay"
        ls.settings_problem = f"aider-lsp: {'; '.join(problems)} ({fallback})"
    else:
        ls.settings_problem = None
    if ls.configured.is_set():
        show_settings_problem(ls)
    return settings


def apply_settings(ls: AiderLanguageServer, explicit: dict[str, Any]) -> None:
    """The window's settings (no folder's scope): also every open folder's when the client
    cannot be asked for a folder's own (no workspace/configuration)."""
    from ..config.settings import Settings

    settings = validated(ls, explicit, ls.settings)
    if settings is None:
        if ls.settings is None:  # the first settings are bad as a whole: start from the defaults
            ls.settings = Settings()
        return
    ls.settings = settings
    if not can_pull(ls):
        for app in list(ls.folders.apps.values()):
            app.update_settings(settings)


def show_settings_problem(ls: AiderLanguageServer) -> None:
    """Show the current settings problem unless it is the one shown last."""
    problem = ls.settings_problem
    if problem is not None and problem != ls.settings_problem_shown:
        ls.window_show_message(types.ShowMessageParams(types.MessageType.Error, problem))
    ls.settings_problem_shown = problem


def can_pull(ls: AiderLanguageServer) -> bool:
    return bool(get_capability(ls.client_capabilities, "workspace.configuration", False))


async def _pull(ls: AiderLanguageServer, roots: list[Path | None]) -> list[dict[str, Any]] | None:
    """The `aiderLsp` section for each scope (None: the window's), or None when the client
    cannot or will not answer."""
    from ..config.settings import SECTION

    if not can_pull(ls):
        return None
    items = [
        types.ConfigurationItem(section=SECTION, scope_uri=root.as_uri() if root is not None else None)
        for root in roots
    ]
    try:
        configs = await ls.workspace_configuration_async(types.ConfigurationParams(items=items))
    except Exception as exc:  # a client that fails this request is not fatal
        log.warning("workspace/configuration failed: %s", exc)
        return None
    answers = list(configs or [])
    return [
        answer if isinstance(answer, dict) else {} for answer in answers + [{}] * (len(items) - len(answers))
    ]


def folder_own(folder: dict[str, Any], window: dict[str, Any]) -> dict[str, Any]:
    """The values a folder's scoped answer holds of its own: those that differ from the window's
    answer (VS Code answers a folder's scope with everything merged: defaults, user, workspace,
    and the folder's `.vscode/settings.json`)."""
    return {key: value for key, value in folder.items() if window.get(key) != value}


def _folder_explicit(
    ls: AiderLanguageServer, folder: dict[str, Any], window: dict[str, Any]
) -> dict[str, Any]:
    """A folder's settings: the window's (as last sent or read) with the folder's own over them."""
    return {**ls.init_options, **ls.window_section, **folder_own(folder, window)}


async def folder_settings(ls: AiderLanguageServer, root: Path) -> Settings:
    """The settings in force in one folder (its own values over the window's)."""
    assert ls.settings is not None  # applied at initialized
    pulled = await _pull(ls, [None, root])
    if pulled is None:
        return ls.settings
    return validated(ls, _folder_explicit(ls, pulled[1], pulled[0]), ls.settings) or ls.settings


def apply_window_section(ls: AiderLanguageServer, section: dict[str, Any]) -> None:
    ls.window_section = section
    apply_settings(ls, {**ls.init_options, **section})


async def pull_configuration(ls: AiderLanguageServer, pushed: dict[str, Any] | None = None) -> None:
    """Read the `aiderLsp` section for the window and for each folder in use, in one request;
    `pushed` is the window's section when didChangeConfiguration carried it (it wins)."""
    if pushed is not None:
        apply_window_section(ls, pushed)
    alive = list(ls.folders.apps.items())
    pulled = await _pull(ls, [None, *(root for root, _ in alive)])
    if pulled is None:
        return
    window = pulled.pop(0)
    if pushed is None:
        apply_window_section(ls, window)
    for (_, app), section in zip(alive, pulled, strict=True):
        settings = validated(ls, _folder_explicit(ls, section, window), app.settings)
        if settings is not None:
            app.update_settings(settings)


def register(server: AiderLanguageServer) -> None:
    @server.feature(types.WORKSPACE_DID_CHANGE_CONFIGURATION)
    async def on_configuration_changed(
        ls: AiderLanguageServer, params: types.DidChangeConfigurationParams
    ) -> None:
        from ..config.settings import SECTION

        settings = params.settings
        pushed = settings.get(SECTION) if isinstance(settings, dict) else None
        await pull_configuration(ls, pushed if isinstance(pushed, dict) else None)
