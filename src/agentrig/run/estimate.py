"""``agentrig run exp.toml --estimate``: model calls, tokens and cost of the whole plan, per arm
and role, with a range — before a run, or part way through one.

The figures come from sample trials:

- the run's own stored trials (the same run directory, a comparable configuration): every valid
  trial of the plan is a sample; what is stored is counted as is, and each trial still to play
  is extrapolated from the trials of its own task when there are some, else from the model of
  ``run/estimate_model.py`` fitted on all the arm's samples;
- else a smoke play (``run/smoke.py``: one task once per arm, in ``<run dir>/smoke/``, which the
  smoke check replaces anyway; the task is ``estimate_model.sample_task``'s, a typical one when
  the benchmark predicts the tasks' calls): one sample per arm, so the range is a plain
  ×0.5 … ×2 of the point estimate — a rough guide, said so in the output.

The model (``estimate_model``): a trial's calls per role as the task's structure predicts them
(``Benchmark.expected_calls``; τ²: its gold actions), scaled to the samples; each call resends the
history, so its prompt is P0 + g·j tokens at the role's j-th call — a trial's prompt tokens grow
with the square of its turns. That gives each task a *size*; a task without samples is its size ×
the samples' usage per unit of size (without a prediction every size is 1: the arm's mean).

The range: ±2 standard deviations of the sum. A task with samples of its own adds r·s² + r²·s²/n
for its r trials still to play (s, n: its samples' spread and number; the trials' own spread plus
the uncertainty of their mean). The tasks without samples share one ratio, usage per unit of
size, whose spread s across the n sampled tasks is taken at least ``RATIO_FLOOR`` of its mean (a
few tasks, or a deterministic endpoint, show too little of how another task differs): each adds
r·(s·x)², and the ratio's own uncertainty, common to them all, adds (Σ r·x)²·s²/n. Roles and
groups add up linearly. Cost needs ``[prices]`` for the role's models; without one the cost is
unknown and the output says "tokens only". Invalid attempts replayed during the run add calls not
counted here.

Nothing is stored: the run's store is opened read-only, and a smoke play writes only its own
directory.
"""

from __future__ import annotations

import asyncio
import json
import math
import sys
from collections import defaultdict
from typing import Any, Callable

from pydantic import BaseModel
from rich.console import Console
from rich.text import Text

from agentrig.analysis.usage import _price_table
from agentrig.tables import FitTable, output_console

from . import snapshot
from .estimate_model import fit, predicted_calls, sample_task
from .experiment import Resolved
from agentrig.store.rundir import STORE_FILE, differences
from agentrig.store.store import Store

METRICS = ("calls", "tokens", "cost_usd")
SMOKE_FACTOR = 2.0  # one sample per arm: the range is estimate / 2 … estimate × 2
RATIO_FLOOR = 0.25  # a task without samples: its usage over its predicted size varies by ≥ 25 %


class Figure(BaseModel):
    estimate: float
    low: float
    high: float


class RoleEstimate(BaseModel):
    role: str
    calls: Figure
    tokens: Figure
    cost_usd: Figure | None  # None: a model of this role has no price


class ArmEstimate(BaseModel):
    arm: str
    planned: int
    stored: int  # valid trials of the plan already stored (counted as they are)
    samples: int
    roles: list[RoleEstimate]
    total: RoleEstimate


class Estimate(BaseModel):
    source: str  # "run" | "smoke"
    note: str
    arms: list[ArmEstimate]
    total: RoleEstimate
    unpriced_models: list[str]


def _stats(values: list[float]) -> tuple[float, float | None]:
    n = len(values)
    mean = sum(values) / n
    if n < 2:
        return mean, None
    return mean, math.sqrt(sum((v - mean) ** 2 for v in values) / (n - 1))


