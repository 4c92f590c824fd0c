"""FileAccessManager: every path the server touches is confined to the workspace.

Paths are resolved (realpath, so symlinks count where they point) and must stay under the
workspace root. Secret files are refused whenever their content could reach a model.
"""

from __future__ import annotations

import codecs
import fnmatch
import functools
import os
import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import unquote, urlparse

if TYPE_CHECKING:
    from ..config.settings import SettingsProvider

DEFAULT_SECRET_PATTERNS: tuple[str, ...] = (
    ".env",
    ".env.*",
    "*.env",
    ".envrc",
    "*.pem",
    "*.key",
    "*.p12",
    "*.pfx",
    "*.keystore",
    "*.jks",
    "id_rsa*",
    "id_dsa*",
    "id_ecdsa*",
    "id_ed25519*",
    ".netrc",
    ".npmrc",
    ".pypirc",
    ".git-credentials",
    "credentials",
    "credentials.*",
    "*credentials*.json",
    "secrets.*",
    "*.secret",
    "service-account*.json",
    ".htpasswd",
    ".pgpass",
    ".my.cnf",
    ".s3cfg",
    ".boto",
    "*.ppk",
    "*.kdbx",
    "*.tfstate",
    "*.tfstate.backup",
)
# .git: its config may hold credentials (remote URLs with tokens), and its hooks run code.
SECRET_DIRECTORIES: tuple[str, ...] = (".ssh", ".gnupg", ".aws", ".git")
BINARY_SNIFF_BYTES = 8192
MAX_PATH_CHARS = 4096  # PATH_MAX
MAX_NAME_BYTES = 255  # NAME_MAX: one component of a path


def _path_pattern_matches(rel: str, pattern: str) -> bool:
    """gitignore-like match of one user secret pattern against a workspace-relative path:
    the path itself or any folder above it; `**/` and a pattern without a slash match at
    any depth. Case-insensitive (refusing too much is the safe side)."""
    pat = pattern.strip().replace("\\", "/").lower()
    if not pat or pat.startswith("#"):
        return False
    pat = pat.rstrip("/")
    anchored = pat.startswith("/") or "/" in pat
    pat = pat.lstrip("/")
    while pat.startswith("**/"):
        pat, anchored = pat[3:], False
    if not pat:
        return False
    components = rel.lower().split("/")
    prefixes = ["/".join(components[: i + 1]) for i in range(len(components))]
    if anchored:
        return any(fnmatch.fnmatch(prefix, pat) for prefix in prefixes)
    suffixes = [
        "/".join(components[i:j]) for i in range(len(components)) for j in range(i + 1, len(components) + 1)
    ]
    return any(fnmatch.fnmatch(part, pat) for part in suffixes)


class AccessDenied(ValueError):
    """A path was refused; the message says why."""


@dataclass(frozen=True)
class FileText:
    path: str
    text: str
    size: int
    truncated: bool
    encoding_errors: bool


@dataclass(frozen=True)
class FileInfo:
    path: str
    size: int
    mtime: float
    is_binary: bool
    is_secret: bool


@dataclass(frozen=True)
class Refusal:
    """A path refused to a model, and why (confinement, secret, folder, missing)."""

    path: str
    reason: str


_TEXT_OR_HIGH_BYTES = bytes(range(32, 127)) + b"\n\r\t\f\b" + bytes(range(128, 256))


def looks_binary(head: bytes) -> bool:
    """NUL bytes or mostly non-text bytes in the first block mark a binary file."""
    if not head:
        return False
    if b"\x00" in head:
        return True
    nontext = len(head.translate(None, _TEXT_OR_HIGH_BYTES))  # in C: the walk sniffs every file
    return nontext / len(head) > 0.30


@functools.lru_cache(maxsize=8)
def _secret_name_regex(patterns: tuple[str, ...]) -> re.Pattern[str]:
    """Every pattern as one regex (is_secret runs for each file of a workspace walk), compiled
    once per set of patterns."""
    return re.compile("|".join(fnmatch.translate(pattern.lower()) for pattern in patterns))


