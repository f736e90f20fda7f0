"""Usage and resources of a run: per role, per trial, per rerun, and retries against failures.

Inputs are light: the store's ``model_call_rows()`` (one dict per model call) and
``verdict_rows()`` — no trajectory is decoded here.

Retries are the store's ``retries`` column (``types.retries_of``: attempts − 1 per call, a failed
call's last attempt is not one), the same figure the run's summary and the report read; the
causes break that number down.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from math import exp, lgamma
from typing import Any

import numpy as np
from rich.markup import escape
from rich.text import Text

from agentrig.channel.usage import RoleUsage
from agentrig.tables import Stack

from .figure import ArmInputs, Figure
from .reliability import is_success
from .summary import RerunStat, Reruns, RetryEffect, Spread, UsageSummary
from .text import f, table

MIN_GROUP = 3  # trials per group (retried / clean) before the retry check says anything


def _price_table(prices: Mapping[str, Any] | None) -> dict[str, tuple[float, float, float]]:
    out = {}
    for model, p in (prices or {}).items():
        p = p if isinstance(p, Mapping) else p.model_dump()
        cached = p.get("cached_input")
        out[model] = (float(p["input"]), float(p["output"]), float(p["input"] if cached is None else cached))
    return out


def role_usage(calls: Iterable[Mapping[str, Any]], prices: Mapping[str, Any] | None = None) -> UsageSummary:
    """Per role: requests, attempts, retries by cause, tokens, latency percentiles, cost.

    ``cost_usd`` is None ("unknown") for a role when one of its answered calls is for a model
    without a price in ``prices`` or reported no usage; the total is None when any role's is."""
    table = _price_table(prices)
    acc: dict[str, list[Any]] = {}
    unpriced: set[str] = set()
    # per role: requests, failed, attempts, prompt, completion, reasoning, cached, cost, cost known,
    # latencies, causes, models, retries
    for row in calls:
        role = row["role"]
        a = acc.get(role)
        if a is None:
            a = acc[role] = [0, 0, 0, 0, 0, 0, 0, 0.0, True, [], Counter(), set(), 0]
        a[0] += 1
        a[2] += row["attempts"]
        retries = row["retries"]
        a[12] += retries
        raw = row["retry_causes"]
        failed = row["error"] is not None
        if raw:
            for cause in [x for x in raw.split(",") if x][:retries]:  # one cause per retry
                a[10][cause] += 1
        if failed:
            a[1] += 1
            continue
        prompt, completion, cached = row["prompt_tokens"], row["completion_tokens"], row["cached_tokens"] or 0
        a[3] += prompt
        a[4] += completion
        a[5] += row["reasoning_tokens"] or 0
        a[6] += cached
        a[9].append(row["latency_s"])
        model = row["model"]
        a[11].add(model)
        price = table.get(model)
        if price is None or not row["usage_reported"]:
            a[8] = False
            if price is None:
                unpriced.add(model)
        elif a[8]:
            a[7] += ((prompt - cached) * price[0] + cached * price[2] + completion * price[1]) / 1e6
    roles = []
    for role in sorted(acc):
        requests, failed, attempts, prompt, completion, reasoning, cached, cost, known, lat, causes, models, \
            retries = acc[role]
        lat_arr = np.asarray(lat, dtype=float)
        p50, p90, p99 = (np.percentile(lat_arr, [50, 90, 99]).tolist() if lat_arr.size else (None, None, None))
        by_cause = dict(causes.most_common())
        roles.append(RoleUsage(
            role=role, requests=requests, succeeded=requests - failed, failed=failed, attempts=attempts,
            retries=retries, retries_by_cause=by_cause, prompt_tokens=prompt,
            completion_tokens=completion, reasoning_tokens=reasoning, cached_tokens=cached,
            latency_p50_s=p50, latency_p90_s=p90, latency_p99_s=p99, cost_usd=cost if known else None,
            models=sorted(models)))
    total = None if any(r.cost_usd is None for r in roles) else sum(r.cost_usd or 0.0 for r in roles)
    return UsageSummary(roles=roles, cost_usd=total, priced=bool(table), unpriced_models=sorted(unpriced))


def _cv_of(n: int, total: float, squares: float) -> float | None:
    if n < 2 or total <= 0:
        return None
    mean = total / n
    return max(squares / n - mean * mean, 0.0) ** 0.5 / mean


