"""A prompt's content blocks → what a turn gives the Application: the text, and the files
the user pointed at (`resource_link` and embedded `resource` blocks).

Files pass the one rule for what a model sees (`Application.model_safe_files`: inside the
workspace, not secret, not a folder); a refused one is named in the reply, never dropped in
silence. An embedded resource whose text is not the file on disk (a selection, an unsaved
buffer) joins the prompt as context under its path.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse
from urllib.request import url2pathname

from acp.schema import (
    EmbeddedResourceContentBlock,
    ResourceContentBlock,
    TextContentBlock,
    TextResourceContents,
)

SafeFiles = Callable[[Sequence[str]], tuple[list[str], list[Any]]]  # Application.model_safe_files
MAX_CONTEXT_CHARS = 20_000  # an embedded selection longer than this is cut (the file is given whole)


@dataclass
class PromptInput:
    """A prompt as the Application takes it."""

    text: str = ""
    files: list[str] = field(default_factory=list)  # workspace-relative, model-safe
    refused: list[str] = field(default_factory=list)  # "name: why", for the reply
    mentioned: int = 0  # how many files the prompt pointed at (refused ones included)

    @property
    def all_refused(self) -> bool:
        """Every file the user pointed at was refused: the turn must not guess others."""
        return self.mentioned > 0 and not self.files


def uri_path(uri: str, workspace: Path) -> str | None:
    """The local path a resource URI names (a `file:` URI or a plain path, relative to the
    workspace), or None for another scheme (http:, zed:, …)."""
    parsed = urlparse(uri)
    if parsed.scheme == "file":
        return url2pathname(unquote(parsed.path))
    if parsed.scheme and len(parsed.scheme) > 1:  # "C:" is a drive, not a scheme
        return None
    return os.fspath(workspace / uri) if not os.path.isabs(uri) else uri


def parse_prompt(blocks: Sequence[Any], workspace: Path, safe_files: SafeFiles) -> PromptInput:
    """Text blocks joined; resource links and embedded resources checked as files."""
    parsed = PromptInput()
    texts: list[str] = []
    contexts: list[str] = []
    for block in blocks:
        if isinstance(block, TextContentBlock):
            texts.append(block.text)
        elif isinstance(block, ResourceContentBlock):
            _add_file(parsed, block.uri, block.name, workspace, safe_files)
        elif isinstance(block, EmbeddedResourceContentBlock):
            resource = block.resource
            rel = _add_file(parsed, resource.uri, resource.uri, workspace, safe_files)
            if rel is not None and isinstance(resource, TextResourceContents):
                context = _embedded_context(rel, resource.text, workspace)
                if context:
                    contexts.append(context)
        else:
            kind = getattr(block, "type", type(block).__name__)
            parsed.refused.append(f"a {kind} block: this agent reads text and files only")
    parsed.text = "\n".join(part for part in texts if part.strip()).strip()
    if contexts and parsed.text:
        parsed.text = parsed.text + "\n\n" + "\n\n".join(contexts)
    return parsed


def _add_file(parsed: PromptInput, uri: str, name: str, workspace: Path, safe_files: SafeFiles) -> str | None:
    """Check one mentioned file; its workspace-relative path when kept."""
    parsed.mentioned += 1
    path = uri_path(uri, workspace)
    if path is None:
        parsed.refused.append(f"{name}: not a file in the workspace ({uri})")
        return None
    kept, refused = safe_files([path])
    for refusal in refused:
        parsed.refused.append(f"{name}: {getattr(refusal, 'reason', refusal)}")
    if not kept:
        return None
    rel = kept[0]
    if rel not in parsed.files:
        parsed.files.append(rel)
    return rel


def _embedded_context(rel: str, text: str, workspace: Path) -> str | None:
    """An embedded text that is not the file on disk (a selection, an unsaved buffer), as
    context for the prompt; None when it is the file itself (Aider reads that)."""
    try:
        on_disk = (workspace / rel).read_text(encoding="utf-8", errors="replace")
    except OSError:
        on_disk = None
    if text == on_disk or not text.strip():
        return None
    shown = text if len(text) <= MAX_CONTEXT_CHARS else text[:MAX_CONTEXT_CHARS] + "\n…"
    return f"From {rel}:\n```\n{shown}\n```"
