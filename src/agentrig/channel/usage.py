"""Usage accounting per role: requests, attempts, retries by cause, tokens, latency, cost."""

from __future__ import annotations

from collections import Counter

from pydantic import BaseModel

from ..config import Price
from ..types import Completion, retries_of


def percentile(sorted_values: list[float], q: float) -> float | None:
    """Linear-interpolated percentile (q in 0..100) of an already sorted list."""
    if not sorted_values:
        return None
    pos = (len(sorted_values) - 1) * q / 100.0
    lo = int(pos)
    hi = min(lo + 1, len(sorted_values) - 1)
    return sorted_values[lo] + (sorted_values[hi] - sorted_values[lo]) * (pos - lo)


class RoleUsage(BaseModel):
    role: str
    requests: int = 0  # calls made
    succeeded: int = 0
    failed: int = 0
    attempts: int = 0
    retries: int = 0  # attempts − 1 per call, summed (``types.retries_of``)
    retries_by_cause: dict[str, int] = {}
    prompt_tokens: int = 0
    completion_tokens: int = 0
    reasoning_tokens: int = 0
    cached_tokens: int = 0
    latency_p50_s: float | None = None
    latency_p90_s: float | None = None
    latency_p99_s: float | None = None
    cost_usd: float | None = None  # None = unknown (a model without a price, or no usage reported)
    models: list[str] = []


def cost_of(c: Completion, prices: dict[str, Price]) -> float | None:
    price = prices.get(c.model)
    if price is None or not c.usage.reported:
        return None
    cached = c.usage.cached_tokens or 0
    cached_rate = price.cached_input if price.cached_input is not None else price.input
    return ((c.usage.prompt_tokens - cached) * price.input + cached * cached_rate
            + c.usage.completion_tokens * price.output) / 1e6


class UsageLedger:
    """Accumulates completions and failed calls; ``summary()`` gives one RoleUsage per role."""

    def __init__(self, prices: dict[str, Price] | None = None):
        self.prices = prices or {}
        self._roles: dict[str, dict] = {}

    def _acc(self, role: str) -> dict:
        acc = self._roles.get(role)
        if acc is None:
            acc = self._roles[role] = {
                "requests": 0, "succeeded": 0, "failed": 0, "attempts": 0, "retries": 0, "causes": Counter(),
                "prompt": 0, "completion": 0, "reasoning": 0, "cached": 0, "latency": [],
                "cost": 0.0, "cost_known": True, "models": set(),
            }
        return acc

    def record(self, c: Completion) -> None:
        acc = self._acc(c.role)
        acc["requests"] += 1
        acc["succeeded"] += 1
        acc["attempts"] += len(c.attempts)
        acc["retries"] += retries_of(c.attempts)
        for a in c.attempts[:-1]:  # the attempts that were retried
            acc["causes"][a.cause or "unknown"] += 1
        acc["prompt"] += c.usage.prompt_tokens
        acc["completion"] += c.usage.completion_tokens
        acc["reasoning"] += c.usage.reasoning_tokens or 0
        acc["cached"] += c.usage.cached_tokens or 0
        acc["latency"].append(c.latency_s)
        acc["models"].add(c.model)
        cost = cost_of(c, self.prices)
        if cost is None:
            acc["cost_known"] = False
        else:
            acc["cost"] += cost

    def record_failure(self, role: str, attempts: list) -> None:
        acc = self._acc(role)
        acc["requests"] += 1
        acc["failed"] += 1
        acc["attempts"] += len(attempts)
        acc["retries"] += retries_of(attempts)
        for a in attempts[:-1]:  # the last attempt was not retried
            acc["causes"][a.cause or "unknown"] += 1

    def summary(self) -> dict[str, RoleUsage]:
        out = {}
        for role, acc in self._roles.items():
            lat = sorted(acc["latency"])
            causes = dict(acc["causes"])
            out[role] = RoleUsage(
                role=role, requests=acc["requests"], succeeded=acc["succeeded"], failed=acc["failed"],
                attempts=acc["attempts"], retries=acc["retries"], retries_by_cause=causes,
                prompt_tokens=acc["prompt"], completion_tokens=acc["completion"],
                reasoning_tokens=acc["reasoning"], cached_tokens=acc["cached"],
                latency_p50_s=percentile(lat, 50), latency_p90_s=percentile(lat, 90),
                latency_p99_s=percentile(lat, 99),
                cost_usd=acc["cost"] if acc["cost_known"] and acc["succeeded"] else None,
                models=sorted(acc["models"]),
            )
        return out
