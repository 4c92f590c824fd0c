"""Redaction of credential values from text bound for a model.

Why: provider keys live in the server's environment, and the user's test command inherits it;
a test that prints its environment (or a config dump) would put the key into the analysis
prompt. Every prompt, system prompt and tool answer sent to a model passes through here.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping

# Environment variables whose values are credentials.
SECRET_ENV_NAME = re.compile(r"(API_KEY|ACCESS_KEY|SECRET|TOKEN|PASSWORD|PASSWD)", re.IGNORECASE)
MIN_SECRET_LENGTH = 8  # shorter values ("1", "true") would redact ordinary text


def secret_values(
    environ: Mapping[str, str] | None = None, extra: Iterable[str | None] = ()
) -> dict[str, str]:
    """value → variable name for every credential-looking variable, plus explicit values."""
    environ = os.environ if environ is None else environ
    found: dict[str, str] = {}
    for name, value in environ.items():
        if SECRET_ENV_NAME.search(name) and value and len(value.strip()) >= MIN_SECRET_LENGTH:
            found.setdefault(value.strip(), name)
    for explicit in extra:
        if explicit and len(explicit.strip()) >= MIN_SECRET_LENGTH:
            found.setdefault(explicit.strip(), "apiKey")
    return found


def redact(text: str, values: Mapping[str, str]) -> str:
    """Replace every known credential value in `text` by `[REDACTED:<NAME>]`."""
    if not text or not values:
        return text
    for value in sorted(values, key=len, reverse=True):  # longest first: overlapping values
        if value in text:
            text = text.replace(value, f"[REDACTED:{values[value]}]")
    return text
