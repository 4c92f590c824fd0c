"""Workspace index benchmark: several query families, each beside plain BM25 in the same run.

Families (recall@1/5/10 of the index and of bm25s over whole files, the same files):

- module docstring: a sentence of a stdlib module's docstring → that module;
- def docstring: the first line of a stdlib function's or class's docstring → its file;
- def docstring, words dropped: the same with 2 of every 5 words left out;
- the two def docstring families again on the HEAD of each repository under --repos-dir
  (family "docstrings"): other code than the stdlib, each repository indexed on its own;
- commit subject: a commit's subject → the non-test source files it modified, asked on the
  commit's parent tree, over real repositories' history (this project's own, plus any under
  --repos-dir). The workspace is a git repository whose history ends at that parent, as a
  user's would be just before making the change: the folder gets its own `.git` (objects
  borrowed from the clone through `objects/info/alternates`, no refs at all) with a detached
  HEAD set to the parent at each step, so `git log HEAD` (the index's history signal,
  memory/history.py) can never see the commit asked about, nor anything after it;
- changelog entry: the changelog line or fragment a commit added → the non-test source files
  it modified, asked on the parent tree (where the entry does not exist yet).

With several expected files, a query counts as found at k when any of them is in the top k.
The history families need git repositories with their history: this project's own (when the
bench runs from a clone) and every repository under --repos-dir (default
$AIDER_LSP_BENCH_REPOS, else ~/.cache/aider-lsp/bench-repos; bare or not, `owner+name/repo`
layouts too). A family without data is skipped and says so; nothing is downloaded.
pallets/click and encode/httpx are never used: they are kept for acceptance.

Also printed, on the stdlib: index size / corpus size, full index time beside bm25s's,
incremental update of one file, warm restart, query p50/p99.
Targets: ours >= BM25 on every family, commit-subject recall@5 >= 80%, index <= half the
corpus, full index no slower than bm25s, one-file update < 10 ms, p50 < 20 ms, p99 < 50 ms.

Usage: python bench/context.py [--queries N] [--commits N] [--repos-dir DIR] [--seed S]
       [--families stdlib,history,docstrings] [--dump FILE]
"""

from __future__ import annotations

import argparse
import ast
import json
import logging
import os
import random
import re
import shutil
import statistics
import subprocess
import sysconfig
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from aider_lsp.config.settings import Settings
from aider_lsp.guards.files import FileAccessManager
from aider_lsp.memory import MemorySystem
from aider_lsp.models import ContextGenerationInput

SKIP_DIRS = {"site-packages", "__pycache__", "dist-packages"}
SENTENCE = re.compile(r"(?<=[.!?])\s+")
ACCEPTANCE_REPOS = ("click", "httpx")  # kept out of every benchmark
SOURCE_SUFFIXES = {
    ".py",
    ".pyi",
    ".js",
    ".mjs",
    ".ts",
    ".tsx",
    ".jsx",
    ".go",
    ".rs",
    ".java",
    ".kt",
    ".c",
    ".h",
    ".cc",
    ".cpp",
    ".hpp",
    ".cs",
    ".rb",
    ".php",
    ".swift",
    ".lua",
    ".sh",
    ".pyx",
}
CHANGELOG_FILE = re.compile(r"^(changes|changelog|history|news)\b", re.I)
CHANGELOG_DIRS = {"changelog.d", "newsfragments", "changes"}
MAX_SOURCES_PER_COMMIT = 3
K = (1, 5, 10)


# -- measuring -------------------------------------------------------------------------------
@dataclass
class Family:
    """One query family: the rank (0-based, None = not in the top 10) of ours and of BM25."""

    name: str
    ours: list[int | None] = field(default_factory=list)
    base: list[int | None] = field(default_factory=list)
    ms: list[float] = field(default_factory=list)
    note: str = ""

    def recall(self, ranks: list[int | None], k: int) -> float:
        return sum(1 for r in ranks if r is not None and r < k) / max(1, len(ranks))


def first_rank(found: list[str], expected: set[str]) -> int | None:
    for position, path in enumerate(found):
        if path in expected:
            return position
    return None