def spread(rows: Iterable[Any]) -> Spread:
    """Per valid trial: tokens (prompt + completion) and duration — means, the coefficient of
    variation (population std / mean) across all trials, and the mean CV within a task."""
    by_task: dict[tuple[str, str], list[float]] = {}  # n, Σ tokens, Σ tokens², Σ time, Σ time²
    for r in rows:
        t, d = r.prompt_tokens + r.completion_tokens, r.duration_s
        acc = by_task.get((r.domain, r.task_id))
        if acc is None:
            acc = by_task[(r.domain, r.task_id)] = [0, 0.0, 0.0, 0.0, 0.0]
        acc[0] += 1
        acc[1] += t
        acc[2] += t * t
        acc[3] += d
        acc[4] += d * d
    if not by_task:
        return Spread()
    tot = [sum(acc[i] for acc in by_task.values()) for i in range(5)]
    n = int(tot[0])
    within_t = [cv for acc in by_task.values() if (cv := _cv_of(int(acc[0]), acc[1], acc[2])) is not None]
    within_d = [cv for acc in by_task.values() if (cv := _cv_of(int(acc[0]), acc[3], acc[4])) is not None]
    return Spread(trials=n, tokens_mean=tot[1] / n, tokens_cv=_cv_of(n, tot[1], tot[2]),
                  tokens_cv_within_task=sum(within_t) / len(within_t) if within_t else None,
                  duration_mean_s=tot[3] / n, duration_cv=_cv_of(n, tot[3], tot[4]),
                  duration_cv_within_task=sum(within_d) / len(within_d) if within_d else None)


def reruns(rows: Iterable[Any], n: int) -> Reruns:
    """Rerun i = the valid trials of index i over all tasks (i = 0..n-1)."""
    acc = [[0, 0, 0, 0, 0] for _ in range(n)]  # trials, successes, tokens, retries, retried trials
    for r in rows:
        if 0 <= r.trial < n:
            a = acc[r.trial]
            a[0] += 1
            a[1] += is_success(r.reward)
            a[2] += r.prompt_tokens + r.completion_tokens
            a[3] += r.retries
            a[4] += r.retries > 0
    stats = [RerunStat(trial=i, trials=a[0], successes=a[1], success_rate=a[1] / a[0] if a[0] else None,
                       tokens=a[2], retries=a[3], retried_trials=a[4]) for i, a in enumerate(acc)]
    rated = [s for s in stats if s.success_rate is not None]
    if not rated:
        return Reruns(reruns=stats)
    best = max(rated, key=lambda s: (s.success_rate, -s.trial))
    worst = min(rated, key=lambda s: (s.success_rate, s.trial))
    return Reruns(reruns=stats, best=best.trial, worst=worst.trial,
                  spread_pp=100.0 * (best.success_rate - worst.success_rate))  # type: ignore[operator]


def _log_comb(n: int, k: int) -> float:
    return lgamma(n + 1) - lgamma(k + 1) - lgamma(n - k + 1)


def fisher_exact(a: int, b: int, c: int, d: int) -> tuple[float, float]:
    """Fisher's exact test on [[a, b], [c, d]]: (two-sided p, one-sided p for a large).

    Two-sided: the total probability of the tables (same margins) no more likely than this one."""
    r1, r2, c1 = a + b, c + d, a + c
    lo, hi = max(0, c1 - r2), min(r1, c1)
    base = _log_comb(r1 + r2, c1)
    probs = {x: exp(_log_comb(r1, x) + _log_comb(r2, c1 - x) - base) for x in range(lo, hi + 1)}
    p_obs = probs[a]
    two = sum(p for p in probs.values() if p <= p_obs * (1 + 1e-7))
    greater = sum(p for x, p in probs.items() if x >= a)
    return min(1.0, two), min(1.0, greater)


