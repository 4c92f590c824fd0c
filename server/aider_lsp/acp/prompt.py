"""A prompt's content blocks → what a turn gives the Application: the text, the files
the user pointed at (`resource_link` and embedded `resource` blocks) and the images it holds.

Files pass the one rule for what a model sees (`Application.model_safe_files`: inside the
workspace, not secret, not a folder); a refused one is named in the reply, never dropped in
silence. An embedded resource whose text is not the file on disk (a selection, an unsaved
buffer) joins the prompt as context under its path. An image (a screenshot pasted in the chat)
is saved for the turn outside the workspace (`saved_images`) and shown to Aider's model, which
refuses by name when it reads no images.
"""

from __future__ import annotations

import base64
import binascii
import os
import re
import tempfile
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse
from urllib.request import url2pathname

from acp.schema import (
    EmbeddedResourceContentBlock,
    ImageContentBlock,
    ResourceContentBlock,
    TextContentBlock,
    TextResourceContents,
)

SafeFiles = Callable[[Sequence[str]], tuple[list[str], list[Any]]]  # Application.model_safe_files
MAX_CONTEXT_CHARS = 20_000  # an embedded selection longer than this is cut (the file is given whole)
# the image types Aider sends a model (aider/utils.py IMAGE_EXTENSIONS, PDFs aside)
IMAGE_TYPES = {"image/png": ".png", "image/jpeg": ".jpg", "image/gif": ".gif", "image/webp": ".webp"}
IMAGE_EXTENSIONS = {".png", ".jpg", ".jpeg", ".gif", ".webp"}  # a workspace file that is a picture
MAX_IMAGE_BYTES = 20 * 1024 * 1024  # the bundled Aider server's own cap (aider_mcp/images.py)
MAX_IMAGES = 8


@dataclass
class PromptImage:
    """An image of the prompt: the name the reply calls it by, and its bytes."""

    name: str  # a file name with the type's extension
    data: bytes


@dataclass
class PromptInput:
    """A prompt as the Application takes it."""

    text: str = ""
    files: list[str] = field(default_factory=list)  # workspace-relative, model-safe
    images: list[PromptImage] = field(default_factory=list)
    image_files: list[str] = field(default_factory=list)  # the images saved, while the turn runs
    refused: list[str] = field(default_factory=list)  # "name: why", for the reply
    mentioned: int = 0  # how many files and images the prompt pointed at (refused ones included)

    @property
    def all_refused(self) -> bool:
        """Every file and image the user pointed at was refused: the turn must not guess others."""
        return self.mentioned > 0 and not self.files and not self.images


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
    """Text blocks joined; resource links and embedded resources checked as files (a picture
    among them is an image); image blocks kept when Aider can send them."""
    parsed = PromptInput()
    texts: list[str] = []
    contexts: list[str] = []
    image_count = 0
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
        elif isinstance(block, ImageContentBlock):
            image_count += 1
            _add_image(parsed, block, image_count)
        else:
            kind = getattr(block, "type", type(block).__name__)
            parsed.refused.append(f"a {kind} block: this agent reads text, files and images only")
    texts = current_request(texts)
    parsed.text = "\n".join(part for part in texts if part.strip()).strip()
    if contexts and parsed.text:
        parsed.text = parsed.text + "\n\n" + "\n\n".join(contexts)
    return parsed


_EARLIER = re.compile(r"<previous_(user|assistant)_message>(.*)</previous_\1_message>", re.S)
_CONTINUING = re.compile(
    r"<system_context>Continuing from previous (ACP )?session\b.*</system_context>", re.S
)
_SELECTED = re.compile(
    r"<selected_code>\s*<path>(.*?)</path>\s*<snippet>(.*)</snippet>\s*</selected_code>", re.S
)