class Bm25Baseline:
    """bm25s over whole files (no stemming, English stopwords), as a user would set it up."""

    def __init__(self, root: Path, paths: list[str]) -> None:
        import bm25s

        logging.getLogger("bm25s").setLevel(logging.WARNING)
        self.bm25s = bm25s
        self.paths = paths
        started = time.perf_counter()
        corpus = [(root / rel).read_text(encoding="utf-8", errors="replace") for rel in paths]
        self.bytes = sum(len(text.encode("utf-8")) for text in corpus)
        tokens = bm25s.tokenize(corpus, stopwords="en", show_progress=False)
        self.retriever = bm25s.BM25()
        self.retriever.index(tokens, show_progress=False)
        self.seconds = time.perf_counter() - started

    def top(self, query: str, k: int = 10) -> list[str]:
        tokens = self.bm25s.tokenize([query], stopwords="en", show_progress=False)
        if not tokens.vocab:
            return []
        docs, _ = self.retriever.retrieve(tokens, k=min(k, len(self.paths)), show_progress=False, n_threads=1)
        return [self.paths[i] for i in docs[0]]


class Dump:
    """--dump FILE: each query with its best DUMP_CANDIDATES files and their signals, one JSON
    line per query, so that a change of weights or a new rule can be tried offline by
    re-ranking these in plain Python (seconds) before it is measured here (minutes). The
    wider search only adds candidates below the first ten: those are the measured order."""

    CANDIDATES = 50

    def __init__(self, path: Path) -> None:
        self.handle = path.open("w", encoding="utf-8")

    def record(
        self, memory: MemorySystem, family: Family, query: str, expected: set[str], source: str
    ) -> None:
        result = memory.search(ContextGenerationInput(query=query, max_results=self.CANDIDATES))
        candidates = [
            {
                "path": match.source_path or match.id,
                "kind": match.ranking.kind if match.ranking else None,
                "relevance": match.relevance_score,
                "signals": match.ranking.signals.model_dump() if match.ranking else {},
            }
            for match in result.matches
        ]
        line = {
            "family": family.name,
            "source": source,
            "query": query,
            "expected": sorted(expected),
            "ours": family.ours[-1],
            "bm25": family.base[-1],
            "candidates": candidates,
        }
        self.handle.write(json.dumps(line) + "\n")

    def close(self) -> None:
        self.handle.close()


def ask(
    memory: MemorySystem,
    baseline: Bm25Baseline,
    family: Family,
    query: str,
    expected: set[str],
    dump: Dump | None = None,
    source: str = "",
) -> None:
    started = time.perf_counter()
    result = memory.search(ContextGenerationInput(query=query, max_results=10))
    family.ms.append((time.perf_counter() - started) * 1000)
    family.ours.append(first_rank([m.source_path or m.id for m in result.matches], expected))
    family.base.append(first_rank(baseline.top(query), expected))
    if dump is not None:
        dump.record(memory, family, query, expected, source)


# -- stdlib families ---------------------------------------------------------------------------
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


def _parse(root: Path, rel: str) -> ast.Module | None:
    try:
        return ast.parse((root / rel).read_text(encoding="utf-8", errors="replace"))
    except (SyntaxError, ValueError, RecursionError):
        return None


def module_docstring_queries(root: Path, paths: list[str], count: int, seed: int) -> list[tuple[str, str]]:
    """(docstring sentence, module) pairs whose sentence appears in exactly one module."""
    by_sentence: dict[str, set[str]] = {}
    for rel in paths:
        if not rel.endswith(".py"):
            continue
        tree = _parse(root, rel)
        doc = ast.get_docstring(tree) if tree else None
        for sentence in SENTENCE.split(" ".join((doc or "").split())):
            if 5 <= len(sentence.split()) <= 30:
                by_sentence.setdefault(sentence, set()).add(rel)
    pairs = [(s, next(iter(owners))) for s, owners in by_sentence.items() if len(owners) == 1]
    return _one_per_file(pairs, count, seed)


