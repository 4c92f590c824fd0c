"""The tests' scripted OpenAI-compatible LLM server: rules, recorded requests, injected faults.

Why: every LLM call in the test-suite goes over real HTTP, so the request that a model would
really receive (system prompt, tools, output schema, model name) can be asserted, and faults
(429, 500, slow, malformed, truncated stream) can be injected, an answer can be held until
the test lets it go (`held`: a test shows that a caller did not wait for the model by an event,
not by the clock), and an answer can be streamed slowly (`dribbled`: pieces with a delay
between them, each first piece's time recorded). The HTTP and SSE core is the product's
`aider_lsp.cli.offline_llm` (the offline demo's server); this module adds the rule table, the
request log, the fault replies and the request matchers.
Standard library only.

Usage::

    with ScriptedLLMServer() as srv:
        srv.add_rule(last_user_contains("plan"), json_output({"instructions": "x", "files": []}))
        srv.add_rule(any_request, fault(429, retry_after=0), times=1)   # first call fails
        srv.latency = 1.0                                                # every call takes 1 s more
        ... point a client at srv.base_url (".../v1") ...
        assert srv.requests[-1]["model"] == "m"

Rules are tried in the order they were added; the first rule whose matcher returns True and
that has uses left answers. A request that no rule matches gets a 500 whose message names the
request's last user message, and is recorded in ``unmatched``.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from aider_lsp.cli.offline_llm import (
    ChatHandler,
    OfflineLLMServer,
    Reply,
    aider_whole,
    json_output,
    last_user_message,
    message_text,
    system_prompt,
    text,
    tool_names,
)

__all__ = [
    "IS_AIDER",
    "IS_ANALYSIS",
    "IS_PLAN",
    "Dribbled",
    "Fault",
    "Malformed",
    "Reply",
    "ReplyLike",
    "ScriptedLLMServer",
    "Slow",
    "Truncated",
    "aider_diff",
    "aider_whole",
    "all_of",
    "any_message_contains",
    "any_of",
    "any_request",
    "dribbled",
    "fault",
    "has_tool_result",
    "held",
    "is_aider_diff_format",
    "is_streaming",
    "json_output",
    "last_user_contains",
    "last_user_message",
    "malformed",
    "message_text",
    "model_is",
    "not_",
    "offers_tool",
    "slow",
    "system_prompt",
    "system_prompt_contains",
    "text",
    "tool_call",
    "tool_calls",
    "tool_names",
    "truncated_stream",
]


# --------------------------------------------------------------------------- replies


@dataclass(frozen=True)
class Fault:
    """An HTTP error answer; ``body`` None is an OpenAI-shaped error, bytes or str are sent as is."""

    status: int
    body: Any = None
    headers: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class Slow:
    """Wait ``seconds``, then answer with ``then``."""

    seconds: float
    then: ReplyLike


@dataclass(frozen=True)
class Malformed:
    """A 200 answer whose body is not valid JSON."""


@dataclass(frozen=True)
class Truncated:
    """The connection drops in the middle of the answer (streamed or not)."""

    content: str


@dataclass(frozen=True)
class Dribbled:
    """A text reply streamed in `pieces` parts, `every` seconds apart (as a model writes);
    a request that does not stream gets it whole."""

    reply: Reply
    pieces: int
    every: float


ReplyLike = Reply | Fault | Slow | Malformed | Truncated | Dribbled | Callable[[dict[str, Any]], "ReplyLike"]


def tool_call(name: str, arguments: dict[str, Any], *, content: str | None = None) -> Reply:
    """An assistant message that calls one tool with ``arguments``."""
    return tool_calls([(name, arguments)], content=content)


def tool_calls(calls: list[Any], *, content: str | None = None) -> Reply:
    """An assistant message with several tool calls: a list of (name, arguments) pairs."""
    return Reply(
        kind="tools",
        content=content,
        calls=[{"name": n, "arguments": a} for n, a in calls],
        finish_reason="tool_calls",
    )


def fault(
    status: int,
    body: Any = None,
    *,
    headers: dict[str, str] | None = None,
    retry_after: float | None = None,
) -> Fault:
    """An HTTP error answer (e.g. 429 with Retry-After, 500, 503)."""
    hdrs = dict(headers or {})
    if retry_after is not None:
        hdrs["Retry-After"] = str(retry_after)
    return Fault(status=status, body=body, headers=tuple(hdrs.items()))


def slow(seconds: float, then: ReplyLike) -> Slow:
    """Wait ``seconds`` before answering with ``then`` (for timeouts)."""
    return Slow(seconds=seconds, then=then)


def held(gate: threading.Event, then: ReplyLike) -> Callable[[dict[str, Any]], ReplyLike]:
    """``then`` once the test sets ``gate``: a model that keeps thinking for as long as the test
    says. A test shows that a caller did not wait for the answer (it was cancelled, answered,
    or went on while the gate was shut) by that event, where `slow` would need the clock. The
    request is recorded when it arrives; set the gate before the test ends (its handler
    thread, a daemon, waits on it)."""

    def when_let_go(request: dict[str, Any]) -> ReplyLike:
        gate.wait()
        return then

    return when_let_go


def malformed() -> Malformed:
    """A 200 answer whose body is not valid JSON."""
    return Malformed()


def truncated_stream(content: str = "partial answer") -> Truncated:
    """The connection drops in the middle of the answer (streamed or not)."""
    return Truncated(content=content)


def dribbled(reply: Reply, *, pieces: int = 6, every: float = 0.2) -> Dribbled:
    """`reply`'s text streamed slowly: `pieces` parts, `every` seconds apart."""
    return Dribbled(reply, max(1, pieces), every)


