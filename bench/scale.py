"""Scale: a real `aider-lsp serve` indexing a generated tree of 100,000 small Python files.

The tree is generated, deterministic and seeded; nothing is downloaded. A vocabulary of
pronounceable made-up words (syllables drawn by a seeded generator) is used with Zipf-like
frequencies (a few words in most files, most words in few), and each file
`pkg_PPP/sub_S/mod_MMM.py` gets a module docstring, a constant, two to four functions with
parameters and docstrings, and a class with a docstring and a method: 700–1,000 bytes. File i
is built from `random.Random(f"{seed}:{i}")` alone, so the queries are rebuilt without
reading the tree. It is written once to `~/.cache/aider-lsp/bench-scale/` (`--tree-dir`).

Measured, against a real server over stdio (the raw client of aider_lsp_testing):

- cheap requests (textDocument/codeAction and aider-lsp.tools.list in turn, one after the
  other) while the first index runs, then the same with the server idle: p50 / p99;
- the first index: time from its progress "begin" to its "end", files and MB per second,
  index size per MB of text, beside the stdlib bench's per-file figures (docs/memory.md);
- queries (aider-lsp.system.getContext, a function's docstring → its file): p50 / p99 over
  the wire, and recall@5;
- the server's memory: RSS and peak RSS (VmHWM) of the server, and of its worker processes;
- after shutdown, in this process on the same index file: one-file incremental update (median)
  and the same queries in-process (p50 / p99).

`--baseline-server DIR` runs the same measurements first with another copy of the server
package (e.g. main's `server/`), so that both sets of figures come from the same run and load.

Targets: cheap-request p99 while indexing < 50 ms, one-file update <= 10 ms, query p50 <= 30 ms
and p99 <= 100 ms.

    python bench/scale.py [--files 100000] [--queries 200] [--baseline-server /work/main/server]
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from aider_lsp_testing.raw_lsp import RawLspClient, children_of

FILES_PER_DIR = 100
SUBS_PER_PKG = 10
VOCABULARY = 6000
ONSETS = ["b", "c", "d", "f", "g", "l", "m", "n", "p", "r", "s", "t", "v", "z", "br", "st", "tr", "pl", "gr"]
VOWELS = ["a", "e", "i", "o", "u", "ai", "ou", "ea"]
CODAS = ["", "", "n", "r", "s", "t", "l", "m", "x", "nd", "rk"]
NOTES = "def describe():\n    return 'scale notes'\n"
# the stdlib bench's figures before this work (docs/memory.md): 2,257 files, 37.1 MB
STDLIB_FILES, STDLIB_MB, STDLIB_FULL_S, STDLIB_DB_MB = 2257, 37.1, 3.80, 17.5


# -- the tree ----------------------------------------------------------------------------------
def vocabulary(seed: int) -> list[str]:
    """VOCABULARY distinct made-up words, always the same for a seed."""
    rng = random.Random(f"{seed}:words")
    words: list[str] = []
    seen: set[str] = set()
    while len(words) < VOCABULARY:
        word = "".join(rng.choice(ONSETS) + rng.choice(VOWELS) for _ in range(rng.randint(1, 3)))
        word += rng.choice(CODAS)
        if len(word) >= 3 and word not in seen:
            seen.add(word)
            words.append(word)
    return words


class Writer:
    """Builds file i's text and the docstrings of its functions (the queries)."""

    def __init__(self, seed: int) -> None:
        self.seed = seed
        self.words = vocabulary(seed)
        weights = [1.0 / (rank + 10) for rank in range(len(self.words))]
        total = sum(weights)
        self.cumulative: list[float] = []
        running = 0.0
        for weight in weights:
            running += weight / total
            self.cumulative.append(running)

    def _words(self, rng: random.Random, count: int) -> list[str]:
        return rng.choices(self.words, cum_weights=self.cumulative, k=count)

    def _sentence(self, rng: random.Random, low: int, high: int) -> str:
        words = self._words(rng, rng.randint(low, high))
        return " ".join(words).capitalize() + "."

    def path(self, i: int) -> str:
        module = i % FILES_PER_DIR
        sub = (i // FILES_PER_DIR) % SUBS_PER_PKG
        pkg = i // (FILES_PER_DIR * SUBS_PER_PKG)
        return f"pkg_{pkg:03d}/sub_{sub}/mod_{module:03d}.py"

    def file(self, i: int) -> tuple[str, list[str]]:
        """(source text, the docstrings of its functions)."""
        rng = random.Random(f"{self.seed}:{i}")
        lines = [f'"""{self._sentence(rng, 8, 14)}"""', "", "import os", ""]
        lines.append(f"{self._words(rng, 1)[0].upper()}_LIMIT = {rng.randint(1, 999)}")
        docstrings: list[str] = []
        for _ in range(rng.randint(2, 4)):
            name = "_".join(self._words(rng, 2))
            params = ", ".join(self._words(rng, rng.randint(1, 3)))
            doc = self._sentence(rng, 6, 12)
            docstrings.append(doc)
            body = rng.choice(["return None", "return len(os.sep)", "pass"])
            lines += ["", "", f"def {name}({params}):", f'    """{doc}"""', f"    {body}"]
        cls = "".join(word.capitalize() for word in self._words(rng, 2))
        method = "_".join(self._words(rng, 2))
        lines += [
            "",
            "",
            f"class {cls}:",
            f'    """{self._sentence(rng, 6, 12)}"""',
            "",
            f"    def {method}(self, value):",
            f'        """{self._sentence(rng, 5, 10)}"""',
            "        return value",
            "",
        ]
        return "\n".join(lines), docstrings


def ensure_tree(root: Path, files: int, seed: int) -> Path:
    """Write the tree once (a `.complete` marker says it is whole)."""
    tree = root / f"tree-{files}-s{seed}"
    if (tree / ".complete").exists():
        return tree
    writer = Writer(seed)
    started = time.perf_counter()
    for i in range(files):
        target = tree / writer.path(i)
        if i % FILES_PER_DIR == 0:
            target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(writer.file(i)[0], encoding="utf-8")
    (tree / ".complete").write_text("")
    print(f"tree written: {tree} ({files} files, {time.perf_counter() - started:.0f} s)")
    return tree


def queries(writer: Writer, files: int, count: int, seed: int) -> list[tuple[str, str]]:
    """(a function's docstring, its file) for `count` files drawn with the seed."""
    rng = random.Random(f"{seed}:queries")
    found = []
    for i in rng.sample(range(files), count):
        docstrings = writer.file(i)[1]
        found.append((rng.choice(docstrings).rstrip("."), writer.path(i)))
    return found


def tree_mb(tree: Path, files: int, writer: Writer) -> float:
    return sum(len(writer.file(i)[0].encode("utf-8")) for i in range(files)) / 1e6


# -- the run -----------------------------------------------------------------------------------
def rss_kb(pid: int) -> tuple[int, int]:
    """(VmRSS, VmHWM) of a process in kB, (0, 0) once it is gone."""
    values = {"VmRSS:": 0, "VmHWM:": 0}
    try:
        with open(f"/proc/{pid}/status", encoding="ascii") as handle:
            for line in handle:
                parts = line.split()
                if parts and parts[0] in values:
                    values[parts[0]] = int(parts[1])
    except OSError:
        pass
    return values["VmRSS:"], values["VmHWM:"]


def percentiles(samples: list[float]) -> tuple[float, float]:
    ordered = sorted(samples)
    pick = lambda pct: ordered[min(len(ordered) - 1, round(pct / 100 * (len(ordered) - 1)))]  # noqa: E731
    return pick(50), pick(99)


@dataclass
class Figures:
    label: str
    loaded: list[float] = field(default_factory=list)
    idle: list[float] = field(default_factory=list)
    wire_queries: list[float] = field(default_factory=list)
    local_queries: list[float] = field(default_factory=list)
    updates: list[float] = field(default_factory=list)
    index_s: float = 0.0
    db_mb: float = 0.0
    hits: int = 0
    server_rss_mb: float = 0.0
    server_peak_mb: float = 0.0
    workers_peak_mb: float = 0.0
    outcome: str = ""


def watch_memory(pid: int, figures: Figures, stop: threading.Event) -> None:
    """Sample the server's and its workers' RSS until `stop`."""
    while not stop.wait(0.25):
        workers = sum(rss_kb(child)[0] for child in children_of(pid)) / 1024
        figures.workers_peak_mb = max(figures.workers_peak_mb, workers)


def cheap_requests(client: RawLspClient, uri: str) -> list[Callable[[], dict[str, Any]]]:
    action = {
        "textDocument": {"uri": uri},
        "range": {"start": {"line": 1, "character": 4}, "end": {"line": 1, "character": 10}},
        "context": {"diagnostics": []},
    }
    return [
        lambda: client.request("textDocument/codeAction", action),
        lambda: client.execute("aider-lsp.tools.list", {}),
    ]


def timed(request: Callable[[], dict[str, Any]]) -> tuple[float, dict[str, Any]]:
    started = time.perf_counter()
    answer = request()
    elapsed = (time.perf_counter() - started) * 1000
    if "error" in answer:
        raise SystemExit(f"a request failed: {answer['error']}")
    return elapsed, answer


def progress_of(client: RawLspClient, kind: str) -> dict[str, Any] | None:
    """The indexing progress's `begin` or `end` message, if it arrived."""
    with client._cond:
        messages = list(client.messages)
    token = None
    for message in messages:
        if message.get("method") != "$/progress":
            continue
        value = message["params"].get("value", {})
        if value.get("kind") == "begin" and value.get("title") == "Indexing workspace":
            token = message["params"]["token"]
            if kind == "begin":
                return message
        elif token is not None and message["params"]["token"] == token and value.get("kind") == kind:
            return message
    return None


def run_server(
    label: str, server_dir: Path, tree: Path, asked: list[tuple[str, str]], args: argparse.Namespace
) -> Figures:
    figures = Figures(label)
    work = Path(tempfile.mkdtemp(prefix="aider-lsp-scale-"))
    db = work / "index.sqlite3"
    notes = work / "notes.py"
    notes.write_text(NOTES)
    env = {"PYTHONPATH": str(server_dir)}
    client = RawLspClient(work / "server.log", env=env, configuration={"contextIndexPath": str(db)})
    stop = threading.Event()
    try:
        client.initialize(tree, {"contextIndexPath": str(db)})
        uri = notes.as_uri()
        client.notify(
            "textDocument/didOpen",
            {"textDocument": {"uri": uri, "languageId": "python", "version": 1, "text": NOTES}},
        )
        requests = cheap_requests(client, uri)
        client.wait_for(lambda m: progress_of(client, "begin") is not None, timeout=60)
        began = time.perf_counter()
        threading.Thread(target=watch_memory, args=(client.process.pid, figures, stop), daemon=True).start()
        i = 0
        while progress_of(client, "end") is None:
            figures.loaded.append(timed(requests[i % len(requests)])[0])
            i += 1
            time.sleep(args.gap / 1000)
        figures.index_s = time.perf_counter() - began
        end = progress_of(client, "end")
        figures.outcome = (end or {}).get("params", {}).get("value", {}).get("message", "")
        time.sleep(1.0)
        for i in range(args.idle):
            figures.idle.append(timed(requests[i % len(requests)])[0])
            time.sleep(args.gap / 1000)
        for text, rel in asked:
            ms, answer = timed(
                lambda text=text: client.execute(
                    "aider-lsp.system.getContext", {"query": text, "max_results": 5}
                )
            )
            figures.wire_queries.append(ms)
            paths = (answer.get("result") or {}).get("notes", {}).get("file_paths", [])
            figures.hits += rel in paths[:5]
        rss, peak = rss_kb(client.process.pid)
        figures.server_rss_mb, figures.server_peak_mb = rss / 1024, peak / 1024
        client.shutdown()
    finally:
        stop.set()
        client.close()
    figures.db_mb = sum(p.stat().st_size for p in work.glob("index.sqlite3*")) / 1e6
    local_measurements(figures, server_dir, tree, db, asked[: args.local], args)
    shutil.rmtree(work, ignore_errors=True)
    return figures


LOCAL = """
import json, statistics, sys, time
from pathlib import Path
from aider_lsp.guards.files import FileAccessManager
from aider_lsp.memory import MemorySystem
from aider_lsp.models import ContextGenerationInput
from aider_lsp.config.settings import Settings
tree, db, edits = Path(sys.argv[1]), Path(sys.argv[2]), int(sys.argv[3])
asked = json.loads(sys.stdin.read())
memory = MemorySystem(FileAccessManager(tree), Settings(), db_path=db)
memory.store.count()
query_ms, update_ms = [], []
for text, _rel in asked:
    started = time.perf_counter()
    memory.search(ContextGenerationInput(query=text, max_results=5))
    query_ms.append((time.perf_counter() - started) * 1000)
for text, rel in asked[:edits]:
    path = tree / rel
    original = path.read_text()
    path.write_text(original + "\\n# benchmark edit: frobnicate the quux\\n")
    try:
        started = time.perf_counter()
        stats = memory.update_paths_sync([rel])
        update_ms.append((time.perf_counter() - started) * 1000)
        assert stats.updated == 1, stats
    finally:
        path.write_text(original)
        memory.update_paths_sync([rel])
memory.close()
print(json.dumps({"query_ms": query_ms, "update_ms": update_ms}))
"""


def local_measurements(
    figures: Figures,
    server_dir: Path,
    tree: Path,
    db: Path,
    asked: list[tuple[str, str]],
    args: argparse.Namespace,
) -> None:
    """Update and query timings in a fresh process running `server_dir`'s package."""
    import json

    env = dict(os.environ, PYTHONPATH=str(server_dir))
    done = subprocess.run(
        [sys.executable, "-c", LOCAL, str(tree), str(db), str(args.edits)],
        input=json.dumps(asked),
        capture_output=True,
        text=True,
        env=env,
        check=True,
    )
    answer = json.loads(done.stdout.strip().splitlines()[-1])
    figures.local_queries, figures.updates = answer["query_ms"], answer["update_ms"]


def report(runs: list[Figures], files: int, corpus_mb: float, asked: int) -> None:
    def row(label: str, cell: Callable[[Figures], str]) -> None:
        print(f"  {label:44}" + "".join(f"{cell(run):>26}" for run in runs))

    def pair(samples: list[float]) -> str:
        p50, p99 = percentiles(samples)
        return f"{p50:6.1f} / {p99:6.1f} ms"

    load = os.getloadavg()
    print(f"\n{files} files, {corpus_mb:.1f} MB; load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")
    print(f"  {'':44}" + "".join(f"{run.label:>26}" for run in runs))
    row("cheap requests while indexing p50 / p99", lambda r: pair(r.loaded) + f" n={len(r.loaded)}")
    row("cheap requests idle p50 / p99", lambda r: pair(r.idle))
    row("first index (progress begin → end)", lambda r: f"{r.index_s:.1f} s")
    row(
        "  per 1,000 files / per MB",
        lambda r: f"{1000 * r.index_s / files:.2f} / {r.index_s / corpus_mb:.3f} s",
    )
    row("index size / corpus", lambda r: f"{r.db_mb:.0f} / {corpus_mb:.0f} MB = {r.db_mb / corpus_mb:.2f}")
    row("query over the wire p50 / p99", lambda r: pair(r.wire_queries))
    row("query in-process p50 / p99", lambda r: pair(r.local_queries))
    row(f"recall@5 ({asked} docstring queries)", lambda r: f"{r.hits / max(1, asked):.3f}")
    row("one-file update (median)", lambda r: f"{statistics.median(r.updates):.1f} ms")
    row("server RSS at the end / peak", lambda r: f"{r.server_rss_mb:.0f} / {r.server_peak_mb:.0f} MB")
    row("worker processes' RSS, peak", lambda r: f"{r.workers_peak_mb:.0f} MB")
    print(
        "  stdlib per-file figures (docs/memory.md):"
        f" {1000 * STDLIB_FULL_S / STDLIB_FILES:.2f} s per 1,000 files,"
        f" {STDLIB_FULL_S / STDLIB_MB:.3f} s per MB, index/corpus {STDLIB_DB_MB / STDLIB_MB:.2f}"
    )
    ours = runs[-1]
    targets = [
        ("cheap-request p99 while indexing < 50 ms", percentiles(ours.loaded)[1] < 50),
        ("one-file update <= 10 ms", statistics.median(ours.updates) <= 10),
        ("query p50 <= 30 ms (in-process)", percentiles(ours.local_queries)[0] <= 30),
        ("query p99 <= 100 ms (in-process)", percentiles(ours.local_queries)[1] <= 100),
    ]
    for label, met in targets:
        print(f"target {label}: {'met' if met else 'NOT met'} ({ours.label})")


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--files", type=int, default=100_000)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--queries", type=int, default=200, help="getContext queries over the wire")
    parser.add_argument("--local", type=int, default=200, help="of which asked again in-process")
    parser.add_argument("--edits", type=int, default=21)
    parser.add_argument("--idle", type=int, default=300, help="cheap requests timed idle")
    parser.add_argument("--gap", type=float, default=5.0, help="ms between cheap requests")
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "aider-lsp" / "bench-scale"
    parser.add_argument("--tree-dir", type=Path, default=cache)
    parser.add_argument("--baseline-server", type=Path, help="another server/ folder, run first")
    parser.add_argument("--baseline-label", default="baseline")
    parser.add_argument("--server", type=Path, help="the server/ folder measured (default: this tree's)")
    args = parser.parse_args()
    tree = ensure_tree(args.tree_dir, args.files, args.seed)
    writer = Writer(args.seed)
    asked = queries(writer, args.files, args.queries, args.seed)
    corpus_mb = tree_mb(tree, args.files, writer)
    ours_dir = (args.server or Path(__file__).resolve().parent.parent / "server").resolve()
    runs = []
    if args.baseline_server:
        runs.append(run_server(args.baseline_label, args.baseline_server.resolve(), tree, asked, args))
    runs.append(run_server("this tree", ours_dir, tree, asked, args))
    report(runs, args.files, corpus_mb, len(asked))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