def extrapolate(samples: dict[Any, list[float]], remaining: dict[Any, int], known: float,
                factor: float | None = None, size: Callable[[Any], float] | None = None) -> Figure:
    """``known`` plus the remaining trials of each group (a task), from the samples of that group
    when it has some, else from all samples; the range as in the module docstring (``factor``:
    a fixed ×1/f … ×f range instead, for a single sample). ``size``: a group's predicted size
    (run/estimate_model.py); a group without samples is then its size × the samples' mean ratio of
    value to size, with the spread of those ratios (without: every size is 1)."""
    size = size or (lambda _group: 1.0)
    pairs = [(v, size(g)) for g, vs in samples.items() for v in vs]
    if not pairs:
        return Figure(estimate=known, low=known, high=known)
    if any(x <= 0 and v != 0 for v, x in pairs):  # the sizes do not cover what was played: none
        size = lambda _group: 1.0  # noqa: E731
        pairs = [(v, 1.0) for v, _ in pairs]
    total_x = sum(x for _, x in pairs)
    mean_ratio = sum(v for v, _ in pairs) / total_x if total_x > 0 else 0.0
    # the unit is the task: another task differs from the sampled ones by their spread, at least
    # RATIO_FLOOR of the mean (few sampled tasks, or a deterministic endpoint, show too little)
    ratios = [sum(vs) / len(vs) / size(g) for g, vs in samples.items() if vs and size(g) > 0]
    n_tasks = len(ratios)
    sd_ratio = _stats(ratios)[1] if ratios else None
    if sd_ratio is not None:
        sd_ratio = max(sd_ratio, RATIO_FLOOR * mean_ratio)
    within = [sd for vs in samples.values() if len(vs) >= 2 and (sd := _stats(vs)[1]) is not None]
    sd_within = math.sqrt(sum(s * s for s in within) / len(within)) if within else None
    point, var, shared = 0.0, 0.0, 0.0  # shared: the size of the groups that use the common ratio
    for group, r in remaining.items():
        if r <= 0:
            continue
        own = samples.get(group)
        x = size(group)
        sd_all = sd_ratio * x if sd_ratio is not None else None
        if own:
            mean, sd = _stats(own)
            sd = sd if sd is not None else (sd_within if sd_within is not None else sd_all)
            if sd is not None:  # this group's own mean: its uncertainty is its own
                var += r * sd * sd + r * r * sd * sd / len(own)
        else:
            mean, sd = mean_ratio * x, sd_all
            shared += r * x
            if sd is not None:
                var += r * sd * sd
        point += r * mean
    if sd_ratio is not None and n_tasks:  # one ratio for all those groups: its error is common to them
        var += shared * shared * sd_ratio * sd_ratio / n_tasks
    if factor is not None and sd_ratio is None:
        return Figure(estimate=known + point, low=known + point / factor, high=known + point * factor)
    half = 2.0 * math.sqrt(var)
    return Figure(estimate=known + point, low=known + max(0.0, point - half), high=known + point + half)


def _add(figs: list[Figure | None]) -> Figure | None:
    if any(f is None for f in figs):
        return None
    return Figure(estimate=sum(f.estimate for f in figs), low=sum(f.low for f in figs),  # type: ignore[union-attr]
                  high=sum(f.high for f in figs))  # type: ignore[union-attr]


def _total(parts: list[RoleEstimate], name: str = "total") -> RoleEstimate:
    return RoleEstimate(role=name, calls=_add([p.calls for p in parts]) or Figure(estimate=0, low=0, high=0),
                        tokens=_add([p.tokens for p in parts]) or Figure(estimate=0, low=0, high=0),
                        cost_usd=_add([p.cost_usd for p in parts]))


