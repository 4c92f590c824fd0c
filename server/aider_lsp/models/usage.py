"""What model calls spent: one call, and a run (planning/analysis and Aider, apart and together).
The budget that caps a run is budget.py's.

Two models spend in a run: the planning/analysis model (the LLM layer counts each call) and
Aider's own (the bundled server reports each edit's usage; the public aider-mcp-server says
nothing). One family for both: `CallUsage` is what one call spent, `Spend` what calls add up
to (one side's, or both together), `WorkflowUsage` what a run spent, each side apart and both
together. A cost is None while no call reported a price, and an edit whose server said nothing
is counted as unreported: never a made-up 0.

The wire keeps the shapes its readers have always seen: an Aider edit's usage under the
server's names `{prompt_tokens, completion_tokens, cost}` (the MCP contract), a planning call's
`notes.usage` as `{model, input_tokens, output_tokens, total_tokens, requests, tool_calls,
cost}`, a run's usage with the planning side's keys at the top, `aider` and `all` beside them.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import (
    AliasChoices,
    BaseModel,
    ConfigDict,
    Field,
    PlainSerializer,
    model_serializer,
    model_validator,
)


def _money(cost: float | None) -> str:
    return f"${cost:.4f}" if cost is not None else "cost n/a"


class CallUsage(BaseModel):
    """What one model call spent: tokens in and out, and its cost (None: no price reported).
    A planning/analysis call also counts its model requests (tool rounds, output retries) and
    tool calls; an Aider edit's server reports tokens and cost only, under its own names
    (`prompt_tokens`, `completion_tokens`: read here, written back by `aider_wire`)."""

    model_config = ConfigDict(frozen=True)

    input_tokens: int = Field(default=0, ge=0, validation_alias=AliasChoices("input_tokens", "prompt_tokens"))
    output_tokens: int = Field(
        default=0, ge=0, validation_alias=AliasChoices("output_tokens", "completion_tokens")
    )
    cost: float | None = None
    requests: int = Field(default=0, ge=0)
    tool_calls: int = Field(default=0, ge=0)
    # tokens of requests the provider reported nothing for (timed out, cancelled, a stream
    # without usage), estimated from their bytes: counted in the total and by the budget
    estimated_tokens: int = Field(default=0, ge=0)
    # of `input_tokens`, those the provider read from its prompt cache (priced lower: the cost
    # already counts them at their price)
    cached_tokens: int = Field(default=0, ge=0)

    @property
    def total_tokens(self) -> int:
        return self.input_tokens + self.output_tokens + self.estimated_tokens

    def aider_wire(self) -> dict[str, Any]:
        """An Aider edit's usage as the MCP contract says it (with the bundled server's
        `requests` and `cached_tokens` when it reported them)."""
        wire: dict[str, Any] = {
            "prompt_tokens": self.input_tokens,
            "completion_tokens": self.output_tokens,
            "cost": self.cost,
        }
        if self.requests:
            wire["requests"] = self.requests
        if self.cached_tokens:
            wire["cached_tokens"] = self.cached_tokens
        return wire

    def llm_wire(self, model: str) -> dict[str, Any]:
        """A planning/analysis call's `notes.usage`, naming the model that spent it."""
        return {
            "model": model,
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "total_tokens": self.total_tokens,
            "requests": self.requests,
            "tool_calls": self.tool_calls,
            "estimated_tokens": self.estimated_tokens,
            "cached_tokens": self.cached_tokens,
            "cost": self.cost,
        }


def _aider_wire(usage: CallUsage) -> dict[str, Any]:
    return usage.aider_wire()


# An Aider edit's usage in a model that goes on the wire: written under the server's names.
AiderCallUsage = Annotated[CallUsage, PlainSerializer(_aider_wire)]


