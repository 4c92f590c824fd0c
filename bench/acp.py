"""`aider-lsp acp` as an editor feels it: the first update, an Edit turn beside LSP, the reply's pieces.

A real `aider-lsp acp` driven by the ACP SDK's client side and a real `aider-lsp serve` driven by
a raw LSP client, each on its own copy of a one-file workspace, the scripted model on 127.0.0.1
answering Aider (whole format). After one warm-up edit on each:
  (a) the time from sending `session/prompt` (an Edit turn naming the file) to the first
      `session/update` the client receives; goal <= 50 ms;
  (b) the same one-line edit as an ACP Edit turn and over LSP, interleaved (which goes first
      alternates): medians and the ratio ACP / LSP; goal <= 1.1. Like is compared with like:
      an Edit turn is a turn of the session's kept Aider chat, whose reply streams to the
      client as it is written, so its LSP counterpart is `aider-lsp.aider.interactive`, a turn
      of a kept chat whose reply streams into the command's progress (the client shows
      progress, as VS Code does); both chats start warm with one turn and have had as many
      turns at each repetition (a chat's turn costs more as its history grows). A one-shot
      edit, `aider-lsp.aider.automatic` (no history, streamed too), is printed beside them;
  (c) the model streams its answer in pieces (--pieces, --every seconds apart): the delay from
      the model sending its first piece to the client receiving the first agent_message_chunk;
      goal <= 0.3 s. Beside it, the baseline of the same run: when the whole reply came (the
      prompt's answer), which is when a client saw the reply's first word before streaming.
Needs the Aider environment (`aider-lsp setup-aider`). Prints figures; asserts nothing.

    .venv/bin/python bench/acp.py [--runs 9] [--streams 3] [--pieces 8] [--every 0.25]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from aider_lsp.config import aider_env
from aider_lsp_testing.llm_server import ScriptedLLMServer, aider_whole, dribbled, last_user_contains
from aider_lsp_testing.raw_lsp import RawLspClient

MODEL = "openai/bench-coder"
VERSIONS = {
    "v1": "def add(a, b):\n    return a + b  # v1\n",
    "v2": "def add(a, b):\n    return a + b  # v2\n",
}
PREFACE = "I change the comment on add's return line, as asked, and nothing else. " * 4


class Client:
    """The editor's side of ACP: every session/update with the time it arrived."""

    def __init__(self) -> None:
        self.updates: list[tuple[float, Any]] = []

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        self.updates.append((time.monotonic(), update))

    def on_connect(self, conn: Any) -> None:
        """Nothing to keep."""

    def since(self, start: int) -> list[tuple[float, Any]]:
        return self.updates[start:]


def workspace() -> Path:
    root = Path(tempfile.mkdtemp(prefix="aider-bench-acp-"))
    (root / "calc.py").write_text(VERSIONS["v2"])
    return root


def next_prompt(root: Path) -> str:
    """Ask for the version the file does not have, so every edit really changes it."""
    return (
        "Change the comment to v2" if "# v1" in (root / "calc.py").read_text() else "Change the comment to v1"
    )


def script(server: ScriptedLLMServer, *, pieces: int = 0, every: float = 0.0) -> None:
    """Aider's answers: at once, or (pieces > 0) streamed slowly."""
    server.clear_rules()
    for tag, content in VERSIONS.items():
        answer = aider_whole({"calc.py": content}, preface=PREFACE.strip())
        reply = dribbled(answer, pieces=pieces, every=every) if pieces else answer
        server.add_rule(last_user_contains(f"to {tag}"), reply)


def agent_env(base_url: str, state: Path) -> dict[str, str]:
    env = {key: value for key, value in os.environ.items() if not key.startswith("AIDER_LSP_")}
    env.update(
        AIDER_LSP_MODEL="openai:bench-planner",
        AIDER_LSP_BASE_URL=base_url,
        AIDER_LSP_API_KEY="bench-key",
        AIDER_LSP_AIDER_MODEL=MODEL,
        AIDER_LSP_AIDER_SERVER=json.dumps({"args": ["--edit-format", "whole"]}),
        XDG_STATE_HOME=str(state),
    )
    return env


