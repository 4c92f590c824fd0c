"""Failing tests first on a real suite: the test time of the iterations after the first, and a
run's wall time, beside "the whole suite every iteration" (`failingTestsFirst: false`).

Two stories, each run both ways in the same process, with REAL Aider edits (the bundled
server, `diff` edit format) answered by the scripted model on 127.0.0.1:

- pytest on a real repository: a clone of more-itertools/more-itertools (`--repo`, default
  $AIDER_LSP_BENCH_FAILING_REPO; nothing is downloaded: bring it with `git clone`). The bench
  seeds a bug in `chunked(strict=True)` (more_itertools/more.py: `len(chunk) != n` becomes
  `== n`, which `ChunkedTests::test_strict_being_true` catches); Aider's first two edits are
  wrong, the third restores the line. Test command: `<this python> -m pytest -q -p no:cacheprovider tests`.
- node's test runner (`node --test`) on a project the bench generates (60 test files of 40
  tests; no real JavaScript repository's suite runs offline here without its dependencies):
  `src/calc.js`'s `add` is seeded `a - b`, covered by the first file's tests; the same three
  edits.

Printed per story: the whole suite's time (the first iteration, whichever way), the test
time of iterations 2 and 3 both ways (failing first: the failing tests, then the whole suite
once they pass), their ratio to a whole-suite run (target <= 1/5 for an iteration whose
failing tests still fail), and the run's wall time both ways.
Needs the Aider environment (`aider-lsp setup-aider`).

    .venv/bin/python bench/failing_first.py [--repo DIR] [--skip-pytest] [--skip-node]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from aider_lsp.app import Application
from aider_lsp.config import aider_env
from aider_lsp.config.settings import load_settings
from aider_lsp.models import RequestContext, TaskStatus, WorkflowRequest
from aider_lsp_testing.apps import run_workflow_on_wire
from aider_lsp_testing.calc_project import analysis_by_exit_code
from aider_lsp_testing.llm_server import (
    IS_AIDER,
    IS_AIDER_SUMMARY,
    IS_ANALYSIS,
    ScriptedLLMServer,
    aider_diff,
    text,
)


@dataclass(frozen=True)
class Story:
    """A project, its test command, the file Aider edits and the line's versions: the seeded
    bug, two wrong edits, the fix (each edit replaces the one before)."""

    name: str
    root: Path
    command: str
    file: str
    versions: tuple[str, ...]

    def seed(self) -> None:
        """The file as the project had it (the last version), then the bug seeded."""
        path = self.root / self.file
        text = path.read_text()
        for version in self.versions[:-1]:  # what an earlier run may have left
            text = text.replace(version, self.versions[-1])
        if self.versions[-1] not in text:
            raise SystemExit(f"{self.name}: {self.file} does not hold {self.versions[-1]!r}")
        path.write_text(text.replace(self.versions[-1], self.versions[0], 1))


@dataclass(frozen=True)
class Measured:
    wall_s: float
    test_s: list[float]  # per iteration: every test run of it
    scopes: list[str]


def pytest_story(repo: Path, work: Path) -> Story:
    root = work / "more-itertools"
    subprocess.run(["git", "clone", "-q", str(repo), str(root)], check=True)
    return Story(
        "pytest (more-itertools)",
        root,
        f"{sys.executable} -m pytest -q -p no:cacheprovider tests",
        "more_itertools/more.py",
        ("if len(chunk) == n:", "if len(chunk) >= n:", "if n <= len(chunk):", "if len(chunk) != n:"),
    )


def node_story(work: Path, files: int = 60, tests: int = 40) -> Story:
    root = work / "node-suite"
    (root / "src").mkdir(parents=True)
    (root / "test").mkdir()
    (root / "src" / "calc.js").write_text(
        "function add(a, b) {\n  return a + b;\n}\n\nfunction twice(a) {\n  return 2 * a;\n}\n\n"
        "module.exports = { add, twice };\n"
    )
    header = "const test = require('node:test');\nconst assert = require('node:assert');\n"
    header += "const { add, twice } = require('../src/calc.js');\n\n"
    for number in range(files):
        use = "add" if number == 0 else "twice"
        body = "".join(
            f"test('{use} case {number}.{case}', () => {{\n"
            f"  let total = 0;\n  for (let i = 0; i < 2000; i++) total += i % 7;\n"
            f"  assert.strictEqual({use}({case}, {case}), {2 * case});\n}});\n"
            for case in range(tests)
        )
        (root / "test" / f"t{number:02d}.test.js").write_text(header + body)
    return Story(
        "node --test (generated)",
        root,
        "node --test test/",
        "src/calc.js",
        ("return a - b;", "return b - a;", "return a * b;", "return a + b;"),
    )


def scripted(story: Story) -> ScriptedLLMServer:
    server = ScriptedLLMServer().start()
    server.add_rule(IS_ANALYSIS, analysis_by_exit_code)
    server.add_rule(IS_AIDER_SUMMARY, text("The user asked to make the tests pass; edits were tried."))
    for before, after in zip(story.versions, story.versions[1:], strict=False):
        server.add_rule(IS_AIDER, aider_diff([(story.file, before, after)]), times=1)
    return server


async def run_once(story: Story, failing_first: bool) -> Measured:
    story.seed()
    server = scripted(story)
    settings = {
        "model": "openai:scripted-planner",
        "baseUrl": server.base_url,
        "apiKey": "bench",
        "aiderModel": "openai/scripted-coder",
        "aiderServer": {"args": ["--edit-format", "diff"]},
        "aiderMapTokens": 0,
        "failingTestsFirst": failing_first,
        "timeouts": {"aider": 300, "test": 600},
    }
    app = Application(story.root, load_settings(settings, environ={}))
    try:
        await app.start_aider()
        request = WorkflowRequest(
            goal="make the tests pass", test_command=story.command, file_context=[story.file], max_retries=3
        )
        started = time.perf_counter()
        result = await run_workflow_on_wire(app, request, RequestContext())
        wall = time.perf_counter() - started
    finally:
        await app.aclose()
        server.stop()
    if result.status is not TaskStatus.COMPLETE:
        raise SystemExit(f"{story.name}: the run did not succeed: {result.content}")
    iterations = result.notes["workflow"]["iterations"]
    return Measured(
        wall,
        [sum(run["duration_s"] for run in item["test_runs"]) for item in iterations],
        ["+".join(run["scope"] for run in item["test_runs"]) for item in iterations],
    )


def report(story: Story, ours: Measured, whole: Measured) -> None:
    suite = statistics.median([whole.test_s[0], ours.test_s[0], *whole.test_s[1:]])
    print(f"\n{story.name}: `{story.command}`")
    print(f"  whole suite (median of the whole-suite runs): {suite:8.2f} s")
    for number in range(1, len(ours.test_s)):
        ratio = ours.test_s[number] / suite
        print(
            f"  iteration {number + 1}: failing first {ours.test_s[number]:7.2f} s ({ours.scopes[number]}; "
            f"{ratio:.2f} of the suite)  |  whole suite {whole.test_s[number]:7.2f} s"
        )
    print(f"  wall time of the run: failing first {ours.wall_s:7.2f} s  |  whole suite every iteration "
          f"{whole.wall_s:7.2f} s  ({ours.wall_s / whole.wall_s:.2f}x)")  # fmt: skip


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--repo", type=Path, default=os.environ.get("AIDER_LSP_BENCH_FAILING_REPO"))
    parser.add_argument("--skip-pytest", action="store_true")
    parser.add_argument("--skip-node", action="store_true")
    args = parser.parse_args()
    if not aider_env.is_ready():
        print(f"the Aider environment is missing: run `aider-lsp setup-aider` ({aider_env.env_dir()})")
        return 1
    work = Path(tempfile.mkdtemp(prefix="aider-bench-failing-"))
    stories: list[Story] = []
    if not args.skip_pytest:
        if args.repo is None or not Path(args.repo).exists():
            print("pytest story skipped: pass --repo (a clone of more-itertools/more-itertools)")
        else:
            stories.append(pytest_story(Path(args.repo), work))
    if not args.skip_node:
        if shutil.which("node") is None:
            print("node story skipped: node is not installed")
        else:
            stories.append(node_story(work))
    try:
        for story in stories:
            ours = asyncio.run(run_once(story, failing_first=True))
            whole = asyncio.run(run_once(story, failing_first=False))
            report(story, ours, whole)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
