"""A minimal OpenAI-compatible chat-completions server on 127.0.0.1 (stdlib only).

Why: `aider-lsp demo` must show the whole loop without a key or a network, so its planner,
analyst and the real Aider talk over real HTTP to a local server answering from one function.
This module is that server's core (request parsing, JSON and SSE answers, usage); the
dev-only `aider_lsp_testing` package builds the tests' scripted server (rules, request
recording, fault injection) on it. It only uses the standard library.

Usage::

    def answer(request: dict[str, Any]) -> Reply | None:
        return text("hello") if "hi" in last_user_message(request) else None

    with OfflineLLMServer(answer) as server:
        ... point a client at server.base_url (".../v1") ...

A request the function answers with None gets a 500 naming the request's last user message.
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
from typing import Any, Literal, Self

__all__ = [
    "ChatHandler",
    "OfflineLLMServer",
    "Reply",
    "aider_whole",
    "json_output",
    "last_user_message",
    "message_text",
    "system_prompt",
    "text",
    "tool_names",
]


# --------------------------------------------------------------------------- replies


@dataclass(frozen=True)
class Reply:
    """One assistant answer: text, tool calls, or structured output (build it with the helpers)."""

    kind: Literal["text", "tools", "json"]
    content: str | None = None
    calls: list[dict[str, Any]] = field(default_factory=list)
    obj: Any = None
    finish_reason: str | None = None
    usage: dict[str, int] | None = None


def text(content: str, *, finish_reason: str = "stop", usage: dict[str, int] | None = None) -> Reply:
    """A plain assistant text message."""
    return Reply(kind="text", content=content, finish_reason=finish_reason, usage=usage)


def json_output(obj: Any, *, usage: dict[str, int] | None = None) -> Reply:
    """Structured output, answered the way the request asks for it.

    If the request offers a tool whose name starts with ``final_result`` (pydantic-ai's
    tool output mode) the answer is a call to that tool; otherwise JSON text.
    """
    return Reply(kind="json", obj=obj, usage=usage)


def aider_whole(files: dict[str, str], *, preface: str = "Here are the updated files.") -> Reply:
    """An answer in Aider's `whole` edit format: each file's full new content after its path."""
    blocks = [preface] if preface else []
    for path, content in files.items():
        body = content if content.endswith("\n") else content + "\n"
        blocks.append(f"{path}\n```\n{body}```")
    return text("\n\n".join(blocks) + "\n")


# --------------------------------------------------------------------------- request readers


def message_text(message: dict[str, Any]) -> str:
    """The text of one chat message (string content or a list of content parts)."""
    content = message.get("content")
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return ""
    parts = [
        part if isinstance(part, str) else part["text"]
        for part in content
        if isinstance(part, str) or (isinstance(part, dict) and isinstance(part.get("text"), str))
    ]
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


# --------------------------------------------------------------------------- server


def _estimate_tokens(s: str) -> int:
    return max(1, len(s) // 4) if s else 0


def estimated_usage(
    request: dict[str, Any], content: str | None, calls: list[dict[str, Any]]
) -> dict[str, int]:
    """A plausible token count (about four characters a token), so usage accounting has figures."""
    prompt = sum(_estimate_tokens(message_text(m)) for m in request.get("messages", [])) + 1
    completion = (
        _estimate_tokens(content or "") + sum(_estimate_tokens(c["function"]["arguments"]) for c in calls) + 1
    )
    return {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}


def _openai_calls(calls: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """(name, arguments) pairs in the OpenAI tool-call shape, arguments as JSON text."""
    return [
        {
            "id": f"call_{uuid.uuid4().hex[:12]}",
            "type": "function",
            "function": {"name": c["name"], "arguments": _as_json(c["arguments"])},
        }
        for c in calls
    ]


def _as_json(value: Any) -> str:
    """Structured output or tool arguments as the JSON text the wire carries (text as given)."""
    return value if isinstance(value, str) else json.dumps(value)


def message_parts(request: dict[str, Any], reply: Reply) -> tuple[str | None, list[dict[str, Any]], str]:
    """(content, tool calls in OpenAI shape, finish reason) of a reply to this request."""
    if reply.kind == "json":
        final = [n for n in tool_names(request) if n.startswith("final_result")]
        if final:
            return None, _openai_calls([{"name": final[0], "arguments": reply.obj}]), "tool_calls"
        return _as_json(reply.obj), [], "stop"
    return reply.content, _openai_calls(reply.calls), reply.finish_reason or "stop"


class ChatHandler(BaseHTTPRequestHandler):
    """GET /models and POST /chat/completions, answered from the bound server's ``answer``."""

    llm: OfflineLLMServer
    protocol_version = "HTTP/1.0"

    def log_message(self, format: str, *args: Any) -> None:
        return

    def send_json(self, status: int, obj: Any, headers: dict[str, str] | None = None) -> None:
        """A complete JSON answer."""
        self.send_bytes(status, json.dumps(obj).encode("utf-8"), headers)

    def send_bytes(self, status: int, data: bytes, headers: dict[str, str] | None = None) -> None:
        """A complete answer of these bytes, announced as JSON."""
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(data)

    def _not_found(self) -> None:
        self.send_json(404, {"error": {"message": f"not found: {self.path}", "type": "not_found"}})

    def do_GET(self) -> None:
        if not self.path.split("?")[0].rstrip("/").endswith("/models"):
            self._not_found()
            return
        models = [{"id": m, "object": "model", "created": 0, "owned_by": "scripted"} for m in self.llm.models]
        self.send_json(200, {"object": "list", "data": models})

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        try:
            request = json.loads((self.rfile.read(length) if length else b"").decode("utf-8") or "{}")
        except ValueError:
            error = {"message": "request body is not JSON", "type": "invalid_request_error"}
            self.send_json(400, {"error": error})
            return
        if not self.path.split("?")[0].rstrip("/").endswith(("/chat/completions", "/completions")):
            self._not_found()
            return
        reply = self.llm.answer(request, {k.lower(): v for k, v in self.headers.items()})
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            if reply is None:
                self._no_answer(request)
            else:
                self.respond(request, reply)

    def _no_answer(self, request: dict[str, Any]) -> None:
        """A loud 500 that names the request, so a missing script shows in the client's error."""
        msg = (
            f"{type(self.llm).__name__}: no scripted answer for this request "
            f"(model={request.get('model')!r}, tools={tool_names(request)!r}); "
            f"last user message: {last_user_message(request)[:2000]!r}"
        )
        self.send_json(500, {"error": {"message": msg, "type": "server_error", "code": "no_rule"}})

    def respond(self, request: dict[str, Any], reply: Any) -> None:
        """Answer with ``reply`` (a Reply here; subclasses add their own kinds)."""
        content, calls, finish = message_parts(request, reply)
        usage = reply.usage or estimated_usage(request, content, calls)
        head = self.head(request)
        if request.get("stream"):
            self._stream(request, head, content, calls, finish, usage)
            return
        message: dict[str, Any] = {"role": "assistant", "content": content}
        if calls:
            message["tool_calls"] = calls
        choice = {"index": 0, "message": message, "finish_reason": finish, "logprobs": None}
        self.send_json(200, dict(head, object="chat.completion", choices=[choice], usage=usage))

    @staticmethod
    def head(request: dict[str, Any]) -> dict[str, Any]:
        """The id, creation time and model every answer (or chunk) carries."""
        model = request.get("model") or "scripted-model"
        return {"id": f"chatcmpl-{uuid.uuid4().hex[:12]}", "created": int(time.time()), "model": model}

    def sse_start(self, announced_length: int | None = None) -> None:
        """The headers of a server-sent-events answer."""
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Connection", "close")
        if announced_length is not None:
            self.send_header("Content-Length", str(announced_length))
        self.end_headers()

    def sse(self, obj: Any) -> None:
        """One server-sent event."""
        data = obj if isinstance(obj, str) else json.dumps(obj)
        self.wfile.write(f"data: {data}\n\n".encode())
        self.wfile.flush()

    @staticmethod
    def chunk(
        head: dict[str, Any], delta: dict[str, Any], finish_reason: str | None = None
    ) -> dict[str, Any]:
        """One streamed chunk carrying ``delta``."""
        choice = {"index": 0, "delta": delta, "finish_reason": finish_reason, "logprobs": None}
        return dict(head, object="chat.completion.chunk", choices=[choice])

    def _stream(
        self,
        request: dict[str, Any],
        head: dict[str, Any],
        content: str | None,
        calls: list[dict[str, Any]],
        finish: str,
        usage: dict[str, int],
    ) -> None:
        """The answer as the chunks a streaming client reads: text, then each tool call's arguments."""
        self.sse_start()
        self.sse(self.chunk(head, {"role": "assistant", "content": ""}))
        for i in range(0, len(content or ""), 16):
            self.sse(self.chunk(head, {"content": (content or "")[i : i + 16]}))
        for idx, c in enumerate(calls):
            name, args = c["function"]["name"], c["function"]["arguments"]
            call = {
                "index": idx,
                "id": c["id"],
                "type": "function",
                "function": {"name": name, "arguments": ""},
            }
            self.sse(self.chunk(head, {"tool_calls": [call]}))
            for i in range(0, len(args), 24):
                part = {"index": idx, "function": {"arguments": args[i : i + 24]}}
                self.sse(self.chunk(head, {"tool_calls": [part]}))
        self.sse(self.chunk(head, {}, finish))
        asked = (request.get("stream_options") or {}).get("include_usage")
        if (asked or self.llm.always_stream_usage) and not self.llm.never_stream_usage:
            self.sse(dict(head, object="chat.completion.chunk", choices=[], usage=usage))
        self.sse("[DONE]")


