"""Aider behind a small, thread-safe API: one-shot edits and multi-turn chat sessions.

Everything here runs in worker threads (Aider is synchronous); one edit at a time.
Aider and litellm are imported lazily (`warm_up()` does it once, in the background) because
`import litellm` takes seconds. Network: litellm uses its bundled price map and Aider's
model-info cache is filled from it, so no price list is ever downloaded.
"""

from __future__ import annotations

import base64
import contextlib
import fnmatch
import functools
import json
import logging
import os
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .history import SummarySpend, before_turn, summarize_on_next_turn
from .images import NO_VISION, ImageRefused, checked_images, shown_for_the_turn, vision_refusal
from .rehearsal import rehearse_provider_call
from .snapshots import Snapshot
from .streaming import ReplySink, ask_for_stream_usage, streamed_reply

log = logging.getLogger("aider_mcp")

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("AIDER_CHECK_UPDATE", "false")
os.environ.setdefault("AIDER_ANALYTICS", "false")

MAX_REPLY_CHARS = 20_000
REHEARSAL_GRACE = 0.5  # seconds after the warm-up in which a first edit makes the rehearsals moot
MAX_SESSIONS = 16
# Never written by an edit, whatever the LLM names: version-control internals (hooks run code)
# and aider-lsp's own state (checkpoints, index).
PROTECTED_DIRS = frozenset({".git", ".hg", ".svn", ".aider-lsp"})


def secret_patterns_from_env(environ: Any = None) -> list[str]:
    """`AIDER_MCP_SECRET_PATTERNS` (a JSON list, set by aider-lsp's bridge) → patterns."""
    raw = (os.environ if environ is None else environ).get("AIDER_MCP_SECRET_PATTERNS", "")
    try:
        value = json.loads(raw) if raw else []
    except ValueError:
        return []
    return (
        [str(item) for item in value if isinstance(item, str) and item.strip()]
        if isinstance(value, list)
        else []
    )


def matches_secret(rel: str, patterns: list[str]) -> bool:
    """gitignore-like: a pattern without a slash matches any path component (or a run of
    them), one with a slash the path from the root or a folder above it. Over-matching only
    hides a file from the repo map, so it errs that way."""
    components = rel.replace(os.sep, "/").lower().split("/")
    for raw in patterns:
        pat = raw.strip().lower().rstrip("/")
        anchored = "/" in pat
        pat = pat.lstrip("/")
        while pat.startswith("**/"):
            pat, anchored = pat[3:], False
        if not pat:
            continue
        if anchored:
            spans = ["/".join(components[: i + 1]) for i in range(len(components))]
        else:
            spans = [
                "/".join(components[i:j])
                for i in range(len(components))
                for j in range(i + 1, len(components) + 1)
            ]
        if any(fnmatch.fnmatch(span, pat) for span in spans):
            return True
    return False


def state_dir(root: Path) -> Path:
    """`<root>/.aider-lsp/` with its `.gitignore` (as aider_lsp/config/state.py makes it: this
    package runs in Aider's environment and cannot import aider_lsp)."""
    folder = root / ".aider-lsp"
    folder.mkdir(exist_ok=True)
    ignore = folder / ".gitignore"
    if not ignore.exists():
        ignore.write_text("*\n", encoding="utf-8")
    return folder


UNKNOWN_SESSION = "unknown_session"  # the answer's `code` for a chat this server does not have


class EngineError(Exception):
    """A request the engine cannot serve (bad path, unknown session); becomes {"error"}, with
    a `code` where the client acts on the kind of error (UNKNOWN_SESSION: start a new chat)."""

    def __init__(self, message: str, code: str | None = None) -> None:
        super().__init__(message)
        self.code = code


@dataclass
class EngineConfig:
    cwd: Path
    model: str
    edit_format: str | None = None
    map_tokens: int = 0
    retry_timeout: float | None = 10.0
    max_output_tokens: int = 0  # the cap on each reply (0: the model's own), as litellm's max_tokens
    allow_outside_edits: bool = False
    # gitignore-like patterns of secret files (the client's secretPatterns, its defaults and
    # secret folders as "name/"): they never appear in the repo map nor as addable mentions
    secret_patterns: list[str] = field(default_factory=list)


@dataclass
class Session:
    coder: Any
    model: str
    editable: list[str] = field(default_factory=list)
    readonly: list[str] = field(default_factory=list)
    turns: int = 0