def aider_diff(edits: list[Any], *, preface: str = "Here are the changes.") -> Reply:
    """An answer in Aider's `diff` edit format: (path, search, replace) SEARCH/REPLACE blocks.

    An empty ``search`` creates a new file.
    """
    blocks = [preface] if preface else []
    for path, search, replace in edits:
        search_part = search if (not search or search.endswith("\n")) else search + "\n"
        replace_part = replace if (not replace or replace.endswith("\n")) else replace + "\n"
        blocks.append(
            f"{path}\n```\n<<<<<<< SEARCH\n{search_part}=======\n{replace_part}>>>>>>> REPLACE\n```"
        )
    return text("\n\n".join(blocks) + "\n")


# --------------------------------------------------------------------------- matchers

Matcher = Callable[[dict[str, Any]], bool]


def any_request(request: dict[str, Any]) -> bool:
    """Matches every request."""
    return True


def system_prompt_contains(s: str) -> Matcher:
    """Matches when the system prompt contains ``s``."""
    return lambda r: s in system_prompt(r)


def last_user_contains(s: str) -> Matcher:
    """Matches when the last user message contains ``s``."""
    return lambda r: s in last_user_message(r)


def any_message_contains(s: str) -> Matcher:
    """Matches when any message (any role) contains ``s``."""
    return lambda r: any(s in message_text(m) for m in r.get("messages", []))


def offers_tool(name: str) -> Matcher:
    """Matches when a tool with this name (or, for ``final_result``, this prefix) is offered."""
    if name == "final_result":
        return lambda r: any(n.startswith("final_result") for n in tool_names(r))
    return lambda r: name in tool_names(r)


def has_tool_result(name: str | None = None) -> Matcher:
    """Matches when the current turn (after the last user message) holds a tool result.

    With ``name``, only a result for a call to that tool counts. Use it to answer the
    follow-up request that a client sends after running the tool you asked for.
    """

    def match(r: dict[str, Any]) -> bool:
        msgs = r.get("messages", [])
        start = 0
        for i, m in enumerate(msgs):
            if m.get("role") == "user":
                start = i + 1
        turn = msgs[start:]
        ids = set()
        for m in turn:
            for tc in m.get("tool_calls") or []:
                fn = tc.get("function") or {}
                if name is None or fn.get("name") == name:
                    ids.add(tc.get("id"))
        return any(m.get("role") == "tool" and (name is None or m.get("tool_call_id") in ids) for m in turn)

    return match