class FileAccessManager:
    def __init__(
        self,
        root: str | os.PathLike[str],
        *,
        max_file_bytes: int = 1_000_000,
        secret_patterns: list[str] | tuple[str, ...] = (),
        settings: SettingsProvider | None = None,
    ) -> None:
        """The size cap and the user's secret patterns are read from `settings` at each use
        when it is given (the server's: they change in the editor), else the fixed values."""
        self.root = Path(os.path.realpath(root))
        if not self.root.is_dir():
            raise NotADirectoryError(f"workspace is not a directory: {root}")
        self._settings = settings
        self._max_file_bytes = max_file_bytes
        self._user_patterns = tuple(secret_patterns)

    @property
    def max_file_bytes(self) -> int:
        """Files larger than this are read truncated (`maxFileBytes`)."""
        return self._settings().max_file_bytes if self._settings else self._max_file_bytes

    @property
    def secret_patterns(self) -> tuple[str, ...]:
        """The built-in patterns followed by the user's `secretPatterns`."""
        user = tuple(self._settings().secret_patterns) if self._settings else self._user_patterns
        return (*DEFAULT_SECRET_PATTERNS, *user)

    @property
    def _secret_name(self) -> re.Pattern[str]:
        return _secret_name_regex(self.secret_patterns)

    # -- paths ---------------------------------------------------------------------------
    def resolve(self, path: str | os.PathLike[str]) -> Path:
        """Absolute real path inside the workspace, or AccessDenied with the reason."""
        raw = os.fspath(path)
        if not isinstance(raw, str) or not raw.strip():
            raise AccessDenied("empty path")
        if "\x00" in raw:
            raise AccessDenied(f"path contains a NUL byte: {raw!r}")
        if "://" in raw or raw.startswith("file:"):
            parsed = urlparse(raw)
            if parsed.scheme != "file":
                raise AccessDenied(f"only file:// URIs are accepted, not {parsed.scheme}:")
            if parsed.netloc not in ("", "localhost"):
                raise AccessDenied(f"remote file URI refused: {raw}")
            raw = unquote(parsed.path)
            if "\x00" in raw:
                raise AccessDenied(f"path contains a NUL byte: {raw!r}")
        if len(raw) > MAX_PATH_CHARS or any(
            len(part.encode(errors="replace")) > MAX_NAME_BYTES for part in raw.split("/")
        ):
            # asking the filesystem about it would raise "File name too long" wherever it is used
            raise AccessDenied(f"not a path: too long ({len(raw)} characters): {raw[:80]}…")
        candidate = Path(raw) if os.path.isabs(raw) else self.root / raw
        real = Path(os.path.realpath(candidate))
        if real != self.root and self.root not in real.parents:
            raise AccessDenied(f"path is outside the workspace: {os.fspath(path)}")
        return real

    def relative(self, path: str | os.PathLike[str]) -> str:
        """Workspace-relative POSIX path of a confined path."""
        return self.resolve(path).relative_to(self.root).as_posix()

    def is_secret(self, path: str | os.PathLike[str]) -> bool:
        """True for files whose content must never reach a model (keys, .env, credentials).

        Built-in patterns match file names. A `secretPatterns` entry is read like a gitignore
        line: with a slash (`config/prod.yaml`, `/deploy/*.yml`, `private/`) it matches the
        workspace-relative path or a folder above the file; without one, any path component.
        """
        real = Path(os.path.realpath(self.root / path)) if not os.path.isabs(path) else Path(path)
        parts = [Path(os.fspath(path)).name, real.name]
        if any(part in SECRET_DIRECTORIES for part in Path(os.fspath(path)).parts + real.parts):
            return True
        if any(self._secret_name.match(name.lower()) for name in parts):
            return True
        user_patterns = self.secret_patterns[len(DEFAULT_SECRET_PATTERNS) :]
        if not user_patterns:
            return False
        rels = {
            rel
            for rel in (self._workspace_relative(Path(os.fspath(path))), self._workspace_relative(real))
            if rel
        }
        return any(_path_pattern_matches(rel, pattern) for rel in rels for pattern in user_patterns)

    def is_secret_in_tree(self, rel: str) -> bool:
        """`is_secret` for a workspace-relative POSIX path known to hold no symlink (a file
        that a directory walk found): the same rules, without resolving anything."""
        parts = rel.split("/")
        if any(part in SECRET_DIRECTORIES for part in (*self.root.parts, *parts)):
            return True
        if self._secret_name.match(parts[-1].lower()):
            return True
        user_patterns = self.secret_patterns[len(DEFAULT_SECRET_PATTERNS) :]
        return any(_path_pattern_matches(rel, pattern) for pattern in user_patterns)

    def _workspace_relative(self, path: Path) -> str | None:
        """POSIX path relative to the root (lexically, then resolved), or None when outside."""
        candidate = path if path.is_absolute() else self.root / path
        for form in (Path(os.path.normpath(candidate)), Path(os.path.realpath(candidate))):
            if form != self.root and self.root in form.parents:
                return form.relative_to(self.root).as_posix()
        return None

    def check_model_safe(self, path: str | os.PathLike[str]) -> Path:
        """Resolve and refuse secrets: use for anything whose content may reach a model."""
        real = self.resolve(path)
        if self.is_secret(path) or self.is_secret(real):
            raise AccessDenied(f"refusing a secret file: {os.fspath(path)}")
        return real

    # -- operations ----------------------------------------------------------------------
    def model_safe_files(
        self, paths: Iterable[str | os.PathLike[str]], *, must_exist: bool = False
    ) -> tuple[list[str], list[Refusal]]:
        """The one rule for files a model will see (Aider's editable and read-only files, the
        file context): confined, not secret, not a folder (and existing when `must_exist`).
        Returns the kept workspace-relative paths, deduplicated in order, and the refused ones
        with why."""
        kept: list[str] = []
        refused: list[Refusal] = []
        for path in paths:
            try:
                real = self.check_model_safe(path)
            except AccessDenied as exc:
                refused.append(Refusal(os.fspath(path), str(exc)))
                continue
            if real.is_dir():
                refused.append(Refusal(os.fspath(path), f"is a directory: {os.fspath(path)}"))
                continue
            if must_exist and not real.is_file():
                refused.append(Refusal(os.fspath(path), "no such file"))
                continue
            rel = self.relative(real)
            if rel not in kept:
                kept.append(rel)
        return kept, refused

    def read_text(self, path: str | os.PathLike[str], *, for_model: bool = True) -> FileText:
        """Read a text file: size cap, binary refusal, undecodable bytes replaced and noted."""
        real = self.check_model_safe(path) if for_model else self.resolve(path)
        if real.is_dir():
            raise IsADirectoryError(f"a folder, not a file: {self.relative(real) or '.'}")
        if not real.is_file():
            raise FileNotFoundError(f"not found: no such file in the workspace: {self.relative(real)}")
        size = real.stat().st_size
        with real.open("rb") as handle:
            data = handle.read(self.max_file_bytes + 1)
        if looks_binary(data[:BINARY_SNIFF_BYTES]):
            raise AccessDenied(f"binary file refused: {self.relative(real)}")
        truncated = len(data) > self.max_file_bytes
        data = data[: self.max_file_bytes]
        try:
            text, errors = data.decode("utf-8"), False
        except UnicodeDecodeError:
            text, errors = data.decode("utf-8", errors="replace"), True
        return FileText(self.relative(real), text, size, truncated, errors)

    def utf8_problem(self, path: str | os.PathLike[str]) -> str | None:
        """Where an existing file stops being UTF-8 (`byte 0xe9 on line 3`), or None. Aider
        reads and writes files only as UTF-8; a Latin-1 file makes it stop with advice about an
        `--encoding` flag that aider-lsp does not expose."""
        real = self.resolve(path)
        if not real.is_file():
            return None
        decoder = codecs.getincrementaldecoder("utf-8")()
        offset = 0
        lines = 1
        with real.open("rb") as handle:
            while chunk := handle.read(1 << 20):
                try:
                    decoder.decode(chunk)
                except UnicodeDecodeError as exc:
                    line = lines + chunk.count(b"\n", 0, exc.start)
                    return f"byte 0x{chunk[exc.start]:02x} on line {line} (offset {offset + exc.start})"
                offset += len(chunk)
                lines += chunk.count(b"\n")
        try:
            decoder.decode(b"", final=True)
        except UnicodeDecodeError:
            return "a character cut at the end of the file"
        return None

    def write_text(self, path: str | os.PathLike[str], text: str) -> str:
        """Write a confined file (parents created); returns its workspace-relative path."""
        real = self.resolve(path)
        if real.is_dir():
            raise AccessDenied(f"is a directory: {self.relative(real)}")
        real.parent.mkdir(parents=True, exist_ok=True)
        real.write_text(text, encoding="utf-8")
        return self.relative(real)

    def list_files(self, directory: str | os.PathLike[str] = ".") -> list[str]:
        """Workspace-relative files under a directory (not following links out)."""
        base = self.resolve(directory)
        found: list[str] = []
        for current, dirnames, filenames in os.walk(base):
            dirnames[:] = sorted(d for d in dirnames if d not in (".git", ".aider-lsp"))
            for name in sorted(filenames):
                try:
                    found.append(self.relative(Path(current) / name))
                except AccessDenied:
                    continue
        return found

    def info(self, path: str | os.PathLike[str]) -> FileInfo:
        real = self.resolve(path)
        stat = real.stat()
        with real.open("rb") as handle:
            head = handle.read(BINARY_SNIFF_BYTES)
        return FileInfo(
            path=self.relative(real),
            size=stat.st_size,
            mtime=stat.st_mtime,
            is_binary=looks_binary(head),
            is_secret=self.is_secret(path) or self.is_secret(real),
        )