def definition_docstring_queries(
    root: Path, paths: list[str], count: int, seed: int
) -> list[tuple[str, str]]:
    """(first line of a function's or class's docstring, its file), the line unique to it."""
    rng = random.Random(seed)
    python = [rel for rel in paths if rel.endswith(".py")]
    rng.shuffle(python)
    by_line: dict[str, set[str]] = {}
    for rel in python[: count * 3]:
        tree = _parse(root, rel)
        if tree is None:
            continue
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                doc = ast.get_docstring(node)
                line = doc.strip().splitlines()[0].strip() if doc and doc.strip() else ""
                if len(line.split()) >= 5:
                    by_line.setdefault(line, set()).add(rel)
    pairs = [(line, next(iter(owners))) for line, owners in by_line.items() if len(owners) == 1]
    return _one_per_file(pairs, count, seed)


def _one_per_file(pairs: list[tuple[str, str]], count: int, seed: int) -> list[tuple[str, str]]:
    rng = random.Random(seed)
    pairs.sort()
    rng.shuffle(pairs)
    seen: set[str] = set()
    chosen: list[tuple[str, str]] = []
    for query, rel in pairs:
        if rel not in seen:
            seen.add(rel)
            chosen.append((query, rel))
    return chosen[:count]


def drop_words(text: str, rng: random.Random) -> str:
    """Leave out 2 of every 5 words (a user's paraphrase keeps about 60% of the words)."""
    words = text.split()
    kept: list[str] = []
    for start in range(0, len(words), 5):
        block = words[start : start + 5]
        dropped = set(rng.sample(range(len(block)), min(2, len(block) - 1))) if len(block) > 1 else set()
        kept.extend(word for i, word in enumerate(block) if i not in dropped)
    return " ".join(kept)


# -- history families ----------------------------------------------------------------------------
@dataclass
class HistoryQuery:
    family: str  # "commit subject" | "changelog entry"
    text: str
    expected: set[str]


@dataclass
class Commit:
    sha: str
    parent: str
    subject: str
    sources: list[str]
    changelog_paths: list[str]
    queries: list[HistoryQuery] = field(default_factory=list)


def git(git_dir: Path, *args: str, binary: bool = False) -> str | bytes:
    out = subprocess.run(
        ["git", "--git-dir", str(git_dir), *args], capture_output=True, check=True, timeout=120
    ).stdout
    return out if binary else out.decode("utf-8", errors="replace")


def is_source(path: str) -> bool:
    """A non-test, non-doc source file (defined here, independently of the index's rules)."""
    pure = PurePosixPath(path)
    parts = [p.lower() for p in pure.parts]
    if pure.suffix.lower() not in SOURCE_SUFFIXES:
        return False
    if any(p.startswith("test") or p in ("docs", "doc", "examples", "benchmarks") for p in parts[:-1]):
        return False
    name = parts[-1]
    return not (
        name.startswith("test_")
        or name.endswith(("_test.py", "_tests.py"))
        or name == "conftest.py"
        or name in ("setup.py", "noxfile.py", "conf.py")
    )


def is_changelog(path: str) -> bool:
    pure = PurePosixPath(path)
    return bool(CHANGELOG_FILE.match(pure.name)) or any(p.lower() in CHANGELOG_DIRS for p in pure.parts[:-1])


def clean_subject(subject: str) -> str:
    subject = re.sub(r"\(#\d+\)|#\d+|\bgh-\d+\b|\[[^\]]*\]", " ", subject)
    return " ".join(subject.split())


def clean_entry(text: str) -> str:
    """A changelog entry as a sentence: markup, issue numbers and links left out."""
    text = re.sub(
        r":(?:issue|pr|user|gh|ref|class|func|meth|attr|mod|data|exc|obj):`~?([^`<]*)(?:<[^>]*>)?`",
        r"\1",
        text,
    )
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", text)
    text = re.sub(r"https?://\S+|#\d+|\bgh-\d+\b|`+|\*+", " ", text)
    text = re.sub(r"^\s*[-*+]\s+", "", text)
    return " ".join(text.split())


def list_commits(git_dir: Path) -> list[Commit]:
    log = git(git_dir, "log", "--no-merges", "--format=%x01%H %P%x02%s", "--name-status", "HEAD")
    commits: list[Commit] = []
    for block in str(log).split("\x01")[1:]:
        header, _, body = block.partition("\x02")
        shas = header.split()
        if len(shas) != 2:
            continue
        subject, _, names = body.partition("\n")
        modified: list[str] = []
        changelogs: list[str] = []
        for line in names.splitlines():
            fields = line.split("\t")
            if len(fields) < 2:
                continue
            status, path = fields[0], fields[-1]
            if is_changelog(path) and status[0] in "AM":
                changelogs.append(path)
            elif status == "M" and is_source(path):
                modified.append(path)
        if 1 <= len(modified) <= MAX_SOURCES_PER_COMMIT:
            commits.append(Commit(shas[0], shas[1], subject, modified, changelogs))
    return commits