def current_request(texts: Sequence[str]) -> list[str]:
    """A prompt's text blocks without the chat history a client sends again with each prompt.

    avante.nvim wraps the user's messages, the current one included, each in a
    `<previous_user_message>` block (newest first; oldest first with the assistant's too when it
    recovers a session, its `<system_context>` note saying "ACP session"); the Aider chat keeps
    the earlier ones, so Aider, a Workflow's goal and a slash command get the current request
    alone. Its `<selected_code>` block is context under its path, as an embedded selection is."""
    kept: list[str] = []
    users: list[str] = []
    recovering = False
    for text in texts:
        stripped = text.strip()
        earlier, continuing = _EARLIER.fullmatch(stripped), _CONTINUING.fullmatch(stripped)
        selected = _SELECTED.fullmatch(stripped)
        if earlier is not None:
            if earlier.group(1) == "user":
                users.append(earlier.group(2))
        elif continuing is not None:
            recovering = continuing.group(1) is not None
        elif selected is not None:
            kept.append(f"From {selected.group(1).strip()}:\n```\n{selected.group(2).strip()}\n```")
        else:
            kept.append(text)
    if not users:
        return kept
    return [users[-1] if recovering else users[0], *kept]


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
    extension = os.path.splitext(rel)[1].lower()
    if extension in IMAGE_EXTENSIONS:  # a picture in the workspace: shown, not edited
        _add_image_file(parsed, workspace / rel, extension)
        return None
    if rel not in parsed.files:
        parsed.files.append(rel)
    return rel


def _add_image(parsed: PromptInput, block: ImageContentBlock, number: int) -> None:
    """Keep the prompt's `number`th image when the Aider server can send it, or name why not."""
    parsed.mentioned += 1
    extension = IMAGE_TYPES.get(block.mime_type.lower())
    name = _image_name(block.uri, number, extension or "")
    if extension is None:
        kinds = ", ".join(sorted(IMAGE_TYPES))
        parsed.refused.append(f"{name} ({block.mime_type}): Aider sends {kinds} images only")
        return
    try:
        data = base64.b64decode(block.data, validate=True)
    except (binascii.Error, ValueError):
        parsed.refused.append(f"{name}: its data is not base64")
        return
    _keep_image(parsed, name, data)


def _add_image_file(parsed: PromptInput, path: Path, extension: str) -> None:
    """A workspace image the prompt points at, kept as the prompt's image (shown, not edited)."""
    try:
        data = path.read_bytes() if path.stat().st_size <= MAX_IMAGE_BYTES else None
    except OSError as exc:
        parsed.refused.append(f"{path.name}: {exc.strerror or exc}")
        return
    _keep_image(parsed, path.stem + extension, data)  # Aider knows an image by a lowercase extension


def _keep_image(parsed: PromptInput, name: str, data: bytes | None) -> None:
    """The image kept, or refused by name (too large: None or over the cap; too many)."""
    if data is None or len(data) > MAX_IMAGE_BYTES:
        parsed.refused.append(f"{name}: larger than {MAX_IMAGE_BYTES // (1024 * 1024)} MB")
    elif len(parsed.images) >= MAX_IMAGES:
        parsed.refused.append(f"{name}: more than {MAX_IMAGES} images in one prompt")
    else:
        parsed.images.append(PromptImage(name, data))


def _image_name(uri: str | None, number: int, extension: str) -> str:
    """The image's own file name when its URI has one, else "image N" with its extension."""
    stem = ""
    if uri:
        stem = os.path.splitext(os.path.basename(unquote(urlparse(uri).path)))[0]
    stem = re.sub(r"[^\w.-]+", "-", stem).strip("-.")[:60] or f"image-{number}"
    return stem + extension


@contextmanager
def saved_images(images: Sequence[PromptImage]) -> Iterator[list[str]]:
    """The prompt's images as files for the turn (absolute paths, outside the workspace: they
    never show in its diff or index), removed when the turn ends."""
    if not images:
        yield []
        return
    with tempfile.TemporaryDirectory(prefix="aider-lsp-images-") as folder:
        paths: list[str] = []
        for number, image in enumerate(images, start=1):
            own = os.path.join(folder, str(number))  # the image keeps its name: Aider's refusal says it
            os.mkdir(own)
            path = os.path.join(own, image.name)
            with open(path, "wb") as out:
                out.write(image.data)
            paths.append(path)
        yield paths


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
