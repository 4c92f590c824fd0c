"""Workspace index benchmark on the running interpreter's standard library.

The standard library (minus site-packages and caches) is copied to a temp folder (the index
and the incremental edits must never touch the real tree) and indexed by the MemorySystem
with its database in another temp folder. Printed, beside a plain BM25 baseline over whole
files (bm25s, no stemming, English stopwords) measured in the same run:

- full index time and MB/s; warm restart time (files re-read);
- incremental update of one edited file (median over several files);
- query latency p50 / p99;
- recall@1/5/10 on known-item queries: a sentence of a module's docstring → that module.

Targets: query p50 < 20 ms, incremental update < 50 ms, recall@5 >= the baseline's.
Usage: python bench/context.py [--queries N] [--seed S]
"""

from __future__ import annotations

import argparse
import logging
import os
import random
import re
import shutil
import statistics
import sysconfig
import tempfile
import time
from pathlib import Path

from aider_lsp.files import FileAccessManager
from aider_lsp.memory import MemorySystem
from aider_lsp.memory.extract import extract
from aider_lsp.models import ContextGenerationInput
from aider_lsp.settings import Settings

SKIP_DIRS = {"site-packages", "__pycache__", "dist-packages"}
SENTENCE = re.compile(r"(?<=[.!?])\s+")


def copy_stdlib(target: Path) -> Path:
    source = Path(sysconfig.get_paths()["stdlib"])
    shutil.copytree(
        source,
        target,
        symlinks=True,
        ignore=lambda _dir, names: [
            n for n in names if n in SKIP_DIRS or n.endswith((".pyc", ".so", ".a", ".o"))
        ],
    )
    return target


def known_item_queries(root: Path, paths: list[str], count: int, seed: int) -> list[tuple[str, str]]:
    """(docstring sentence, module path) pairs whose sentence names exactly one module."""
    by_sentence: dict[str, list[str]] = {}
    for rel in paths:
        if not rel.endswith(".py"):
            continue
        text = (root / rel).read_text(encoding="utf-8", errors="replace")
        info = extract(rel, text)
        if info.language != "python":
            continue
        import ast

        try:
            doc = ast.get_docstring(ast.parse(text))
        except (SyntaxError, ValueError):
            continue
        if not doc:
            continue
        for sentence in SENTENCE.split(" ".join(doc.split())):
            words = sentence.split()
            if 5 <= len(words) <= 30:
                by_sentence.setdefault(sentence, []).append(rel)
    pairs = [(s, owners[0]) for s, owners in by_sentence.items() if len(set(owners)) == 1]
    rng = random.Random(seed)
    # one query per module at most, so large docstrings do not dominate
    rng.shuffle(pairs)
    seen: set[str] = set()
    chosen: list[tuple[str, str]] = []
    for sentence, rel in pairs:
        if rel not in seen:
            seen.add(rel)
            chosen.append((sentence, rel))
    return sorted(chosen[:count], key=lambda pair: pair[1])


def percentile(values: list[float], pct: float) -> float:
    ordered = sorted(values)
    index = min(len(ordered) - 1, max(0, round(pct / 100 * (len(ordered) - 1))))
    return ordered[index]