def _make_io_class() -> Any:
    from aider.io import InputOutput

    class CapturingIO(InputOutput):
        """Aider's IO that answers yes, never prompts, and keeps the errors it printed."""

        newline: str | None  # set by InputOutput.__init__ (None: the platform's line ending)

        def __init__(self, **kwargs: Any) -> None:
            super().__init__(**kwargs)
            self.errors: list[str] = []
            self.declined: list[str] = []
            self.conflicts: list[str] = []
            self.snapshot: Snapshot | None = None  # set for each run: guards writes
            self.allow_outside_edits = False
            # set for a turn that may widen the chat (a workflow's): whether this file may join
            self.may_join: Callable[[str], bool] | None = None

        def confirm_ask(
            self, question: str, default: str = "y", subject: Any = None, *args: Any, **kwargs: Any
        ) -> bool:
            """Yes to everything except widening the file set (`_refuses`)."""
            if _refuses(self, question, subject):
                return False
            return super().confirm_ask(question, default, subject, *args, **kwargs)

        def tool_error(self, message: str = "", strip: bool = True) -> None:
            text = _merge_encoding_advice(str(message).strip(), self.errors)
            if text:
                self.errors.append(text)
            super().tool_error(message, strip)

        def get_input(self, *args: Any, **kwargs: Any) -> str:  # stdin is the MCP pipe
            raise EOFError

        def write_text(self, filename: Any, content: str, *args: Any, **kwargs: Any) -> None:
            """Keep a CRLF file CRLF: Aider reads with newline translation and writes "\n",
            which rewrote every line of a Windows-style file. Never overwrite a file that
            changed on disk since the edit began (the user saved it meanwhile)."""
            snapshot = self.snapshot
            if snapshot is not None and not snapshot.still_as_read(filename):
                self.conflicts.append(str(filename))
                self.tool_error(f"{filename} changed on disk during the edit: not overwritten")
                return
            newline = self.newline
            if _uses_crlf(filename) and "\r\n" not in content:
                self.newline = "\r\n"
            if snapshot is not None:
                snapshot.remember(filename)  # its content before this edit's first write
            try:
                super().write_text(filename, content, *args, **kwargs)
            finally:
                self.newline = newline
                if snapshot is not None:
                    snapshot.mark_written(filename)

    return CapturingIO


def _merge_encoding_advice(text: str, errors: list[str]) -> str:
    """Aider's "Use --encoding" advice names a flag this server does not take; the error before
    it names the file ("x.py: 'utf-8' codec can't decode byte 0xe9 …"): one message of both."""
    if text.startswith("Use --encoding") and errors:
        return f"{errors.pop()}: the file is not UTF-8; convert it to UTF-8 and try again"
    return text


def _widens_the_file_set(question: str, allow_outside_edits: bool) -> bool:
    """Whether Aider asks to add a mentioned file or URL to the chat, or to edit a file outside
    the editable list (unless allowed): each would widen what reaches the LLM or is written."""
    lowered = question.lower()
    if lowered.startswith(("add file to the chat", "add url to the chat")):
        return True
    return lowered.startswith("allow edits to file that has not been added") and not allow_outside_edits


def _refuses(io: Any, question: str, subject: Any) -> bool:
    """Whether Aider's IO answers no: mentioned files and URLs are not added to the chat (their
    content would reach the LLM: secrets, other projects), and existing files outside the
    editable list are not edited, unless allowed by the server (`allow_outside_edits`) or,
    file by file, by the turn (`io.may_join`, a workflow's chat turn). A refused file is
    remembered in `io.declined`."""
    if not _widens_the_file_set(question, io.allow_outside_edits):
        return False
    if _about_a_file(question) and subject and io.may_join is not None and io.may_join(str(subject)):
        return False
    if subject:
        io.declined.append(str(subject))
    return True


def _about_a_file(question: str) -> bool:
    """Aider asks to add a mentioned file or to edit one outside the chat (not a URL)."""
    lowered = question.lower()
    return lowered.startswith(("add file to the chat", "allow edits to file that has not been added"))


def _uses_crlf(filename: Any) -> bool:
    """Whether the file on disk has Windows line endings (its first 64 KiB tell)."""
    try:
        with open(str(filename), "rb") as handle:
            return b"\r\n" in handle.read(65536)
    except OSError:
        return False


@dataclass
class Meter:
    """What Aider's own token count leaves out: how many requests a coder sent (each attempt,
    a reflection's and an "add these files" round trip's included) and the prompt tokens the
    provider read from its cache."""

    requests: int = 0
    cached_tokens: int = 0
    summaries: SummarySpend = field(default_factory=SummarySpend)  # history.py


