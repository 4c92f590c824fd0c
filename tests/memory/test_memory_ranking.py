"""The ranking's promises, on small real workspaces: the file a change would edit comes first.

Code before its changelog entry, its docs and its licence; code before its tests; a
function's docstring finds its file inside a long module; every match says why it ranked;
the index keeps no copy of the text it indexes.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from aider_lsp.config.settings import Settings
from aider_lsp.guards.files import FileAccessManager
from aider_lsp.memory import MemorySystem, rank
from aider_lsp.memory import index as index_module
from aider_lsp.memory import reader as reader_module
from aider_lsp.models import ContextGenerationInput


def _write(root: Path, rel: str, text: str) -> None:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def _indexed(root: Path, db: Path | None = None) -> MemorySystem:
    memory = MemorySystem(FileAccessManager(root), Settings(), db_path=db)
    memory.index_all()
    return memory


def _paths(memory: MemorySystem, query: str) -> list[str]:
    result = memory.search(ContextGenerationInput(query=query, max_results=10))
    return [match.source_path or match.id for match in result.matches]


CORE = '''"""The command-line options and their values."""


class Option:
    def __init__(self, name, type=None, flag_value=None, is_flag=None):
        self.name = name
        self.type = type
        # a flag's value is converted by its type when a type is provided
        if is_flag and type is not None:
            self.flag_value = type(flag_value)
        else:
            self.flag_value = flag_value

    def consume(self, args):
        return args.pop(0) if args else self.flag_value
'''

FILLERS = {
    "src/optlib/parser.py": '"""Split a command line into words and options."""\n\n'
    "def split_words(line):\n    return line.split()\n",
    "src/optlib/formatting.py": '"""Wrap help text to the terminal width."""\n\n'
    "def wrap(text, width=78):\n    return text[:width]\n",
    "src/optlib/termui.py": '"""Prompts, colours and progress bars for the terminal."""\n\n'
    "def prompt(question):\n    return input(question)\n",
    "src/optlib/shell.py": '"""Shell completion scripts for bash and zsh."""\n\n'
    "def complete(words):\n    return sorted(words)\n",
}

CHANGES = """Changes
=======

Version 8.1.4
-------------

- Fix condition for setting flag value when type is provided. The flag value is
  converted with the given type when the option is a flag. :issue:`2710`
- Flag options show their default value in help when the flag value is set.
- Document how the type of a flag value is chosen.
"""


@pytest.fixture
def library(tmp_path: Path) -> Path:
    return make_library(tmp_path / "lib")


def make_library(root: Path) -> Path:
    """A small library: its code, changelog, docs, licence and tests."""
    _write(root, "src/optlib/core.py", CORE)
    _write(root, "src/optlib/__init__.py", '"""optlib: options for command lines."""\n')
    for rel, text in FILLERS.items():
        _write(root, rel, text)
    _write(root, "CHANGES.rst", CHANGES)
    _write(
        root,
        "docs/options.md",
        "# Options\n\nA flag option has a flag value. When a type is provided the flag value"
        " is converted; setting the flag value to a string keeps it a string.\n",
    )
    _write(
        root,
        "LICENSE.txt",
        "Copyright 2014 Pallets. Redistribution and use in source and binary forms, with or"
        " without modification, are permitted provided that the conditions are met: the"
        " condition for setting the notice is provided when the type of use is a flag value.\n",
    )
    _write(
        root,
        "tests/test_options.py",
        '"""Options: flag values, types and defaults."""\n\n'
        "def test_typed_flag():\n"
        "    option = Option('x', type=int, flag_value='1', is_flag=True)\n"
        "    assert option.flag_value == 1  # the flag value follows the type\n\n"
        "def test_untyped_flag():\n"
        "    assert Option('x', flag_value='1', is_flag=True).flag_value == '1'\n",
    )
    return root


def test_code_comes_before_its_changelog_docs_licence_and_tests(library: Path) -> None:
    memory = _indexed(library)
    try:
        found = _paths(memory, "Fix condition for setting flag value when type is provided")
        assert found[0] == "src/optlib/core.py"
        for other in ("CHANGES.rst", "docs/options.md", "LICENSE.txt", "tests/test_options.py"):
            assert found.index(other) > found.index("src/optlib/core.py")
    finally:
        memory.close()


def test_a_query_about_the_other_kinds_finds_them(library: Path) -> None:
    memory = _indexed(library)
    try:
        assert _paths(memory, "changelog: flag options show their default value in help")[0] == (
            "CHANGES.rst"
        )
        assert _paths(memory, "tests for a typed flag")[0] == "tests/test_options.py"
        assert _paths(memory, "docs: setting the flag value to a string")[0] == "docs/options.md"
        assert _paths(memory, "license conditions for redistribution")[0] == "LICENSE.txt"
    finally:
        memory.close()


def _long_module(functions: int) -> str:
    words = (
        "parse render encode decode compile flush rotate merge split index buffer stream"
        " token header cache queue socket frame chunk record"
    ).split()
    parts = ['"""A long module of many small helpers."""\n']
    for number in range(functions):
        a, b, c = words[number % 20], words[(number * 7) % 20], words[(number * 13) % 20]
        parts.append(
            f"\ndef {a}_{b}_{number}(value, retry=None):\n"
            f'    """{a.title()} the {b} of a {c}; used by the {a} {c} step."""\n'
            f"    result = [{c!r}, value, retry]\n"
            f"    for item in result:\n        value = item or value\n"
            f"    return value, {number}\n"
        )
        if number == 287:
            parts.append(
                "\ndef rebalance(pools, budget):\n"
                '    """Spread the retry budget evenly across the worker pools.\n\n'
                "    Pools that are idle give their share to the busy ones.\n"
                '    """\n'
                "    return {pool: budget / len(pools) for pool in pools}\n"
            )
    return "".join(parts)