def changelog_entry(git_dir: Path, commit: Commit) -> str | None:
    """The first entry of 4+ words the commit added to a changelog."""
    diff = str(git(git_dir, "diff", "--unified=0", commit.parent, commit.sha, "--", *commit.changelog_paths))
    entries: list[str] = []
    for line in diff.splitlines():
        if line.startswith("+") and not line.startswith("+++"):
            text = line[1:]
            if re.match(r"\s*[-*+]\s", text) or not entries:
                entries.append(text)
            elif text.strip() and not re.match(r"\s*[=~^#-]{3,}\s*$", text):
                entries[-1] += " " + text
            elif not text.strip():
                entries.append("")
    for entry in entries:
        cleaned = clean_entry(entry)
        if len(cleaned.split()) >= 4 and not re.match(r"(?i)(version|released|unreleased)\b", cleaned):
            return cleaned
    return None


def history_commits(git_dir: Path, count: int, seed: int) -> list[Commit]:
    """Up to `count` commits per family, sampled, in the order they were made."""
    commits = list_commits(git_dir)
    rng = random.Random(seed)
    subjects = [c for c in commits if len(clean_subject(c.subject).split()) >= 3]
    for commit in rng.sample(subjects, min(count, len(subjects))):
        commit.queries.append(
            HistoryQuery("commit subject", clean_subject(commit.subject), set(commit.sources))
        )
    with_changelog = [c for c in commits if c.changelog_paths]
    rng.shuffle(with_changelog)
    taken = 0
    for commit in with_changelog:
        if taken >= count:
            break
        entry = changelog_entry(git_dir, commit)
        if entry:
            commit.queries.append(HistoryQuery("changelog entry", entry, set(commit.sources)))
            taken += 1
    chosen = [c for c in commits if c.queries]
    return list(reversed(chosen))  # oldest first: each step moves the tree forward


class TreeMirror:
    """A folder kept equal to one commit's tree, moved commit to commit by its differences,
    and a git repository whose HEAD is that commit: its own `.git` with no refs, the objects
    borrowed from the clone, so the history it shows ends at the commit checked out."""

    def __init__(self, git_dir: Path, folder: Path) -> None:
        self.git_dir = git_dir
        self.folder = folder
        self.blobs: dict[str, str] = {}
        subprocess.run(["git", "init", "-q", str(folder)], check=True, timeout=60)
        objects = (git_dir / "objects").resolve()
        (folder / ".git" / "objects" / "info" / "alternates").write_text(f"{objects}\n")

    def _tree(self, sha: str) -> dict[str, str]:
        listing = git(self.git_dir, "ls-tree", "-r", "-z", "--full-tree", sha, binary=True)
        tree: dict[str, str] = {}
        for entry in bytes(listing).split(b"\0"):
            if not entry:
                continue
            meta, _, path = entry.partition(b"\t")
            mode, kind, blob = meta.split()
            if kind == b"blob" and mode != b"120000":
                tree[path.decode("utf-8", errors="replace")] = blob.decode()
        return tree

    def checkout(self, sha: str) -> tuple[list[str], list[str]]:
        """Make the folder hold `sha`'s tree; returns (written paths, removed paths)."""
        tree = self._tree(sha)
        written = [path for path, blob in tree.items() if self.blobs.get(path) != blob]
        removed = [path for path in self.blobs if path not in tree]
        for path in removed:
            (self.folder / path).unlink(missing_ok=True)
        if written:
            batch = subprocess.run(
                ["git", "--git-dir", str(self.git_dir), "cat-file", "--batch"],
                input="".join(f"{tree[p]}\n" for p in written).encode(),
                capture_output=True,
                check=True,
                timeout=300,
            ).stdout
            offset = 0
            for path in written:
                header_end = batch.index(b"\n", offset)
                size = int(batch[offset:header_end].split()[2])
                data = batch[header_end + 1 : header_end + 1 + size]
                offset = header_end + 1 + size + 1
                target = self.folder / path
                target.parent.mkdir(parents=True, exist_ok=True)
                if target.is_symlink() or target.is_dir():
                    continue
                target.write_bytes(data)
        self.blobs = tree
        subprocess.run(
            ["git", "-C", str(self.folder), "update-ref", "--no-deref", "HEAD", sha], check=True, timeout=60
        )
        return written, removed