def recall(ranks: list[int | None], k: int) -> float:
    return sum(1 for r in ranks if r is not None and r < k) / max(1, len(ranks))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queries", type=int, default=400)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--edits", type=int, default=21)
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)

    work = Path(tempfile.mkdtemp(prefix="aider-lsp-bench-"))
    try:
        root = copy_stdlib(work / "stdlib")
        db = work / "db" / "index.sqlite3"
        files = FileAccessManager(root)
        settings = Settings()

        # -- full index -------------------------------------------------------------------
        memory = MemorySystem(files, settings, db_path=db)
        started = time.perf_counter()
        stats = memory.index_all()
        full_s = time.perf_counter() - started
        indexed = sorted(memory.store.known_files())
        mb = stats.bytes_indexed / 1e6
        db_mb = sum(p.stat().st_size for p in db.parent.iterdir()) / 1e6

        # -- baseline: bm25s over whole files ----------------------------------------------
        import bm25s

        logging.getLogger("bm25s").setLevel(logging.WARNING)
        started = time.perf_counter()
        corpus = [(root / rel).read_text(encoding="utf-8", errors="replace") for rel in indexed]
        tokens = bm25s.tokenize(corpus, stopwords="en", show_progress=False)
        baseline = bm25s.BM25()
        baseline.index(tokens, show_progress=False)
        base_index_s = time.perf_counter() - started
        base_mb = sum(len(text.encode("utf-8")) for text in corpus) / 1e6
        del corpus, tokens

        # -- queries ----------------------------------------------------------------------
        queries = known_item_queries(root, indexed, args.queries, args.seed)
        ours_ms: list[float] = []
        base_ms: list[float] = []
        ours_ranks: list[int | None] = []
        base_ranks: list[int | None] = []
        for text, expected in queries:
            request = ContextGenerationInput(query=text, max_results=10)
            started = time.perf_counter()
            result = memory.search(request)
            ours_ms.append((time.perf_counter() - started) * 1000)
            found = [m.source_path for m in result.matches]
            ours_ranks.append(found.index(expected) if expected in found else None)

            started = time.perf_counter()
            query_tokens = bm25s.tokenize([text], stopwords="en", show_progress=False)
            docs, _scores = baseline.retrieve(query_tokens, k=10, show_progress=False, n_threads=1)
            base_ms.append((time.perf_counter() - started) * 1000)
            hits = [indexed[i] for i in docs[0]]
            base_ranks.append(hits.index(expected) if expected in hits else None)

        # -- incremental update of one file -----------------------------------------------
        rng = random.Random(args.seed)
        editable = [rel for rel in indexed if rel.endswith(".py")]
        update_ms: list[float] = []
        for rel in rng.sample(editable, min(args.edits, len(editable))):
            path = root / rel
            with path.open("a", encoding="utf-8") as handle:
                handle.write("\n# benchmark edit: frobnicate the quux\n")
            started = time.perf_counter()
            update = memory.update_paths_sync([rel])
            update_ms.append((time.perf_counter() - started) * 1000)
            assert update.updated == 1, update
        memory.close()

        # -- warm restart -----------------------------------------------------------------
        again = MemorySystem(files, settings, db_path=db)
        started = time.perf_counter()
        warm = again.index_all()
        warm_s = time.perf_counter() - started
        again.close()

        n = len(queries)
        print(f"corpus: {root.name} of Python {sysconfig.get_python_version()} "
              f"({sysconfig.get_paths()['stdlib']}), {stats.scanned} files indexed, "
              f"{mb:.1f} MB; {n} known-item queries")
        print()
        print(f"{'':34}{'aider-lsp index':>18}{'bm25s baseline':>18}{'ratio':>9}")
        rows = [
            ("full index (s)", full_s, base_index_s),
            ("full index (MB/s)", mb / full_s, base_mb / base_index_s),
            ("query p50 (ms)", statistics.median(ours_ms), statistics.median(base_ms)),
            ("query p99 (ms)", percentile(ours_ms, 99), percentile(base_ms, 99)),
            ("incremental, 1 file, median (ms)", statistics.median(update_ms), base_index_s * 1000),
            ("recall@1", recall(ours_ranks, 1), recall(base_ranks, 1)),
            ("recall@5", recall(ours_ranks, 5), recall(base_ranks, 5)),
            ("recall@10", recall(ours_ranks, 10), recall(base_ranks, 10)),
        ]
        for label, ours, base in rows:
            ratio = f"{ours / base:.2f}x" if base else "-"
            print(f"{label:34}{ours:>18.3f}{base:>18.3f}{ratio:>9}")
        print()
        print("baseline incremental = a full re-index (bm25s has no per-document update)")
        print(f"warm restart: {warm_s:.2f} s, {warm.scanned} files checked, {warm.read} re-read")
        print(f"index database: {db_mb:.1f} MB")
        print()
        targets = [
            ("query p50 < 20 ms", statistics.median(ours_ms) < 20),
            ("incremental update < 50 ms", statistics.median(update_ms) < 50),
            ("recall@5 >= baseline", recall(ours_ranks, 5) >= recall(base_ranks, 5)),
        ]
        for label, met in targets:
            print(f"target {label}: {'met' if met else 'NOT met'}")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    os.environ.setdefault("PYTHONHASHSEED", "0")
    main()
