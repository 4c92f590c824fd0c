"""Every request to an OpenAI-compatible endpoint counted, whether or not it reported usage.

pydantic-ai counts the requests and tokens of the answers it received in full. A request that
timed out or was cancelled, an HTTP retry, and a stream whose server sent no usage (many local
servers) count nothing there, yet the server worked for them. So the planning model's client
sends its requests through `MeteredTransport`: each request is recorded in the call's `Meter`
(a context variable set around the call) with the bytes it sent and received and whether the
answer carried a usage. What the provider did not report is estimated from those bytes (about
four bytes a token), labelled as an estimate, and counted by the budget.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextvars import ContextVar
from dataclasses import dataclass, field

import httpx2 as httpx  # httpx's successor, what the openai SDK here speaks

BYTES_PER_TOKEN = 4  # the usual rule of thumb for English text and code
_USAGE_MARK = b'"prompt_tokens"'  # an answer's usage object (the last chunk, in a stream)


@dataclass
class RequestRecord:
    """One HTTP request of a call: the bytes it sent and got, and whether usage came back."""

    sent_bytes: int
    received_bytes: int = 0
    reported: bool = False


@dataclass
class Meter:
    """The requests of one model call."""

    records: list[RequestRecord] = field(default_factory=list)

    @property
    def requests(self) -> int:
        return len(self.records)

    def estimated_tokens(self) -> int:
        """Tokens of the requests whose usage no answer reported, estimated from their bytes."""
        unreported = [record for record in self.records if not record.reported]
        return sum(record.sent_bytes + record.received_bytes for record in unreported) // BYTES_PER_TOKEN


CURRENT_METER: ContextVar[Meter | None] = ContextVar("aider_lsp_meter", default=None)


class _CountingStream(httpx.AsyncByteStream):
    """A response body passed on as it comes, its bytes and usage noted in the record."""

    def __init__(self, inner: httpx.AsyncByteStream, record: RequestRecord) -> None:
        self._inner = inner
        self._record = record
        self._tail = b""

    async def __aiter__(self) -> AsyncIterator[bytes]:
        async for chunk in self._inner:
            self._record.received_bytes += len(chunk)
            if _USAGE_MARK in self._tail + chunk:  # the mark may straddle two chunks
                self._record.reported = True
            self._tail = chunk[-len(_USAGE_MARK) :]
            yield chunk

    async def aclose(self) -> None:
        await self._inner.aclose()


class MeteredTransport(httpx.AsyncBaseTransport):
    """An httpx transport that records each request in the current call's Meter."""

    def __init__(self, inner: httpx.AsyncBaseTransport | None = None) -> None:
        self._inner = inner or httpx.AsyncHTTPTransport()

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        meter = CURRENT_METER.get()
        if meter is None:
            return await self._inner.handle_async_request(request)
        record = RequestRecord(sent_bytes=_body_size(request))
        meter.records.append(record)
        response = await self._inner.handle_async_request(request)
        if isinstance(response.stream, httpx.AsyncByteStream):
            response.stream = _CountingStream(response.stream, record)
        return response

    async def aclose(self) -> None:
        await self._inner.aclose()


def _body_size(request: httpx.Request) -> int:
    """The request body's bytes (0 for a body still to be streamed: nothing to count yet)."""
    try:
        return len(request.content)
    except httpx.RequestNotRead:
        return 0


def metered_client(timeout: float) -> httpx.AsyncClient:
    """The HTTP client of an OpenAI-compatible provider, its requests metered."""
    return httpx.AsyncClient(transport=MeteredTransport(), timeout=httpx.Timeout(timeout, connect=10.0))
