"""FileAccessManager: confinement, secrets, binary and encoding handling."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from aider_lsp.config.settings import Settings
from aider_lsp.guards.files import AccessDenied, FileAccessManager
from aider_lsp.tools.system import read_files

SECRET = "OUTSIDE-SECRET-VALUE"


@pytest.fixture
def files(workspace: Path) -> FileAccessManager:
    (workspace.parent / "outside.txt").write_text(SECRET)
    (workspace / "out-link").symlink_to(workspace.parent)
    return FileAccessManager(workspace, max_file_bytes=100)


def test_reads_text_and_reports_relative_paths(files: FileAccessManager) -> None:
    text = files.read_text("pkg/calc.py")
    assert text.path == "pkg/calc.py" and "def add" in text.text and not text.truncated


def test_size_cap_truncates(files: FileAccessManager, workspace: Path) -> None:
    (workspace / "big.txt").write_text("x" * 500)
    text = files.read_text("big.txt")
    assert text.truncated and len(text.text) == 100 and text.size == 500


def test_binary_refused_and_bad_encoding_replaced(files: FileAccessManager, workspace: Path) -> None:
    (workspace / "img.png").write_bytes(b"\x89PNG\x00\x00\x01")
    with pytest.raises(AccessDenied, match="binary"):
        files.read_text("img.png")
    (workspace / "latin.txt").write_bytes("caf\xe9 ol\xe9\n".encode("latin-1"))
    text = files.read_text("latin.txt")
    assert text.encoding_errors and text.text.startswith("caf")


@pytest.mark.parametrize(
    "path",
    ["../outside.txt", "/etc/passwd", "out-link/outside.txt", "a\x00b", "ftp://x/y", "", "   "],
)
def test_escapes_are_refused(files: FileAccessManager, path: str) -> None:
    with pytest.raises(AccessDenied):
        files.resolve(path)


@pytest.mark.parametrize(
    "name",
    [
        ".env",
        ".env.local",
        "prod.env",
        "server.pem",
        "tls.key",
        "id_rsa",
        "id_ed25519.pub",
        "credentials.json",
        ".netrc",
        ".ssh/config",
        "my-credentials.json",
    ],
)
def test_secrets_are_refused_for_models(files: FileAccessManager, workspace: Path, name: str) -> None:
    target = workspace / name
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text("secret")
    assert files.is_secret(name)
    with pytest.raises(AccessDenied, match="secret"):
        files.read_text(name)


def test_configured_secret_patterns(workspace: Path) -> None:
    (workspace / "vault.yaml").write_text("token: x")
    files = FileAccessManager(workspace, secret_patterns=["vault.*"])
    with pytest.raises(AccessDenied, match="secret"):
        files.read_text("vault.yaml")


def test_symlink_to_a_secret_is_refused(files: FileAccessManager, workspace: Path) -> None:
    (workspace / "harmless.txt").symlink_to(workspace / ".env")
    with pytest.raises(AccessDenied, match="secret"):
        files.read_text("harmless.txt")


def test_write_stays_inside(files: FileAccessManager, workspace: Path) -> None:
    assert files.write_text("new/dir/f.py", "x = 1\n") == "new/dir/f.py"
    assert (workspace / "new/dir/f.py").read_text() == "x = 1\n"
    with pytest.raises(AccessDenied):
        files.write_text("../escape.py", "x")
    assert not (workspace.parent / "escape.py").exists()


def test_list_and_info(files: FileAccessManager) -> None:
    listed = files.list_files()
    assert "pkg/calc.py" in listed and ".env" in listed
    assert not any("outside" in path for path in listed)
    info = files.info(".env")
    assert info.is_secret and not info.is_binary


path_parts = st.sampled_from(
    [
        "..",
        ".",
        "pkg",
        "calc.py",
        "out-link",
        "outside.txt",
        ".env",
        "/",
        "//",
        "~",
        "%2e%2e",
        "file:",
        "\x00",
    ]
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    parts=st.lists(st.one_of(path_parts, st.text(max_size=8)), min_size=1, max_size=6), absolute=st.booleans()
)
def test_no_generated_path_reads_outside_or_secrets(
    files: FileAccessManager, parts: list[str], absolute: bool
) -> None:
    """Whatever the path, read_files never returns content from outside or from a secret."""
    path = ("/" if absolute else "") + "/".join(parts)
    result = read_files(files, {"file_paths": [path]})
    assert SECRET not in result.content
    assert "sk-secret" not in result.content
    try:
        real = files.resolve(path)
    except AccessDenied:
        return
    assert real == files.root or files.root in real.parents
    assert os.path.realpath(real) == str(real)


def test_secret_patterns_changed_later_apply_at_once(workspace: Path) -> None:
    (workspace / "vault.yaml").write_text("token: x")
    current = [Settings()]
    files = FileAccessManager(workspace, settings=lambda: current[-1])
    assert not files.is_secret("vault.yaml")
    current.append(Settings(secret_patterns=["vault.*"]))  # what a settings change does
    assert files.is_secret("vault.yaml") and files.is_secret_in_tree("vault.yaml")


def test_the_walks_secret_check_agrees_with_the_full_one(workspace: Path) -> None:
    files = FileAccessManager(workspace, secret_patterns=["config/prod.yaml", "private/", "*.vault"])
    paths = [
        ".env",
        "app/.env.local",
        "keys/server.pem",
        "id_rsa.pub",
        "a/.ssh/config",
        "config/prod.yaml",
        "config/dev.yaml",
        "private/notes.md",
        "src/private_api.py",
        "data/x.vault",
        "src/app.py",
        "README.md",
        "docs/credentials.md",
        "CREDENTIALS.json",
    ]
    for rel in paths:
        target = workspace / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text("x")
        assert files.is_secret_in_tree(rel) == files.is_secret(rel), rel