async def acp_edit(conn: Any, client: Client, session_id: str, root: Path) -> tuple[float, float, float]:
    """One Edit turn: (to the first update, to the first message chunk, to the answer), each
    from the moment `session/prompt` is sent (time.monotonic: the scripted model's clock too)."""
    from acp import resource_link_block, text_block

    start = len(client.updates)
    link = resource_link_block("calc.py", (root / "calc.py").as_uri())
    sent = time.monotonic()
    answer = await conn.prompt(session_id=session_id, prompt=[text_block(next_prompt(root)), link])
    done = time.monotonic()
    if answer.stop_reason != "end_turn":
        raise SystemExit(f"ACP edit ended with {answer.stop_reason}")
    from acp.schema import AgentMessageChunk

    updates = client.since(start)
    chunks = [at for at, update in updates if isinstance(update, AgentMessageChunk)]
    return updates[0][0] - sent, chunks[0] - sent, done - sent


def lsp_edit(client: RawLspClient, root: Path, chat: dict[str, str] | None = None) -> float:
    """`aider.automatic`, or with `chat` a turn of the kept chat `aider.interactive` (its
    session id kept in `chat`)."""
    argument: dict[str, Any] = {"prompt": next_prompt(root), "file_context": ["calc.py"]}
    command = "aider-lsp.aider.automatic" if chat is None else "aider-lsp.aider.interactive"
    if chat:
        argument["session_id"] = chat["id"]
    started = time.perf_counter()
    answer = client.execute(command, argument, timeout=120)
    elapsed = time.perf_counter() - started
    result = answer.get("result") or {}
    if result.get("status") != "COMPLETE":
        raise SystemExit(f"LSP edit failed: {answer}")
    if chat is not None:
        chat["id"] = result["notes"]["session_id"]
    return elapsed


async def _compared(run: int, acp: tuple[Any, ...], lsp: tuple[Any, ...], figures: dict[str, Any]) -> None:
    """One repetition of (b): the ACP Edit turn and the LSP chat turn, the first one of them
    alternating (a turn may run faster or slower for following another); then the one-shot edit."""

    async def over_acp() -> None:
        first, _, whole = await acp_edit(*acp)
        figures["first_update"].append(first)
        figures["acp"].append(whole)

    async def over_lsp() -> None:
        figures["lsp_chat"].append(await asyncio.to_thread(lsp_edit, *lsp))

    for turn in (over_acp, over_lsp) if run % 2 == 0 else (over_lsp, over_acp):
        await turn()
    figures["lsp"].append(await asyncio.to_thread(lsp_edit, *lsp[:2]))


def start_lsp(root: Path, base_url: str, state: Path) -> RawLspClient:
    options = {"baseUrl": base_url, "aiderModel": MODEL, "aiderServer": {"args": ["--edit-format", "whole"]}}
    log = Path(tempfile.mkstemp(prefix="aider-bench-lsp-", suffix=".log")[1])
    client = RawLspClient(log, env={"XDG_STATE_HOME": str(state)}, configuration=options)
    client.initialize(root, options)
    return client


async def bench(args: argparse.Namespace, server: ScriptedLLMServer, state: Path) -> dict[str, Any]:
    from acp.schema import ClientCapabilities

    from acp import spawn_agent_process

    acp_root, lsp_root = workspace(), workspace()
    names = ("first_update", "acp", "lsp", "lsp_chat", "first_chunk", "whole")
    figures: dict[str, Any] = {name: [] for name in names}
    chat: dict[str, str] = {}
    lsp = start_lsp(lsp_root, server.base_url, state)
    client = Client()
    command = [sys.executable, "-m", "aider_lsp", "acp"]
    try:
        async with spawn_agent_process(
            client,
            *command,
            env=agent_env(server.base_url, state),
            transport_kwargs={"stderr": asyncio.subprocess.DEVNULL},
        ) as (conn, _):
            await conn.initialize(protocol_version=1, client_capabilities=ClientCapabilities())
            session_id = (await conn.new_session(cwd=str(acp_root), mcp_servers=[])).session_id
            script(server)
            await acp_edit(conn, client, session_id, acp_root)  # warm-up: starts Aider
            await asyncio.to_thread(lsp_edit, lsp, lsp_root)
            await asyncio.to_thread(lsp_edit, lsp, lsp_root, chat)
            for run in range(args.runs):
                await _compared(run, (conn, client, session_id, acp_root), (lsp, lsp_root, chat), figures)
            script(server, pieces=args.pieces, every=args.every)
            for _ in range(args.streams):
                before = len(server.first_pieces)
                sent = time.monotonic()
                _, first_chunk, whole = await acp_edit(conn, client, session_id, acp_root)
                if len(server.first_pieces) != before + 1:
                    raise SystemExit("the model did not stream its answer")
                token = server.first_pieces[-1] - sent
                figures["first_chunk"].append(first_chunk - token)
                figures["whole"].append(whole - token)
        lsp.shutdown()
    finally:
        lsp.close()
        for root in (acp_root, lsp_root):
            shutil.rmtree(root, ignore_errors=True)
    return figures


