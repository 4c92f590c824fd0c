"""lsp/cancellation.py relies on pygls's private request table: this fails when pygls changes it.

In-process, on pygls's real protocol: a request's future is in the table while its handler
runs, `$/cancelRequest` cancels that future, and the shim carries the cancel to the task."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from pygls.lsp.server import LanguageServer

from aider_lsp.lsp import cancellation
from aider_lsp_testing.waiting import eventually


class _Sink:
    def __init__(self) -> None:
        self.sent: list[dict[str, Any]] = []

    def write(self, data: bytes) -> None:
        self.sent.append(json.loads(data.split(b"\r\n\r\n", 1)[1]))

    def close(self) -> None:
        pass


def _receive(server: LanguageServer, message: dict[str, Any]) -> None:
    protocol = server.protocol
    protocol.handle_message(json.loads(json.dumps(message), object_hook=protocol.structure_message))


async def test_cancel_request_reaches_the_commands_task() -> None:
    server = LanguageServer("shim-test", "0")
    server.protocol.set_writer(_Sink())
    seen: dict[str, Any] = {}
    started = asyncio.Event()

    @server.command("shim.wait")
    async def wait(ls: LanguageServer, *args: Any) -> str:
        seen["future"] = cancellation.request_future(ls.protocol)
        inner = asyncio.ensure_future(asyncio.sleep(60))
        seen["inner"] = inner
        cancellation.cancel_task_with_request(ls.protocol, inner)
        started.set()
        await inner
        return "finished"

    _receive(
        server,
        {
            "jsonrpc": "2.0",
            "id": 7,
            "method": "workspace/executeCommand",
            "params": {"command": "shim.wait", "arguments": []},
        },
    )
    await asyncio.wait_for(started.wait(), 60)
    assert seen["future"] is not None, "pygls no longer keeps the request's future where the shim looks"
    assert not seen["future"].done()
    _receive(server, {"jsonrpc": "2.0", "method": "$/cancelRequest", "params": {"id": 7}})
    assert seen["future"].cancelled()
    assert await eventually(lambda: seen["inner"].done()), "the cancel did not reach the command's task"
    assert seen["inner"].cancelled()


async def test_outside_a_request_there_is_no_future() -> None:
    server = LanguageServer("shim-test", "0")
    assert cancellation.request_future(server.protocol) is None
    assert cancellation.request_cancelled(server.protocol)