def retry_effect(rows: Iterable[Any]) -> RetryEffect:
    """Valid trials that needed at least one retry against those that needed none: failure rates
    and Fisher's exact test (do retried trials fail more often?)."""
    rf = rok = cf = cok = 0
    for r in rows:
        ok = is_success(r.reward)
        if r.retries > 0:
            rf, rok = rf + (not ok), rok + ok
        else:
            cf, cok = cf + (not ok), cok + ok
    retried, clean = rf + rok, cf + cok
    out = RetryEffect(retried=retried, retried_failed=rf, clean=clean, clean_failed=cf,
                      rate_retried=rf / retried if retried else None,
                      rate_clean=cf / clean if clean else None)
    failures, total = rf + cf, retried + clean
    if retried < MIN_GROUP or clean < MIN_GROUP:
        out.note = (f"not enough data: {retried} trial(s) needed retries, {clean} did not "
                    f"(at least {MIN_GROUP} of each are needed)")
        return out
    if failures == 0 or failures == total:
        out.note = "not enough data: every trial " + ("succeeded" if failures == 0 else "failed")
        return out
    out.p_value, out.p_greater = fisher_exact(rf, rok, cf, cok)
    out.enough_data = True
    if out.p_greater < 0.05:
        verdict = "retried trials fail more often: infrastructure noise may be steering the results"
    elif out.p_value < 0.05 and rf * clean < cf * retried:
        verdict = "retried trials fail less often"
    else:
        verdict = "no sign that retries steer outcomes"
    out.note = (f"{verdict} (Fisher's exact test: p = {out.p_greater:.3g} one-sided, "
                f"{out.p_value:.3g} two-sided)")
    return out


# ---- the figure (analysis/figure.py) ------------------------------------------------------------


class UsageFigure(Figure):
    """Model calls per role of each arm (every call of its planned trials, invalid attempts
    included: they were paid for), and per trial its tokens and time (``overall.resources``)."""

    id = "usage"
    result = UsageSummary
    json_keys = ("usage",)
    analyze_slot = "details"
    report_slot = "usage"

    def compute(self, arm: ArmInputs) -> UsageSummary:
        calls = arm.store.iter_model_calls(arm=arm.arm)  # streamed: 100,000 trials hold millions of calls
        if arm.outside_plan:  # some stored trials are outside the plan: leave their calls out
            planned, n = arm.planned, arm.n
            calls = (c for c in calls if (c["domain"], c["task_id"]) in planned and 0 <= c["trial"] < n)
        prices = arm.run.plan.prices if arm.run.plan is not None else {}
        return role_usage(calls, prices)

    def dump(self, dumped: Any) -> dict[str, Any]:
        return {"usage": UsageSummary().model_dump() if dumped is None else dumped}

    def print(self, results: dict[str, UsageSummary], out: Any, analysis: Any) -> bool:
        calls = table("usage per role: requests", ("arm", "left"), ("role", "left"), ("requests", "right"),
                      ("failed", "right"), ("attempts", "right"), ("retries (by cause)", "wrap"),
                      (Stack("latency s", "p50/p90/p99"), "right"), key=2)
        tokens = table("usage per role: tokens and cost", ("arm", "left"), ("role", "left"), ("prompt", "right"),
                       ("completion", "right"), ("reasoning", "right"), ("cached", "right"), ("cost", "right"), key=2)
        for arm, u in results.items():
            for r in u.roles:
                causes = ", ".join(f"{c} {k}" for c, k in r.retries_by_cause.items())
                lat = "/".join(f(x, 2) for x in (r.latency_p50_s, r.latency_p90_s, r.latency_p99_s))
                calls.add_row(escape(arm), escape(r.role), str(r.requests), str(r.failed), str(r.attempts),
                              escape(f"{r.retries}" + (f" ({causes})" if causes else "")), lat)
                tokens.add_row(escape(arm), escape(r.role), f"{r.prompt_tokens:,}", f"{r.completion_tokens:,}",
                               f"{r.reasoning_tokens:,}", f"{r.cached_tokens:,}",
                               "unknown" if r.cost_usd is None else f"${r.cost_usd:.4f}")
        if calls.rows:
            calls.print(out)
            tokens.print(out)
        for arm, u in results.items():
            s = analysis.arms[arm].overall.resources
            cost = "unknown" + (f" (no price for {', '.join(u.unpriced_models)})" if u.unpriced_models else "") \
                if u.cost_usd is None else f"${u.cost_usd:.4f}"
            said = "no model calls" if not u.roles else f"cost {cost}"
            out.print(Text(f"  {arm}: {said}; per trial: tokens {f(s.tokens_mean, 0)} (CV {f(s.tokens_cv, 2)}, "
                           f"within task {f(s.tokens_cv_within_task, 2)}), time {f(s.duration_mean_s, 2)} s "
                           f"(CV {f(s.duration_cv, 2)}, within task {f(s.duration_cv_within_task, 2)})"))
        return True