def report(args: argparse.Namespace, figures: dict[str, Any]) -> None:
    med = {name: statistics.median(values) for name, values in figures.items()}
    print("ACP front end (aider-lsp acp, warm), scripted model on 127.0.0.1, real Aider:")
    first_ms = med["first_update"] * 1000
    print(
        f"  (a) session/prompt -> first session/update : {first_ms:7.1f} ms median, "
        f"max {max(figures['first_update']) * 1000:.1f} ms (n={args.runs}; goal <= 50 ms): "
        f"{'OK' if first_ms <= 50 else 'MISSED'}"
    )
    ratio = med["acp"] / med["lsp_chat"]
    pairs = sorted(a / b for a, b in zip(figures["acp"], figures["lsp_chat"], strict=True))
    print(
        f"  (b) Edit turn over ACP (a kept chat, streamed)      : {med['acp'] * 1000:7.1f} ms median"
        f" (n={args.runs})"
    )
    print(
        f"      the same over LSP (aider.interactive, streamed) : {med['lsp_chat'] * 1000:7.1f} ms median"
        f" (n={args.runs})"
    )
    print(
        f"      ACP / LSP = {ratio:.2f}  (goal <= 1.1): {'OK' if ratio <= 1.1 else 'MISSED'};"
        f" each pair {pairs[0]:.2f}-{pairs[-1]:.2f}, median {statistics.median(pairs):.2f}"
    )
    print(
        f"      a one-shot edit over LSP (aider.automatic)      : {med['lsp'] * 1000:7.1f} ms median"
        f" (no chat history; ACP / it = {med['acp'] / med['lsp']:.2f})"
    )
    delay = med["first_chunk"]
    print(
        f"  (c) model streams {args.pieces} pieces {args.every:g} s apart; from its first piece to the"
        " client's first agent_message_chunk:"
    )
    print(
        f"      {delay * 1000:7.1f} ms median, max {max(figures['first_chunk']) * 1000:.1f} ms "
        f"(n={args.streams}; goal <= 300 ms): {'OK' if delay <= 0.3 else 'MISSED'}"
    )
    print(
        f"      baseline, the whole reply (the prompt's answer): {med['whole'] * 1000:7.1f} ms after"
        f" the first piece; streaming shows the first words {med['whole'] / max(delay, 1e-6):.0f}x sooner"
    )


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--runs", type=int, default=9, help="Edit turns measured on each front end")
    parser.add_argument("--streams", type=int, default=3, help="Edit turns with a streaming model")
    parser.add_argument("--pieces", type=int, default=8)
    parser.add_argument("--every", type=float, default=0.25, help="seconds between the model's pieces")
    args = parser.parse_args()
    # this file is bench/acp.py: its folder, first on sys.path, would shadow the SDK's `acp`
    here = Path(__file__).resolve().parent
    sys.path[:] = [entry for entry in sys.path if Path(entry or ".").resolve() != here]
    if not aider_env.is_ready():
        print(f"the Aider environment is missing: run `aider-lsp setup-aider` ({aider_env.env_dir()})")
        return 1
    state = Path(tempfile.mkdtemp(prefix="aider-bench-state-"))
    server = ScriptedLLMServer().start()
    try:
        figures = asyncio.run(bench(args, server, state))
    finally:
        server.stop()
        shutil.rmtree(state, ignore_errors=True)
    report(args, figures)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
