"""What the index stores about one file: language, defined identifiers, a short summary.

Python files are parsed with `ast` (definitions are exact); other languages get a light
regex that finds the usual definition keywords. Both must be cheap: the whole workspace
goes through here on the first index.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from pathlib import PurePosixPath

SUMMARY_CHARS = 300
MAX_IDENTIFIERS = 400

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


@dataclass(frozen=True)
class Extracted:
    language: str
    identifiers: list[str]
    summary: str


def detect_language(path: str) -> str:
    """Language name from the file name (extension or well-known names); 'text' otherwise."""
    pure = PurePosixPath(path)
    name = pure.name.lower()
    if name in FILENAMES:
        return FILENAMES[name]
    return LANGUAGES.get(pure.suffix.lower(), "text")


def split_identifier(name: str) -> list[str]:
    """`getHTTPResponse_code` → ['get', 'http', 'response', 'code'] (lowercase parts)."""
    parts: list[str] = []
    for chunk in re.split(r"[_\-$.]+", name):
        if not chunk.isascii():  # camelCase rules are for ASCII names; keep others whole
            parts.append(chunk.lower())
            continue
        parts.extend(piece.lower() for piece in _CAMEL_PARTS.findall(chunk))
    return [part for part in parts if part]


def identifier_text(identifiers: list[str]) -> str:
    """Searchable text for identifiers: each name whole and, if compound, its parts."""
    words: list[str] = []
    for name in identifiers:
        words.append(name)
        parts = split_identifier(name)
        if len(parts) > 1:
            words.extend(parts)
    return " ".join(words)


_NESTED_BODIES = ("body", "orelse", "finalbody", "handlers", "cases")


def _python_identifiers(tree: ast.Module) -> list[str]:
    """Classes and functions at any depth, module-level names; walks statements only."""
    names: list[str] = []
    for node in tree.body:  # module-level constants and aliases
        targets: list[ast.expr] = []
        if isinstance(node, ast.Assign):
            targets = list(node.targets)
        elif isinstance(node, ast.AnnAssign):
            targets = [node.target]
        for target in targets:
            if isinstance(target, ast.Name):
                names.append(target.id)
    stack: list[ast.AST] = list(reversed(tree.body))
    while stack:  # statements only: expressions cannot define classes or functions
        node = stack.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.append(node.name)
        for attribute in _NESTED_BODIES:
            children = getattr(node, attribute, None)
            if isinstance(children, list):
                stack.extend(reversed(children))
    return names


def _dedupe(names: list[str]) -> list[str]:
    seen: set[str] = set()
    unique: list[str] = []
    for name in names:
        if name not in seen and len(name) > 1:
            seen.add(name)
            unique.append(name)
    return unique[:MAX_IDENTIFIERS]


def _clip(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= SUMMARY_CHARS else text[: SUMMARY_CHARS - 1].rstrip() + "…"


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


def _python_summary(tree: ast.Module | None, text: str) -> str:
    if tree is not None:
        doc = ast.get_docstring(tree, clean=True)
        if doc:
            return _first_paragraph(doc)
    return _leading_comment(text)


def extract(path: str, text: str) -> Extracted:
    """Language, identifiers and summary of one file's text; never raises."""
    language = detect_language(path)
    if language == "python":
        try:
            tree: ast.Module | None = ast.parse(text)
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            tree = None
        names = _python_identifiers(tree) if tree else _DEFINITION.findall(text)
        return Extracted(language, _dedupe(names), _clip(_python_summary(tree, text)))
    if language in ("markdown", "restructuredtext", "text"):
        headings = _MARKDOWN_HEADING.findall(text) if language == "markdown" else []
        summary = headings[0] if headings else _first_paragraph(text)
        return Extracted(language, [], _clip(summary))
    names = _DEFINITION.findall(text)
    if language == "shell":
        names += _SHELL_FUNCTION.findall(text)
    return Extracted(language, _dedupe(names), _clip(_leading_comment(text)))