class Spend(BaseModel):
    """What calls add up to: one side's (the planning/analysis model's, Aider's) or both together.
    `calls` counts the calls that reported their usage, `unreported` those whose server said
    nothing: with calls made and none reported, the spend is unknown (never zero)."""

    model_config = ConfigDict(frozen=True)

    input_tokens: int = Field(default=0, validation_alias=AliasChoices("input_tokens", "prompt_tokens"))
    output_tokens: int = Field(default=0, validation_alias=AliasChoices("output_tokens", "completion_tokens"))
    cost: float | None = None
    requests: int = 0
    tool_calls: int = 0
    calls: int = Field(default=0, validation_alias=AliasChoices("calls", "edits"))
    unreported: int = 0
    estimated_tokens: int = 0  # of requests whose usage no answer reported (CallUsage's)
    cached_tokens: int = 0  # of input_tokens, read from the provider's prompt cache

    @property
    def total_tokens(self) -> int:
        return self.input_tokens + self.output_tokens + self.estimated_tokens

    @property
    def reported(self) -> bool:
        """Whether anything is known: some call reported, or no call was made at all."""
        return self.calls > 0 or self.unreported == 0

    def plus(self, usage: CallUsage | None) -> Spend:
        """These totals and one more call's usage (None: its server reported none)."""
        if usage is None:
            return self.model_copy(update={"unreported": self.unreported + 1})
        return Spend(
            input_tokens=self.input_tokens + usage.input_tokens,
            output_tokens=self.output_tokens + usage.output_tokens,
            cost=_sum_costs(self.cost, usage.cost),
            requests=self.requests + usage.requests,
            tool_calls=self.tool_calls + usage.tool_calls,
            calls=self.calls + 1,
            unreported=self.unreported,
            estimated_tokens=self.estimated_tokens + usage.estimated_tokens,
            cached_tokens=self.cached_tokens + usage.cached_tokens,
        )

    def together(self, other: Spend) -> Spend:
        """Both spends as one (the budget counts the planning model's and Aider's together)."""
        return Spend(
            input_tokens=self.input_tokens + other.input_tokens,
            output_tokens=self.output_tokens + other.output_tokens,
            cost=_sum_costs(self.cost, other.cost),
            requests=self.requests + other.requests,
            tool_calls=self.tool_calls + other.tool_calls,
            calls=self.calls + other.calls,
            unreported=self.unreported + other.unreported,
            estimated_tokens=self.estimated_tokens + other.estimated_tokens,
            cached_tokens=self.cached_tokens + other.cached_tokens,
        )

    def since(self, start: Spend) -> Spend:
        """What was spent between `start` and these totals."""
        return Spend(
            input_tokens=self.input_tokens - start.input_tokens,
            output_tokens=self.output_tokens - start.output_tokens,
            cost=None if self.cost is None else self.cost - (start.cost or 0.0),
            requests=self.requests - start.requests,
            tool_calls=self.tool_calls - start.tool_calls,
            calls=self.calls - start.calls,
            unreported=self.unreported - start.unreported,
            estimated_tokens=self.estimated_tokens - start.estimated_tokens,
            cached_tokens=self.cached_tokens - start.cached_tokens,
        )

    def describe(self) -> str:
        """`1234 tokens · $0.0120` (or `cost n/a`), `(~200 estimated, not reported)` for the part
        no answer reported, or `not reported`."""
        if not self.reported:
            return "not reported"
        estimate = f" (~{self.estimated_tokens} estimated, not reported)" if self.estimated_tokens else ""
        cached = f" ({self.cached_tokens} of them cached)" if self.cached_tokens else ""
        return f"{self.total_tokens} tokens{estimate}{cached} · {_money(self.cost)}"

    def wire(self) -> dict[str, Any]:
        """One kind of call's spend (`CallKinds`): tokens in (cached apart) and out, requests,
        calls, cost."""
        return {
            "input_tokens": self.input_tokens,
            "cached_tokens": self.cached_tokens,
            "output_tokens": self.output_tokens,
            "estimated_tokens": self.estimated_tokens,
            "requests": self.requests,
            "calls": self.calls,
            "unreported": self.unreported,
            "cost": self.cost,
        }

    def aider_wire(self) -> dict[str, Any]:
        """Aider's side of a run's usage as clients have always read it."""
        return {
            "prompt_tokens": self.input_tokens,
            "completion_tokens": self.output_tokens,
            "total_tokens": self.total_tokens,
            "cost": self.cost,
            "edits": self.calls,
            "unreported": self.unreported,
            "requests": self.requests,
            "cached_tokens": self.cached_tokens,
        }


CallKind = Literal["plan", "edit", "analysis"]