def _trial_usage(store: Store, r: Resolved) -> tuple[dict, dict, dict, set[str]]:
    """Per valid stored trial of the plan: (arm, domain, task, trial) → role → [calls, tokens, cost],
    and → role → its calls in order ((prompt, completion) tokens, None for a failed call); role →
    models, and the models without a price."""
    table = _price_table(r.exp.prices)
    arms = {a.name for a in r.arms}
    tasks = {(d, t.id) for d, t in r.tasks}
    per: dict[tuple, dict[str, list[float]]] = {}
    seq: dict[tuple, dict[str, list[tuple[float, float] | None]]] = {}
    models: dict[str, set[str]] = defaultdict(set)
    unpriced: set[str] = set()
    for row in store.iter_model_calls():
        if not row["valid"] or row["arm"] not in arms or (row["domain"], row["task_id"]) not in tasks \
                or row["trial"] >= r.exp.run.trials:
            continue
        key = (row["arm"], row["domain"], row["task_id"], row["trial"])
        acc = per.setdefault(key, {}).setdefault(row["role"], [0.0, 0.0, 0.0])
        calls = seq.setdefault(key, {}).setdefault(row["role"], [])
        acc[0] += 1
        if row["error"] is not None:
            calls.append(None)
            continue
        calls.append((float(row["prompt_tokens"]), float(row["completion_tokens"])))
        acc[1] += row["prompt_tokens"] + row["completion_tokens"]
        price = table.get(row["model"])
        models[row["role"]].add(row["model"])
        if price is None:
            unpriced.add(row["model"])
            continue
        cached = row["cached_tokens"] or 0
        acc[2] += ((row["prompt_tokens"] - cached) * price[0] + cached * price[2] + row["completion_tokens"] * price[1]) / 1e6
    return per, seq, models, unpriced


def build(r: Resolved, store: Store, *, smoke: bool) -> Estimate:
    per, seq, models, unpriced = _trial_usage(store, r)
    planned_keys = [(arm.name, d, t.id, i) for arm in r.arms for d, t in r.tasks for i in range(r.exp.run.trials)]
    arms_out: list[ArmEstimate] = []
    modelled = False  # some role's usage follows the benchmark's predicted calls
    for arm in r.arms:
        mine = {k: v for k, v in per.items() if k[0] == arm.name}
        roles = sorted({role for v in mine.values() for role in v})
        todo: dict[tuple[str, str], int] = defaultdict(int)
        for k in planned_keys:
            if k[0] == arm.name and (smoke or k not in mine):
                todo[(k[1], k[2])] += 1
        predicted = predicted_calls(r, arm)
        role_rows = []
        for role in roles:
            shape = fit(predicted.get(role), {k: ((k[1], k[2]), seq.get(k, {}).get(role, [])) for k in mine})
            modelled = modelled or shape.k is not None
            figs: list[Figure] = []
            for m in range(3):
                samples: dict[tuple[str, str], list[float]] = defaultdict(list)
                for k, v in mine.items():
                    samples[(k[1], k[2])].append(v.get(role, [0.0, 0.0, 0.0])[m])
                known = 0.0 if smoke else sum(v.get(role, [0.0, 0.0, 0.0])[m] for v in mine.values())
                figs.append(extrapolate(dict(samples), dict(todo), known, SMOKE_FACTOR if smoke else None,
                                        size=lambda group, m=m, shape=shape: shape.size(group, m)))
            priced = not (models.get(role, set()) & unpriced)
            role_rows.append(RoleEstimate(role=role, calls=figs[0], tokens=figs[1], cost_usd=figs[2] if priced else None))
        arms_out.append(ArmEstimate(arm=arm.name, planned=len(r.tasks) * r.exp.run.trials,
                                    stored=0 if smoke else len(mine), samples=len(mine), roles=role_rows,
                                    total=_total(role_rows)))
    turns = ", each task's turns from its structure" if modelled else ""
    if smoke:
        note = (f"from a smoke play (one trial per arm{turns}): a rough guide, the range is ×0.5 … ×2; "
                "a run's first trials give a tighter estimate (rerun --estimate part way through)")
    else:
        n = sum(a.samples for a in arms_out)
        note = f"from {n} valid trial(s) stored in the run directory{turns}; the range is ±2 standard errors"
    return Estimate(source="smoke" if smoke else "run", note=note, arms=arms_out,
                    total=_total([a.total for a in arms_out]), unpriced_models=sorted(unpriced))


def _stored_source(r: Resolved) -> tuple[Store | None, str | None]:
    """The run's store when it holds valid trials of a comparable configuration, else why not."""
    path = r.run_dir / STORE_FILE
    if not path.is_file():
        return None, None
    store = Store.open(path, create=False)
    old = store.get_meta("comparability")
    diffs = differences(old, snapshot.comparability(r)) if old is not None else []
    if diffs:
        store.close()
        return None, (f"the configuration changed since the trials in {r.run_dir} were played "
                      f"({diffs[0]}{' …' if len(diffs) > 1 else ''}): estimating from a smoke play instead")
    if not store.valid_keys():
        store.close()
        return None, None
    return store, None


