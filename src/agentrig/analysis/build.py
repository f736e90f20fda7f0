"""Building the ``Analysis`` (models in ``summary.py``) from a run's store and config snapshot.

Storage-light: counts, rewards and terminations from the store's light rows; records decoded
once, streaming, for components, tool-call chains, failure classes and memory figures, keeping
only small extracts; model calls streamed for the usage tables.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from agentrig.types import Strict

from .consistency import ConsistencyCollector, rank
from .failures import taxonomy
from .figure import ArmInputs, compute_figures
from .memory import MemoryCollector, attach_ab, memory_modes
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
    sections = {"consistency": "ok", "failures": "ok"}
    tables = _TaskTables(plan, sections, bench, config)
    tasks = sum(len(ids) for ids in plan.tasks.values())
    out = Analysis(run_dir=run_dir, run_id=plan.run_id, name=plan.name, n=plan.n, arms_planned=plan.arms,
                   tasks_planned=tasks, trials_planned=len(plan.arms) * tasks * plan.n,
                   bootstrap=BootstrapInfo(resamples=resamples, seed=seed), sections=sections)
    for name in plan.arms if arm is None else [arm]:
        out.arms[name] = _analyze_arm(store, plan, name, resamples, seed, tables)
    if tables.loaded is None:  # a failed trial met tasks that cannot be loaded: no arm has a taxonomy
        out.sections.update(sections)  # (the model holds a copy of the dict)
        for a in out.arms.values():
            a.failures, a.failures_by_domain = None, {}
    attach_ab(store, config, [a.memory for a in out.arms.values() if a.memory is not None], arms=plan.arms,
              plugins=plan.plugins, tasks=plan.tasks, n=plan.n, run_dir=run_dir)
    return out


def _analyze_arm(store: Any, plan: Plan, arm: str, resamples: int, seed: int,
                 tables: _TaskTables) -> ArmAnalysis:
    from . import usage as u
    from .bootstrap import intervals, scope_seed

    n = plan.n
    planned = {(d, t) for d, ids in plan.tasks.items() for t in ids}
    stored = store.verdict_rows(arm=arm)
    rows = [r for r in stored if (r.domain, r.task_id) in planned and 0 <= r.trial < n]
    valid = [r for r in rows if r.valid]
    modes = memory_modes(plan.plugins.get(arm) or [])
    extracts = _read_records(store, plan, arm, planned, tables, MemoryCollector() if modes else None)
    domains: dict[str, Figures] = {}
    counts_by_domain, cis = {}, {}
    for d, ids in plan.tasks.items():
        counts_by_domain[d] = _counts(r for r in valid if r.domain == d)
        nc = np.array(list(counts_by_domain[d].values()), dtype=float).reshape(-1, 2)
        cis[d] = intervals(nc[:, 0], nc[:, 1], n, resamples=resamples, seed=scope_seed(seed, arm, d))
        domains[d] = _figures(d, [r for r in rows if r.domain == d], len(ids), n, counts_by_domain[d], cis[d],
                              extracts.components.get(d, {}), plan.components)
    all_counts = {key: nc for d in plan.tasks for key, nc in counts_by_domain[d].items()}
    if len(plan.tasks) == 1:
        ci_all = cis[next(iter(plan.tasks))]
        ci_all.macro_curve, ci_all.macro_gap_pp = ci_all.curve, ci_all.gap_pp
    else:
        nc = np.array(list(all_counts.values()), dtype=float).reshape(-1, 2)
        ci_all = intervals(nc[:, 0], nc[:, 1], n, group_sizes=[len(counts_by_domain[d]) for d in plan.tasks],
                           resamples=resamples, seed=scope_seed(seed, arm, "overall"))
    total_comps: dict[str, list[int]] = {}
    for comps in extracts.components.values():
        for c, acc in comps.items():
            tot = total_comps.setdefault(c, [0, 0, 0])
            for i in range(3):
                tot[i] += acc[i]
    overall = _figures("overall", rows, len(planned), n, all_counts, ci_all, total_comps, plan.components)
    calls = store.iter_model_calls(arm=arm)  # streamed: 100,000 trials hold millions of calls
    if len(rows) < len(stored):  # some stored trials are outside the plan: leave their calls out
        calls = (c for c in calls if (c["domain"], c["task_id"]) in planned and 0 <= c["trial"] < n)
    result = ArmAnalysis(arm=arm, n=n, overall=overall, macro=_macro(domains, ci_all, n), domains=domains,
                         usage=u.role_usage(calls, plan.prices), reruns=u.reruns(valid, n),
                         retries=u.retry_effect(valid))
    result.consistency = rank(extracts.consistency.results())
    result.figures = compute_figures(ArmInputs(arm=arm, n=n, rows=rows, bench=tables.bench, config=tables.config,
                                               store=store))
    if extracts.memory is not None:
        result.memory = extracts.memory.figures(arm, modes)
    if tables.loaded is not None:
        classes = tables.bench.failure_classes
        result.failures = taxonomy(extracts.labels, classes=classes)
        result.failures_by_domain = {d: taxonomy([x for x in extracts.labels if x[0].domain == d], classes=classes)
                                     for d in plan.tasks}
    return result


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


class _Extracts:
    """What one streaming pass over an arm's valid records keeps: small per-trial extracts."""

    def __init__(self) -> None:
        self.components: dict[str, dict[str, list[int]]] = {}  # domain → component → [trials, passed, in basis]
        self.labels: list[tuple[Any, Any]] = []  # (TrialKey, FailureLabel) of failed valid trials
        self.consistency = ConsistencyCollector()  # keeps tool-call chains, not records
        self.memory: MemoryCollector | None = None  # arms with a memory plug-in