def find_repositories(repos_dir: Path | None) -> tuple[list[tuple[str, Path]], list[str]]:
    """(name, git dir) of this project's clone and of every repository under `repos_dir`."""
    found: list[tuple[str, Path]] = []
    notes: list[str] = []
    here = Path(__file__).resolve().parent
    try:
        common = subprocess.run(
            ["git", "-C", str(here), "rev-parse", "--path-format=absolute", "--git-common-dir"],
            capture_output=True,
            text=True,
            check=True,
            timeout=30,
        ).stdout.strip()
        found.append(("aider-lsp (this project)", Path(common)))
    except (subprocess.SubprocessError, OSError):
        notes.append("this project's history: not a git clone, skipped")
    if repos_dir is None or not repos_dir.is_dir():
        notes.append(f"no repositories under {repos_dir} (pass --repos-dir): other histories skipped")
        return found, notes
    for candidate in sorted(repos_dir.iterdir()):
        git_dir = next(
            (d for d in (candidate / "repo", candidate / ".git", candidate) if (d / "HEAD").is_file()),
            None,
        )
        if git_dir is None:
            continue
        name = candidate.name.replace("+", "/")
        if any(word in name.lower() for word in ACCEPTANCE_REPOS):
            notes.append(f"{name}: kept for acceptance, not used")
            continue
        found.append((name, git_dir))
    return found, notes


def run_history(
    repos: list[tuple[str, Path]], count: int, seed: int, work: Path, dump: Dump | None = None
) -> dict[str, Family]:
    families = {name: Family(name) for name in ("commit subject", "changelog entry")}
    per_repo: list[str] = []
    for name, git_dir in repos:
        try:
            commits = history_commits(git_dir, count, seed)
        except (subprocess.SubprocessError, OSError) as exc:
            per_repo.append(f"{name}: unreadable ({exc})")
            continue
        if not commits:
            per_repo.append(f"{name}: no usable commits")
            continue
        folder = work / ("tree-" + re.sub(r"\W+", "-", name))
        folder.mkdir()
        mirror = TreeMirror(git_dir, folder)
        memory = MemorySystem(FileAccessManager(folder), Settings(), db_path=work / f"{folder.name}.sqlite3")
        counts = dict.fromkeys(families, 0)
        for position, commit in enumerate(commits):
            written, removed = mirror.checkout(commit.parent)
            if position == 0:
                memory.index_all()
            else:
                if removed:
                    memory.remove_paths_sync(removed)
                # HEAD moved: an editor's file watcher reports .git/HEAD with the files
                memory.update_paths_sync([*written, ".git/HEAD"])
            indexed = sorted(memory.store.known_files())
            baseline = Bm25Baseline(folder, indexed)
            for query in commit.queries:
                expected = query.expected & set(indexed)
                if not expected:
                    continue
                ask(
                    memory,
                    baseline,
                    families[query.family],
                    query.text,
                    expected,
                    dump,
                    f"{name} {commit.parent}",
                )
                counts[query.family] += 1
        memory.close()
        per_repo.append(f"{name}: " + ", ".join(f"{n} {family}" for family, n in counts.items()))
    for family in families.values():
        family.note = "; ".join(per_repo)
    return families


# -- docstring families on other repositories ---------------------------------------------------
def export_head(git_dir: Path, target: Path) -> Path:
    """The files of the repository's HEAD, written to `target` (no history)."""
    target.mkdir(parents=True)
    archive = subprocess.run(
        ["git", "--git-dir", str(git_dir), "archive", "--format=tar", "HEAD"],
        capture_output=True,
        check=True,
        timeout=300,
    ).stdout
    subprocess.run(["tar", "-x", "-C", str(target)], input=archive, check=True, timeout=300)
    return target