class CallKinds(BaseModel):
    """What a run spent by the kind of call: the plan, Aider's edits (each edit's requests:
    its reflections and "add these files" round trips), the analyses. Counted from each
    call's own usage as it answers: a call stopped before its answer (a plan or an analysis
    made moot by green tests) is in the run's planning total only."""

    model_config = ConfigDict(frozen=True)

    plan: Spend = Field(default_factory=Spend)
    edit: Spend = Field(default_factory=Spend)
    analysis: Spend = Field(default_factory=Spend)

    def plus(self, kind: CallKind, usage: CallUsage | None) -> CallKinds:
        """These and one more call of `kind` (None: its server reported no usage)."""
        return self.model_copy(update={kind: getattr(self, kind).plus(usage)})

    @property
    def any(self) -> bool:
        return any(spend.calls or spend.unreported for spend in (self.plan, self.edit, self.analysis))

    def describe(self) -> str:
        """`plan: 1 call(s), 300 tokens · $0.0010; Aider: 2 edit(s), 3 request(s), 1200 tokens
        (800 of them cached) · $0.0090; analysis: 1 call(s), …`: where the money went."""
        parts = []
        for label, spend, unit in (
            ("plan", self.plan, "call"),
            ("Aider", self.edit, "edit"),
            ("analysis", self.analysis, "call"),
        ):
            if not (spend.calls or spend.unreported):
                continue
            count = spend.calls + spend.unreported
            # requests beside calls only where they differ (Aider's reflections, added files)
            requests = f", {spend.requests} request(s)" if spend.requests not in (0, spend.calls) else ""
            parts.append(f"{label}: {count} {unit}(s){requests}, {spend.describe()}")
        return "; ".join(parts)


def _sum_costs(first: float | None, second: float | None) -> float | None:
    """Two costs added; None only when neither is known (an unknown price is not 0)."""
    if first is None:
        return second
    return first if second is None else first + second


class WorkflowUsage(BaseModel):
    """What a run spent (or a session, or a turn): the planning/analysis model's calls and
    Aider's edits apart, and `all` both together (what the budget counts). On the wire the
    planning side's keys are at the top, beside `aider` and `all` (the shape clients have
    always read; the CLI reads it back from a run's history)."""

    model_config = ConfigDict(frozen=True)

    planning: Spend = Field(default_factory=Spend)
    aider: Spend = Field(default_factory=Spend)
    calls: CallKinds = Field(default_factory=CallKinds)  # a run's: by kind of call (the loop's count)

    @property
    def all(self) -> Spend:
        return self.planning.together(self.aider)

    def plus(self, other: WorkflowUsage) -> WorkflowUsage:
        """Both usages as one, each side added to its own (a session's sum: no calls by kind)."""
        return WorkflowUsage(
            planning=self.planning.together(other.planning), aider=self.aider.together(other.aider)
        )

    def since(self, start: WorkflowUsage) -> WorkflowUsage:
        """What was spent between `start` and these totals (the session's: no kinds)."""
        return WorkflowUsage(
            planning=self.planning.since(start.planning), aider=self.aider.since(start.aider)
        )

    def describe(self) -> str:
        """The total, then where it went: a run's by kind of call (`1500 tokens · $0.0100 (plan:
        1 call(s), 300 tokens · $0.0010; Aider: 1 edit(s), 2 request(s), 1200 tokens · …)`),
        else (a session's, a turn's) the planning/analysis model's and Aider's apart."""
        if self.calls.any:
            return f"{self.all.describe()} ({self.calls.describe()})"
        return (
            f"{self.all.describe()} "
            f"(planning/analysis: {self.planning.describe()}; Aider: {self.aider.describe()})"
        )

    @model_serializer
    def _wire(self) -> dict[str, Any]:
        planning, together = self.planning, self.all
        return {
            "input_tokens": planning.input_tokens,
            "output_tokens": planning.output_tokens,
            "total_tokens": planning.total_tokens,
            "requests": planning.requests,
            "estimated_tokens": planning.estimated_tokens,
            "cost": planning.cost,
            "cached_tokens": planning.cached_tokens,
            "aider": self.aider.aider_wire(),
            "all": {
                "total_tokens": together.total_tokens,
                "cached_tokens": together.cached_tokens,
                "cost": together.cost,
            },
            "calls": {
                "plan": self.calls.plan.wire(),
                "edit": self.calls.edit.wire(),
                "analysis": self.calls.analysis.wire(),
            },
        }

    @model_validator(mode="before")
    @classmethod
    def _from_wire(cls, data: Any) -> Any:
        """The wire's shape read back: the planning side's keys at the top level."""
        if not isinstance(data, dict) or "planning" in data:
            return data
        keys = ("input_tokens", "output_tokens", "requests", "estimated_tokens", "cached_tokens", "cost")
        planning = {key: data[key] for key in keys if key in data}
        return {
            "planning": planning,
            "aider": data.get("aider") or Spend(),
            "calls": data.get("calls") or CallKinds(),
        }
