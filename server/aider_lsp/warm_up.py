"""Getting a workspace ready for its first request, in the background, the same way in every
front end (the LSP server after `initialized`, an ACP session, `aider-lsp run`): the planning
model's libraries imported off the event loop (imported on it by the first LLM call they would
stall every other request for seconds) and Aider's server started, so the first edit does not
pay its start-up; with the `isolation` setting at `worktree`, a spare tree too, so the first
isolated run starts as quickly as the next.

The order is the front end's. A server (LSP, ACP) imports first, while the editor is still
opening: once Aider is up the user works, and seconds of import in a thread then slow every
request through the GIL (measured: an ACP Edit turn 55 → 75-118 ms). A one-shot run
(`aider-lsp run`) starts Aider first, since its first edit waits for Aider and the import would
compete with Aider's start on a small machine; the import then runs in a daemon thread, which
does not hold up the exit of a run that ended before it did (`asyncio.run` joins the loop's
executor threads).
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Awaitable, Callable

from .aider.bridge import AiderBridge
from .aider.launch import aider_model_for
from .aider.spawn import Spawned
from .config.settings import SettingsProvider
from .models import Isolation

log = logging.getLogger(__name__)


class WarmUp:
    """Starts Aider ahead of the first edit, then preloads the planning model; stoppable."""

    def __init__(
        self,
        aider: AiderBridge,
        preload_planning: Callable[[], None],
        settings: SettingsProvider,
        spare_tree: Callable[[], Awaitable[str]],
    ) -> None:
        """`spare_tree`: a tree made ready for the next isolated run (isolation/runs.py)."""
        self.aider = aider
        self.preload_planning = preload_planning
        self.settings = settings
        self.spare_tree = spare_tree
        self._task: asyncio.Task[bool] | None = None

    async def run(self, early: Spawned | None = None, *, aider_first: bool = False) -> bool:
        """Whether Aider runs afterwards; `early`: its process, spawned before the Application
        was built; `aider_first`: a one-shot run's order (above). Failures are logged, never raised."""
        settings = self.settings()
        configured = aider_model_for(settings) is not None or bool(settings.aider_server.command)
        self._task = asyncio.current_task()
        try:
            if not aider_first:
                await asyncio.to_thread(self._preload)
            running = (configured or early is not None) and await self.aider.warm_up(early)
        except Exception as exc:
            log.warning("starting Aider ahead of the first edit failed: %s", exc)
            running = False
        finally:
            self._task = None
        if aider_first:
            threading.Thread(target=self._preload, name="aider-lsp-preload", daemon=True).start()
        if self.settings().isolation == Isolation.WORKTREE:
            await self.spare_tree()
        return running

    def _preload(self) -> None:
        """The preload's thread: a failure is the first LLM call's to report, not a traceback."""
        try:
            self.preload_planning()
        except Exception:
            log.debug("preloading the planning model failed", exc_info=True)

    async def stop(self) -> None:
        """Stop a start still under way (the Application closes); its outcome is not ours."""
        task = self._task
        if task is not None and task is not asyncio.current_task():
            task.cancel()
            await asyncio.wait([task], timeout=10)
