"""Adversarial: secret file contents never reach a model, whichever path asks for them.

A workspace holds the usual secrets (.env, id_rsa, *.pem, credentials.json, a file under
.ssh/, a symlink to .env, a token in .git/config) plus a file named by `secretPatterns` with a
folder in it (`config/prod.yaml`). Every path that can put file content in front of a model is
driven over real HTTP to the scripted LLM; every recorded request body is searched for the
secret values.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from aider_lsp.app import Application
from aider_lsp.config.settings import Settings
from aider_lsp.guards.files import FileAccessManager
from aider_lsp.models import TaskStatus
from aider_lsp_testing.llm_server import (
    ScriptedLLMServer,
    any_request,
    has_tool_result,
    not_,
    system_prompt,
    text,
    tool_call,
    tool_calls,
)
from aider_lsp_testing.lsp_session import execute

SECRETS = {
    ".env": "ENVSECRET111",
    "id_rsa": "RSASECRET222",
    "certs/server.pem": "PEMSECRET333",
    "credentials.json": "CREDSECRET444",
    "config/secrets.yaml": "YAMLSECRET555",
    "config/prod.yaml": "PRODSECRET666",  # only secret through secretPatterns
    ".ssh/config.txt": "SSHSECRET777",
    "deploy/.ssh/notes.md": "SSHSECRET888",
    ".git/config": "GITTOKEN999",
}
LINKS = {"settings.txt": ".env", "pkg/envlink.py": "../.env"}
USER_PATTERNS = ["config/prod.yaml"]
ALL_PATHS = [*SECRETS, *LINKS]


def build_secret_workspace(root: Path) -> Path:
    (root / "pkg").mkdir(parents=True, exist_ok=True)
    (root / "pkg" / "calc.py").write_text("def add(a, b):\n    return a + b  # password secret key config\n")
    for rel, value in SECRETS.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"password = {value}\nsecret key config yaml ssh\n")
    for rel, target in LINKS.items():
        os.symlink(target, root / rel)
    return root


def leaked(blob: Any) -> list[str]:
    text_blob = blob if isinstance(blob, str) else json.dumps(blob, default=str)
    return [value for value in SECRETS.values() if value in text_blob]


def make_app(root: Path, server: ScriptedLLMServer) -> Application:
    settings = Settings(model="openai:scripted", base_url=server.base_url, secret_patterns=USER_PATTERNS)
    app = Application(root, settings)
    app.handler.llm.request_retries = 1
    return app


def test_user_secret_patterns_with_folders_are_honoured(tmp_path: Path) -> None:
    files = FileAccessManager(tmp_path, secret_patterns=["config/prod.yaml", "/deploy/*.yml", "private/"])
    for rel in ("config/prod.yaml", "deploy/app.yml", "private/a/b.txt", "src/private/x.py"):
        assert files.is_secret(rel), rel
    for rel in ("config/dev.yaml", "src/deploy/app.yml", "pkg/calc.py"):
        assert not files.is_secret(rel), rel
    assert files.is_secret(".git/config")  # may hold a token in a remote URL
    for rel in (
        ".pgpass",
        "infra/terraform.tfstate",
        "infra/terraform.tfstate.backup",
        "keys/deploy.ppk",
        "vault.kdbx",
    ):
        assert files.is_secret(rel), rel


async def test_no_secret_reaches_the_model_through_any_read_path(
    tmp_path: Path, llm_server: ScriptedLLMServer
) -> None:
    root = build_secret_workspace(tmp_path / "ws")
    app = make_app(root, llm_server)
    results: list[Any] = []
    try:
        read = await app.handle_task_command("system:read_files", {"file_paths": [*ALL_PATHS, "pkg/calc.py"]})
        assert read.ok and read.notes["files_read_count"] == 1
        assert set(read.notes["skipped_files"]) == set(ALL_PATHS)
        results.append(read.model_dump())
        for query in ("password secret key", "config prod yaml", "ssh notes git config"):
            found = await app.handle_task_command(
                "system:get_context", {"query": query, "target_files": ALL_PATHS}
            )
            results.append(found.model_dump())
            assert not set(found.notes.get("file_paths") or []) & set(ALL_PATHS), found.notes
        primed = await app.handler.prime_data_context("password secret key config", ALL_PATHS)
        assert primed.ok and primed.notes["file_paths"] == ["pkg/calc.py"], primed.notes
        results.append(primed.model_dump())

        # a model asking the read-only tools for the secrets, during a plan template whose
        # file_context names them
        llm_server.add_rule(
            not_(has_tool_result()),
            tool_calls(
                [
                    ("system_read_files", {"file_paths": ALL_PATHS}),
                    ("system_get_context", {"query": "password secret", "target_files": ALL_PATHS}),
                ]
            ),
        )
        llm_server.add_rule(
            any_request, tool_call("final_result", {"instructions": "swap", "files": ["pkg/calc.py"]})
        )
        plan = await app.handle_task_command(
            "user:generate-plan-from-goal",
            {"goal": "fix add", "context_string": "see the config", "file_context": json.dumps(ALL_PATHS)},
        )
        assert plan.status is TaskStatus.COMPLETE, plan.content
        results.append(plan.model_dump())
        assert "return a + b" in system_prompt(llm_server.requests[0])  # the data context was sent
    finally:
        await app.aclose()
    assert llm_server.requests, "the model was never asked"
    assert leaked(llm_server.requests) == []
    assert leaked(results) == []


async def test_secrets_stay_out_through_the_language_server(
    tmp_path: Path, lsp: Any, llm_server: ScriptedLLMServer
) -> None:
    root = build_secret_workspace(tmp_path / "ws")
    options = {"model": "openai:scripted", "baseUrl": llm_server.base_url, "secretPatterns": USER_PATTERNS}
    llm_server.add_rule(any_request, text("noted"))
    async with lsp(root, init_options=options) as client:
        read = await execute(client, "aider-lsp.system.readFiles", {"file_paths": ALL_PATHS})
        primed = await execute(
            client,
            "aider-lsp.handler.primeContext",
            {"query": "password secret config", "initial_files": ALL_PATHS},
        )
        context = await execute(
            client,
            "aider-lsp.system.getContext",
            {"query": "password secret yaml", "target_files": ALL_PATHS},
        )
    assert primed["status"] == "COMPLETE", primed
    assert leaked([read, primed, context]) == []
    assert leaked(llm_server.requests) == []


async def test_provider_keys_printed_by_tests_or_in_files_never_reach_the_model(
    tmp_path: Path, llm_server: ScriptedLLMServer, monkeypatch: Any, caplog: Any
) -> None:
    import logging
    import sys

    key, settings_key = "sk-ant-PROVIDERKEY123456", "sk-SETTINGSKEY987654"
    monkeypatch.setenv("ANTHROPIC_API_KEY", key)
    root = tmp_path / "ws"
    root.mkdir()
    (root / "show_env.py").write_text("import os\nprint(dict(os.environ))\nraise SystemExit(1)\n")
    (root / "conf.py").write_text(
        f"FALLBACK_KEY = {key!r}\nOTHER = {settings_key!r}\n"
    )  # hardcoded by the user
    settings = Settings(
        model="openai:scripted",
        base_url=llm_server.base_url,
        api_key=settings_key,
        test_command=f"{sys.executable} show_env.py",
        debug=True,
    )
    app = Application(root, settings)
    app.handler.llm.request_retries = 1
    try:
        tests = await app.run_tests()
        output = tests.stdout
        assert key in output  # the user's test really printed it
        llm_server.add_rule(
            not_(has_tool_result()), tool_call("system_read_files", {"file_paths": ["conf.py"]})
        )
        llm_server.add_rule(
            any_request, tool_call("final_result", {"verdict": "FAILURE", "message": "env dump"})
        )
        with caplog.at_level(logging.DEBUG):
            analysis = await app.handle_task_command(
                "user:evaluate-and-retry-analysis",
                {
                    "original_goal": "g",
                    "initial_task_context": "",
                    "aider_instructions": "i",
                    "aider_status": "COMPLETE",
                    "aider_diff": "",
                    "test_command": settings.test_command,
                    "test_stdout": output,
                    "test_stderr": tests.stderr,
                    "test_exit_code": "1",
                    "previous_files": "show_env.py",
                    "iteration": "1",
                    "max_retries": "3",
                },
            )
        assert analysis.status is TaskStatus.COMPLETE, analysis.content
    finally:
        await app.aclose()
    sent = json.dumps(llm_server.requests)
    assert "show_env.py" in sent and "FALLBACK_KEY" in sent  # the output and the file were sent
    assert key not in sent and settings_key not in sent
    assert "[REDACTED:ANTHROPIC_API_KEY]" in sent
    logged = "\n".join(record.getMessage() for record in caplog.records if record.levelno >= logging.INFO)
    assert key not in logged and settings_key not in logged