class _TaskTables:
    """What the benchmark's failure classifier needs (``Benchmark.failure_context``; τ²: each
    domain's tasks by id and its spec): loaded at the first failed trial (a run where every trial
    passed needs neither the task files nor the domain's tools).

    ``loaded`` is ``{}`` before, ``{"context": …}`` after, ``None`` when it cannot be loaded (then
    the ``failures`` section says why and no arm gets a taxonomy)."""

    def __init__(self, plan: Plan, sections: dict[str, str], bench: Any, config: dict) -> None:
        self.plan, self.sections, self.bench, self.config = plan, sections, bench, config
        self.loaded: dict[str, Any] | None = {}

    def get(self) -> dict[str, Any] | None:
        if self.loaded == {} and self.plan.tasks:
            from agentrig.errors import AgentrigError

            try:
                self.loaded = {"context": self.bench.failure_context(self.config)}
            except AgentrigError as exc:
                self.sections["failures"] = f"unavailable: {exc}"
                self.loaded = None
        return self.loaded


def _read_records(store: Any, plan: Plan, arm: str, planned: set, tables: _TaskTables,
                  memory: MemoryCollector | None = None) -> _Extracts:
    from .reliability import is_success

    ex = _Extracts()
    ex.consistency = ConsistencyCollector(chain=tables.bench.action_sequence)
    ex.memory = memory
    n = plan.n
    for rec in store.records(arm=arm, valid=True):
        key = rec.key
        if (key.domain, key.task_id) not in planned or not 0 <= key.trial < n:
            continue
        info = rec.verdict.reward_info
        if info is not None:
            comps = ex.components.setdefault(key.domain, {})
            basis = set(info.reward_basis)
            for c in plan.components or info.components:  # () : the components each verdict names
                acc = comps.setdefault(c, [0, 0, 0])
                value = info.computed(c)  # None: not computed (or nothing to check): in no rate
                if value is not None:
                    acc[0] += 1
                    acc[1] += int(is_success(value))
                acc[2] += int(c in basis)
        if not is_success(rec.verdict.reward) and (loaded := tables.get()) is not None:
            label = tables.bench.classify(rec, loaded["context"])
            if label is not None:
                ex.labels.append((key, label))
        ex.consistency.add(rec)
        if memory is not None:
            memory.add(rec)
    return ex