def run_repo_docstrings(
    repos: list[tuple[str, Path]],
    queries: int,
    seed: int,
    work: Path,
    say: Callable[[str], None],
    dump: Dump | None = None,
) -> list[Family]:
    """The def docstring families (whole, 2/5 words dropped) on each repository's HEAD."""
    families = [Family("def docstring (repos)"), Family("def docstring, 2/5 dropped (repos)")]
    for number, (name, git_dir) in enumerate(repos):
        root = export_head(git_dir, work / f"head-{number}")
        memory = MemorySystem(FileAccessManager(root), Settings(), db_path=work / f"head-{number}.sqlite3")
        memory.index_all()
        indexed = sorted(memory.store.known_files())
        baseline = Bm25Baseline(root, indexed)
        rng = random.Random(seed)
        pairs = definition_docstring_queries(root, indexed, queries, seed)
        for text, rel in pairs:
            ask(memory, baseline, families[0], text, {rel}, dump, name)
            ask(memory, baseline, families[1], drop_words(text, rng), {rel}, dump, name)
        memory.close()
        say(f"docstrings: {name}: {len(indexed)} files, {len(pairs)} queries")
    return families


# -- the run -------------------------------------------------------------------------------------
def percentile(values: list[float], pct: float) -> float:
    ordered = sorted(values)
    index = min(len(ordered) - 1, max(0, round(pct / 100 * (len(ordered) - 1))))
    return ordered[index]


def folder_mb(folder: Path) -> float:
    return sum(p.stat().st_size for p in folder.iterdir() if p.is_file()) / 1e6


def run_stdlib(
    args: argparse.Namespace, work: Path, say: Callable[[str], None], dump: Dump | None = None
) -> tuple[list[Family], dict[str, float]]:
    root = copy_stdlib(work / "stdlib")
    db = work / "db" / "index.sqlite3"
    files = FileAccessManager(root)
    settings = Settings()

    memory = MemorySystem(files, settings, db_path=db)
    started = time.perf_counter()
    stats = memory.index_all()
    full_s = time.perf_counter() - started
    indexed = sorted(memory.store.known_files())
    memory.store.open().execute("PRAGMA wal_checkpoint(TRUNCATE)")
    db_mb = folder_mb(db.parent)
    baseline = Bm25Baseline(root, indexed)

    rng = random.Random(args.seed)
    module_queries = module_docstring_queries(root, indexed, args.queries, args.seed)
    def_queries = definition_docstring_queries(root, indexed, args.queries, args.seed)
    families = [
        Family("module docstring"),
        Family("def docstring"),
        Family("def docstring, 2/5 words dropped"),
    ]
    for text, rel in module_queries:
        ask(memory, baseline, families[0], text, {rel}, dump, "stdlib")
    for text, rel in def_queries:
        ask(memory, baseline, families[1], text, {rel}, dump, "stdlib")
        ask(memory, baseline, families[2], drop_words(text, rng), {rel}, dump, "stdlib")

    editable = [rel for rel in indexed if rel.endswith(".py")]
    update_ms: list[float] = []
    for rel in random.Random(args.seed).sample(editable, min(args.edits, len(editable))):
        with (root / rel).open("a", encoding="utf-8") as handle:
            handle.write("\n# benchmark edit: frobnicate the quux\n")
        started = time.perf_counter()
        update = memory.update_paths_sync([rel])
        update_ms.append((time.perf_counter() - started) * 1000)
        assert update.updated == 1, update
    memory.close()

    again = MemorySystem(files, settings, db_path=db)
    started = time.perf_counter()
    warm = again.index_all()
    warm_s = time.perf_counter() - started
    again.close()

    say(
        f"stdlib: Python {sysconfig.get_python_version()} ({sysconfig.get_paths()['stdlib']}), "
        f"{stats.scanned} files, {stats.bytes_indexed / 1e6:.1f} MB"
    )
    ms = [value for family in families for value in family.ms]
    figures = {
        "full_s": full_s,
        "base_s": baseline.seconds,
        "corpus_mb": baseline.bytes / 1e6,
        "db_mb": db_mb,
        "update_ms": statistics.median(update_ms),
        "warm_s": warm_s,
        "warm_read": float(warm.read),
        "p50": statistics.median(ms),
        "p99": percentile(ms, 99),
    }
    return families, figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queries", type=int, default=300, help="queries per stdlib family")
    parser.add_argument("--commits", type=int, default=60, help="commits per repository and family")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--edits", type=int, default=21)
    parser.add_argument("--families", default="stdlib,history")
    default_repos = os.environ.get("AIDER_LSP_BENCH_REPOS") or str(
        Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "aider-lsp" / "bench-repos"
    )
    parser.add_argument("--repos-dir", type=Path, default=Path(default_repos))
    parser.add_argument(
        "--dump", type=Path, help="write each query's candidates and signals here (JSON lines)"
    )
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)
    wanted = set(args.families.split(","))

    work = Path(tempfile.mkdtemp(prefix="aider-lsp-bench-"))
    dump = Dump(args.dump) if args.dump else None
    try:
        families: list[Family] = []
        figures: dict[str, float] = {}
        lines: list[str] = []
        if "stdlib" in wanted:
            stdlib_families, figures = run_stdlib(args, work, lines.append, dump)
            families += stdlib_families
        if "docstrings" in wanted:
            repos, notes = find_repositories(args.repos_dir)
            lines += notes
            others = [(name, git_dir) for name, git_dir in repos if "this project" not in name]
            for family in run_repo_docstrings(others, args.queries, args.seed, work, lines.append, dump):
                families.append(family)
        if "history" in wanted:
            repos, notes = find_repositories(args.repos_dir)
            lines += notes
            history = run_history(repos, args.commits, args.seed, work, dump)
            for family in history.values():
                if family.ours:
                    families.append(family)
                else:
                    lines.append(f"family {family.name!r}: no data, skipped")
            if history["commit subject"].note:
                lines.append("history: " + history["commit subject"].note)
        report(families, figures, lines)
    finally:
        if dump is not None:
            dump.close()
        shutil.rmtree(work, ignore_errors=True)


