"""`aider-lsp context`: the index from the terminal, as a real subprocess."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "aider_lsp", "--log-level", "WARNING", "context", *args],
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_context_cli_prints_paths_with_scores_and_json(tmp_path: Path) -> None:
    root = tmp_path / "proj"
    (root / "app").mkdir(parents=True)
    (root / "app" / "retry.py").write_text('"""Retry with exponential backoff."""\n')
    (root / "app" / "http.py").write_text('"""HTTP client."""\n')
    (root / ".env").write_text("KEY=backoff-secret\n")

    plain = _run("--workspace", str(root), "exponential backoff")
    assert plain.returncode == 0, plain.stderr
    score, path, *why = plain.stdout.splitlines()[0].split()
    assert why and "retry" in " ".join(why)  # the reason it ranked follows the path
    assert path == "app/retry.py" and 0 < float(score) <= 1
    assert ".env" not in plain.stdout
    assert "match" in plain.stderr

    as_json = _run("--workspace", str(root), "--json", "http client")
    payload = json.loads(as_json.stdout)
    assert payload["matches"][0]["path"] == "app/http.py"
    assert payload["index"]["read"] == 0  # the index from the first run was reused

    elsewhere = tmp_path / "index.sqlite3"
    other = _run("--workspace", str(root), "--index", str(elsewhere), "--json", "retry")
    assert json.loads(other.stdout)["index"]["location"] == str(elsewhere) and elsewhere.exists()

    assert _run("--workspace", str(root), "nothing-like-this").returncode == 1
    empty = _run("--workspace", str(root), "  ")
    assert empty.returncode == 2 and "empty" in empty.stderr
