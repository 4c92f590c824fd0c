"""What the index stores about one file: language, kind, identifiers, summary, definitions.

Definitions (functions, classes, methods, and a module's docstring) become searchable units
of their own, so that a question about one function finds its file however long the module.
Everything here is regular expressions, not `ast`: the whole workspace goes through it on
the first index, and parsing the standard library with `ast` alone takes longer than a
plain BM25 index of it. Python definitions carry their signature and docstring; other
languages carry the definition line and the comment block above it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import PurePosixPath

SUMMARY_CHARS = 300
MAX_IDENTIFIERS = 400
MAX_DEFINITIONS = 2000
DEFINITION_TEXT_CHARS = 1200

LANGUAGES: dict[str, str] = {
    ".py": "python",
    ".pyi": "python",
    ".pyw": "python",
    ".js": "javascript",
    ".mjs": "javascript",
    ".cjs": "javascript",
    ".jsx": "javascript",
    ".ts": "typescript",
    ".tsx": "typescript",
    ".mts": "typescript",
    ".go": "go",
    ".rs": "rust",
    ".java": "java",
    ".kt": "kotlin",
    ".kts": "kotlin",
    ".scala": "scala",
    ".c": "c",
    ".h": "c",
    ".cc": "cpp",
    ".cpp": "cpp",
    ".cxx": "cpp",
    ".hpp": "cpp",
    ".hh": "cpp",
    ".cs": "csharp",
    ".rb": "ruby",
    ".php": "php",
    ".swift": "swift",
    ".m": "objective-c",
    ".lua": "lua",
    ".sh": "shell",
    ".bash": "shell",
    ".zsh": "shell",
    ".ps1": "powershell",
    ".sql": "sql",
    ".md": "markdown",
    ".rst": "restructuredtext",
    ".txt": "text",
    ".toml": "toml",
    ".yaml": "yaml",
    ".yml": "yaml",
    ".json": "json",
    ".ini": "ini",
    ".cfg": "ini",
    ".html": "html",
    ".htm": "html",
    ".css": "css",
    ".scss": "scss",
    ".vue": "vue",
    ".svelte": "svelte",
    ".el": "elisp",
    ".ex": "elixir",
    ".exs": "elixir",
    ".erl": "erlang",
    ".hs": "haskell",
    ".ml": "ocaml",
    ".clj": "clojure",
    ".dart": "dart",
    ".r": "r",
    ".jl": "julia",
    ".zig": "zig",
}
FILENAMES: dict[str, str] = {
    "makefile": "make",
    "dockerfile": "dockerfile",
    "cmakelists.txt": "cmake",
    "gemfile": "ruby",
    "rakefile": "ruby",
}


# Definition keywords across the common languages; group 1 is the defined name.
_DEFINITION = re.compile(
    r"""(?mx)
    ^[ \t]*(?:export[ \t]+)?(?:default[ \t]+)?(?:pub(?:\([^)]*\))?[ \t]+)?
    (?:public[ \t]+|private[ \t]+|protected[ \t]+|internal[ \t]+|static[ \t]+|abstract[ \t]+
       |final[ \t]+|async[ \t]+|inline[ \t]+|unsafe[ \t]+|override[ \t]+|open[ \t]+|data[ \t]+)*
    (?:def|class|function\*?|func|fn|interface|struct|enum|trait|impl|type|module|namespace
       |object|record|protocol|extension|const|let|var|val|macro_rules!|defmodule|defp?)
    [ \t]+(?:\([^)]*\)[ \t]*)?            # Go method receivers: func (s *T) Name
    ([A-Za-z_$][\w$]*)
    """
)
_SHELL_FUNCTION = re.compile(r"(?m)^[ \t]*([A-Za-z_][\w-]*)[ \t]*\(\)[ \t]*\{")
_MARKDOWN_HEADING = re.compile(r"(?m)^#{1,6}[ \t]+(.+?)[ \t#]*$")
_CAMEL_PARTS = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|\d+")
_COMMENT_LINE = re.compile(r"^\s*(?://+|#+|--|;+|%+|\*+|/\*+|<!--)\s?(.*?)\s*(?:\*/|-->)?\s*$")

# Python, without parsing: a definition line, its signature, the docstring that follows.
# Each blank or comment line can match only one way (no exponential backtracking on \r\n).
# Patterns start with a literal "\n" (the text gets one in front): `re` then skips to each
# newline quickly instead of trying `^` at every character.
# `[ \t]*+` is possessive: a failed line is not retried with less indentation (4x faster).
_PY_DEF = re.compile(r"\n([ \t]*+)(?:async[ \t]+)?(def|class)[ \t]+([A-Za-z_]\w*)")
_PY_SIGNATURE = re.compile(
    r"[ \t]*(?:\[[^\]\n]*\])?[ \t]*(\((?:[^()]|\((?:[^()]|\([^()]*\))*\))*\))?[^:\n]{0,200}:"
)
# A docstring in triple quotes (group 2), or on one line in single quotes (group 4).
_PY_DOCSTRING = re.compile(
    r"""[^\n]*\n(?:[ \t\r]*(?:\#[^\n]*)?\n)*[ \t]*+[rRuU]{0,2}"""
    r"""(?:(\"\"\"|\'\'\')(.*?)\1|(["'])((?:\\.|(?!\3)[^\\\n])*)\3)""",
    re.S,
)
_PY_MODULE_DOCSTRING = re.compile(
    r"""\A\ufeff?(?:[ \t\r]*(?:\#[^\n]*)?\n)*[ \t]*[rRuU]{0,2}(\"\"\"|\'\'\')(.*?)\1""", re.S
)
_PY_PARAMETER = re.compile(r"[(,]\s*\**([A-Za-z_]\w*)")
_CONVENTION_PARTS = frozenset({"test", "tests"})
_IMPLICIT_PARAMETERS = frozenset({"self", "cls", "args", "kwargs", "mcs", "metacls"})
_PY_ASSIGNMENT = re.compile(r"\n([A-Za-z_]\w*)[ \t]*(?::[^=\n]*)?=(?!=)")

# What a file is, from its path: the ranking prefers the files a change would edit.
KINDS = ("code", "test", "doc", "changelog", "licence", "generated", "config")
_TEST_DIRS = frozenset({"test", "tests", "testing", "__tests__", "spec", "specs"})
_TEST_NAME = re.compile(r"^test_|_test\.|\.test\.|\.spec\.|^conftest\.py$|Test\.\w+$")
_DOC_DIRS = frozenset({"doc", "docs", "documentation", "man", "site"})
_CHANGELOG_NAME = re.compile(r"^(changes|changelog|history|news|release[-_]?notes|releases)\b", re.I)
_CHANGELOG_DIRS = frozenset({"changelog.d", "changes", "newsfragments", "news", "changelog"})
_LICENCE_NAME = re.compile(r"^(licen[cs]e|copying|notice|copyright|authors|contributors)\b", re.I)
_GENERATED_NAME = re.compile(
    r"(\.lock$|-lock\.json$|^package-lock\.json$|\.min\.(js|css)$|_pb2(_grpc)?\.pyi?$"
    r"|\.pb\.go$|\.generated\.|\.g\.dart$|\.map$|\.svg$)",
    re.I,
)
_GENERATED_HEADER = re.compile(r"(?i)(auto-?generated|generated by|do not edit)")
_DOC_LANGUAGES = frozenset({"markdown", "restructuredtext", "text", "html"})
_CONFIG_LANGUAGES = frozenset({"toml", "yaml", "json", "ini"})


@dataclass(frozen=True)
class Definition:
    """A function, class, method or module docstring: a searchable unit of its own."""

    name: str  # qualified within the file: `Client.send`; the module's stem for `module`
    kind: str  # "function" | "class" | "module"
    line: int
    text: str  # signature and docstring (Python), definition line and comment (others)
    search_name: str = ""  # `Client.send_all` → `client send all`: set where it is extracted

    def __post_init__(self) -> None:
        if not self.search_name:  # computed in the (worker) process that extracts
            # `test_parse_header`, `TestParser`: the prefix is a naming convention, not a
            # word of the behaviour; in tens of thousands of units it only costs time
            parts = [p for p in split_identifier(self.name) if p not in _CONVENTION_PARTS]
            object.__setattr__(self, "search_name", " ".join(parts))


@dataclass(frozen=True)
class Extracted:
    language: str
    identifiers: list[str]
    summary: str
    definitions: list[Definition] = field(default_factory=list)


def detect_language(path: str) -> str:
    """Language name from the file name (extension or well-known names); 'text' otherwise."""
    pure = PurePosixPath(path)
    name = pure.name.lower()
    if name in FILENAMES:
        return FILENAMES[name]
    return LANGUAGES.get(pure.suffix.lower(), "text")


def is_test_path(path: str) -> bool:
    """tests/…, test/…, test_x.py, x_test.go, x.test.ts, x.spec.js, FooTest.java."""
    pure = PurePosixPath(path)
    return bool(_TEST_NAME.search(pure.name)) or any(part.lower() in _TEST_DIRS for part in pure.parts[:-1])


_TEST_AFFIX = re.compile(r"^tests?_|_tests?$|\.(?:test|spec)$|(?<=[a-z0-9])Tests?$")


@lru_cache(maxsize=1 << 16)
def subject_name(path: str) -> str:
    """The name that ties a test to the code it tests: `tests/test_log_levels.py`,
    `src/_log_levels.py` and `log_levels.test.ts` → `log_levels`: the file's stem without
    test affixes or surrounding underscores, lowercase."""
    name = PurePosixPath(path).name
    stem = name.rsplit(".", 1)[0] if "." in name[1:] else name
    return _TEST_AFFIX.sub("", stem).strip("_").lower()


def file_kind(path: str, language: str, head: str = "") -> str:
    """One of KINDS, from the path (and the first lines, for generated files)."""
    pure = PurePosixPath(path)
    name = pure.name
    folders = {part.lower() for part in pure.parts[:-1]}
    if _LICENCE_NAME.match(name):
        return "licence"
    if _CHANGELOG_NAME.match(name) or (folders & _CHANGELOG_DIRS and language in _DOC_LANGUAGES):
        return "changelog"
    if _GENERATED_NAME.search(name) or _GENERATED_HEADER.search(head[:300]):
        return "generated"
    if is_test_path(path):
        return "test"
    if language in _DOC_LANGUAGES or folders & _DOC_DIRS:
        return "doc"
    if language in _CONFIG_LANGUAGES:
        return "config"
    return "code"


def split_identifier(name: str) -> list[str]:
    """`getHTTPResponse_code` → ['get', 'http', 'response', 'code'] (lowercase parts)."""
    if "." in name:  # a qualified name: its components are cached, the whole rarely repeats
        return [part for component in name.split(".") for part in _split_identifier(component)]
    return list(_split_identifier(name))


@lru_cache(maxsize=1 << 16)
def _split_identifier(name: str) -> tuple[str, ...]:
    """Cached: a workspace repeats its names (`self`, `value`, `__init__`) thousands of times."""
    if name.isascii():
        return tuple(piece.lower() for piece in _CAMEL_PARTS.findall(name))
    parts: list[str] = []
    for chunk in re.split(r"[_\-$.]+", name):
        if not chunk.isascii():  # camelCase rules are for ASCII names; keep others whole
            parts.append(chunk.lower())
            continue
        parts.extend(piece.lower() for piece in _CAMEL_PARTS.findall(chunk))
    return tuple(part for part in parts if part)


def identifier_text(identifiers: list[str]) -> str:
    """Searchable text for identifiers: each name whole and, if compound, its parts."""
    words: list[str] = []
    for name in identifiers:
        words.append(name)
        parts = split_identifier(name)
        if len(parts) > 1:
            words.extend(parts)
    return " ".join(words)


def path_text(path: str) -> str:
    """What the FTS `path` column holds: the path plus the camelCase parts of its segments."""
    pure = PurePosixPath(path)
    words = [path]
    for segment in [*pure.parts[:-1], pure.stem]:
        parts = split_identifier(segment)
        if len(parts) > 1:
            words.extend(parts)
    return " ".join(words)


def _dedupe(names: list[str]) -> list[str]:
    seen: set[str] = set()
    unique: list[str] = []
    for name in names:
        if name not in seen and len(name) > 1:
            seen.add(name)
            unique.append(name)
    return unique[:MAX_IDENTIFIERS]


def _clip(text: str, limit: int = SUMMARY_CHARS) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def _first_paragraph(text: str) -> str:
    return text.strip().split("\n\n", 1)[0]


def _leading_comment(text: str) -> str:
    """The first comment block of a file (skipping a shebang and blank lines)."""
    lines: list[str] = []
    for raw in text.splitlines()[:60]:
        if not lines and (not raw.strip() or raw.startswith("#!")):
            continue
        match = _COMMENT_LINE.match(raw)
        if not match:
            break
        content = match.group(1).strip()
        if not content:
            if lines:
                break
            continue
        if content.lower().startswith(("-*-", "coding", "vim:", "copyright", "license", "spdx")):
            continue
        lines.append(content)
    return " ".join(lines)


def _comment_above(text: str, start: int) -> str:
    """The comment lines right above position `start` (a doc comment of a definition)."""
    lines: list[str] = []
    end = text.rfind("\n", 0, start)
    while end > 0 and len(lines) < 12:
        begin = text.rfind("\n", 0, end) + 1
        match = _COMMENT_LINE.match(text[begin:end])
        if not match or not text[begin:end].strip():
            break
        lines.append(match.group(1))
        end = begin - 1
    return " ".join(reversed(lines))


def _parameter_names(parameters: str) -> str:
    """`(self, name: str, retries=3)` → `name retries`: the names, not self, types or defaults."""
    names = _PY_PARAMETER.findall(parameters)
    return " ".join(name for name in names if name not in _IMPLICIT_PARAMETERS)


def _python_definitions(path: str, text: str) -> tuple[list[Definition], list[str]]:
    """Definitions with qualified names, signatures and docstrings; and module-level names."""
    definitions: list[Definition] = []
    module_doc = _PY_MODULE_DOCSTRING.match(text)
    if module_doc:
        stem = PurePosixPath(path).stem
        definitions.append(Definition(stem, "module", 1, _clip(module_doc.group(2), DEFINITION_TEXT_CHARS)))
    text = "\n" + text  # line numbers below count from this extra first line
    names = _PY_ASSIGNMENT.findall(text)
    scopes: list[tuple[int, str]] = []  # (indent, name) of the enclosing definitions
    line, counted = 1, 0
    for match in _PY_DEF.finditer(text):
        if len(definitions) >= MAX_DEFINITIONS:
            break
        indent, kind, name = len(match.group(1)), match.group(2), match.group(3)
        while scopes and scopes[-1][0] >= indent:
            scopes.pop()
        qualified = ".".join([*(scope for _, scope in scopes), name])
        scopes.append((indent, name))
        names.append(name)
        line += text.count("\n", counted, match.start())
        counted = match.start()
        signature = _PY_SIGNATURE.match(text, match.end())
        parameters = _parameter_names(signature.group(1) or "") if signature else ""
        docstring = ""
        if signature:
            found = _PY_DOCSTRING.match(text, signature.end())
            if found:
                docstring = found.group(2) if found.group(1) else found.group(4)
        body = f"{parameters} {docstring}" if docstring else parameters
        definitions.append(
            Definition(
                qualified,
                "class" if kind == "class" else "function",
                line,
                _clip(body, DEFINITION_TEXT_CHARS),
            )
        )
    return definitions, names


def _other_definitions(text: str, language: str) -> tuple[list[Definition], list[str]]:
    """Definition lines found by keyword, each with the comment block above it."""
    definitions: list[Definition] = []
    names: list[str] = []
    line, counted = 1, 0
    for match in _DEFINITION.finditer(text):
        name = match.group(1)
        names.append(name)
        if len(definitions) >= MAX_DEFINITIONS:
            continue
        line += text.count("\n", counted, match.start())
        counted = match.start()
        end = text.find("\n", match.end())
        declaration = text[match.start() : end if end >= 0 else len(text)]
        comment = _comment_above(text, match.start())
        definitions.append(
            Definition(name, "definition", line, _clip(f"{declaration} {comment}", DEFINITION_TEXT_CHARS))
        )
    if language == "shell":
        names += _SHELL_FUNCTION.findall(text)
    return definitions, names


def extract(path: str, text: str) -> Extracted:
    """Language, identifiers, summary and definitions of one file's text; never raises."""
    language = detect_language(path)
    if language == "python":
        definitions, names = _python_definitions(path, text)
        module = definitions[0] if definitions and definitions[0].kind == "module" else None
        summary = _first_paragraph(module.text) if module else _leading_comment(text)
        return Extracted(language, _dedupe(names), _clip(summary), definitions)
    if language in _DOC_LANGUAGES:
        headings = _MARKDOWN_HEADING.findall(text) if language == "markdown" else []
        summary = headings[0] if headings else _first_paragraph(text)
        return Extracted(language, [], _clip(summary))
    if language in _CONFIG_LANGUAGES:
        return Extracted(language, [], _clip(_leading_comment(text)))
    definitions, names = _other_definitions(text, language)
    return Extracted(language, _dedupe(names), _clip(_leading_comment(text)), definitions)