class OfflineLLMServer:
    """An OpenAI-compatible chat-completions server answering every request from ``answer``."""

    handler_class: type[ChatHandler] = ChatHandler

    def __init__(
        self,
        answer: Callable[[dict[str, Any]], Reply | None] | None = None,
        models: list[str] | None = None,
    ) -> None:
        self._answer_fn = answer
        self.models: list[str] = list(models or ["scripted-model"])
        self.always_stream_usage: bool = True
        self.never_stream_usage: bool = False  # a server whose streams never say what they used
        self.base_url: str = ""
        self.port: int = 0
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    def answer(self, request: dict[str, Any], headers: dict[str, str]) -> Any:
        """The reply for one chat request (None: no answer, a loud 500); subclasses script it."""
        return self._answer_fn(request) if self._answer_fn is not None else None

    def start(self) -> Self:
        """Bind 127.0.0.1 on a random port and serve in a daemon thread."""
        if self._httpd is not None:
            return self
        handler = type("BoundHandler", (self.handler_class,), {"llm": self})
        httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        httpd.daemon_threads = True
        self._httpd = httpd
        self.port = httpd.server_address[1]
        self.base_url = f"http://127.0.0.1:{self.port}/v1"
        self._thread = threading.Thread(
            target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, name="offline-llm", daemon=True
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

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