def is_aider_diff_format(request: dict[str, Any]) -> bool:
    """Matches Aider requests that expect SEARCH/REPLACE blocks (the `diff` edit formats)."""
    return "SEARCH/REPLACE" in system_prompt(request)


def model_is(name: str) -> Matcher:
    """Matches the request's model name exactly."""
    return lambda r: r.get("model") == name


def is_streaming(request: dict[str, Any]) -> bool:
    """Matches streaming requests."""
    return bool(request.get("stream"))


def all_of(*matchers: Matcher) -> Matcher:
    """Matches when every matcher matches."""
    return lambda r: all(m(r) for m in matchers)


def any_of(*matchers: Matcher) -> Matcher:
    """Matches when one matcher matches."""
    return lambda r: any(m(r) for m in matchers)


def not_(matcher: Matcher) -> Matcher:
    """Negates a matcher."""
    return lambda r: not matcher(r)


# The workflow's three callers, told apart by their system prompts; Aider's edits apart from
# its chat summaries (a long chat is summarised in the background with the same model).
IS_PLAN = system_prompt_contains("write a development plan")
IS_ANALYSIS = system_prompt_contains("judge whether the goal has been reached")
IS_AIDER_SUMMARY = system_prompt_contains("summarize this partial conversation")
IS_AIDER = all_of(not_(IS_PLAN), not_(IS_ANALYSIS), not_(IS_AIDER_SUMMARY))


# --------------------------------------------------------------------------- server


@dataclass
class _Rule:
    match: Matcher
    reply: ReplyLike
    times: int | None