def test_a_functions_docstring_finds_its_file_in_a_long_module(tmp_path: Path) -> None:
    root = tmp_path / "svc"
    module = _long_module(500)
    assert module.count("\n") > 3000
    _write(root, "svc/helpers.py", module)
    _write(
        root,
        "svc/pool.py",
        '"""Worker pools."""\n\nclass WorkerPool:\n    """A pool of workers; each worker has a retry'
        ' count."""\n\n    def spread(self, workers):\n        return workers\n',
    )
    _write(root, "svc/budget.py", '"""Budget accounting for retries."""\n\nBUDGET = 10\n')
    memory = _indexed(root)
    try:
        result = memory.search(
            ContextGenerationInput(query="spread the retry budget evenly across worker pools")
        )
        top = result.matches[0]
        assert top.source_path == "svc/helpers.py"
        assert top.ranking and any(d.name.startswith("rebalance") for d in top.ranking.why.definitions)
    finally:
        memory.close()


def test_each_match_says_why_it_ranked(library: Path) -> None:
    memory = _indexed(library)
    try:
        result = memory.search(ContextGenerationInput(query="flag value consume args"))
        by_path = {m.source_path: m.ranking for m in result.matches if m.ranking}
        core = by_path["src/optlib/core.py"].why
        assert core.kind == "code"
        assert {"flag", "value", "consume"} <= set(core.terms)
        assert any(d.name.startswith("Option.consume") for d in core.definitions)
        changes = by_path["CHANGES.rst"].why
        assert changes.kind == "changelog" and "not about it" in (changes.demoted or "")
    finally:
        memory.close()


def test_each_match_keeps_its_score_before_the_cap(library: Path) -> None:
    memory = _indexed(library)
    try:
        result = memory.search(ContextGenerationInput(query="flag value consume args Option"))
        scores = [(m.relevance_score, m.ranking.score) for m in result.matches if m.ranking]
        assert len(scores) == len(result.matches)
        assert all(0.0 <= capped <= 1.0 for capped, _ in scores)  # the MatchItem contract
        assert all(capped == round(min(1.0, uncapped), 4) for capped, uncapped in scores)
        assert scores[0][1] > 1.0  # the best file's score, which the cap hides
        uncapped = [score for _, score in scores]
        assert uncapped == sorted(uncapped, reverse=True)  # the order the answer is in
    finally:
        memory.close()


def test_the_cli_prints_why(library: Path) -> None:
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "aider_lsp",
            "--log-level",
            "WARNING",
            "context",
            "--workspace",
            str(library),
            "flag value consume",
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    first = done.stdout.splitlines()[0]
    assert "src/optlib/core.py" in first and "Option.consume" in first and "matches" in first


def test_the_index_keeps_no_copy_of_the_text(tmp_path: Path) -> None:
    root = tmp_path / "p"
    sentence = "zebras quietly juggle seventeen purple accordions beneath lighthouse"
    _write(root, "notes.py", f'"""Module."""\n\nX = 1  # {sentence}\n')
    db = tmp_path / "index.sqlite3"
    memory = _indexed(root, db)
    try:
        assert _paths(memory, "purple accordions lighthouse") == ["notes.py"]
        memory.store.open().execute("PRAGMA wal_checkpoint(TRUNCATE)")
        stored = b"".join(p.read_bytes() for p in tmp_path.glob("index.sqlite3*"))
        assert sentence.encode() not in stored and b"juggle seventeen" not in stored
    finally:
        memory.close()


