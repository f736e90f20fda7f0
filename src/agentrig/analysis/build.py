"""Building the ``Analysis`` (models in ``summary.py``) from a run's store and config snapshot.

The core figures per scope (counts, pass^k with its intervals, components, terminations, resources)
are computed here; every other figure is a registered figure (``figure.py``), computed per arm
after them and finished once all arms are done.

Storage-light: counts, rewards and terminations from the store's light rows; records decoded
once, streaming, for components and the registered figures' collectors (tool-call chains, failure
classes, a plug-in's events), keeping only small extracts; model calls streamed for the usage tables.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from agentrig.types import Strict

from .figure import ArmInputs, RunInputs, registered
from .summary import (COMPONENT_NAMES, Analysis, ArmAnalysis, BootstrapInfo, ComponentRate, Estimate, Figures,
                      Macro, PassK)


class Plan(Strict):
    """What the config snapshot planned: arms, tasks per domain, trials per task, prices."""

    arms: list[str]
    tasks: dict[str, list[str]]
    n: int
    prices: dict[str, Any] = {}
    plugins: dict[str, list[dict[str, Any]]] = {}  # arm → its plug-in settings as configured
    data_root: str | None = None
    run_id: str | None = None
    name: str | None = None
    components: tuple[str, ...] = COMPONENT_NAMES  # the reward components the benchmark tabulates

    @classmethod
    def of(cls, config: dict, where: str = "config.json") -> "Plan":
        from agentrig.errors import DataError

        try:
            exp = config["experiment"]
            return cls(arms=[a["name"] for a in exp["arms"]],
                       tasks={d: list(ids) for d, ids in config["tasks"].items()},
                       n=int(exp["run"]["trials"]), prices=exp.get("prices") or {},
                       plugins={a["name"]: list(a.get("plugins") or []) for a in exp["arms"]},
                       data_root=config.get("data_root"), run_id=config.get("run_id"), name=config.get("name"))
        except (KeyError, TypeError, ValueError) as exc:
            raise DataError(f"{where}: the run's configuration snapshot lacks {exc} (experiment.arms, "
                            "experiment.run.trials and tasks are needed); it was not written by "
                            "`agentrig run`, or was edited — restore it from the store's meta") from None


def analyze_run(store: Any, config: dict, *, run_dir: str = "", arm: str | None = None,
                resamples: int | None = None, seed: int | None = None) -> Analysis:
    """The whole ``Analysis`` of a run from its store and its config snapshot."""
    from agentrig.errors import ConfigError

    from .bootstrap import DEFAULT_RESAMPLES, DEFAULT_SEED

    plan = Plan.of(config)
    resamples = DEFAULT_RESAMPLES if resamples is None else resamples
    seed = DEFAULT_SEED if seed is None else seed
    if resamples < 1:
        raise ConfigError(f"bootstrap resamples must be at least 1 (got {resamples})")
    if arm is not None and arm not in plan.arms:
        raise ConfigError(f"no arm {arm!r} in this run; arms: {', '.join(plan.arms)} (--arm)")
    from agentrig.benchmark import benchmark_of_config

    bench = benchmark_of_config(config)  # its taxonomy, components and action sequences
    plan.components = tuple(bench.component_names)
    figs = registered()
    run = RunInputs(config=config, store=store, bench=bench, plan=plan, run_dir=run_dir,
                    sections={f.section: "ok" for f in figs if f.section})
    tasks = sum(len(ids) for ids in plan.tasks.values())
    arms = {name: _analyze_arm(store, plan, name, resamples, seed, run) for name in (plan.arms if arm is None else [arm])}
    for fig in figs:  # once every arm is done: e.g. the memory plug-in's A/B against the baseline arm
        results = fig.finish({a: x.figures[fig.id] for a, x in arms.items() if fig.id in x.figures}, run)
        for a, x in arms.items():
            x.figures.pop(fig.id, None)
            if a in results:
                x.figures[fig.id] = results[a]
    for x in arms.values():  # in the registry's order
        x.figures = {f.id: x.figures[f.id] for f in figs if f.id in x.figures}
    return Analysis(run_dir=run_dir, run_id=plan.run_id, name=plan.name, n=plan.n, arms_planned=plan.arms,
                    tasks_planned=tasks, trials_planned=len(plan.arms) * tasks * plan.n,
                    bootstrap=BootstrapInfo(resamples=resamples, seed=seed), sections=run.sections, arms=arms)


def _analyze_arm(store: Any, plan: Plan, arm: str, resamples: int, seed: int, run: RunInputs) -> ArmAnalysis:
    from .bootstrap import intervals, scope_seed

    n = plan.n
    planned = {(d, t) for d, ids in plan.tasks.items() for t in ids}
    stored = store.verdict_rows(arm=arm)
    rows = [r for r in stored if (r.domain, r.task_id) in planned and 0 <= r.trial < n]
    valid = [r for r in rows if r.valid]
    inputs = ArmInputs(arm=arm, n=n, rows=rows, bench=run.bench, config=run.config, store=store, run=run,
                       planned=planned, outside_plan=len(rows) < len(stored))
    figs = registered()
    for fig in figs:
        col = fig.collector(inputs)
        if col is not None:
            inputs.collected[fig.id] = col
    components = _read_records(store, plan, arm, planned, list(inputs.collected.values()))
    domains: dict[str, Figures] = {}
    counts_by_domain, cis = {}, {}
    for d, ids in plan.tasks.items():
        counts_by_domain[d] = _counts(r for r in valid if r.domain == d)
        nc = np.array(list(counts_by_domain[d].values()), dtype=float).reshape(-1, 2)
        cis[d] = intervals(nc[:, 0], nc[:, 1], n, resamples=resamples, seed=scope_seed(seed, arm, d))
        domains[d] = _figures(d, [r for r in rows if r.domain == d], len(ids), n, counts_by_domain[d], cis[d],
                              components.get(d, {}), plan.components)
    all_counts = {key: nc for d in plan.tasks for key, nc in counts_by_domain[d].items()}
    if len(plan.tasks) == 1:
        ci_all = cis[next(iter(plan.tasks))]
        ci_all.macro_curve, ci_all.macro_gap_pp = ci_all.curve, ci_all.gap_pp
    else:
        nc = np.array(list(all_counts.values()), dtype=float).reshape(-1, 2)
        ci_all = intervals(nc[:, 0], nc[:, 1], n, group_sizes=[len(counts_by_domain[d]) for d in plan.tasks],
                           resamples=resamples, seed=scope_seed(seed, arm, "overall"))
    total_comps: dict[str, list[int]] = {}
    for comps in components.values():
        for c, acc in comps.items():
            tot = total_comps.setdefault(c, [0, 0, 0])
            for i in range(3):
                tot[i] += acc[i]
    overall = _figures("overall", rows, len(planned), n, all_counts, ci_all, total_comps, plan.components)
    inputs.overall = overall
    results = {}
    for fig in figs:
        value = fig.compute(inputs)
        if value is not None:
            results[fig.id] = value
    return ArmAnalysis(arm=arm, n=n, overall=overall, macro=_macro(domains, ci_all, n), domains=domains,
                       figures=results)


def _counts(valid_rows: Any) -> dict[tuple[str, str], tuple[int, int]]:
    from .reliability import counts_by_task, is_success

    return counts_by_task(((r.domain, r.task_id), is_success(r.reward)) for r in valid_rows)  # type: ignore[arg-type]


def _estimate(value: float | None, bounds: Any) -> Estimate:
    if value is None:
        return Estimate()
    if bounds is None or any(b != b for b in bounds):  # NaN: no replicate defined
        return Estimate(value=value)
    return Estimate(value=value, low=float(bounds[0]), high=float(bounds[1]))


def _figures(scope: str, rows: list, tasks_planned: int, n: int, counts: dict, ci: Any,
             components: dict[str, list[int]], names: tuple[str, ...] = COMPONENT_NAMES) -> Figures:
    from collections import Counter

    from . import reliability as rel
    from .usage import spread

    valid = [r for r in rows if r.valid]
    valid_keys = {r.key for r in valid}
    invalid_rows = [r for r in rows if not r.valid]
    invalid_keys = {r.key for r in invalid_rows} - valid_keys
    curve = []
    for k in range(1, n + 1):
        value, used = rel.pass_hat_k(counts, k)
        curve.append(PassK(k=k, pass_hat=_estimate(value, ci.curve[k - 1]), pass_at=rel.pass_at_k(counts, k)[0],
                           tasks=used, excluded=tasks_planned - used))
    gap, mean_n, _, used_n = rel.consistency_gap(counts, n)
    mixed, eligible = rel.mixed_outcomes(counts)
    comps = {}
    for c in names or components:
        trials, passed, in_basis = components.get(c, (0, 0, 0))
        comps[c] = ComponentRate(trials=trials, passed=passed, rate=passed / trials if trials else None,
                                 in_basis=in_basis)
    return Figures(
        scope=scope, tasks_planned=tasks_planned, tasks=len(counts), trials_planned=tasks_planned * n,
        valid=len(valid_keys), invalid=len(invalid_keys),
        missing=tasks_planned * n - len(valid_keys) - len(invalid_keys), invalid_attempts=len(invalid_rows),
        invalid_causes=dict(Counter(r.invalid_cause or "unknown" for r in invalid_rows).most_common()),
        mean_reward=sum(r.reward for r in valid) / len(valid) if valid else None,
        pass_1=curve[0].pass_hat if curve else Estimate(), pass_n=curve[-1].pass_hat if curve else Estimate(),
        gap_pp=_estimate(100.0 * gap, ci.gap_pp) if gap is not None else Estimate(),
        mean_at_n=mean_n, pass_n_tasks=used_n, pass_n_excluded=tasks_planned - used_n,
        mixed_tasks=mixed, mixed_fraction=mixed / eligible if eligible else None, curve=curve,
        components=comps, terminations=dict(Counter(r.termination for r in valid).most_common()),
        resources=spread(valid))


def _mean(values: list[float | None]) -> float | None:
    vals = [v for v in values if v is not None]
    return sum(vals) / len(vals) if vals else None


def _macro(domains: dict[str, Figures], ci: Any, n: int) -> Macro:
    figs = list(domains.values())
    curve = []
    for k in range(1, n + 1):
        value = _mean([f.curve[k - 1].pass_hat.value for f in figs])
        curve.append(PassK(k=k, pass_hat=_estimate(value, ci.macro_curve[k - 1]),
                           pass_at=_mean([f.curve[k - 1].pass_at for f in figs]),
                           tasks=sum(f.curve[k - 1].tasks for f in figs),
                           excluded=sum(f.curve[k - 1].excluded for f in figs)))
    gap = _mean([f.gap_pp.value for f in figs])
    return Macro(domains=len(figs), pass_1=curve[0].pass_hat if curve else Estimate(),
                 pass_n=curve[-1].pass_hat if curve else Estimate(),
                 gap_pp=_estimate(gap, ci.macro_gap_pp) if gap is not None else Estimate(),
                 mean_at_n=_mean([f.mean_at_n for f in figs]), mixed_fraction=_mean([f.mixed_fraction for f in figs]),
                 curve=curve)


def _read_records(store: Any, plan: Plan, arm: str, planned: set, collectors: list[Any]
                  ) -> dict[str, dict[str, list[int]]]:
    """One streaming pass over the arm's planned valid records: the reward components (domain →
    component → [trials computed, passed, in basis]), and each figure's collector fed."""
    from .reliability import is_success

    components: dict[str, dict[str, list[int]]] = {}
    n = plan.n
    for rec in store.records(arm=arm, valid=True):
        key = rec.key
        if (key.domain, key.task_id) not in planned or not 0 <= key.trial < n:
            continue
        info = rec.verdict.reward_info
        if info is not None:
            comps = components.setdefault(key.domain, {})
            basis = set(info.reward_basis)
            for c in plan.components or info.components:  # () : the components each verdict names
                acc = comps.setdefault(c, [0, 0, 0])
                value = info.computed(c)  # None: not computed (or nothing to check): in no rate
                if value is not None:
                    acc[0] += 1
                    acc[1] += int(is_success(value))
                acc[2] += int(c in basis)
        for col in collectors:
            col.add(rec)
    return components
