"""What model calls spent: one call, and a run (planning/analysis and Aider, apart and together),
and the budget that caps a run.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, computed_field


class AiderUsage(BaseModel):
    """An Aider edit's own model calls, as the bundled server reports them (an extension of the
    public contract: a server that says nothing has `usage` None, never zero)."""

    prompt_tokens: int = Field(default=0, ge=0)
    completion_tokens: int = Field(default=0, ge=0)
    cost: float | None = None


class AiderSpend(BaseModel):
    """What Aider's own model calls spent, summed over edits. `edits` counts the edits whose
    server reported usage, `unreported` those whose server said nothing (the public
    aider-mcp-server): with no reported edit at all the spend is unknown, never zero."""

    prompt_tokens: int = 0
    completion_tokens: int = 0
    total_tokens: int = 0
    cost: float | None = None
    edits: int = 0
    unreported: int = 0

    @property
    def reported(self) -> bool:
        """Whether anything is known: some edit reported, or no edit ran at all."""
        return self.edits > 0 or self.unreported == 0

    def plus(self, usage: AiderUsage | None) -> AiderSpend:
        """These totals and one more edit's usage (None: the server reported none)."""
        if usage is None:
            return self.model_copy(update={"unreported": self.unreported + 1})
        cost = self.cost if usage.cost is None else (self.cost or 0.0) + usage.cost
        return AiderSpend(
            prompt_tokens=self.prompt_tokens + usage.prompt_tokens,
            completion_tokens=self.completion_tokens + usage.completion_tokens,
            total_tokens=self.total_tokens + usage.prompt_tokens + usage.completion_tokens,
            cost=cost,
            edits=self.edits + 1,
            unreported=self.unreported,
        )

    def since(self, start: AiderSpend) -> AiderSpend:
        """What was spent between `start` and these totals."""
        return AiderSpend(
            prompt_tokens=self.prompt_tokens - start.prompt_tokens,
            completion_tokens=self.completion_tokens - start.completion_tokens,
            total_tokens=self.total_tokens - start.total_tokens,
            cost=None if self.cost is None else self.cost - (start.cost or 0.0),
            edits=self.edits - start.edits,
            unreported=self.unreported - start.unreported,
        )

    def describe(self) -> str:
        """`Aider: 1234 tokens · $0.0120` (or `cost n/a`), `Aider: not reported`."""
        if not self.reported:
            return "Aider: not reported"
        money = f"${self.cost:.4f}" if self.cost is not None else "cost n/a"
        return f"Aider: {self.total_tokens} tokens · {money}"


class UsageTotal(BaseModel):
    """Planning/analysis and Aider together: what the budget counts."""

    total_tokens: int = 0
    cost: float | None = None


class Budget(BaseModel):
    """A run's cap on tokens and/or cost (aiderLsp.budget). Why one value: the rule ("spent
    reaches the cap") and the message the user reads are the same wherever a run is stopped,
    by the LLM layer before a call or by the workflow between steps."""

    model_config = ConfigDict(frozen=True)

    max_tokens: int | None = None
    max_cost: float | None = None

    @property
    def capped(self) -> bool:
        return self.max_tokens is not None or self.max_cost is not None

    def exceeded(self, spent: UsageTotal) -> str | None:
        """Why no further call may run, naming the setting to raise; None while within."""
        if self.max_tokens is not None and spent.total_tokens >= self.max_tokens:
            return (
                f"the token budget of {self.max_tokens} is used up ({spent.total_tokens} used): raise "
                "aiderLsp.budget.maxTokens (tokens per run, planning/analysis and Aider together), "
                "or give a smaller goal"
            )
        cost = spent.cost or 0.0
        if self.max_cost is not None and cost >= self.max_cost:
            return (
                f"the cost budget of {self.max_cost:g} is used up ({cost:.4f} used): raise "
                "aiderLsp.budget.maxCost (cost per run, planning/analysis and Aider together), "
                "or give a smaller goal"
            )
        return None

    def remaining_tokens(self, spent: UsageTotal) -> int | None:
        """The tokens the next call may spend (its limit in the model library), None: no cap."""
        return None if self.max_tokens is None else max(1, self.max_tokens - spent.total_tokens)


class WorkflowUsage(BaseModel):
    """What a run spent. The top-level fields are the planning/analysis model's (the shape
    clients have always read); `aider` is Aider's own calls, `all` both together (the budget)."""

    input_tokens: int = 0
    output_tokens: int = 0
    total_tokens: int = 0
    requests: int = 0
    cost: float | None = None
    aider: AiderSpend = Field(default_factory=AiderSpend)

    @computed_field  # type: ignore[prop-decorator]  # pydantic's documented idiom
    @property
    def all(self) -> UsageTotal:
        """Both together; cost None only when neither side knows its price."""
        costs = [c for c in (self.cost, self.aider.cost) if c is not None]
        return UsageTotal(
            total_tokens=self.total_tokens + self.aider.total_tokens, cost=sum(costs) if costs else None
        )

    def since(self, start: WorkflowUsage) -> WorkflowUsage:
        """What was spent between `start` and these totals."""
        cost = None if self.cost is None else self.cost - (start.cost or 0.0)
        return WorkflowUsage(
            input_tokens=self.input_tokens - start.input_tokens,
            output_tokens=self.output_tokens - start.output_tokens,
            total_tokens=self.total_tokens - start.total_tokens,
            requests=self.requests - start.requests,
            cost=cost,
            aider=self.aider.since(start.aider),
        )

    def describe(self) -> str:
        """`1500 tokens · $0.0100 (planning/analysis 300 tokens · $0.0010; Aider: 1200 tokens · …)`."""
        total = self.all
        money = f"${total.cost:.4f}" if total.cost is not None else "cost n/a"
        own = f"${self.cost:.4f}" if self.cost is not None else "cost n/a"
        return (
            f"{total.total_tokens} tokens · {money} "
            f"(planning/analysis: {self.total_tokens} tokens · {own}; {self.aider.describe()})"
        )
