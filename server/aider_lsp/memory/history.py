"""Past commits: which files changed when the project made a change described like the query.

A workspace that is a git repository holds the strongest hint of where a change goes: the
commits before it. "Bump version" finds `__version__.py`, "retry backoff" the file the last
retry fix touched, even when the file's own text shares no word with the question.

The last `MAX_COMMITS` non-merge commits reachable from HEAD (subject, body, the files each
changed under the workspace) are read from `git log` into the index file (`commits`, the
contentless FTS5 table `commit_fts`, and how many of them changed each file and the newest that
did: `file_changes`).
It happens off the request path: after a full pass, and after an update when HEAD moved
(cheap to see: the HEAD file and the ref it names are stat'ed). A HEAD that descends from the
one read adds only the new commits; any other move (a rewrite, another branch), or a history
grown past the bound by a quarter, reads it again. Nothing is read, and nothing fails, when
the workspace is not in a repository or git is missing.

A query searches the messages; each of the best matching commits lends its score to the
files it changed that are indexed now (so ignored, secret and deleted files never come back
this way), shared among them: a commit that touched 2 files says more about each than one
that touched 40; and a file that most commits change says little about any one question
(`specificity`). How often a file changed (`churn`), how lately (`freshness`) and which files
the latest commits changed (`recent_files`) reorder the candidates too.
"""

from __future__ import annotations

import logging
import math
import os
import re
import shutil
import subprocess
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from .index import IndexStore, SearchRow

log = logging.getLogger(__name__)

MAX_COMMITS = 5000  # the history read: the last this many commits reachable from HEAD
MAX_FILES_PER_COMMIT = 100  # larger commits (reformatting, vendoring, renames) say nothing
MAX_BODY_CHARS = 2000
SEARCHED_COMMITS = 40  # the best matching commits that lend to their files
FILES_EXPONENT = 0.25  # a commit's score is shared among its files: divided by count ** this
GIT_TIMEOUT_S = 120
HEAD_META = "history_head"
LIMIT_META = "history_limit"  # the bound the stored history was read with
_TRAILER = re.compile(r"^\s*[\w-]+-by:|^\s*Change-Id:", re.I | re.M)  # trailer keys: in most bodies


@dataclass(frozen=True)
class Commit:
    """One commit as the index keeps it."""

    sha: str
    subject: str
    body: str
    files: list[str]  # workspace-relative, as the commit left them (deleted files left out)
    renames: list[tuple[str, str]] = field(default_factory=list)  # (old, new)


@dataclass(frozen=True)
class ChangedFile:
    """An indexed file that past commits matching the query changed: its score (0..1,
    relative to the best) and the best of those commits (`sha subject`), to say why."""

    row: SearchRow
    score: float
    commit: str


class GitHistory:
    """The git history of one workspace: where its repository is, and reading it."""

    def __init__(self, root: Path, max_commits: int = MAX_COMMITS) -> None:
        self.root = root
        self.max_commits = max_commits
        self._located = False
        self._git_dir: Path | None = None
        self._common_dir: Path | None = None
        self._stamp: tuple[object, ...] | None = None

    # -- where the repository is ------------------------------------------------------------
    def _git(self, *args: str) -> str | None:
        """git's stdout in the workspace, or None when git is missing or fails."""
        binary = shutil.which("git")
        if binary is None:
            return None
        try:
            done = subprocess.run(
                [binary, "-C", str(self.root), *args],
                capture_output=True,
                timeout=GIT_TIMEOUT_S,
                env={**os.environ, "GIT_OPTIONAL_LOCKS": "0", "LC_ALL": "C"},
                check=False,
            )
        except (OSError, subprocess.SubprocessError) as exc:
            log.info("git %s in %s failed: %s", args[0], self.root, exc)
            return None
        if done.returncode != 0:
            return None
        return done.stdout.decode("utf-8", errors="replace")

    def _locate(self) -> bool:
        """Find the repository's git folders once; False outside a repository."""
        if not self._located:
            self._located = True
            out = self._git("rev-parse", "--absolute-git-dir", "--git-common-dir")
            lines = out.splitlines() if out else []
            if len(lines) == 2:
                self._git_dir = Path(lines[0])
                common = Path(lines[1])
                self._common_dir = common if common.is_absolute() else (self.root / common).resolve()
        return self._git_dir is not None

    def head_stamp(self) -> tuple[object, ...] | None:
        """What changes when HEAD moves (the HEAD file, the ref it names, packed refs), read
        without running git: checked after every update."""
        if self.max_commits <= 0 or not self._locate():
            return None
        assert self._git_dir is not None and self._common_dir is not None
        try:
            head = (self._git_dir / "HEAD").read_text(encoding="utf-8", errors="replace").strip()
        except OSError:
            return None
        stamp: list[object] = [head]
        refs = [self._common_dir / "packed-refs"]
        if head.startswith("ref: "):
            refs.append(self._common_dir / head[5:].strip())
        for ref in refs:
            try:
                info = ref.stat()
                stamp.append((info.st_mtime_ns, info.st_size))
            except OSError:
                stamp.append(None)
        return tuple(stamp)

    # -- reading ------------------------------------------------------------------------------
    def head(self) -> str | None:
        """The commit HEAD names, or None (no repository, no commit yet, no git)."""
        if self.max_commits <= 0 or not self._locate():
            return None
        out = self._git("rev-parse", "--verify", "--quiet", "HEAD^{commit}")
        return out.strip() if out else None

    def tracked(self, head: str) -> list[str]:
        """The files `head`'s tree holds under the workspace, workspace-relative (what is
        not among them is new work, not committed yet)."""
        out = self._git("ls-tree", "-r", "-z", "--name-only", head)
        return [path for path in out.split("\0") if path] if out else []

    def descends(self, older: str, newer: str) -> bool:
        return self._git("merge-base", "--is-ancestor", older, newer) is not None

    def commits(self, head: str, since: str | None = None) -> list[Commit]:
        """The last `max_commits` non-merge commits up to `head` (after `since`), newest first."""
        revisions = f"{since}..{head}" if since else head
        out = self._git(
            "log",
            "--no-merges",
            "--find-renames",
            "--relative",
            "--name-status",
            "-z",
            f"--max-count={self.max_commits}",
            "--format=%x01%H%x02%s%x02%b%x03",
            revisions,
            "--",
        )
        return parse_log(out) if out else []


