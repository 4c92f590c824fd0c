"""The scripted LLM server itself: real HTTP with the openai client and urllib."""

from __future__ import annotations

import json
import threading
import time
import urllib.error
import urllib.request
from types import SimpleNamespace

import openai
import pytest

import aider_lsp_testing.llm_server as scripted
from aider_lsp.cli.offline_llm import OfflineLLMServer, Reply, last_user_message
from aider_lsp_testing.llm_server import (
    ScriptedLLMServer,
    all_of,
    any_request,
    fault,
    has_tool_result,
    held,
    json_output,
    last_user_contains,
    malformed,
    offers_tool,
    slow,
    system_prompt_contains,
    text,
    tool_call,
    truncated_stream,
)


def _client(srv: ScriptedLLMServer, **kw: object) -> openai.OpenAI:
    return openai.OpenAI(base_url=srv.base_url, api_key="x", max_retries=0, **kw)  # type: ignore[arg-type]


def test_text_non_streaming_records_request_and_usage(llm_server: ScriptedLLMServer) -> None:
    llm_server.add_rule(system_prompt_contains("be brief"), text("hello there"))
    r = _client(llm_server).chat.completions.create(
        model="m1",
        messages=[{"role": "system", "content": "be brief"}, {"role": "user", "content": "hi"}],
    )
    assert r.choices[0].message.content == "hello there"
    assert r.usage is not None and r.usage.total_tokens > 0
    assert llm_server.requests[-1]["model"] == "m1"


def test_streaming_text_tool_call_and_usage(llm_server: ScriptedLLMServer) -> None:
    llm_server.add_rule(last_user_contains("long"), text("x" * 100))
    chunks = list(
        _client(llm_server).chat.completions.create(
            model="m",
            messages=[{"role": "user", "content": "long"}],
            stream=True,
            stream_options={"include_usage": True},
        )
    )
    got = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert got == "x" * 100
    assert any(c.usage and c.usage.total_tokens > 0 for c in chunks)

    llm_server.add_rule(offers_tool("read"), tool_call("read", {"path": "a.py"}))
    tools = [
        {"type": "function", "function": {"name": "read", "parameters": {"type": "object", "properties": {}}}}
    ]
    chunks = list(
        _client(llm_server).chat.completions.create(
            model="m",
            messages=[{"role": "user", "content": "go"}],
            tools=tools,
            stream=True,  # type: ignore[arg-type]
        )
    )
    args = "".join(
        c.choices[0].delta.tool_calls[0].function.arguments or ""  # type: ignore[index,union-attr]
        for c in chunks
        if c.choices and c.choices[0].delta.tool_calls
    )
    assert json.loads(args) == {"path": "a.py"}


def test_json_output_uses_final_result_tool_or_text(llm_server: ScriptedLLMServer) -> None:
    llm_server.add_rule(lambda r: True, json_output({"a": 1}))
    tools = [{"type": "function", "function": {"name": "final_result", "parameters": {"type": "object"}}}]
    r = _client(llm_server).chat.completions.create(
        model="m",
        messages=[{"role": "user", "content": "x"}],
        tools=tools,  # type: ignore[arg-type]
    )
    call = r.choices[0].message.tool_calls[0]  # type: ignore[index]
    assert call.function.name == "final_result" and json.loads(call.function.arguments) == {"a": 1}  # type: ignore[union-attr]
    r = _client(llm_server).chat.completions.create(model="m", messages=[{"role": "user", "content": "x"}])
    assert json.loads(r.choices[0].message.content or "") == {"a": 1}


def test_times_and_faults_then_success(llm_server: ScriptedLLMServer) -> None:
    llm_server.add_rule(lambda r: True, fault(429, retry_after=0), times=1)
    llm_server.add_rule(lambda r: True, text("ok"))
    with pytest.raises(openai.RateLimitError):
        _client(llm_server).chat.completions.create(model="m", messages=[{"role": "user", "content": "x"}])
    r = _client(llm_server).chat.completions.create(model="m", messages=[{"role": "user", "content": "x"}])
    assert r.choices[0].message.content == "ok"


def test_unmatched_is_a_loud_500(llm_server: ScriptedLLMServer) -> None:
    with pytest.raises(openai.InternalServerError) as ei:
        _client(llm_server).chat.completions.create(
            model="m", messages=[{"role": "user", "content": "nobody home"}]
        )
    assert "nobody home" in str(ei.value)
    assert len(llm_server.unmatched) == 1