def _meter(coder: Any) -> None:
    """Count each request the coder sends (`send`, one call per request) and the cached
    prompt tokens each answer reports (`calculate_and_show_tokens_and_cost`, where Aider reads
    the answer's usage)."""
    meter = Meter()
    send, count = coder.send, coder.calculate_and_show_tokens_and_cost

    def counted_send(messages: Any, model: Any = None, functions: Any = None) -> Any:
        meter.requests += 1
        return send(messages, model, functions)

    def counted_usage(messages: Any, completion: Any = None) -> Any:
        meter.cached_tokens += cached_prompt_tokens(getattr(completion, "usage", None))
        return count(messages, completion)

    coder.send = counted_send
    coder.calculate_and_show_tokens_and_cost = counted_usage
    meter.summaries = summarize_on_next_turn(coder)
    coder.aider_lsp_meter = meter


def cached_prompt_tokens(usage: Any) -> int:
    """The prompt tokens an answer says came from the provider's cache, in whichever name the
    provider uses (OpenAI's `prompt_tokens_details.cached_tokens`, Anthropic's
    `cache_read_input_tokens`, DeepSeek's `prompt_cache_hit_tokens`); 0 when none is said."""
    if usage is None:
        return 0
    details = getattr(usage, "prompt_tokens_details", None)
    for value in (
        getattr(details, "cached_tokens", None),
        getattr(usage, "cache_read_input_tokens", None),
        getattr(usage, "prompt_cache_hit_tokens", None),
    ):
        if isinstance(value, int) and value > 0:
            return value
    return 0


@contextlib.contextmanager
def _added_on_request_only(coder: Any, message: str, widening: bool) -> Iterator[None]:
    """On a turn that may widen the chat: files the model's reply asks for join it, files the
    turn's own message names do not. Aider offers both ("Add file to the chat?"), but a
    workflow's message names files on purpose without sending them (the first edit's other
    candidates, which the repository map then shows; the files in a test's output): adding
    them would send each whole with every request of the chat."""
    if not widening:
        yield
        return
    original = coder.check_for_file_mentions

    def check(content: str) -> Any:
        return None if content == message else original(content)

    coder.check_for_file_mentions = check
    try:
        yield
    finally:
        coder.__dict__.pop("check_for_file_mentions", None)  # the class's method again


def _b64(data: bytes | None) -> str | None:
    return None if data is None else base64.b64encode(data).decode("ascii")