def parse_log(out: str) -> list[Commit]:
    """`git log -z --name-status --format=%x01%H%x02%s%x02%b%x03` → commits with their files
    and renames."""
    commits: list[Commit] = []
    for block in out.split("\x01")[1:]:
        message, _, names = block.partition("\x03")
        fields = message.split("\x02")
        if len(fields) != 3:
            continue
        sha, subject, body = fields
        files, renames = _changes([token.strip("\n") for token in names.split("\0")])
        if files and len(files) <= MAX_FILES_PER_COMMIT:
            body = _TRAILER.sub(" ", body)[:MAX_BODY_CHARS]
            commits.append(Commit(sha.strip(), subject.strip(), body.strip(), files, renames))
    return commits


def _changes(tokens: list[str]) -> tuple[list[str], list[tuple[str, str]]]:
    """`M, path, R100, old, new, …` → (the paths as the commit left them, (old, new) renames)."""
    files: list[str] = []
    renames: list[tuple[str, str]] = []
    position = 0
    while position < len(tokens):
        status = tokens[position]
        if not status:
            position += 1
            continue
        if status[0] in "RC" and position + 2 < len(tokens):
            old, new = tokens[position + 1], tokens[position + 2]
            files.append(new)
            if status[0] == "R":
                renames.append((old, new))
            position += 3
        else:
            if position + 1 < len(tokens) and status[0] != "D":
                files.append(tokens[position + 1])
            position += 2
    return files, renames


def follow_renames(commits: list[Commit]) -> list[Commit]:
    """Commits (newest first) with each file under the name it has at the newest: a change to
    `marshmallow/__init__.py` before the move to `src/` counts for `src/marshmallow/__init__.py`."""
    current: dict[str, str] = {}  # old name → name at the newest commit
    followed: list[Commit] = []
    for commit in commits:
        files = list(dict.fromkeys(current.get(path, path) for path in commit.files))
        followed.append(Commit(commit.sha, commit.subject, commit.body, files, commit.renames))
        for old, new in commit.renames:
            current[old] = current.get(new, new)
    return followed


class HistoryIndex:
    """The commits table of one index file, kept in step with the workspace's HEAD."""

    def __init__(self, git: GitHistory) -> None:
        self.git = git
        self._seen_stamp: tuple[object, ...] | None = None
        self._looked = False  # whether `refresh` ran since the bound last changed

    def change_limit(self, max_commits: int) -> None:
        """A new bound (the setting changed): the history is read again at the next look."""
        if max_commits != self.git.max_commits:
            self.git.max_commits = max_commits
            self._looked = False

    def refresh_if_moved(self, store: IndexStore) -> int:
        """`refresh` when HEAD moved since the last look (a few stat calls when it did not)."""
        if self._looked and self.git.head_stamp() == self._seen_stamp:
            return 0
        return self.refresh(store)

    def refresh(self, store: IndexStore) -> int:
        """Bring the commits up to HEAD; the number of commits read."""
        stamp = self.git.head_stamp()
        head = self.git.head()
        if head is None:  # not (or no longer) a repository, no git, or history turned off
            if store.get_meta(HEAD_META):
                store.add_commits([], "")
            self._seen_stamp, self._looked = stamp, True
            return 0
        stored = store.get_meta(HEAD_META)
        same_limit = store.get_meta(LIMIT_META) == str(self.git.max_commits)
        if stored == head and same_limit:
            self._seen_stamp, self._looked = stamp, True
            return 0
        commits = self._new_commits(store, stored, head) if same_limit else None
        tracked = self.git.tracked(head)
        if commits is not None:
            store.add_commits(_rows(commits), head, after=stored, tracked=tracked)
        else:
            commits = follow_renames(self.git.commits(head))
            store.add_commits(_rows(commits), head, tracked=tracked)
            store.set_meta(LIMIT_META, str(self.git.max_commits))
        self._seen_stamp, self._looked = stamp, True
        log.info("workspace history: %d commits read up to %s", len(commits), head[:12])
        return len(commits)

    def _new_commits(self, store: IndexStore, stored: str | None, head: str) -> list[Commit] | None:
        """The commits since the stored HEAD, or None when the history must be read again: HEAD
        does not descend from it, the stored history outgrew its bound, or a new commit
        renamed files (the older commits then name them by their old names)."""
        if not stored or store.commit_count() > self.git.max_commits * 1.25:
            return None
        if not self.git.descends(stored, head):
            return None
        commits = self.git.commits(head, since=stored)
        return None if any(commit.renames for commit in commits) else commits