def test_updates_leave_no_stale_answers_and_compaction_rebuilds(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(index_module, "COMPACT_MIN_DEAD", 3)
    root = tmp_path / "p"
    for number in range(4):
        _write(root, f"m{number}.py", f'"""Module {number} about walruses."""\n')
    memory = _indexed(root)
    try:
        for number in range(4):
            _write(root, f"m{number}.py", f'"""Module {number} about narwhals."""\n')
            memory.update_paths_sync([f"m{number}.py"])
        assert _paths(memory, "walruses") == []  # the old text's rows are dead, never answered
        assert len(_paths(memory, "narwhals")) == 4
        assert memory.store.needs_compaction()
        stats = memory.index_all()
        assert stats.read == 4 and not memory.store.needs_compaction()
        assert len(_paths(memory, "narwhals")) == 4 and _paths(memory, "walruses") == []
    finally:
        memory.close()


def test_a_large_pass_reads_in_worker_processes_with_the_same_result(
    library: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    in_process = _indexed(library)
    expected = _paths(in_process, "Fix condition for setting flag value when type is provided")
    in_process.close()
    monkeypatch.setattr(reader_module, "POOL_MIN_FILES", 2)
    monkeypatch.setattr(reader_module, "CHUNK_FILES", 2)
    monkeypatch.setattr(reader_module, "worker_count", lambda: 2)  # even on a one-core machine
    used: list[int] = []
    original = reader_module._pool

    def counting_pool(workers: int):  # type: ignore[no-untyped-def]
        used.append(workers)
        return original(workers)

    monkeypatch.setattr(reader_module, "_pool", counting_pool)
    pooled = MemorySystem(FileAccessManager(library), Settings(), db_path=library.parent / "p.sqlite3")
    try:
        stats = pooled.index_all()
        assert used and stats.added == 10
        assert _paths(pooled, "Fix condition for setting flag value when type is provided") == expected
    finally:
        pooled.close()


def test_code_comes_before_the_test_that_matches_better(tmp_path: Path) -> None:
    root = tmp_path / "logs"
    _write(
        root,
        "src/logkit/_log_levels.py",
        '"""Level names and numbers."""\n\nLEVELS = {"debug": 10, "info": 20}\n\n'
        "def filter_by_level(min_level):\n    return lambda event: event['level'] >= min_level\n",
    )
    _write(
        root,
        "tests/test_log_levels.py",
        "def test_interpolation_in_filtered_calls():\n"
        '    """Positional interpolation happens in filtered log calls too."""\n'
        "    assert format_event('%s', 'x') == 'x'  # interpolation of filtered calls\n",
    )
    _write(
        root, "src/logkit/render.py", '"""Render events as text."""\n\ndef render(e):\n    return str(e)\n'
    )
    memory = _indexed(root)
    try:
        result = memory.search(ContextGenerationInput(query="Fix interpolation in filtered log calls"))
        found = [m.source_path for m in result.matches]
        assert found[:2] == ["src/logkit/_log_levels.py", "tests/test_log_levels.py"]
        ranking = result.matches[0].ranking
        assert ranking and ranking.why.tested_by == "tests/test_log_levels.py"
        # asked about the tests, the test itself comes first
        assert _paths(memory, "test interpolation in filtered log calls")[0] == "tests/test_log_levels.py"
    finally:
        memory.close()


def test_a_one_line_docstring_in_single_quotes_is_searchable(tmp_path: Path) -> None:
    root = tmp_path / "p"
    filler = "".join(f"def helper_{n}(x):\n    return x + {n}\n\n" for n in range(400))
    one_liner = 'def ilshift(a, b):\n    "Same as a <<= b, shifting the bits in place."\n    a <<= b\n'
    _write(root, "ops.py", filler + one_liner)
    _write(root, "bits.py", '"""Bit twiddling."""\n\ndef popcount(x):\n    return bin(x).count("1")\n')
    memory = _indexed(root)
    try:
        result = memory.search(ContextGenerationInput(query="shifting the bits in place"))
        assert result.matches[0].source_path == "ops.py"
        ranking = result.matches[0].ranking
        assert ranking and any(d.name.startswith("ilshift") for d in ranking.why.definitions)
    finally:
        memory.close()


def test_words_in_most_files_of_a_large_workspace_are_no_reason(tmp_path: Path) -> None:
    root = tmp_path / "big"
    for number in range(240):
        handler = f"def handler_{number}(request):\n    return request\n"
        _write(root, f"pkg/m{number}.py", f'"""Module {number}."""\n\n' + handler)
    throttle = "def throttle(request):\n    return request\n"
    _write(root, "pkg/throttle.py", '"""Throttle each request with a token bucket."""\n\n' + throttle)
    memory = _indexed(root)
    try:
        result = memory.search(ContextGenerationInput(query="token bucket for each request"))
        assert result.matches[0].source_path == "pkg/throttle.py"
        ranking = result.matches[0].ranking
        assert ranking is not None
        terms = ranking.why.terms
        assert "token" in terms and "bucket" in terms and "request" not in terms
    finally:
        memory.close()


def test_which_words_a_large_workspace_leaves_out_of_its_searches() -> None:
    """Small and mid-sized workspaces keep the old rule (a quarter of the files, at least 200);
    a large one leaves out words in more than 5,000 files (and 5% of them), so a query never
    scores tens of thousands of rows; the definition search keeps every word below that."""
    assert rank.common_share(500) == 200 / 500
    assert rank.common_share(2_257) == 0.25
    assert rank.common_share(20_000) == 0.25
    assert rank.common_share(100_000) == 0.05
    assert rank.common_share(1_000_000) == 0.05
    assert rank.definition_common_share(2_257) > 1  # nothing in a stdlib-sized workspace
    assert rank.definition_common_share(100_000) == 0.05


def test_phrases_of_left_out_words_only_are_left_out_too() -> None:
    terms = rank.parse_query("parse flag value")
    every = rank.fts_expression(terms)
    assert '"parse flag"' in every and '"flag value"' in every
    fewer = rank.fts_expression(terms, frozenset({"flag", "value"}), frozenset({"flag", "value"}))
    alternatives = fewer.split(" OR ")
    assert '"flag value"' not in alternatives and '"parse flag"' in alternatives
    assert '"flag"' not in alternatives  # the left-out word alone is not searched
    assert not any(a.startswith('NEAR("flag"') for a in alternatives)  # nor its phrase, loosely
    assert '"flag value"' in rank.fts_expression(
        terms, frozenset({"flag", "value"})
    )  # phrases kept by default


def test_a_phrase_with_a_left_out_word_keeps_its_exact_form_but_not_its_near() -> None:
    """FTS5 scores a NEAR group as its words, reading each word's whole doclist at every
    query: with a word left out as frequent, only the exact phrase is searched. Without
    left-out words (every workspace under 5,000 files) every phrase keeps its NEAR."""
    terms = rank.parse_query("Parse flag value")
    every = rank.fts_expression(terms)
    assert 'NEAR("parse" "flag", 2)' in every and 'NEAR("flag" "value", 2)' in every
    fewer = rank.fts_expression(terms, frozenset({"Parse"}), frozenset({"Parse"}))
    assert '"parse flag"' in fewer and 'NEAR("parse" "flag", 2)' not in fewer  # as typed or not
    assert '"flag value"' in fewer and 'NEAR("flag" "value", 2)' in fewer
    assert '"Parse"' not in fewer


RETURN = "    return request\n"


def test_a_large_workspace_still_finds_the_file_holding_a_phrase_of_a_frequent_word(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A large workspace in miniature (a word in more than 20 files counts as frequent): the
    definitions are searched without the NEAR of "throttle request", the exact phrase still
    puts the file that holds it first."""
    monkeypatch.setattr(rank, "FILE_TERM_MAX_FILES", 20)
    root = tmp_path / "big"
    for number in range(240):
        handler = f'def handler_{number}(request):\n    """Answer request {number} at once."""\n'
        _write(root, f"pkg/m{number}.py", handler + RETURN)
    throttle = 'def throttle(request):\n    """Throttle request rate by token bucket."""\n'
    _write(root, "pkg/throttle.py", throttle + RETURN)
    bucket = 'def refill(request):\n    """Refill the token bucket, then throttle the rest."""\n'
    _write(root, "pkg/bucket.py", bucket + RETURN)
    memory = _indexed(root)
    asked: list[str] = []
    search_units = index_module.IndexStore.search_units

    def spy(store: index_module.IndexStore, fts_query: str, limit: int) -> list[index_module.UnitHit]:
        asked.append(fts_query)
        return search_units(store, fts_query, limit)

    monkeypatch.setattr(index_module.IndexStore, "search_units", spy)
    try:
        found = _paths(memory, "Throttle request rate by token bucket")
        assert found[:2] == ["pkg/throttle.py", "pkg/bucket.py"]
        assert '"throttle request"' in asked[0] and 'NEAR("throttle" "request", 2)' not in asked[0]
        assert 'NEAR("token" "bucket", 2)' in asked[0]
    finally:
        memory.close()


def test_the_history_text_leaves_out_frequent_words_in_a_large_workspace_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The conversation's history is searched with every word in a small workspace; in a
    large one (here in miniature: more than 20 files) without the words in most files, as the
    definitions are (a few sentences of history scored most of 100,000 files)."""
    root = tmp_path / "big"
    for number in range(240):
        handler = f'def handler_{number}(request):\n    """Answer request {number} at once."""\n'
        _write(root, f"pkg/m{number}.py", handler + RETURN)
    _write(root, "pkg/throttle.py", 'def throttle(request):\n    """Throttle request rate."""\n' + RETURN)
    memory = _indexed(root)
    asked: list[tuple[str, list[rank.SearchRow]]] = []
    search = index_module.IndexStore.search

    def spy(store: index_module.IndexStore, fts_query: str, limit: int) -> list[rank.SearchRow]:
        asked.append((fts_query, search(store, fts_query, limit)))
        return asked[-1][1]

    monkeypatch.setattr(index_module.IndexStore, "search", spy)
    request = ContextGenerationInput(query="handler", history="we throttle each request")
    try:
        memory.search(request)
        assert '"request"' in asked[-1][0]  # the history's search, small workspace: every word
        monkeypatch.setattr(rank, "FILE_TERM_MAX_FILES", 20)
        memory.search(request)
        history_query, history_rows = asked[-1]
        assert '"request"' not in history_query and '"throttle"' in history_query
        assert history_rows[0].path == "pkg/throttle.py"
    finally:
        memory.close()


def test_a_file_the_question_mentions_by_name_ranks_first(tmp_path: Path) -> None:
    _write(tmp_path, "app/run.py", '"""Serve the comment pages."""\n\ndef serve(port):\n    return port\n')
    _write(tmp_path, "app/render.py", '"""Render comments with their typos marked."""\n\nMARK = "~"\n')
    _write(tmp_path, "app/notes.py", "# e.g. the run step\nSTEP = 1\n")
    memory = _indexed(tmp_path)
    # the words match render.py best; the question names run.py
    assert _paths(memory, "fix typos in comments")[0] == "app/render.py"
    assert _paths(memory, "fix typos in comments in run.py")[0] == "app/run.py"
    _write(tmp_path, "app/util/run.py", "def go():\n    return 1\n")
    memory.update_paths_sync(["app/util/run.py"])
    # a path tells two files of that name apart
    result = memory.search(
        ContextGenerationInput(query="fix typos in comments in util/run.py", max_results=5)
    )
    assert result.matches[0].source_path == "app/util/run.py"
    assert result.matches[0].ranking and result.matches[0].ranking.why.mentioned is True
    assert _paths(memory, "fix typos in comments in app/run.py")[0] == "app/run.py"
    # `e.g.` and `Settings.model_validate` name no file
    assert rank.file_mentions("e.g. Settings.model_validate and v1.2.3") == []
    memory.close()


def test_a_goal_that_names_a_module_finds_it(tmp_path: Path) -> None:
    _write(
        tmp_path,
        "blog/settings.py",
        '"""Settings."""\n\nfrom typing import Any\n\n'
        "def read_settings(path: str) -> dict[str, Any]:\n    # type hints for every setting\n"
        "    return {}\n",
    )
    _write(
        tmp_path,
        "blog/contents.py",
        '"""Articles and pages."""\n\n\nclass Content:\n    def __init__(self, text):\n'
        "        self.text = text\n",
    )
    _write(tmp_path, "blog/_compat.py", "def shim():\n    return None\n")
    _write(tmp_path, "blog/util/compat.py", "def shim2():\n    return None\n")
    memory = _indexed(tmp_path)
    goal = "Add type hints for contents module"

    def first(query: str, *, edit_goal: bool) -> str:
        asked = ContextGenerationInput(query=query, max_results=5, edit_goal=edit_goal)
        return memory.search(asked).matches[0].source_path or ""

    # looked up as text, the words "type hints" win; asked as a change goal, the module it names
    assert first(goal, edit_goal=False) == "blog/settings.py"
    assert first(goal, edit_goal=True) == "blog/contents.py"
    best = memory.search(ContextGenerationInput(query=goal, max_results=5, edit_goal=True)).matches[0]
    assert best.ranking and best.ranking.why.module is True
    # a name two modules have is shared between them: neither gets the whole boost
    result = memory.search(ContextGenerationInput(query="Drop a compat shim", max_results=5, edit_goal=True))
    shares = {m.source_path: m.ranking.signals.module for m in result.matches if m.ranking}
    assert shares["blog/_compat.py"] == shares["blog/util/compat.py"] == 0.5
    memory.close()
