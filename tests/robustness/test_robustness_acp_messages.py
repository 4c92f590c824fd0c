"""Every request and notification of the ACP protocol, sent with parameters that do not fit,
to a real `aider-lsp acp`: each request gets its JSON-RPC answer, each notification is dropped
with one line in the log, never a traceback, and the agent goes on (the LSP front end's rule)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from acp.meta import AGENT_METHODS

from aider_lsp_testing.raw_acp import RawAcpClient

BAD_PARAMS: list[Any] = [None, [], {}, [1, 2], "text", 7, {"sessionId": 5}, {"sessionId": "no-such-session"}]


def test_every_method_with_params_that_do_not_fit_is_answered_or_dropped_without_a_traceback(
    tmp_path: Path,
) -> None:
    env = {key: value for key, value in os.environ.items() if not key.startswith("AIDER_LSP_")}
    client = RawAcpClient(tmp_path / "agent.log", env)
    try:
        assert "result" in client.request("initialize", {"protocolVersion": 1, "clientCapabilities": {}})
        sent = []
        for method in [*AGENT_METHODS.values(), "_vendor/extension", "no/such/method"]:
            for params in BAD_PARAMS:
                client.send({"method": method, "params": params})  # as a notification
                sent.append(client.start_request(method, params))
        for msg_id in sent:
            answer = client.wait_response(msg_id, timeout=30)
            assert "result" in answer or answer["error"]["code"] < 0, answer
        # the agent still takes a well-formed request
        assert "result" in client.request("session/list", {})
    finally:
        client.close()
    log = client.stderr_text()
    assert "Traceback" not in log, log[-3000:]
    dropped = [line for line in log.splitlines() if "ignored" in line and "notification" in line]
    notifications = (len(AGENT_METHODS) + 2) * len(BAD_PARAMS)
    assert len(dropped) >= notifications - len(BAD_PARAMS)  # session/cancel's {"sessionId": "…"} fits