class ScriptedHandler(ChatHandler):
    """The core's answers plus the injected faults; callable replies are resolved per request."""

    def respond(self, request: dict[str, Any], reply: Any) -> None:
        """Answer with ``reply`` after the server's per-call latency, resolving callables and
        waiting out `slow` replies."""
        latency = getattr(self.llm, "latency", 0.0)
        if latency > 0:
            time.sleep(latency)
        reply = _resolve(request, reply)
        while isinstance(reply, Slow):
            time.sleep(reply.seconds)
            reply = _resolve(request, reply.then)
        if isinstance(reply, Fault):
            self._fault(reply)
        elif isinstance(reply, Malformed):
            self.send_bytes(200, b'{"id": "chatcmpl-broken", "choices": [ {"message": ')
        elif isinstance(reply, Truncated):
            self._truncated(request, reply.content)
        elif isinstance(reply, Dribbled):
            self._dribble(request, reply)
        else:
            super().respond(request, reply)

    def _fault(self, reply: Fault) -> None:
        headers = dict(reply.headers)
        if isinstance(reply.body, (bytes, str)):
            data = reply.body.encode("utf-8") if isinstance(reply.body, str) else reply.body
            self.send_bytes(reply.status, data, headers)
            return
        kind = "rate_limit_error" if reply.status == 429 else "server_error"
        error = {"message": f"scripted fault {reply.status}", "type": kind, "code": str(reply.status)}
        self.send_json(reply.status, {"error": error} if reply.body is None else reply.body, headers)

    def _dribble(self, request: dict[str, Any], reply: Dribbled) -> None:
        """The text in pieces with a pause between them; the first piece's time is recorded
        (`ScriptedLLMServer.first_pieces`, time.monotonic)."""
        content = reply.reply.content or ""
        if not request.get("stream"):
            super().respond(request, reply.reply)
            return
        head = self.head(request)
        size = max(1, -(-len(content) // reply.pieces))
        self.sse_start()
        self.sse(self.chunk(head, {"role": "assistant", "content": ""}))
        for index in range(0, len(content), size):
            if index:
                time.sleep(reply.every)
            else:
                getattr(self.llm, "first_pieces", []).append(time.monotonic())
            self.sse(self.chunk(head, {"content": content[index : index + size]}))
        self.sse(self.chunk(head, {}, "stop"))
        self.sse("[DONE]")

    def _truncated(self, request: dict[str, Any], content: str) -> None:
        """More bytes announced than sent: the client sees an incomplete body."""
        head = self.head(request)
        if request.get("stream"):
            self.sse_start(announced_length=100000)
            self.sse(self.chunk(head, {"role": "assistant", "content": ""}))
            self.sse(self.chunk(head, {"content": content[: max(1, len(content) // 2)]}))
            # half an event, then the connection drops without [DONE]
            self.wfile.write(b'data: {"id": "' + head["id"].encode() + b'", "choi')
            self.wfile.flush()
        else:
            message = {"message": {"role": "assistant", "content": content}}
            data = json.dumps({"id": head["id"], "choices": [message]}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data) + 100))
            self.end_headers()
            self.wfile.write(data[: len(data) // 2])
            self.wfile.flush()
        self.close_connection = True


def _resolve(
    request: dict[str, Any], reply: ReplyLike
) -> Reply | Fault | Slow | Malformed | Truncated | Dribbled:
    """A callable reply called (again, while it returns callables) with the request."""
    for _ in range(20):
        if not callable(reply):
            return reply
        reply = reply(request)
    raise RuntimeError("callable reply did not return a Reply")


class ScriptedLLMServer(OfflineLLMServer):
    """An OpenAI-compatible chat-completions server answering from scripted rules."""

    handler_class = ScriptedHandler

    def __init__(self, models: list[str] | None = None, *, latency: float = 0.0) -> None:
        """`latency`: seconds every answered call waits first, as a real model's would (the
        benchmarks' model latency; it may be changed between calls)."""
        super().__init__(models=models)
        self.latency = latency
        self.requests: list[dict[str, Any]] = []
        self.request_headers: list[dict[str, str]] = []
        self.unmatched: list[dict[str, Any]] = []
        self.first_pieces: list[float] = []  # when each dribbled answer's first piece was sent
        self._rules: list[_Rule] = []
        self._lock = threading.Lock()

    def add_rule(self, match: Matcher, reply: ReplyLike, *, times: int | None = None) -> None:
        """Answer requests matching ``match`` with ``reply`` (at most ``times`` times if given)."""
        with self._lock:
            self._rules.append(_Rule(match, reply, times))

    def clear_rules(self) -> None:
        """Forget every rule (recorded requests are kept)."""
        with self._lock:
            self._rules.clear()

    def clear_requests(self) -> None:
        """Forget recorded requests."""
        with self._lock:
            self.requests.clear()
            self.request_headers.clear()
            self.unmatched.clear()

    def chat_requests(self) -> list[dict[str, Any]]:
        """Recorded chat-completions request bodies (all recorded bodies are chat requests)."""
        with self._lock:
            return list(self.requests)

    def wait_for_requests(self, n: int, timeout: float = 60.0) -> bool:
        """Wait until at least ``n`` requests were recorded (``timeout``: a cap, not a timing)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with self._lock:
                if len(self.requests) >= n:
                    return True
            time.sleep(0.01)
        return False

    def answer(self, request: dict[str, Any], headers: dict[str, str]) -> ReplyLike | None:
        """Record the request, then the first matching rule with uses left answers it."""
        with self._lock:
            self.requests.append(request)
            self.request_headers.append(headers)
            reply = self._choose(request)
            if reply is None:
                self.unmatched.append(request)
        return reply

    def _choose(self, request: dict[str, Any]) -> ReplyLike | None:
        for rule in self._rules:
            if rule.times is not None and rule.times <= 0:
                continue
            try:
                ok = rule.match(request)
            except Exception:
                ok = False
            if ok:
                if rule.times is not None:
                    rule.times -= 1
                return rule.reply
        return None
