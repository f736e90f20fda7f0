"""``[run] max_cost`` (USD) and ``max_tokens``: a run's spending limit.

The budget is per run (the run directory), and what counts is what the store holds: the tokens
and priced cost of every stored attempt of every trial (valid or not — an invalid attempt's calls
were sent and billed too). After each finished trial the executor's ``on_record`` hook adds it (a
trial the truncation watch holds until its sample is complete is stored at the latest when the run
stops: run/truncation.py); when
the spend reaches a limit the run stops the way Ctrl-C stops it: trials in flight are cancelled
(not stored; their calls so far are not counted), every finished trial is kept, the summary says
the budget stopped the run. The same command again resumes — and stops again at once, playing
nothing, while the stored spend is at or over the limit: raise the limit to go on.

Cost needs a price for every model the run calls: ``max_cost`` with a model missing from
``[prices]`` is refused when the run starts (``max_tokens`` needs no prices).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

from pydantic import BaseModel

from agentrig.analysis.usage import _price_table
from agentrig.errors import ConfigError
from agentrig.types import TrialRecord

from .experiment import Resolved


class BudgetState(BaseModel):
    """What the summary (text and ``--json``) says about the budget."""

    max_cost: float | None = None
    max_tokens: int | None = None
    cost_usd: float = 0.0
    tokens: int = 0
    reached: str | None = None  # "max_cost" | "max_tokens" when the budget stopped the run
    at_start: bool = False  # the stored spend had reached the budget before this session played anything


def _call_cost(usage: Any, model: str, table: dict[str, tuple[float, float, float]]) -> float:
    price = table.get(model)
    if price is None:
        return 0.0
    cached = usage.cached_tokens or 0
    return ((usage.prompt_tokens - cached) * price[0] + cached * price[2] + usage.completion_tokens * price[1]) / 1e6


def record_spend(record: TrialRecord, table: dict[str, tuple[float, float, float]]) -> tuple[int, float]:
    """Tokens (prompt + completion) and cost of one stored attempt's answered calls."""
    tokens, cost = 0, 0.0
    for call in record.trajectory.model_calls:
        if call.error is not None:
            continue
        tokens += call.usage.prompt_tokens + call.usage.completion_tokens
        cost += _call_cost(call.usage, call.model, table)
    return tokens, cost


def check_prices(r: Resolved) -> None:
    """``max_cost`` needs a price for every model an arm's trials call; else one clear message."""
    if r.exp.run.max_cost is None:
        return
    table = _price_table(r.exp.prices)
    missing: list[str] = []
    for arm in r.arms:
        for role in arm.roles_needed:
            model = arm.channel.resolve(role).model
            if model and model not in table and model not in missing:
                missing.append(model)
    if missing:
        first = missing[0]
        raise ConfigError(
            f"{r.source}: run.max_cost is set, but no price is known for model(s) {', '.join(repr(m) for m in missing)}, "
            f"so the spend cannot be counted.\n  fix: add [prices.\"{first}\"] with input = … and output = … "
            "(USD per million tokens) for each, or use run.max_tokens instead")


@dataclass
class Budget:
    """The spend of a run against its limits; ``add`` after each stored trial."""

    max_cost: float | None
    max_tokens: int | None
    table: dict[str, tuple[float, float, float]] = field(default_factory=dict)
    cost_usd: float = 0.0
    tokens: int = 0
    reached: str | None = None
    at_start: bool = False

    @classmethod
    def of_run(cls, r: Resolved, store: Any) -> Budget | None:
        """The budget of ``r`` with what ``store`` holds already counted; None without limits."""
        run = r.exp.run
        if run.max_cost is None and run.max_tokens is None:
            return None
        b = cls(run.max_cost, run.max_tokens, _price_table(r.exp.prices))
        for row in store.iter_model_calls():
            if row["error"] is not None:
                continue
            b.tokens += row["prompt_tokens"] + row["completion_tokens"]
            price = b.table.get(row["model"])
            if price is not None:
                cached = row["cached_tokens"] or 0
                b.cost_usd += ((row["prompt_tokens"] - cached) * price[0] + cached * price[2]
                               + row["completion_tokens"] * price[1]) / 1e6
        b._check()
        b.at_start = b.reached is not None
        return b

    def _check(self) -> bool:
        if self.reached is None:
            if self.max_cost is not None and self.cost_usd >= self.max_cost:
                self.reached = "max_cost"
            elif self.max_tokens is not None and self.tokens >= self.max_tokens:
                self.reached = "max_tokens"
        return self.reached is not None

    def add(self, record: TrialRecord) -> bool:
        """Count one stored attempt; True when the budget is now spent."""
        tokens, cost = record_spend(record, self.table)
        self.tokens += tokens
        self.cost_usd += cost
        return self._check()

    def hook(self, executor: Any, previous: Callable[[TrialRecord], None] | None = None) -> Callable[[TrialRecord], None]:
        """An ``Executor.on_record``: count each stored attempt; stop the executor once spent."""

        def on_record(record: TrialRecord) -> None:
            if previous is not None:
                previous(record)
            if self.add(record):
                executor.request_stop()

        return on_record

    def state(self) -> BudgetState:
        return BudgetState(max_cost=self.max_cost, max_tokens=self.max_tokens, cost_usd=round(self.cost_usd, 6),
                           tokens=self.tokens, reached=self.reached, at_start=self.at_start)

    def spent(self) -> str:
        parts = []
        if self.max_cost is not None:
            parts.append(f"${self.cost_usd:.4f} of max_cost ${self.max_cost:g}")
        if self.max_tokens is not None:
            parts.append(f"{self.tokens:,} of max_tokens {self.max_tokens:,} tokens")
        return ", ".join(parts) + " spent"

    def describe(self, stopped: bool = False) -> str:
        """One line for the summary (``stopped``: the budget ended this session)."""
        why = " — the budget stopped the run" if stopped else ""
        return f"budget: {self.spent()} by the trials stored in this run{why}"

    def stop_message(self, run_dir: Any) -> str:
        limit = "max_cost" if self.reached == "max_cost" else "max_tokens"
        if self.at_start:
            return (f"the budget of this run is already spent ({self.spent()}), so nothing was played.\n"
                    f"  fix: raise run.{limit} in the experiment file to play the remaining trials "
                    "(the budget counts every trial stored in the run directory)")
        return (f"the run stopped: run.{limit} was reached ({self.spent()}). Trials in flight were "
                f"cancelled; every finished trial is kept in {run_dir}.\n"
                f"  fix: raise run.{limit} and rerun the same command to resume (the same limit stops it again at once)")