class AiderEngine:
    """Owns the Aider models and chat sessions of one server process."""

    def __init__(self, config: EngineConfig) -> None:
        self.config = config
        self.root = config.cwd.resolve()
        self.lock = threading.Lock()
        self._models: dict[str, Any] = {}
        self._sessions: dict[str, Session] = {}
        self._one_shot_maps: dict[str, Any] = {}  # model name -> the RepoMap one-shot edits share
        self._io_class: Any = None
        self._warm = threading.Lock()
        # edits waiting for the engine or running: the background warm-up yields to them
        self._edits = 0
        self._edits_seen = 0
        self._edits_changed = threading.Condition()
        # Aider asks for the repository's file list several times per message; matching every
        # path against every pattern each time cost about half a second a call on a 200-file
        # repository: each path is judged once (the patterns are fixed for the process)
        patterns = list(config.secret_patterns)
        self._is_secret = functools.lru_cache(maxsize=1 << 16)(lambda rel: matches_secret(rel, patterns))

    # -- setup -----------------------------------------------------------------------------
    def warm_up(self) -> None:
        """Import Aider and litellm and build the default model (idempotent): what every edit
        needs first, and waits for."""
        with self._warm:
            if self._io_class is not None:
                return
            from aider.llm import litellm

            from aider import models

            litellm._load_litellm()
            manager = models.model_info_manager
            manager._load_cache()
            if not manager.content:
                # never let Aider download the price list: serve it litellm's bundled map
                manager.content = dict(litellm.model_cost) or {"__offline__": {}}
            if self.config.retry_timeout is not None:
                import aider.coders.base_coder as base_coder

                base_coder.RETRY_TIMEOUT = self.config.retry_timeout
                models.RETRY_TIMEOUT = self.config.retry_timeout
            if self.config.map_tokens > 0:
                from aider.repomap import RepoMap

                # Aider writes its tags cache (`.aider.tags.cache.v4/`) into the repository's
                # root: keep it in aider-lsp's own state folder, which git ignores
                RepoMap.TAGS_CACHE_DIR = str(state_dir(self.root) / RepoMap.TAGS_CACHE_DIR.lstrip("."))
            self._io_class = _make_io_class()
            # what the first edit would otherwise pay (about 1.5 s, measured): the tokenizer that
            # counts the chat's tokens, and the OpenAI client's resources that litellm imports
            # on its first completion
            self._model(self.config.model).token_count("warm up")
            import httpcore  # noqa: F401
            import openai.resources  # noqa: F401

    def warm_up_in_background(self) -> None:
        """The server's start: `warm_up`, then what only makes the first edits faster (the
        rehearsals, Aider's tags cache). Edits go first: the rehearsals are skipped once an
        edit came, or comes within REHEARSAL_GRACE (a client that sends its first edit as soon
        as the server is up, `aider-lsp run`, would otherwise wait half a second for a
        rehearsal saving it 0.15 s); the tags cache pauses while an edit waits or runs."""
        self.warm_up()
        time.sleep(REHEARSAL_GRACE)
        if not self._edits_seen:
            self._unless_editing(self._rehearse_all)
        if self.config.map_tokens > 0:
            self._build_tags_cache()

    @contextlib.contextmanager
    def _editing(self) -> Iterator[None]:
        """Hold the engine for one edit; the background warm-up yields meanwhile."""
        with self._edits_changed:
            self._edits += 1
            self._edits_seen += 1
        try:
            with self.lock:
                yield
        finally:
            with self._edits_changed:
                self._edits -= 1
                self._edits_changed.notify_all()

    def _unless_editing(self, step: Callable[[], None]) -> bool:
        """Run `step` holding the engine, unless an edit waits or runs (then it is skipped)."""
        with self._edits_changed:
            if self._edits or not self.lock.acquire(blocking=False):
                return False
        try:
            step()
        finally:
            self.lock.release()
        return True

    def _wait_until_no_edit(self) -> None:
        with self._edits_changed:
            self._edits_changed.wait_for(lambda: self._edits == 0)

    def _rehearse_all(self) -> None:
        from aider.llm import litellm

        self._rehearse()
        rehearse_provider_call(litellm, self.config.model)

    def _build_tags_cache(self) -> None:
        """Parse every file of the repo map into Aider's own tags cache (in `.aider-lsp/`),
        which the map otherwise fills on the first edit: seconds to minutes on a large
        repository, all on that edit. File by file, pausing while an edit waits or runs (that
        edit parses what its map needs itself, as it would have anyway; files parsed here
        are read from the cache by every later map). Writes nothing but the cache."""
        try:
            coder = self._new_coder(self.config.model, [], [])
            repo_map = coder.repo_map
            if repo_map is None:
                return
            for rel in coder.get_all_relative_files():
                self._wait_until_no_edit()
                repo_map.get_tags(str(self.root / rel), rel)
            self._wait_until_no_edit()
            with self.lock:  # an edit arriving meanwhile waits, then maps from its caches
                self._prime_map(coder)
        except Exception as exc:  # a help only: the first edit's map parses what it needs
            log.warning("building Aider's tags cache failed: %s", exc)

    def _prime_map(self, coder: Any) -> None:
        """Render one map (the whole repository's, as for an empty chat): its render caches
        (the files' parsed trees, keyed by mtime) then serve every later map, the one-shot
        edits' (this becomes their shared RepoMap) and each new chat's (`_reuse_render_caches`),
        which otherwise parse again every file they show (about 40% of a first map on a
        2,000-file repository, measured). Under the engine's lock: an edit that arrives
        meanwhile would pay about as much for its own map from empty caches."""
        coder.get_repo_map()
        self._one_shot_maps.setdefault(self.config.model, coder.repo_map)

    def _reuse_render_caches(self, coder: Any, model: str) -> None:
        """A new chat's map starts with the render caches of the shared one (keyed by file and
        mtime, so they stay true), not empty."""
        kept = self._one_shot_maps.get(model)
        if coder.repo_map is not None and kept is not None:
            coder.repo_map.tree_cache = kept.tree_cache
            coder.repo_map.tree_context_cache = kept.tree_context_cache

    def _rehearse(self) -> None:
        """One chat round answered by litellm's `mock_response` (no network, no cost), so the
        first real edit does not pay the code paths Aider and litellm load on first use (about
        0.15 s, measured). Its own Model object: an edit running meanwhile never sees the mock."""
        from aider.models import Model

        model = Model(self.config.model)
        model.extra_params = {**(model.extra_params or {}), "mock_response": "Nothing to change."}
        coder = self._new_coder(self.config.model, [], [], main_model=model)
        coder.repo_map = None  # no map: it would parse every file here (`_build_tags_cache`)
        try:
            with streamed_reply(coder, lambda text: None):  # edits stream when a client reads them
                coder.run(with_message="Reply: nothing to change.")
        except Exception as exc:  # a rehearsal only: the real edit will say what is wrong
            log.warning("warm-up rehearsal failed: %s", exc)

    def _model(self, name: str) -> Any:
        from aider.models import Model

        if name not in self._models:
            model = Model(name)
            ask_for_stream_usage(model)
            if self.config.max_output_tokens > 0:  # a model that never stops is cut there
                model.extra_params = {
                    **(model.extra_params or {}),
                    "max_tokens": self.config.max_output_tokens,
                }
            self._models[name] = model
        return self._models[name]

    def refusal(self, path: str | os.PathLike[str]) -> str | None:
        """Why an edit may not write `path` (outside the working directory, after symlinks;
        inside .git or aider-lsp's state), or None."""
        full = Path(os.path.realpath(self.root / path))
        if full == self.root or self.root not in full.parents:
            return "outside the working directory"
        parts = full.relative_to(self.root).parts
        protected = next((part for part in parts if part in PROTECTED_DIRS), None)
        if protected:
            return f"inside {protected}/ (protected)"
        return None

    def _rel_paths(self, paths: list[str] | None, field_name: str) -> list[str]:
        clean: list[str] = []
        for path in paths or []:
            if not isinstance(path, str) or not path.strip():
                raise EngineError(f"{field_name} must hold non-empty relative paths")
            full = (self.root / path).resolve()
            if full != self.root and self.root not in full.parents:
                raise EngineError(f"{path!r} is outside the working directory")
            problem = self.refusal(path)
            if problem and field_name == "relative_editable_files":
                raise EngineError(f"{path!r} may not be edited: {problem}")
            clean.append(os.path.relpath(full, self.root))
        return clean

    def _new_coder(
        self,
        model: str,
        editable: list[str],
        readonly: list[str],
        main_model: Any = None,
        edit_format: str | None = None,
    ) -> Any:
        """A Coder over the files; `main_model` replaces the cached Model (the rehearsal's);
        `edit_format` replaces the configured one (Aider's "ask": answers, never edits)."""
        from aider.coders import Coder

        io = self._io_class(
            yes=True,
            pretty=False,
            fancy_input=False,
            chat_history_file=None,
            input_history_file=None,
            llm_history_file=None,
            root=str(self.root),
        )
        io.allow_outside_edits = self.config.allow_outside_edits
        coder = Coder.create(
            main_model=main_model or self._model(model),
            edit_format=edit_format or self.config.edit_format,
            io=io,
            fnames=[str(self.root / rel) for rel in editable],
            read_only_fnames=[str(self.root / rel) for rel in readonly],
            auto_commits=False,
            dirty_commits=False,
            suggest_shell_commands=False,
            detect_urls=False,
            map_tokens=self.config.map_tokens,
            # a chat's later turns reuse the map while its files stay the same (Aider's "auto"
            # recomputes it every turn when that takes under a second: about a second a turn)
            map_refresh="files",
            use_git=self.config.map_tokens > 0,
            auto_lint=False,
            auto_test=False,
            stream=False,  # per message: streamed_reply
            show_diffs=False,
            # providers that cache prompts by marked breakpoints (Anthropic's cache_control) get
            # them after the stable parts (system prompt, repo map, files); OpenAI-style prefix
            # caches need no marks, only the stable order Aider already keeps
            cache_prompts=True,
        )
        _meter(coder)
        if coder.repo is None:
            coder.root = str(self.root)  # paths relative to the workspace, not the files' common dir
        if self.config.secret_patterns:
            # the repo map (map_tokens > 0) shows lines of every tracked file, and mentions of
            # tracked files are offered for the chat: secret files are in neither
            all_files = coder.get_all_relative_files
            coder.get_all_relative_files = lambda: [f for f in all_files() if not self._is_secret(f)]
        # a prompt is data, never an Aider chat command: "/run …" or "!…" would run a shell
        # command, "/add" / "/read-only" would put any file (secrets, outside the workspace) in
        # the chat, "/web" would fetch a URL; prompts may come from a model (plans, analyses)
        coder.commands.is_command = lambda inp: False
        return coder

    def _share_repo_map(self, coder: Any, model: str) -> None:
        """Give a one-shot edit's coder the RepoMap of the previous one (same model).

        Each coder builds its own RepoMap, whose caches of rendered files start empty: every
        one-shot edit ranked and rendered the whole map again (0.35-0.45 s on a 240-file
        repository against 0.1 s kept, measured). Its file caches are keyed by mtime, so they
        stay true; the finished map is dropped, since files may have changed since the last
        edit. Chats keep their own map (reused while their files stay the same)."""
        if coder.repo_map is None:
            return
        kept = self._one_shot_maps.setdefault(model, coder.repo_map)
        if kept is not coder.repo_map:
            kept.io = coder.io  # its warnings belong to this edit
            kept.map_cache.clear()
            kept.last_map = None
            coder.repo_map = kept

    # -- edits -----------------------------------------------------------------------------
    @staticmethod
    def _spent(coder: Any) -> tuple[int, int, float, int, int]:
        """The coder's tokens sent and received, cost, requests and cached prompt tokens so
        far, its history's summaries included. Aider adds a message's tokens to its totals
        only when it prints the usage report: count the pending ones too."""
        meter: Meter = coder.aider_lsp_meter
        summaries = meter.summaries
        return (
            int(coder.total_tokens_sent) + int(coder.message_tokens_sent) + summaries.sent,
            int(coder.total_tokens_received) + int(coder.message_tokens_received) + summaries.received,
            float(coder.total_cost) + summaries.cost,
            meter.requests + summaries.requests,
            meter.cached_tokens,
        )

    @classmethod
    def _usage_since(cls, coder: Any, before: tuple[int, int, float, int, int]) -> dict[str, Any]:
        """This run's usage (the contract's extension): cost is None when Aider knows no price
        for the model (a local or unknown one), never a made-up zero; `requests` counts every
        request Aider made (its reflections and the "add these files" round trips too),
        `cached_tokens` the prompt tokens the provider said it read from its cache (priced as
        such by litellm's cost)."""
        sent, received, cost, requests, cached = cls._spent(coder)
        priced = bool(coder.main_model.info.get("input_cost_per_token"))
        return {
            "prompt_tokens": sent - before[0],
            "completion_tokens": received - before[1],
            "cost": round(cost - before[2], 8) if priced else None,
            "requests": requests - before[3],
            "cached_tokens": cached - before[4],
        }

    def _run_confined(
        self, coder: Any, prompt: str, snapshot: Snapshot, read_only: bool, on_text: ReplySink | None
    ) -> tuple[str, dict[str, str]]:
        """Aider's reply to one message, every write checked: returns the reply and the paths
        refused with why (outside the working directory, .git, .aider-lsp; every path on an
        ask turn, `read_only`, whatever the Coder's format). `on_text` reads the reply as it
        is written."""
        original = coder.allowed_to_edit
        refused: dict[str, str] = {}

        def allowed_to_edit(path: str) -> Any:
            # an LLM reply may name any path: nothing outside the working directory (../x,
            # /abs, through a symlinked folder) or inside .git / .aider-lsp is ever written
            problem = "an ask turn edits nothing" if read_only else self.refusal(coder.abs_root_path(path))
            if problem:
                refused[str(path)] = problem
                coder.io.tool_error(f"Refused to write {path}: {problem}")
                return None
            snapshot.remember(coder.abs_root_path(path))
            return original(path)

        coder.allowed_to_edit = allowed_to_edit
        coder.io.errors = []
        coder.io.declined = []
        coder.io.conflicts = []
        coder.io.snapshot = snapshot
        try:
            with streamed_reply(coder, on_text):
                return coder.run(with_message=prompt) or "", refused
        finally:
            coder.allowed_to_edit = original
            coder.io.snapshot = None

    def _run(
        self,
        coder: Any,
        prompt: str,
        snapshot: Snapshot,
        *,
        read_only: bool = False,
        on_text: ReplySink | None = None,
    ) -> dict[str, Any]:
        """Run one message; the snapshot was taken before the Coder touched any file.
        `read_only` (an ask turn): every write is refused. `on_text`: see `_run_confined`."""
        spent_before = self._spent(coder)
        in_chat = set(coder.abs_fnames)
        before_turn(coder)  # a chat's history is summarized when it is sent again (history.py)
        reply, refused = self._run_confined(coder, prompt, snapshot, read_only, on_text)
        usage = self._usage_since(coder, spent_before)
        snapshot.drop_empty_created()
        reverted = snapshot.revert_elisions()
        coder.io.conflicts.extend(str(snapshot.root / rel) for rel in snapshot.changed_after_write())
        outcome = snapshot.compare()
        result: dict[str, Any] = {
            "success": outcome.success,
            "diff": outcome.diff,
            "changed_files": outcome.changed_editable,
            "files_outside_editable": outcome.outside,
            "created_files": outcome.created,  # only files this edit wrote: undo may delete them
            "reply": reply[:MAX_REPLY_CHARS],
            "usage": usage,
        }
        added = sorted(os.path.relpath(path, self.root) for path in set(coder.abs_fnames) - in_chat)
        if added:
            result["added_files"] = added  # joined the chat in this turn (a turn that may widen it)
        if outcome.outside:
            # what they held before this edit (None: absent), so the client's undo covers them
            result["outside_before"] = {rel: _b64(snapshot.contents.get(rel)) for rel in outcome.outside}
        if coder.io.errors:
            result["errors"] = coder.io.errors[-10:]
        if coder.io.declined:
            result["declined_files"] = sorted(set(coder.io.declined))
        if refused:
            result["refused_files"] = [{"path": path, "reason": why} for path, why in sorted(refused.items())]
        if coder.io.conflicts:
            result["conflicts"] = sorted({snapshot.relative(path) for path in coder.io.conflicts})
        if reverted:
            # a whole-file reply that elided code would have deleted it: the file is kept
            result["reverted_files"] = reverted
            result["errors"] = [
                *result.get("errors", []),
                *(f"{r['path']}: not written, {r['reason']}" for r in reverted),
            ]
        if not outcome.success:
            result["message"] = "Aider made no change to the editable files" + (
                f": {coder.io.errors[-1]}" if coder.io.errors else ""
            )
        return result

    def code(
        self,
        prompt: str,
        editable: list[str],
        readonly: list[str] | None = None,
        model: str | None = None,
        on_text: ReplySink | None = None,
        images: list[str] | None = None,
    ) -> dict[str, Any]:
        """One stateless edit (the public `aider_ai_code` contract); `on_text` reads Aider's
        reply as it is written; `images` (absolute paths) are shown to a model that reads them."""
        if not prompt or not prompt.strip():
            raise EngineError("ai_coding_prompt must not be empty")
        editable = self._rel_paths(editable, "relative_editable_files")
        readonly = self._rel_paths(readonly, "relative_readonly_files")
        if not editable:
            raise EngineError("relative_editable_files must name at least one file")
        shown = _images(images)
        with self._editing():
            self.warm_up()
            snapshot = Snapshot(self.root, editable, readonly)
            chosen = model or self.config.model
            coder = self._new_coder(chosen, editable, readonly)
            self._share_repo_map(coder, chosen)
            with _images_shown(coder, shown):
                return self._run(coder, prompt, snapshot, on_text=on_text)

    def chat(
        self,
        message: str,
        session_id: str | None = None,
        editable: list[str] | None = None,
        readonly: list[str] | None = None,
        model: str | None = None,
        ask: bool = False,
        allow_outside_files: bool = False,
        unsaved_files: list[str] | None = None,
        on_text: ReplySink | None = None,
        dropped: list[str] | None = None,
        images: list[str] | None = None,
    ) -> dict[str, Any]:
        """One turn of a multi-turn session; a missing session_id starts a new session.
        `ask`: Aider answers about the files (its "ask" format) and writes nothing; the files
        are shown read-only, and a new session is an ask session. `allow_outside_files`: files
        Aider asks to add, or edits outside the chat, join it when `may_join` says so (inside
        the working directory, not secret, not in `unsaved_files`: the client's editor holds
        unsaved changes to those); never on an ask turn. `on_text` reads Aider's reply as it is
        written. `dropped`: files that leave the chat before the turn (a workflow's retry keeps
        the files it changed: the others would be sent whole with every request again).
        `images` (absolute paths): shown to the model for this turn only (images.py)."""
        if not message or not message.strip():
            raise EngineError("message must not be empty")
        shown = _images(images)
        editable = self._rel_paths(editable, "relative_editable_files")
        readonly = self._rel_paths(readonly, "relative_readonly_files")
        leaving = [rel for rel in self._rel_paths(dropped, "dropped_files") if rel not in editable]
        if ask:  # shown, never edited
            readonly, editable = [*readonly, *(p for p in editable if p not in readonly)], []
        with self._editing():
            self.warm_up()
            session_id, session, snapshot = self._turn_session(
                session_id, model, editable, readonly, ask, leaving
            )
            io = session.coder.io
            io.may_join = self._joiner(unsaved_files or []) if allow_outside_files and not ask else None
            try:
                with (
                    _images_shown(session.coder, shown),
                    _added_on_request_only(session.coder, message, io.may_join is not None),
                ):
                    result = self._run(session.coder, message, snapshot, read_only=ask, on_text=on_text)
            finally:
                io.may_join = None
            result["session_id"] = session_id
            result["turn"] = session.turns
            return result

    def _turn_session(
        self,
        session_id: str | None,
        model: str | None,
        editable: list[str],
        readonly: list[str],
        ask: bool,
        leaving: list[str],
    ) -> tuple[str, Session, Snapshot]:
        """The chat a turn continues (its files narrowed, then widened) or a new one, and the
        snapshot of its files taken before the turn runs."""
        session = self._sessions.get(session_id) if session_id else None
        if session_id and session is None:
            raise EngineError(
                f"unknown session_id {session_id!r} (ended or server restarted)", code=UNKNOWN_SESSION
            )
        if session is not None:
            self._narrow(session, leaving)
        known = set(session.editable) if session else set()
        snapshot = Snapshot(self.root, sorted(known | set(editable)), readonly)
        if session_id is not None and session is not None:
            self._widen(session, editable, readonly if ask else [])
        else:
            session_id, session = self._new_session(model, editable, readonly, ask)
        session.turns += 1
        for path in session.coder.abs_fnames:  # files Aider added in earlier turns
            snapshot.add_editable(os.path.relpath(path, self.root))
        return session_id, session, snapshot

    def _narrow(self, session: Session, leaving: list[str]) -> None:
        """Files leave the chat (Aider's `/drop`): no longer sent; its map may show them."""
        for rel in leaving:
            path = session.coder.abs_root_path(rel)
            session.coder.abs_fnames.discard(path)
            session.coder.abs_read_only_fnames.discard(path)
            if rel in session.editable:
                session.editable.remove(rel)

    def _widen(self, session: Session, editable: list[str], readonly: list[str]) -> None:
        """A later turn's files join the chat: editable ones as Aider's own, and the files of a
        later question (`readonly`, on an ask turn) shown read-only."""
        for rel in editable:
            if rel not in session.editable:
                session.coder.add_rel_fname(rel)
                session.editable.append(rel)
        session.coder.abs_read_only_fnames.update(str(self.root / rel) for rel in readonly)

    def _new_session(
        self, model: str | None, editable: list[str], readonly: list[str], ask: bool
    ) -> tuple[str, Session]:
        """A new chat (an ask chat on an ask turn), its map starting from the shared one's
        caches; the oldest chats are forgotten past MAX_SESSIONS."""
        session_id = uuid.uuid4().hex
        chosen = model or self.config.model
        coder = self._new_coder(chosen, editable, readonly, edit_format="ask" if ask else None)
        self._reuse_render_caches(coder, chosen)
        session = Session(coder, chosen, editable, readonly)
        self._sessions[session_id] = session
        while len(self._sessions) > MAX_SESSIONS:
            self._sessions.pop(next(iter(self._sessions)))
        return session_id, session

    def _joiner(self, unsaved: list[str]) -> Callable[[str], bool]:
        """Whether a file Aider names may join a chat: inside the working directory and not
        protected (`refusal`), not secret, and not unsaved in the client's editor."""
        held = {os.path.normpath(rel) for rel in unsaved}

        def may_join(path: str) -> bool:
            full = Path(path) if os.path.isabs(path) else self.root / path
            if self.refusal(full) is not None:
                return False
            rel = os.path.relpath(os.path.realpath(full), self.root)
            return not self._is_secret(rel) and rel not in held

        return may_join

    def end(self, session_id: str) -> dict[str, Any]:
        """Forget a session and its chat."""
        with self.lock:
            existed = self._sessions.pop(session_id, None) is not None
        return {"ended": existed, "session_id": session_id}

    def list_models(self, substring: str = "") -> list[str]:
        """Model names Aider knows (litellm's bundled list)."""
        self.warm_up()
        from aider.models import fuzzy_match_models

        return fuzzy_match_models(substring or "")


def _images(paths: list[str] | None) -> list[str]:
    """The turn's image files checked (images.py), a problem as the engine's error."""
    try:
        return checked_images(paths or [])
    except ImageRefused as exc:
        raise EngineError(str(exc)) from exc


def _images_shown(coder: Any, images: list[str]) -> contextlib.AbstractContextManager[None]:
    """The images shown for the turn; refused by name (NO_VISION) when the model reads none."""
    problem = vision_refusal(coder.main_model, images)
    if problem is not None:
        raise EngineError(problem, code=NO_VISION)
    return shown_for_the_turn(coder, images)