def test_malformed_truncated_slow_callable_and_models(llm_server: ScriptedLLMServer) -> None:
    llm_server.add_rule(last_user_contains("bad"), malformed())
    llm_server.add_rule(last_user_contains("cut"), truncated_stream())
    answer_late = threading.Event()  # the answer comes once the client has given up on it
    llm_server.add_rule(last_user_contains("slow"), slow(0.1, held(answer_late, text("late"))))
    llm_server.add_rule(
        all_of(last_user_contains("echo"), lambda r: not has_tool_result()(r)),
        lambda req: text("echo:" + req["model"]),
    )
    c = _client(llm_server)
    with pytest.raises(json.JSONDecodeError):  # a body that is not JSON
        c.chat.completions.create(model="m", messages=[{"role": "user", "content": "bad"}])
    with pytest.raises(openai.APIConnectionError):  # the stream ends before [DONE]
        list(c.chat.completions.create(model="m", messages=[{"role": "user", "content": "cut"}], stream=True))
    try:
        with pytest.raises(openai.APITimeoutError):
            _client(llm_server, timeout=0.3).chat.completions.create(
                model="m", messages=[{"role": "user", "content": "slow"}]
            )
    finally:
        answer_late.set()
    r = c.chat.completions.create(model="mx", messages=[{"role": "user", "content": "echo"}])
    assert r.choices[0].message.content == "echo:mx"
    with urllib.request.urlopen(llm_server.base_url + "/models") as resp:
        assert json.loads(resp.read())["data"][0]["id"] == "scripted-model"


def test_latency_delays_every_answered_call(
    llm_server: ScriptedLLMServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The benchmarks' model latency: each call waits `latency` seconds before its answer; 0
    turns it off. The waits the handler asks for are recorded (the clock is not asserted)."""
    waits: list[tuple[float, int]] = []  # (seconds, requests recorded when the wait began)

    def sleep(seconds: float) -> None:
        waits.append((seconds, len(llm_server.chat_requests())))
        time.sleep(seconds)

    monkeypatch.setattr(scripted, "time", SimpleNamespace(sleep=sleep, monotonic=time.monotonic))
    llm_server.add_rule(any_request, text("ok"))
    client = _client(llm_server)
    ask = [{"role": "user", "content": "hi"}]
    llm_server.latency = 0.3
    first = client.chat.completions.create(model="m", messages=ask)  # type: ignore[arg-type]
    assert first.choices[0].message.content == "ok"
    assert waits == [(0.3, 1)]  # once, for the recorded request, before its answer came
    llm_server.latency = 0.0
    second = client.chat.completions.create(model="m", messages=ask)  # type: ignore[arg-type]
    assert second.choices[0].message.content == "ok"
    assert waits == [(0.3, 1)]  # no wait at all


def test_context_manager_stops() -> None:
    with ScriptedLLMServer() as srv:
        url = srv.base_url
    with pytest.raises(urllib.error.URLError) as refused:
        urllib.request.urlopen(url + "/models", timeout=60)  # a cap: a server left listening would hang
    # nothing listens on the port any more: refused, not a connection that waits for an answer
    assert isinstance(refused.value.reason, ConnectionRefusedError), refused.value.reason


def test_aider_edit_format_helpers(llm_server: ScriptedLLMServer) -> None:
    from aider_lsp_testing.llm_server import aider_diff, aider_whole, is_aider_diff_format

    llm_server.add_rule(
        is_aider_diff_format, aider_diff([("a.py", "x = 1", "x = 2"), ("new.py", "", "y = 3")])
    )
    llm_server.add_rule(lambda r: True, aider_whole({"a.py": "x = 2"}))
    c = _client(llm_server)
    diff = (
        c.chat.completions.create(
            model="m",
            messages=[
                {"role": "system", "content": "Use SEARCH/REPLACE blocks"},
                {"role": "user", "content": "x"},
            ],
        )
        .choices[0]
        .message.content
        or ""
    )
    assert "a.py\n```\n<<<<<<< SEARCH\nx = 1\n=======\nx = 2\n>>>>>>> REPLACE\n```" in diff
    assert "new.py\n```\n<<<<<<< SEARCH\n=======\ny = 3\n>>>>>>> REPLACE" in diff
    whole = (
        c.chat.completions.create(model="m", messages=[{"role": "user", "content": "x"}])
        .choices[0]
        .message.content
    )
    assert "a.py\n```\nx = 2\n```" in (whole or "")


def test_the_demo_server_answers_from_one_function_streamed_or_not() -> None:
    """The product's minimal server (the offline demo's): no rules, one answering function."""

    def answer(request: dict[str, object]) -> Reply | None:
        return json_output({"ok": True}) if "ping" in last_user_message(request) else None

    with OfflineLLMServer(answer, models=["demo"]) as srv:
        c = openai.OpenAI(base_url=srv.base_url, api_key="x", max_retries=0)
        r = c.chat.completions.create(model="demo", messages=[{"role": "user", "content": "ping"}])
        assert json.loads(r.choices[0].message.content or "") == {"ok": True}
        chunks = c.chat.completions.create(
            model="demo", messages=[{"role": "user", "content": "ping"}], stream=True
        )
        assert json.loads("".join(ch.choices[0].delta.content or "" for ch in chunks if ch.choices)) == {
            "ok": True
        }
        with pytest.raises(openai.InternalServerError, match=r"no scripted answer.*'silence'"):
            c.chat.completions.create(model="demo", messages=[{"role": "user", "content": "silence"}])


def test_the_demo_example_ships_as_package_data() -> None:
    """`aider-lsp demo` reads its example through importlib.resources, not from a checkout path."""
    from aider_lsp.cli.demo import example_project

    example = example_project()
    assert {item.name for item in example.iterdir()} >= {"calculator.py", "test_calculator.py"}
    assert "return b - a" in example.joinpath("calculator.py").read_text()  # still buggy
