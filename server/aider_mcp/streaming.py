"""Aider's reply as it is written: taken from the Coder's stream, sent to the client in batches.

Two halves. `streamed_reply` (worker thread, inside the engine) runs one Aider message
streaming and hands each new piece of the visible reply to a callback; it hooks the one
place Aider reads the provider's stream, `Coder.show_send_output_stream`, so nothing else of
Aider changes (with `pretty=False` Aider writes the text to sys.stdout, which is stderr in
this server). `ReplyForwarder` (event loop, in the MCP tool) batches those pieces: the first
is sent at once, then at most one message every BATCH_SECONDS, so a fast model costs a few
notifications a second, not one per token.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
from collections.abc import Awaitable, Callable, Iterator
from typing import Any, TypeVar

import anyio

log = logging.getLogger("aider_mcp")

BATCH_SECONDS = 0.1
ReplySink = Callable[[str], None]  # a piece of Aider's reply, in order
Send = Callable[[str], Awaitable[None]]
T = TypeVar("T")


@contextlib.contextmanager
def streamed_reply(coder: Any, on_text: ReplySink | None) -> Iterator[None]:
    """While Aider answers one message: stream from the provider when someone reads the text
    (`on_text`), else answer in one piece as before. The Coder is left as it was found."""
    was_streaming = coder.stream
    coder.stream = on_text is not None and bool(coder.main_model.streaming)
    if coder.stream and on_text is not None:
        coder.show_send_output_stream = _teed(coder, coder.show_send_output_stream, on_text)
    try:
        yield
    finally:
        coder.stream = was_streaming
        coder.__dict__.pop("show_send_output_stream", None)  # the class's method again


def _teed(coder: Any, original: Callable[[Any], Iterator[str]], on_text: ReplySink) -> Any:
    """`show_send_output_stream` that also hands on the reply's new visible text, one call per
    message Aider sends (a reflection's message follows a blank line), and keeps the stream's
    usage for Aider's token count (it reads `completion.usage`, which a stream lacks)."""
    told = {"any": False}

    def show(completion: Any) -> Iterator[str]:
        usage: list[Any] = []
        sent = ""
        separate = told["any"]
        for piece in original(_usage_kept(completion, usage)):
            visible = _visible(coder)
            new = visible[len(sent) :] if visible.startswith(sent) else ""
            sent = visible
            if new:
                _tell(on_text, ("\n\n" if separate else "") + new)
                separate, told["any"] = False, True
            yield piece
        if usage:
            with contextlib.suppress(AttributeError, TypeError):
                completion.usage = usage[-1]

    return show


def _usage_kept(completion: Any, usage: list[Any]) -> Iterator[Any]:
    """The stream's chunks as they come; a chunk's usage (the last one, when the provider was
    asked for it: `stream_options`) is kept."""
    for chunk in completion:
        found = getattr(chunk, "usage", None)
        if found:
            usage.append(found)
        yield chunk


def _visible(coder: Any) -> str:
    """The message so far as the reply will show it: nothing while the model is still
    thinking, then without the thinking (as Aider strips it at the end)."""
    from aider.reasoning_tags import remove_reasoning_content

    if coder.got_reasoning_content and not coder.ended_reasoning_content:
        return ""
    return str(remove_reasoning_content(coder.partial_response_content or "", coder.reasoning_tag_name))


def _tell(on_text: ReplySink, text: str) -> None:
    """Hand on a piece; a failing reader never stops Aider's edit."""
    try:
        on_text(text)
    except Exception as exc:
        log.warning("a piece of the reply was not forwarded: %s", exc)


def ask_for_stream_usage(model: Any) -> None:
    """Ask the provider to end a streamed answer with its usage, where litellm knows the
    provider takes `stream_options` (else Aider estimates the tokens, as it does when it
    streams on its own); litellm drops it from the calls that do not stream."""
    from aider.llm import litellm

    try:
        supported = litellm.get_supported_openai_params(model=model.name) or []
    except Exception as exc:  # a model litellm does not know: no usage asked for, Aider estimates
        log.debug("litellm knows no parameters for %s: %s", model.name, exc)
        supported = []
    if "stream_options" in supported:
        model.extra_params = {**(model.extra_params or {}), "stream_options": {"include_usage": True}}


class ReplyForwarder:
    """Pieces written by Aider's worker thread, sent from the event loop in batches (see the
    module doc). `run` is the sending task; `close` sends what is left and ends it."""

    def __init__(self, send: Send, interval: float = BATCH_SECONDS) -> None:
        self._send = send
        self._interval = interval
        self._loop = asyncio.get_running_loop()
        self._lock = threading.Lock()
        self._pending: list[str] = []
        self._wake = asyncio.Event()
        self._closed = asyncio.Event()

    def write(self, text: str) -> None:
        """From the worker thread: queue a piece; the first of a batch wakes the sender."""
        if not text:
            return
        with self._lock:
            first = not self._pending
            self._pending.append(text)
        if first:
            with contextlib.suppress(RuntimeError):  # the loop is gone: nobody to send to
                self._loop.call_soon_threadsafe(self._wake.set)

    async def run(self) -> None:
        while True:
            await self._wake.wait()
            self._wake.clear()
            await self._flush()
            if self._closed.is_set():
                return
            # the pause between batches; the end of the edit cuts it short (its answer waits)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._closed.wait(), self._interval)

    def close(self) -> None:
        self._closed.set()
        self._wake.set()

    async def _flush(self) -> None:
        with self._lock:
            text, self._pending = "".join(self._pending), []
        if not text:
            return
        try:
            await self._send(text)
        except Exception as exc:  # the client went away: the edit goes on, its answer says all
            log.info("a piece of the reply was not sent: %s", exc)


async def forwarding(call: Callable[[ReplySink], T], send: Send) -> T:
    """Run the blocking `call` in a worker thread with a sink whose pieces reach `send` in
    batches; returns once the last batch is sent. `call`'s own error is raised as it is."""
    forwarder = ReplyForwarder(send)
    outcome: list[T] = []
    failure: list[Exception] = []

    async def work() -> None:
        try:
            outcome.append(await anyio.to_thread.run_sync(call, forwarder.write))
        except Exception as exc:
            failure.append(exc)
        finally:
            forwarder.close()

    async with anyio.create_task_group() as group:
        group.start_soon(forwarder.run)
        await work()
    if failure:
        raise failure[0]
    return outcome[0]
