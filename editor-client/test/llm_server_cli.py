"""Runs the project's scripted OpenAI-compatible LLM server (aider_lsp_testing.llm_server) standalone.

For the editor client's protocol test: prints {"base_url": ...} on one line, then serves until
stdin closes. Rules: --whole PATH=CONTENT answers every request of model `scripted-coder` (Aider)
in Aider's whole-file format; --plan JSON answers model `scripted-planner` with that object,
except its analysis requests (the workflow's judge) when --analysis JSON gives their answer.
"""

from __future__ import annotations

import argparse
import json
import sys

from aider_lsp_testing import llm_server


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--whole", action="append", default=[], help="PATH=CONTENT for Aider's answer")
    parser.add_argument("--plan", help="JSON object answered to the planning model")
    parser.add_argument("--analysis", help="JSON object answered to the workflow's analysis")
    args = parser.parse_args()
    server = llm_server.ScriptedLLMServer(models=["scripted-coder", "scripted-planner"])
    if args.whole:
        files = dict(item.split("=", 1) for item in args.whole)
        server.add_rule(llm_server.model_is("scripted-coder"), llm_server.aider_whole(files))
    if args.analysis:
        server.add_rule(
            llm_server.all_of(llm_server.model_is("scripted-planner"), llm_server.IS_ANALYSIS),
            llm_server.json_output(json.loads(args.analysis)),
        )
    if args.plan:
        server.add_rule(
            llm_server.model_is("scripted-planner"), llm_server.json_output(json.loads(args.plan))
        )
    server.start()
    print(json.dumps({"base_url": server.base_url}), flush=True)
    try:
        sys.stdin.read()
    finally:
        server.stop()


if __name__ == "__main__":
    main()
