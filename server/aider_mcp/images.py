"""Images shown to Aider's model for one turn (a screenshot, a mock-up the user pasted).

Aider sends the image files among a chat's read-only files to a model that reads images
(litellm's `supports_vision`, or the user's model metadata file): as `image_url` parts of its
read-only files' message. Here they join the chat for one turn and leave it after, so later
turns do not pay for them again. A model that cannot read them is refused by name before any
request is made: Aider would leave the images out in silence and answer without them.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

NO_VISION = "no_vision"  # the answer's `code`: the model reads no images
MAX_IMAGE_BYTES = 20 * 1024 * 1024


class ImageRefused(ValueError):
    """An image this turn cannot show (the message names it and why)."""


def checked_images(paths: Sequence[Any]) -> list[str]:
    """Absolute paths of image files Aider can send (its own test by extension), or the first
    problem named."""
    from aider.utils import is_image_file

    images: list[str] = []
    for path in paths:
        if not isinstance(path, str) or not os.path.isabs(path):
            raise ImageRefused("image_files must hold absolute paths")
        name = os.path.basename(path)
        if not os.path.isfile(path):
            raise ImageRefused(f"{name}: no such image file")
        if not is_image_file(path) or path.lower().endswith(".pdf"):
            raise ImageRefused(f"{name}: not an image Aider sends (png, jpg, gif, webp, bmp)")
        if os.path.getsize(path) > MAX_IMAGE_BYTES:
            raise ImageRefused(f"{name}: larger than {MAX_IMAGE_BYTES // (1024 * 1024)} MB")
        images.append(path)
    return images


def reads_images(main_model: Any) -> bool:
    """Whether Aider will send images to this model (the test Aider itself makes)."""
    return bool(main_model.info.get("supports_vision"))


def vision_refusal(main_model: Any, images: list[str]) -> str | None:
    """Why these images cannot be shown to the model (it reads none), or None."""
    if not images or reads_images(main_model):
        return None
    names = ", ".join(os.path.basename(path) for path in images)
    return (
        f"{names}: Aider's model {main_model.name} does not read images (litellm does not list it "
        "as a vision model); choose one that does, or describe the image in words"
    )


@contextmanager
def shown_for_the_turn(coder: Any, images: list[str]) -> Iterator[None]:
    """The images among the chat's read-only files while the turn runs, and only then."""
    added = [path for path in images if path not in coder.abs_read_only_fnames]
    coder.abs_read_only_fnames.update(added)
    try:
        yield
    finally:
        coder.abs_read_only_fnames.difference_update(added)