def estimate(r: Resolved) -> tuple[Estimate | None, str | None, Any]:
    """(the estimate, a note, the smoke report when a smoke play failed)."""
    store, why = _stored_source(r)
    if store is not None:
        try:
            return build(r, store, smoke=False), why, None
        finally:
            store.close()
    from .smoke import run_smoke

    report = asyncio.run(run_smoke(r, r.run_dir, sample_task(r)))
    if not report.ok:
        return None, why, report
    smoke = Store.open(report.store, create=False)
    try:
        return build(r, smoke, smoke=True), why, None
    finally:
        smoke.close()


def _num(f: Figure, money: bool = False) -> str:
    if money:
        return f"${f.estimate:,.4f} (${f.low:,.4f} … ${f.high:,.4f})"
    return f"{f.estimate:,.0f} ({f.low:,.0f} … {f.high:,.0f})"


def print_estimate(out: Console, r: Resolved, e: Estimate) -> None:
    t = FitTable()
    for col, justify in (("arm", "left"), ("role", "left"), ("model calls", "right"), ("tokens", "right"),
                         ("cost USD", "right")):
        t.add_column(col, justify)  # type: ignore[arg-type]
    for a in e.arms:
        for row in [*a.roles, a.total]:
            cost = _num(row.cost_usd, money=True) if row.cost_usd is not None else "unknown (no price)"
            t.add_row(a.arm, row.role, _num(row.calls), _num(row.tokens), cost)
    tot = e.total
    t.add_row("all arms", "total", _num(tot.calls), _num(tot.tokens),
              _num(tot.cost_usd, money=True) if tot.cost_usd is not None else "unknown (no price)")
    t.print(out)
    planned = sum(a.planned for a in e.arms)
    out.print(Text(f"{r.name}: {len(r.arms)} arm(s) × {len(r.tasks)} task(s) × {r.exp.run.trials} trial(s) "
                   f"= {planned} trials; estimate {e.note}"))
    run = r.exp.run
    for limit, fig, unit in (("max_cost", tot.cost_usd, "$"), ("max_tokens", tot.tokens, "")):
        value = getattr(run, limit)
        if value is None or fig is None or fig.high <= value or fig.estimate <= 0:
            continue
        likely = "will" if fig.low > value else "may"
        out.print(Text(f"run.{limit} = {unit}{value:g}: the budget {likely} stop the run before the plan is done "
                       f"(at about {min(1.0, value / fig.estimate):.0%} of the estimate)", style="yellow"))
    if e.unpriced_models:
        out.print(Text(f"no price for {', '.join(e.unpriced_models)}: tokens only for the roles that call them; "
                       "add [prices.\"MODEL\"] (USD per million tokens) for a cost", style="yellow"))


def estimate_command(r: Resolved, *, as_json: bool = False, out: Console | None = None,
                     err: Console | None = None) -> int:
    out = out or output_console(soft_wrap=True)
    err = err or Console(stderr=True, highlight=False, soft_wrap=True)
    e, why, failed = estimate(r)
    if why:
        err.print(Text(why, style="yellow"))
    if e is None:
        problems = "; ".join(f"{a.arm}: {a.problem or next((c.code or c.detail for c in a.roles if c.status != 'ok'), '?')}"
                             for a in failed.arms if not a.ok)
        err.print(Text("error: ", style="bold red") + Text(
            f"the smoke play the estimate needs failed ({problems}).\n"
            f"  fix: see `agentrig run {r.source} --smoke` for the details"))
        return 1
    if as_json:
        sys.stdout.write(json.dumps(e.model_dump(), indent=2) + "\n")
    else:
        print_estimate(out, r, e)
    return 0


__all__ = ["Estimate", "build", "estimate", "estimate_command", "extrapolate"]