def _rows(commits: list[Commit]) -> list[tuple[str, str, str, str]]:
    """Oldest first: rowids grow with time (the newest commits have the highest)."""
    return [(c.sha, c.subject, c.body, "\n".join(c.files)) for c in reversed(commits)]


def changed_files(store: IndexStore, fts_query: str) -> dict[str, ChangedFile]:
    """Files that the commits best matching `fts_query` changed and that are indexed now.

    What a file is lent is weighted by how specific a change of it is (`specificity`): the
    file nearly every commit touches would otherwise be "changed by commits like this" for
    any question."""
    hits = store.search_commits(fts_query, SEARCHED_COMMITS)
    if not hits:
        return {}
    best = min(hit[3] for hit in hits)
    if best >= 0:
        return {}
    lent: dict[str, tuple[float, str]] = {}
    for sha, subject, files, score in hits:
        paths = files.split("\n")
        share = (score / best) / len(paths) ** FILES_EXPONENT
        for path in paths:
            total, why = lent.get(path, (0.0, ""))
            lent[path] = (total + share, why or f"{sha[:10]} {subject}")
    rows = store.lookup(lent)
    counts = store.change_counts(rows)
    commits = store.commit_count()
    weighted = {path: lent[path][0] * specificity(counts.get(path, 0), commits) for path in rows}
    top = max(weighted.values(), default=0.0)
    if top <= 0:
        return {}
    return {path: ChangedFile(row, weighted[path] / top, lent[path][1]) for path, row in rows.items()}


def specificity(changes: int, commits: int) -> float:
    """What one past change of a file says about a question, from how many of the `commits`
    read changed it: sqrt(ln((N + 1) / (n + 1))), an inverse document frequency over commits,
    damped (the plain one let a rarely changed file's one lucky commit outweigh the file
    that several commits like the question changed)."""
    return math.sqrt(math.log((commits + 1) / (changes + 1))) if commits > changes else 0.0


def churn(store: IndexStore, paths: Iterable[str]) -> dict[str, float]:
    """How often past commits changed each file (0..1: ln(1 + n) / ln(1 + N)). A file that
    changes often is likelier to be the one this change touches too, all else equal."""
    commits = store.commit_count()
    if commits == 0:
        return {}
    scale = math.log1p(commits)
    return {path: math.log1p(count) / scale for path, count in store.change_counts(paths).items()}


FRESH_SCALE = 1000  # commits: a file unchanged for this many (or more) is not fresh at all


def freshness(store: IndexStore, paths: Iterable[str]) -> dict[str, float]:
    """How lately a commit changed each file, over the whole stored history (0..1: 1 - ln(1 + k)
    / ln(1 + FRESH_SCALE), k commits since its last change; 1 for a file HEAD does not hold
    yet, new work not committed; 0 for a committed file no stored commit changed). Code left
    alone for hundreds of commits (a legacy copy, vendored code, a module that is done) is
    seldom what the next change edits; `recent_files` sees only the last 100 commits and
    ranks within them, this tells a file untouched for 150 commits from one untouched for
    3,000."""
    wanted = list(paths)
    scale = math.log1p(FRESH_SCALE)
    fresh = {
        path: 1.0 - min(1.0, math.log1p(max(0, since)) / scale)
        for path, since in store.commits_since_change(wanted).items()
    }
    fresh.update(dict.fromkeys(store.not_in_head(wanted), 1.0))
    return fresh


RECENT_COMMITS = 100  # the newest commits that make a file "recently changed"
RECENT_HALF_LIFE = 30.0  # commits: a file changed this many commits ago counts half


def recent_files(store: IndexStore) -> dict[str, float]:
    """Files the newest commits changed (0..1, the most recently and often changed 1): work in
    progress tends to go on where it was."""
    scores: dict[str, float] = {}
    for age, files in enumerate(store.recent_commits(RECENT_COMMITS)):
        paths = files.split("\n")
        weight = 0.5 ** (age / RECENT_HALF_LIFE) / len(paths) ** FILES_EXPONENT
        for path in paths:
            scores[path] = scores.get(path, 0.0) + weight
    top = max(scores.values(), default=0.0)
    return {path: value / top for path, value in scores.items()} if top > 0 else {}
