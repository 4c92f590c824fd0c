"""LLMInteractionManager: one pydantic-ai Agent, any model, per-call prompt/tools/output.

Why a manager: the model, the conversation history and the error mapping live in one
place, and every call sends its own system prompt, tools, output type and model (none of
them may be dropped on the way). Which model to use is resolved in model_config.py.
pydantic_ai is imported lazily so the LSP server starts fast.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, ValidationError

from ..config.endpoints import EndpointProblem, ModelRole, name_problem
from ..config.settings import OUTPUT_MODES, SettingsProvider
from ..guards.budget import RunBudget, limit_reached
from ..models import (
    CallUsage,
    ErrorReason,
    HistoryConfigSettings,
    Spend,
    TaskResult,
    ToolSpec,
    complete_result,
    failed_result,
)
from .metering import CURRENT_METER, Meter
from .model_config import (
    LLMConfigurationError,
    ModelConfig,
    build_model,
    import_llm_libraries,
    resolve_model_config,
)

log = logging.getLogger(__name__)

DEFAULT_REQUEST_RETRIES = 3  # transport retries (429, 5xx, timeouts) within timeouts.llm for the call
DEFAULT_OUTPUT_RETRIES = 2  # structured output: pydantic-ai asks the model again this many times
MAX_TOOL_RESULT_CHARS = 100_000  # a tool answer larger than this is cut (head and tail kept)

ToolRunner = Callable[[str, dict[str, Any]], Awaitable[TaskResult]]
# Checks a validated output beyond its schema; returns what is wrong (sent back to the model) or None.
OutputCheck = Callable[[Any], str | None]
# pydantic-ai toolsets the calls made in this context are also given (an ACP session's MCP
# servers): a context variable, so a run started inside `extra_toolsets` carries them to every
# call it makes, tasks it creates included, and another front end's calls never see them
_EXTRA_TOOLSETS: ContextVar[tuple[Any, ...]] = ContextVar("aider_lsp_extra_toolsets", default=())


@contextmanager
def extra_toolsets(toolsets: Sequence[Any]) -> Iterator[None]:
    """Give the calls made inside (a workflow run's plan and analysis) these toolsets too,
    whenever a call offers tools at all (a call with none, or prompted output, gets none)."""
    token = _EXTRA_TOOLSETS.set(tuple(toolsets))
    try:
        yield
    finally:
        _EXTRA_TOOLSETS.reset(token)


def log_debug(enabled: bool, message: str, *args: Any) -> None:
    """The LLM layer's details (prompts, tools, failures): at INFO, marked `[DEBUG]`, when debug
    mode is on (the `debug` setting, `aider-lsp run --debug`), so they show in the editor's
    log and on the terminal; else at DEBUG."""
    log.log(logging.INFO if enabled else logging.DEBUG, "[DEBUG] " + message, *args)


@dataclass
class _RunDeps:
    output_check: OutputCheck | None = None
    refused_because: str | None = None  # why the output check refused the model's last output


@dataclass
class _Turn:
    messages: list[Any] = field(default_factory=list)


def _call_usage(run_usage: Any, messages: Sequence[Any], meter: Meter | None = None) -> CallUsage:
    """What one agent run spent, from pydantic-ai's counters; its cost is the priced responses'
    (None when the model has no known price: a local server, an unknown name). The `meter`
    (an OpenAI-compatible endpoint's) adds the requests pydantic-ai did not count (retries,
    those cut off) and estimates the tokens no answer reported (metering.py)."""
    cost: float | None = None
    for message in messages:
        if type(message).__name__ != "ModelResponse":
            continue
        try:
            price = message.cost()
            cost = (cost or 0.0) + float(price.total_price)
        except Exception as exc:  # unknown model / local server: no price (the cost says None)
            log.debug("no price for a response of %s: %s", getattr(message, "model_name", "?"), exc)
            continue
    return CallUsage(
        input_tokens=int(getattr(run_usage, "input_tokens", 0) or 0),
        output_tokens=int(getattr(run_usage, "output_tokens", 0) or 0),
        cost=cost,
        requests=max(int(getattr(run_usage, "requests", 0) or 0), meter.requests if meter else 0),
        tool_calls=int(getattr(run_usage, "tool_calls", 0) or 0),
        estimated_tokens=meter.estimated_tokens() if meter else 0,
        cached_tokens=int(getattr(run_usage, "cache_read_tokens", 0) or 0),
    )


class LLMInteractionManager:
    """Runs LLM calls through a lazily created pydantic-ai Agent and keeps the session history."""

    def __init__(
        self,
        settings: SettingsProvider,
        *,
        request_retries: int = DEFAULT_REQUEST_RETRIES,
        output_retries: int = DEFAULT_OUTPUT_RETRIES,
        debug: bool | None = None,
    ) -> None:
        """`settings` is read at each call (they change live); `debug` overrides the setting."""
        self._settings = settings
        self.request_retries = request_retries
        self.output_retries = output_retries
        self.debug_override = debug
        self._agent: Any | None = None  # the last agent created (tests check laziness)
        self._agents: dict[tuple[Any, str], Any] = {}
        self._models: dict[tuple[Any, ...], Any] = {}
        self._turns: list[_Turn] = []
        self.usage = Spend()  # every call of this session, added up
        self.budget: RunBudget | None = None  # the running workflow's (budget.py)

    @property
    def debug(self) -> bool:
        """Log prompts and calls: the `debug` setting unless overridden."""
        return self._settings().debug if self.debug_override is None else self.debug_override

    # -- budget
    def set_budget(self, budget: RunBudget) -> None:
        """Refuse calls once the run has spent `budget` (Aider's calls with these: budget.py);
        an uncapped budget refuses nothing."""
        self.budget = budget if budget.capped else None

    def clear_budget(self) -> None:
        self.budget = None

    def budget_exceeded(self) -> str | None:
        """Why the budget refuses the next call (the message the user reads), or None."""
        return None if self.budget is None else self.budget.exceeded()

    # -- configuration
    def model_config(self, model_override: str | None = None) -> ModelConfig:
        return resolve_model_config(self._settings(), model_override)

    def provider_identifier(self, model_override: str | None = None) -> str:
        """`provider:name` (or `openai-compatible:name@url`) of the model a call would use."""
        config = self.model_config(model_override)
        if config.model_id is None:
            return "unconfigured"
        if config.base_url:
            return f"openai-compatible:{config.model_name}@{config.base_url}"
        return config.model_id

    def _model(self, model_override: str | None) -> Any:
        settings = self._settings()
        key = (model_override or settings.model, settings.base_url, settings.api_key)
        model = self._models.get(key)
        if model is None:
            model = build_model(settings, model_override)
            self._models[key] = model
        return model

    def _get_agent(self, output_type: type[BaseModel] | None = None, mode: str = "tool") -> Any:
        """One Agent per output spec (pydantic-ai refuses a per-run output type beside validators)."""
        key = (output_type, mode if output_type is not None else "text")
        agent = self._agents.get(key)
        if agent is None:
            from pydantic_ai import Agent, ModelRetry, RunContext

            agent = Agent(
                output_type=self._output_spec(output_type, mode),
                deps_type=_RunDeps,
                retries={"tools": 2, "output": self.output_retries},
                name="aider-lsp",
            )

            @agent.output_validator
            def _check(ctx: RunContext[_RunDeps], output: Any) -> Any:
                problem = ctx.deps.output_check(output) if ctx.deps and ctx.deps.output_check else None
                if problem:
                    ctx.deps.refused_because = problem  # the user's answer if the retries run out
                    raise ModelRetry(problem)
                return output

            self._agents[key] = agent
            self._agent = agent
        return agent

    # -- history
    def reset_conversation(self) -> None:
        self._turns.clear()

    @property
    def history_turns(self) -> int:
        return len(self._turns)

    def _history(self, config: HistoryConfigSettings) -> list[Any]:
        if not config.use_session_history:
            return []
        turns = self._turns
        if config.history_turns_to_include is not None:
            n = config.history_turns_to_include
            turns = turns[-n:] if n > 0 else []
        return [message for turn in turns for message in turn.messages]

    # -- the call
    async def execute_call(
        self,
        prompt: str,
        *,
        system_prompt: str,
        tools: Sequence[ToolSpec] = (),
        run_tool: ToolRunner | None = None,
        output_type: type[BaseModel] | None = None,
        model_override: str | None = None,
        history_config: HistoryConfigSettings | None = None,
        output_check: OutputCheck | None = None,
    ) -> TaskResult:
        """One agent run; errors come back as FAILED TaskResults with usage in notes.

        `output_check` rejects a schema-valid output (e.g. a path outside the workspace); the
        model is asked again with its message, within the output retries.
        """
        history_config = history_config or HistoryConfigSettings()
        label = self.provider_identifier(model_override)
        await asyncio.to_thread(import_llm_libraries)  # waits for a warm-up importing them
        try:  # building a model imports its provider's SDK (seconds): never on the event loop
            model = await asyncio.to_thread(self._model, model_override)
        except LLMConfigurationError as exc:
            return failed_result(
                ErrorReason.CONFIGURATION_ERROR,
                str(exc),
                notes={"model": label, "usage": CallUsage().llm_wire(label)},
            )
        if why := self.budget_exceeded():
            return _over_budget(why, {"model": label})
        from pydantic_ai.usage import RunUsage

        run_usage = RunUsage()
        deps = _RunDeps(output_check)
        meter = Meter()
        metering = CURRENT_METER.set(meter)
        try:
            result = await self._run_agent(
                prompt,
                model,
                system_prompt,
                tools,
                run_tool,
                output_type,
                history_config,
                deps,
                run_usage,
                label,
            )
        except asyncio.CancelledError:  # what the call sent before its cancel is spent too
            self.usage = self.usage.plus(_call_usage(run_usage, [], meter))
            raise
        except Exception as exc:
            return self._call_failure(exc, output_type, run_usage, label, deps.refused_because, meter)
        finally:
            CURRENT_METER.reset(metering)
        return self._call_result(result, run_usage, history_config, label, meter)

    async def _run_agent(
        self,
        prompt: str,
        model: Any,
        system_prompt: str,
        tools: Sequence[ToolSpec],
        run_tool: ToolRunner | None,
        output_type: type[BaseModel] | None,
        history_config: HistoryConfigSettings,
        deps: _RunDeps,
        run_usage: Any,
        label: str,
    ) -> Any:
        """The pydantic-ai run itself, with this call's tools, history, timeouts and budget."""
        from pydantic_ai import FunctionToolset, Tool
        from pydantic_ai.usage import UsageLimits

        toolsets: list[Any] = []
        if tools:
            toolsets.append(FunctionToolset([self._make_tool(Tool, spec, run_tool) for spec in tools]))
            toolsets.extend(_EXTRA_TOOLSETS.get())
        settings = self._settings()
        model_settings: dict[str, Any] = {
            "timeout": settings.timeouts.llm,
            "max_retries": self.request_retries,
            "max_tokens": settings.max_output_tokens.planning,
        }
        history = self._history(history_config)
        log_debug(
            self.debug,
            "LLM call model=%s tools=%s extra toolsets=%d output=%s history=%d msgs",
            label,
            [t.provider_name for t in tools],
            len(toolsets) - 1 if toolsets else 0,
            getattr(output_type, "__name__", "str"),
            len(history),
        )
        log_debug(self.debug, "system prompt:\n%s", system_prompt)
        return await self._get_agent(output_type, settings.output_mode).run(
            prompt,
            model=model,
            instructions=system_prompt or None,
            message_history=history or None,
            toolsets=toolsets or None,
            model_settings=model_settings,
            usage=run_usage,
            deps=deps,
            usage_limits=UsageLimits(
                total_tokens_limit=self.budget.remaining_tokens() if self.budget else None
            ),
            timeout=settings.timeouts.llm,  # the whole call: every request, retry and tool
            # streamed requests: a server notices a closed connection (a timeout, a cancel) only
            # while it writes to it, so a reply nobody waits for stops instead of running on
            event_stream_handler=_drain,
        )

    def _call_failure(
        self,
        exc: Exception,
        output_type: type[BaseModel] | None,
        run_usage: Any,
        label: str,
        refused_because: str | None = None,
        meter: Meter | None = None,
    ) -> TaskResult:
        """A failed run as a FAILED TaskResult whose reason says whose fault it was; what the
        run spent before it failed is counted (and may be what spent the budget)."""
        from pydantic_ai.exceptions import ModelAPIError, UsageLimitExceeded

        usage = _call_usage(run_usage, [], meter)
        self.usage = self.usage.plus(usage)
        notes: dict[str, Any] = {"usage": usage.llm_wire(label), "model": label}
        if isinstance(exc, UsageLimitExceeded):  # the budget's remainder, given as this call's limit
            why = self.budget_exceeded() or limit_reached(str(exc), self._settings().name)
            return _over_budget(why, notes)
        status = getattr(exc, "status_code", None) if isinstance(exc, ModelAPIError) else None
        if status is not None:
            notes["status_code"] = status
        reason, message = self._explain(exc, output_type, label, refused_because, usage.requests)
        log_debug(self.debug, "LLM call failed (%s): %s", reason.value, message)
        return failed_result(reason, message, notes=notes)

    def _explain(
        self,
        exc: Exception,
        output_type: type[BaseModel] | None,
        label: str,
        refused_because: str | None,
        requests: int = 0,
    ) -> tuple[ErrorReason, str]:
        """Whose fault a failure was (the model's answer, the provider, the configuration) and
        what the user can do about it."""
        from pydantic_ai.exceptions import (
            ContentFilterError,
            ModelAPIError,
            ModelRequestTimeout,
            ModelTimeoutError,
            UnexpectedModelBehavior,
            UserError,
        )

        if isinstance(exc, (TimeoutError, ModelTimeoutError, ModelRequestTimeout)):
            settings = self._settings()
            return ErrorReason.LLM_ERROR, (
                f"the model ({label}) did not answer within {settings.timeouts.llm:g} s: raise "
                f"{settings.name('timeouts.llm')} for a slow model, or check that its server is up "
                "and not overloaded"
            )
        if isinstance(exc, ContentFilterError):
            return ErrorReason.LLM_ERROR, f"the provider refused the content: {exc}"
        problem = self._endpoint_problem(exc)
        if problem is not None:
            return problem.reason, problem.message
        if isinstance(exc, UnexpectedModelBehavior) and "ended without content" in str(exc):
            return ErrorReason.LLM_ERROR, (
                f"the model ({label}) answered with nothing readable (an empty or broken stream): "
                "check that its server is a chat-completions endpoint and is not overloaded"
            )
        if isinstance(exc, UnexpectedModelBehavior):
            return ErrorReason.OUTPUT_FORMAT_FAILURE, self._invalid_output(
                exc, output_type, refused_because, requests
            )
        if isinstance(exc, ModelAPIError):
            status = getattr(exc, "status_code", None)
            prefix = f"the model provider answered {status}: " if status else "the model provider failed: "
            return ErrorReason.LLM_ERROR, prefix + _provider_message(exc)
        if isinstance(exc, UserError):
            return ErrorReason.CONFIGURATION_ERROR, str(exc)
        # openai/httpx errors not wrapped by pydantic-ai
        log.debug("LLM call failed", exc_info=exc)
        return ErrorReason.LLM_ERROR, f"{type(exc).__name__}: {exc}"

    def _endpoint_problem(self, exc: Exception) -> EndpointProblem | None:
        """A key refused, a URL or model not found, nothing listening, a prompt too long: named
        for the planning model with the setting to change (endpoints.py)."""
        if isinstance(exc, (ValidationError, ValueError)) and not hasattr(exc, "status_code"):
            return None
        settings = self._settings()
        name = settings.name
        role = ModelRole(
            "the planning model", settings.model or "?", name("model"), name("baseUrl"), name("apiKey")
        )
        status = getattr(exc, "status_code", None)
        text = (
            f"{type(exc).__name__}: status_code: {status} {exc}" if status else f"{type(exc).__name__}: {exc}"
        )
        cause = exc.__cause__
        if cause is not None:
            text += f"\n{type(cause).__name__}: {cause}"
        return name_problem(text, role, settings.base_url)

    def _invalid_output(
        self,
        exc: Exception,
        output_type: type[BaseModel] | None,
        refused_because: str | None,
        requests: int = 0,
    ) -> str:
        """The output retries ran out: what the last output was refused for (and, when it was
        cut off, the cap that cut it), or the advice for a model that cannot give the
        structured output at all. `requests`: how many the call sent (0: not known)."""
        what = getattr(output_type, "__name__", "output")
        refused_because = refused_because or _invalid_fields(exc.__cause__)
        settings = self._settings()
        if refused_because:  # valid in form, refused for what it said (a path, …): say what
            sent = f" ({requests} request(s))" if requests else ""
            cut = ""
            if "EOF while parsing" in refused_because:  # the reply stopped in the middle
                cap, setting = settings.max_output_tokens.planning, settings.name("maxOutputTokens.planning")
                cut = f"; a reply cut off at {cap} tokens ends like that: raise {setting}"
            return f"the model's {what} was refused{sent}; the last time: {refused_because}{cut}"
        others = " or ".join(f"'{mode}'" for mode in OUTPUT_MODES if mode != settings.output_mode)
        return (
            f"the model did not return a valid {what} ({exc}) with {settings.name('outputMode')} "
            f"'{settings.output_mode}': try {others} there, or another {settings.name('model')}"
        )

    def _call_result(
        self,
        result: Any,
        run_usage: Any,
        history_config: HistoryConfigSettings,
        label: str,
        meter: Meter | None = None,
    ) -> TaskResult:
        """A finished run: usage counted (session and budget), the turn kept, the output."""
        new_messages = result.new_messages()
        usage = _call_usage(run_usage, new_messages, meter)
        self.usage = self.usage.plus(usage)
        if history_config.record_in_session_history:
            self._turns.append(_Turn(list(new_messages)))
        output = result.output
        notes: dict[str, Any] = {"usage": usage.llm_wire(label), "model": label}
        if isinstance(output, BaseModel):
            return complete_result(output.model_dump_json(), notes=notes, parsed=output)
        return complete_result(str(output), notes=notes)

    @staticmethod
    def _output_spec(output_type: type[BaseModel] | None, mode: str) -> Any:
        """The output as pydantic-ai should ask for it (settings.outputMode)."""
        if output_type is None:
            return str
        if mode == "native":
            from pydantic_ai import NativeOutput

            return NativeOutput(output_type)
        if mode == "prompted":
            from pydantic_ai import PromptedOutput

            return PromptedOutput(output_type)
        return output_type

    def _make_tool(self, tool_cls: Any, spec: ToolSpec, run_tool: ToolRunner | None) -> Any:
        async def call(**kwargs: Any) -> str:
            if run_tool is None:
                return f"ERROR: tool {spec.name} is not available"
            result = await run_tool(spec.name, kwargs)
            if result.ok:
                return _cap(result.content)
            error = result.error
            if error is None:
                return f"ERROR (failed): {result.content}"
            return f"ERROR ({error.reason.value}): {error.message}"

        return tool_cls.from_schema(
            call, name=spec.provider_name, description=spec.description, json_schema=spec.input_schema
        )


def _over_budget(why: str, notes: dict[str, Any]) -> TaskResult:
    """The budget's refusal: FAILED budget_exceeded (the wire keeps `notes.budget_exhausted`)."""
    return failed_result(ErrorReason.BUDGET_EXCEEDED, why, notes={**notes, "budget_exhausted": True})


def _invalid_fields(cause: BaseException | None) -> str | None:
    """The fields a structured output failed on, when its schema refused it (e.g. `files:
    /etc/x is an absolute path…`), or None."""
    if not isinstance(cause, ValidationError):
        return None
    problems = []
    for error in cause.errors()[:5]:
        where = ".".join(str(part) for part in error["loc"]) or "output"
        problems.append(f"{where}: {error['msg'].removeprefix('Value error, ')}")
    return "; ".join(problems)


def _cap(text: str, limit: int = MAX_TOOL_RESULT_CHARS) -> str:
    """Keep a tool answer within the context budget: head and tail, with a marker."""
    if len(text) <= limit:
        return text
    half = limit // 2
    return f"{text[:half]}\n[... {len(text) - limit} characters omitted ...]\n{text[-half:]}"


def _provider_message(exc: Exception) -> str:
    """The provider's own error message when the body carries one."""
    body = getattr(exc, "body", None)
    if isinstance(body, dict):
        error = body.get("error", body)
        if isinstance(error, dict) and error.get("message"):
            return str(error["message"])
        if isinstance(error, str):
            return error
    if isinstance(body, str) and body.strip():
        return body.strip()[:2000]
    return str(exc)


async def _drain(context: Any, events: Any) -> None:
    """The run's stream of events, read to its end (nothing here needs them: streaming is for
    the server's sake, see `_run_agent`)."""
    async for _ in events:
        pass
