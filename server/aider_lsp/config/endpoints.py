"""What an OpenAI-compatible endpoint's refusal means, said for the model it concerns with the
setting to change.

Both models meet the same mistakes: a key the endpoint refuses (401/403), a base URL that is
not the API's root (404 on every path: most servers serve it under `/v1`), a model the endpoint
does not have, nothing listening, a prompt longer than the model's context. The planning
model's call raises them (pydantic-ai, openai); Aider prints them (litellm's exception text),
and its reply then merely changes no file. Either way the user reads one sentence naming what
went wrong, for which model, and which setting to change, before any run (`doctor`) and when a
run meets it.
"""

from __future__ import annotations

import json
import re
import urllib.error
import urllib.request
from dataclasses import dataclass, field

from ..models import ErrorReason

_UNAUTHORIZED = re.compile(
    r"\b(?:AuthenticationError|PermissionDeniedError|Unauthorized|Forbidden|invalid[_ ]api[_ ]key|"
    r"Incorrect API key|Error code: 40[13]|status[_ ]code:? 40[13]|answered 40[13]|"
    r"not able to authenticate you)\b",
    re.IGNORECASE,
)
_NOT_FOUND = re.compile(
    r"\b(?:NotFoundError|Error code: 404|status[_ ]code:? 404|answered 404)\b", re.IGNORECASE
)
_MODEL_UNKNOWN = re.compile(
    r"model_not_found|\b(?:unknown|invalid|no such) model\b|"
    r"\bmodel:?\s+['\"`]?[\w./:@-]+['\"`]?\s+(?:is\s+)?(?:not found|does not exist|not available|not loaded)",
    re.IGNORECASE,
)
_UNREACHABLE = re.compile(
    r"\b(?:APIConnectionError|Connection error|Connection refused|ConnectError|"
    r"Failed to establish a new connection|Name or service not known|nodename nor servname)",
    re.IGNORECASE,
)
_CONTEXT = re.compile(
    r"ContextWindowExceeded|context[_ ]length|maximum context|context window|"
    r"exceeds the \d+ token limit|too many tokens|prompt is too long|exceed_context_size",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class ModelRole:
    """Which model a message is about, and the names of its settings as its reader sets them."""

    label: str  # "the planning model", "Aider's model"
    model: str  # the model's name as configured
    model_setting: str
    url_setting: str
    key_setting: str


@dataclass(frozen=True)
class EndpointProblem:
    """A mistake named: the reason for the result's notes and the sentence for the user."""

    reason: ErrorReason
    message: str


def name_problem(text: str, role: ModelRole, url: str | None = None) -> EndpointProblem | None:
    """The endpoint mistake `text` (an error message, a status line) shows, or None."""
    where = f" at {url}" if url else ""
    if _CONTEXT.search(text):
        return EndpointProblem(
            ErrorReason.LLM_ERROR,
            f"{role.label} {role.model!r} cannot take a prompt this long (its context length): "
            f"give fewer or smaller files, or choose a model with a longer context in {role.model_setting}",
        )
    if _UNAUTHORIZED.search(text):
        return EndpointProblem(
            ErrorReason.CONFIGURATION_ERROR,
            f"the endpoint{where} refused the key for {role.label} {role.model!r} (401/403): "
            f"set the right key in {role.key_setting}",
        )
    if _NOT_FOUND.search(text) or _MODEL_UNKNOWN.search(text):
        if _MODEL_UNKNOWN.search(text):
            return EndpointProblem(
                ErrorReason.CONFIGURATION_ERROR,
                f"the endpoint{where} does not have {role.label} {role.model!r}: "
                f"set {role.model_setting} to a model it lists",
            )
        return EndpointProblem(
            ErrorReason.CONFIGURATION_ERROR,
            f"the endpoint{where} answered 404 (not found) for {role.label} {role.model!r}: "
            f"{role.url_setting} must be the API's root, which most servers serve under /v1 "
            "(e.g. http://127.0.0.1:8080/v1)",
        )
    if _UNREACHABLE.search(text):
        return EndpointProblem(
            ErrorReason.CONNECTION_ERROR,
            f"cannot reach the endpoint{where} of {role.label} {role.model!r}: is its server "
            f"running? Check {role.url_setting}",
        )
    return None


@dataclass(frozen=True)
class Probe:
    """What `GET {base}/models` answered: the HTTP status (None: no answer), the models it
    lists, and the error when it could not be reached."""

    url: str
    status: int | None
    models: list[str] = field(default_factory=list)
    error: str = ""


def probe(
    base_url: str, api_key: str | None = None, timeout: float = 3.0, headers: dict[str, str] | None = None
) -> Probe:
    """Ask an OpenAI-compatible server for its models, with the key a call would send (as a
    bearer token, unless `headers` says how the provider takes it)."""
    url = base_url.rstrip("/") + "/models"
    sent = headers if headers is not None else ({"Authorization": f"Bearer {api_key}"} if api_key else {})
    request = urllib.request.Request(url, headers=sent)
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            status = response.status
            data = json.loads(response.read().decode("utf-8", errors="replace") or "{}")
    except urllib.error.HTTPError as exc:
        return Probe(url, exc.code)
    except (urllib.error.URLError, OSError, ValueError) as exc:
        return Probe(url, None, error=f"Connection refused: {getattr(exc, 'reason', exc)}")
    listed = data.get("data", []) if isinstance(data, dict) else []
    models = [str(item.get("id")) for item in listed if isinstance(item, dict) and item.get("id")]
    return Probe(url, status, models)


def probe_problem(found: Probe, role: ModelRole) -> EndpointProblem | None:
    """The mistake a probe shows for one model (None: the endpoint answers and has it, or does
    not list its models)."""
    if found.status is None:
        return name_problem(found.error, role, found.url)
    if found.status in (401, 403, 404):
        return name_problem(f"answered {found.status}", role, found.url)
    if found.models and not listed(role.model, found.models):
        shown = ", ".join(found.models[:8])
        return EndpointProblem(
            ErrorReason.CONFIGURATION_ERROR,
            f"the endpoint at {found.url} does not list {role.label} {role.model!r} (it lists: {shown}): "
            f"set {role.model_setting} to one of them",
        )
    return None


def listed(model: str, models: list[str]) -> bool:
    """Whether `model` is one the endpoint lists (a path-like id matches its last part too)."""
    return any(model == item or model == item.rsplit("/", 1)[-1] for item in models)
