"""A scripted OpenAI-compatible LLM server (stdlib only): the tests' model and the offline demo's.

Why: every LLM call in the test-suite goes over real HTTP, so the request that a
model would really receive (system prompt, tools, output schema, model name) can be
asserted, and faults (429, 500, slow, malformed, truncated stream) can be injected.
It runs in any Python >= 3.8 environment (also the Aider environment) because it
only uses the standard library.

Usage::

    with ScriptedLLMServer() as srv:
        srv.add_rule(last_user_contains("plan"), json_output({"instructions": "x", "files": []}))
        srv.add_rule(any_request, fault(429, retry_after=0), times=1)   # first call fails
        ... point a client at srv.base_url (".../v1") ...
        assert srv.requests[-1]["model"] == "m"

Rules are tried in the order they were added; the first rule whose matcher returns
True and that has uses left answers. A request that no rule matches gets a 500 whose
message names the request's last user message, and is recorded in ``unmatched``.
"""

from __future__ import annotations

import contextlib
import json
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

__all__ = [
    "Reply",
    "ScriptedLLMServer",
    "aider_diff",
    "aider_whole",
    "all_of",
    "any_message_contains",
    "any_of",
    "any_request",
    "fault",
    "has_tool_result",
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


@dataclass
class Reply:
    """What the server answers; build it with the helper functions below."""

    kind: str
    content: str | None = None
    calls: list[dict[str, Any]] = field(default_factory=list)
    obj: Any = None
    status: int = 200
    body: Any = None
    headers: dict[str, str] = field(default_factory=dict)
    seconds: float = 0.0
    then: ReplyLike | None = None
    finish_reason: str | None = None
    usage: dict[str, int] | None = None


ReplyLike = Reply | Callable[[dict[str, Any]], "ReplyLike"]


def text(content: str, *, finish_reason: str = "stop", usage: dict[str, int] | None = None) -> Reply:
    """A plain assistant text message."""
    return Reply(kind="text", content=content, finish_reason=finish_reason, usage=usage)


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


def json_output(obj: Any) -> Reply:
    """Structured output, answered the way the request asks for it.

    If the request offers a tool whose name starts with ``final_result`` (pydantic-ai's
    tool output mode) the answer is a call to that tool; otherwise JSON text.
    """
    return Reply(kind="json", obj=obj)


def fault(
    status: int,
    body: Any = None,
    *,
    headers: dict[str, str] | None = None,
    retry_after: float | None = None,
) -> Reply:
    """An HTTP error answer (e.g. 429 with Retry-After, 500, 503)."""
    hdrs = dict(headers or {})
    if retry_after is not None:
        hdrs["Retry-After"] = str(retry_after)
    return Reply(kind="fault", status=status, body=body, headers=hdrs)


def slow(seconds: float, then: ReplyLike) -> Reply:
    """Wait ``seconds`` before answering with ``then`` (for timeouts)."""
    return Reply(kind="slow", seconds=seconds, then=then)


def malformed() -> Reply:
    """A 200 answer whose body is not valid JSON."""
    return Reply(kind="malformed")


def truncated_stream(content: str = "partial answer") -> Reply:
    """The connection drops in the middle of the answer (streamed or not)."""
    return Reply(kind="truncated", content=content)


def aider_whole(files: dict[str, str], *, preface: str = "Here are the updated files.") -> Reply:
    """An answer in Aider's `whole` edit format: each file's full new content after its path."""
    blocks = [preface] if preface else []
    for path, content in files.items():
        body = content if content.endswith("\n") else content + "\n"
        blocks.append(f"{path}\n```\n{body}```")
    return text("\n\n".join(blocks) + "\n")


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


# --------------------------------------------------------------------------- request helpers


def message_text(message: dict[str, Any]) -> str:
    """The text of one chat message (string content or a list of content parts)."""
    content = message.get("content")
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    parts: list[str] = []
    if isinstance(content, list):
        for part in content:
            if isinstance(part, dict):
                if isinstance(part.get("text"), str):
                    parts.append(part["text"])
            elif isinstance(part, str):
                parts.append(part)
    return "\n".join(parts)


def system_prompt(request: dict[str, Any]) -> str:
    """All system (and developer) messages of a request, joined."""
    return "\n".join(
        message_text(m) for m in request.get("messages", []) if m.get("role") in ("system", "developer")
    )


def last_user_message(request: dict[str, Any]) -> str:
    """The text of the last user message of a request ('' if none)."""
    for m in reversed(request.get("messages", [])):
        if m.get("role") == "user":
            return message_text(m)
    return ""


def tool_names(request: dict[str, Any]) -> list[str]:
    """Names of the tools offered in a request."""
    names: list[str] = []
    for t in request.get("tools") or []:
        fn = t.get("function") if isinstance(t, dict) else None
        if isinstance(fn, dict) and "name" in fn:
            names.append(fn["name"])
        elif isinstance(t, dict) and "name" in t:
            names.append(t["name"])
    return names


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


# --------------------------------------------------------------------------- server


@dataclass
class _Rule:
    match: Matcher
    reply: ReplyLike
    times: int | None


def _estimate_tokens(s: str) -> int:
    return max(1, len(s) // 4) if s else 0


class ScriptedLLMServer:
    """An OpenAI-compatible chat-completions server answering from scripted rules."""

    def __init__(self, models: list[str] | None = None) -> None:
        self.requests: list[dict[str, Any]] = []
        self.request_headers: list[dict[str, str]] = []
        self.unmatched: list[dict[str, Any]] = []
        self.models: list[str] = list(models or ["scripted-model"])
        self.always_stream_usage: bool = True
        self._rules: list[_Rule] = []
        self._lock = threading.Lock()
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self.base_url: str = ""

    # -- lifecycle
    def start(self) -> ScriptedLLMServer:
        """Bind 127.0.0.1 on a random port and serve in a daemon thread."""
        if self._httpd is not None:
            return self
        server = self

        class Handler(_Handler):
            scripted = server

        httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        httpd.daemon_threads = True
        self._httpd = httpd
        self.port = httpd.server_address[1]
        self.base_url = f"http://127.0.0.1:{self.port}/v1"
        self._thread = threading.Thread(
            target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, name="scripted-llm", daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving and close the socket."""
        if self._httpd is None:
            return
        self._httpd.shutdown()
        self._httpd.server_close()
        self._httpd = None

    def __enter__(self) -> ScriptedLLMServer:
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    # -- rules
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

    def wait_for_requests(self, n: int, timeout: float = 10.0) -> bool:
        """Wait until at least ``n`` requests were recorded."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with self._lock:
                if len(self.requests) >= n:
                    return True
            time.sleep(0.01)
        return False

    def _choose(self, request: dict[str, Any]) -> ReplyLike | None:
        with self._lock:
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


class _Handler(BaseHTTPRequestHandler):
    scripted: ScriptedLLMServer
    protocol_version = "HTTP/1.0"

    def log_message(self, format: str, *args: Any) -> None:
        return

    # -- plumbing
    def _send_json(self, status: int, obj: Any, headers: dict[str, str] | None = None) -> None:
        data = json.dumps(obj).encode("utf-8")
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:
        path = self.path.split("?")[0].rstrip("/")
        if path.endswith("/models"):
            self._send_json(
                200,
                {
                    "object": "list",
                    "data": [
                        {"id": m, "object": "model", "created": 0, "owned_by": "scripted"}
                        for m in self.scripted.models
                    ],
                },
            )
        else:
            self._send_json(404, {"error": {"message": f"not found: {self.path}", "type": "not_found"}})

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            request = json.loads(raw.decode("utf-8") or "{}")
        except ValueError:
            self._send_json(
                400, {"error": {"message": "request body is not JSON", "type": "invalid_request_error"}}
            )
            return
        path = self.path.split("?")[0].rstrip("/")
        if not (path.endswith(("/chat/completions", "/completions"))):
            self._send_json(404, {"error": {"message": f"not found: {self.path}", "type": "not_found"}})
            return
        srv = self.scripted
        with srv._lock:
            srv.requests.append(request)
            srv.request_headers.append({k.lower(): v for k, v in self.headers.items()})
        reply: ReplyLike | None = srv._choose(request)
        if reply is None:
            with srv._lock:
                srv.unmatched.append(request)
            msg = (
                "ScriptedLLMServer: no rule matched this request (model={!r}, tools={!r}); "
                "last user message: {!r}"
            ).format(
                request.get("model"),
                tool_names(request),
                last_user_message(request)[:2000],
            )
            self._send_json(500, {"error": {"message": msg, "type": "server_error", "code": "no_rule"}})
            return
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            self._answer(request, reply)

    # -- answers
    def _resolve(self, request: dict[str, Any], reply: ReplyLike) -> Reply:
        depth = 0
        while not isinstance(reply, Reply):
            reply = reply(request)
            depth += 1
            if depth > 20:
                raise RuntimeError("callable reply did not return a Reply")
        return reply

    def _answer(self, request: dict[str, Any], reply_like: ReplyLike) -> None:
        reply = self._resolve(request, reply_like)
        while reply.kind == "slow":
            time.sleep(reply.seconds)
            reply = self._resolve(request, reply.then if reply.then is not None else text(""))
        if reply.kind == "fault":
            body = reply.body
            if body is None:
                body = {
                    "error": {
                        "message": f"scripted fault {reply.status}",
                        "type": "rate_limit_error" if reply.status == 429 else "server_error",
                        "code": str(reply.status),
                    }
                }
            if isinstance(body, (bytes, str)):
                data = body.encode("utf-8") if isinstance(body, str) else body
                self.send_response(reply.status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                for k, v in reply.headers.items():
                    self.send_header(k, v)
                self.end_headers()
                self.wfile.write(data)
            else:
                self._send_json(reply.status, body, reply.headers)
            return
        if reply.kind == "malformed":
            data = b'{"id": "chatcmpl-broken", "choices": [ {"message": '
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
            return

        content, calls, finish = self._message_parts(request, reply)
        prompt_tokens = sum(_estimate_tokens(message_text(m)) for m in request.get("messages", [])) + 1
        completion_tokens = (
            _estimate_tokens(content or "")
            + sum(_estimate_tokens(c["function"]["arguments"]) for c in calls)
            + 1
        )
        usage = reply.usage or {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
        }
        model = request.get("model") or "scripted-model"
        cid = f"chatcmpl-{uuid.uuid4().hex[:12]}"
        created = int(time.time())

        if reply.kind == "truncated":
            self._truncated(request, cid, created, model, content or "")
            return
        if request.get("stream"):
            self._stream(request, cid, created, model, content, calls, finish, usage)
            return
        message: dict[str, Any] = {"role": "assistant", "content": content}
        if calls:
            message["tool_calls"] = calls
        self._send_json(
            200,
            {
                "id": cid,
                "object": "chat.completion",
                "created": created,
                "model": model,
                "choices": [{"index": 0, "message": message, "finish_reason": finish, "logprobs": None}],
                "usage": usage,
            },
        )

    def _message_parts(self, request: dict[str, Any], reply: Reply) -> Any:
        """(content, tool_calls in OpenAI shape, finish_reason) for a reply."""
        calls_in: list[dict[str, Any]] = []
        content = reply.content
        finish = reply.finish_reason or "stop"
        if reply.kind == "json":
            final = [n for n in tool_names(request) if n.startswith("final_result")]
            if final:
                calls_in = [{"name": final[0], "arguments": reply.obj}]
                content = None
                finish = "tool_calls"
            else:
                content = reply.obj if isinstance(reply.obj, str) else json.dumps(reply.obj)
                finish = "stop"
        elif reply.kind == "tools":
            calls_in = reply.calls
        calls = []
        for c in calls_in:
            args = c["arguments"]
            calls.append(
                {
                    "id": f"call_{uuid.uuid4().hex[:12]}",
                    "type": "function",
                    "function": {
                        "name": c["name"],
                        "arguments": args if isinstance(args, str) else json.dumps(args),
                    },
                }
            )
        return content, calls, finish

    def _sse_start(self, announced_length: int | None = None) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Connection", "close")
        if announced_length is not None:
            self.send_header("Content-Length", str(announced_length))
        self.end_headers()

    def _sse(self, obj: Any) -> None:
        data = obj if isinstance(obj, str) else json.dumps(obj)
        self.wfile.write((f"data: {data}\n\n").encode())
        self.wfile.flush()

    def _stream(
        self,
        request: dict[str, Any],
        cid: str,
        created: int,
        model: str,
        content: str | None,
        calls: list[dict[str, Any]],
        finish: str,
        usage: dict[str, int],
    ) -> None:
        base = {"id": cid, "object": "chat.completion.chunk", "created": created, "model": model}
        self._sse_start()

        def chunk(delta: dict[str, Any], finish_reason: str | None = None) -> dict[str, Any]:
            return dict(
                base, choices=[{"index": 0, "delta": delta, "finish_reason": finish_reason, "logprobs": None}]
            )

        self._sse(chunk({"role": "assistant", "content": ""}))
        if content:
            step = 16
            for i in range(0, len(content), step):
                self._sse(chunk({"content": content[i : i + step]}))
        for idx, c in enumerate(calls):
            args = c["function"]["arguments"]
            self._sse(
                chunk(
                    {
                        "tool_calls": [
                            {
                                "index": idx,
                                "id": c["id"],
                                "type": "function",
                                "function": {"name": c["function"]["name"], "arguments": ""},
                            }
                        ]
                    }
                )
            )
            step = 24
            for i in range(0, len(args), step):
                self._sse(
                    chunk({"tool_calls": [{"index": idx, "function": {"arguments": args[i : i + step]}}]})
                )
        self._sse(chunk({}, finish))
        include = bool((request.get("stream_options") or {}).get("include_usage"))
        if include or self.scripted.always_stream_usage:
            self._sse(dict(base, choices=[], usage=usage))
        self._sse("[DONE]")

    def _truncated(self, request: dict[str, Any], cid: str, created: int, model: str, content: str) -> None:
        if request.get("stream"):
            # announce more bytes than are sent: the client sees an incomplete body
            self._sse_start(announced_length=100000)
            base = {"id": cid, "object": "chat.completion.chunk", "created": created, "model": model}
            self._sse(
                dict(
                    base,
                    choices=[
                        {"index": 0, "delta": {"role": "assistant", "content": ""}, "finish_reason": None}
                    ],
                )
            )
            self._sse(
                dict(
                    base,
                    choices=[
                        {
                            "index": 0,
                            "delta": {"content": content[: max(1, len(content) // 2)]},
                            "finish_reason": None,
                        }
                    ],
                )
            )
            # half an event, then the connection drops without [DONE]
            self.wfile.write(b'data: {"id": "' + cid.encode() + b'", "choi')
            self.wfile.flush()
        else:
            data = json.dumps(
                {"id": cid, "choices": [{"message": {"role": "assistant", "content": content}}]}
            ).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data) + 100))
            self.end_headers()
            self.wfile.write(data[: len(data) // 2])
            self.wfile.flush()
        self.close_connection = True