def report(families: list[Family], figures: dict[str, float], lines: list[str]) -> None:
    for line in lines:
        print(line)
    print()
    header = f"{'family':34}{'n':>5}" + "".join(f"{f'R@{k} ours':>11}{f'R@{k} bm25':>11}" for k in K)
    print(header)
    for family in families:
        cells = "".join(
            f"{family.recall(family.ours, k):>11.3f}{family.recall(family.base, k):>11.3f}" for k in K
        )
        print(f"{family.name:34}{len(family.ours):>5}{cells}")
    print()
    targets: list[tuple[str, bool]] = [
        (f"ours >= BM25 on {f.name!r} (R@1/5/10)", all(f.recall(f.ours, k) >= f.recall(f.base, k) for k in K))
        for f in families
    ]
    for family in families:
        if family.name == "commit subject":
            targets.append(("commit subject R@5 >= 0.80", family.recall(family.ours, 5) >= 0.80))
    if figures:
        ratio = figures["db_mb"] / figures["corpus_mb"]
        print(
            f"index size / corpus size: {figures['db_mb']:.1f} MB / "
            f"{figures['corpus_mb']:.1f} MB = {ratio:.2f}"
        )
        print(
            f"full index: {figures['full_s']:.2f} s; bm25s: {figures['base_s']:.2f} s "
            f"({figures['full_s'] / figures['base_s']:.2f}x)"
        )
        print(f"incremental update, one file (median): {figures['update_ms']:.1f} ms")
        print(f"warm restart: {figures['warm_s']:.2f} s, {figures['warm_read']:.0f} files re-read")
        print(f"query p50 / p99 (stdlib): {figures['p50']:.1f} / {figures['p99']:.1f} ms")
        targets += [
            ("index <= half the corpus", ratio <= 0.5),
            ("full index no slower than bm25s", figures["full_s"] <= figures["base_s"]),
            ("one-file update < 10 ms", figures["update_ms"] < 10),
            ("query p50 < 20 ms", figures["p50"] < 20),
            ("query p99 < 50 ms", figures["p99"] < 50),
        ]
    print()
    for label, met in targets:
        print(f"target {label}: {'met' if met else 'NOT met'}")


if __name__ == "__main__":
    os.environ.setdefault("PYTHONHASHSEED", "0")
    main()
