"""The ``Analysis`` of a run: every figure ``agentrig analyze`` prints, as pydantic models.

Shape (``Analysis.model_dump()`` is what ``agentrig analyze --json`` prints)::

    Analysis
      run_dir, run_id, name: str
      n: int                          trials per task planned (the config's run.trials)
      arms_planned: list[str]         arm names in config order (``arms`` may hold fewer: --arm)
      tasks_planned: int; trials_planned: int   arms × tasks × trials of the config snapshot
      bootstrap: BootstrapInfo        resamples (B), seed, confidence (0.95), method
      sections: dict[str, str]        "consistency" / "failures": "ok" | "unavailable: <why>"
                                      (failures need the run's task files: data_root)
      arms: dict[str, ArmAnalysis]

    ArmAnalysis
      arm: str; n: int
      overall: Figures                task-weighted over all tasks; CIs clustered by domain
                                      (tasks resampled within each domain, domain sizes kept)
      macro: Macro                    the plain mean over domains of the domain figures
      domains: dict[str, Figures]     per domain (CIs: tasks resampled within the domain)
      usage: UsageSummary             per role (RoleUsage) + total cost (None = unknown); over
                                      every model call of the arm's planned trials, invalid
                                      attempts included (they were paid for)
      reruns: Reruns                  rerun i = trial index i over all tasks
      retries: RetryEffect            do trials that needed retries fail more often?
      consistency: list[TaskConsistency]   one per task with valid trials, ranked most
                                      inconsistent first (analysis.consistency: pattern,
                                      distinct chains, diverge_at, similarity, fork …)
      failures: Taxonomy | None       failure classes of the arm's failed valid trials
                                      (analysis.failures; None when the tasks cannot be loaded)
      failures_by_domain: dict[str, Taxonomy]   the same, per domain (empty when unavailable)
      memory: MemoryFigures | None    arms with a memory plug-in only (analysis.memory): triggers,
                                      injection rate (per trigger, per agent step), decisions,
                                      edit tool calls, bank size, memory call failures, tokens and
                                      latency as Overhead {memory_per_trial, agent_per_trial, ratio,
                                      per_trigger}, and ``ab``: the compare.Comparison of the
                                      baseline arm (the first arm without a memory plug-in) → this arm

    Figures (one scope: a domain, or "overall")
      scope: str
      tasks_planned: int; tasks: int  (tasks with at least one valid trial)
      trials_planned, valid, invalid, missing: int   trial keys: valid = has a valid row,
                                      invalid = only invalid rows, missing = not stored
      invalid_attempts: int; invalid_causes: dict[str, int]   over invalid rows (attempts)
      mean_reward: float | None       over valid trials
      pass_1, pass_n: Estimate        Estimate = {value, low, high} (95% bootstrap CI)
      gap_pp: Estimate                Mean@n − pass^n in percentage points
      mean_at_n: float | None         average success over the tasks with n valid trials
      pass_n_tasks, pass_n_excluded: int   tasks with ≥ n valid trials / with fewer (left out)
      mixed_tasks: int; mixed_fraction: float | None   tasks with 0 < c < n_valid, over the
                                      tasks with at least 2 valid trials
      curve: list[PassK]              k = 1..n: {k, pass_hat: Estimate, pass_at, tasks, excluded}
      components: dict[str, ComponentRate]   DB, ENV_ASSERTION, ACTION, COMMUNICATE,
                                      NL_ASSERTION: {trials (component not None), passed, rate,
                                      in_basis (valid trials whose basis holds it)}
      terminations: dict[str, int]    over valid trials
      resources: Spread               per valid trial: tokens and duration mean, coefficient of
                                      variation across trials and mean within-task CV

    Macro: domains: int; pass_1, pass_n, gap_pp: Estimate; mean_at_n, mixed_fraction;
           curve: list[PassK] (tasks / excluded summed over domains, pass_at the domain mean)
    UsageSummary: roles: list[RoleUsage] (agentrig.channel.usage: requests, succeeded, failed,
           attempts, retries, retries_by_cause, prompt/completion/reasoning/cached tokens,
           latency_p50_s/p90_s/p99_s, cost_usd, models); cost_usd: float | None;
           priced: bool (the snapshot has [prices]); unpriced_models: list[str]. Latencies are
           of answered calls; a retry is an attempt followed by another one; no model calls at
           all (reference agents) = cost 0.0
    Reruns: reruns: list[RerunStat{trial, trials, successes, success_rate, tokens, retries,
           retried_trials}]; best, worst: int | None (trial index); spread_pp: float | None
    RetryEffect: retried, retried_failed, clean, clean_failed: int; rate_retried, rate_clean:
           float | None; p_value (Fisher exact, two-sided), p_greater (one-sided: retried fail
           more): float | None; enough_data: bool; note: str

Estimates are fractions in 0..1 except ``gap_pp`` (percentage points). ``None`` = not
computable (no task qualifies). Computed by ``analyze_run(store, config)`` (this module); read a
``--json`` dump back with ``Analysis.model_validate_json``. Only trials the snapshot planned count
(its arms, tasks and trial indices < n); other stored rows are ignored.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from pydantic import BaseModel, ConfigDict

from agentrig.channel.usage import RoleUsage

from .consistency import ConsistencyCollector, TaskConsistency, rank
from .failures import Taxonomy, classify, taxonomy
from .memory import MemoryCollector, MemoryFigures, attach_ab, memory_modes


class _M(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Estimate(_M):
    value: float | None = None
    low: float | None = None
    high: float | None = None


class PassK(_M):
    k: int
    pass_hat: Estimate
    pass_at: float | None = None
    tasks: int = 0  # tasks with at least k valid trials
    excluded: int = 0  # tasks with fewer than k valid trials


class ComponentRate(_M):
    trials: int = 0  # valid trials where the component was computed (not None)
    passed: int = 0
    rate: float | None = None
    in_basis: int = 0  # valid trials whose reward basis holds the component


class Spread(_M):
    trials: int = 0
    tokens_mean: float | None = None
    tokens_cv: float | None = None
    tokens_cv_within_task: float | None = None
    duration_mean_s: float | None = None
    duration_cv: float | None = None
    duration_cv_within_task: float | None = None


class Figures(_M):
    scope: str
    tasks_planned: int = 0
    tasks: int = 0
    trials_planned: int = 0
    valid: int = 0
    invalid: int = 0
    missing: int = 0
    invalid_attempts: int = 0
    invalid_causes: dict[str, int] = {}
    mean_reward: float | None = None
    pass_1: Estimate = Estimate()
    pass_n: Estimate = Estimate()
    gap_pp: Estimate = Estimate()
    mean_at_n: float | None = None
    pass_n_tasks: int = 0
    pass_n_excluded: int = 0
    mixed_tasks: int = 0
    mixed_fraction: float | None = None
    curve: list[PassK] = []
    components: dict[str, ComponentRate] = {}
    terminations: dict[str, int] = {}
    resources: Spread = Spread()


class Macro(_M):
    domains: int = 0
    pass_1: Estimate = Estimate()
    pass_n: Estimate = Estimate()
    gap_pp: Estimate = Estimate()
    mean_at_n: float | None = None
    mixed_fraction: float | None = None
    curve: list[PassK] = []


class UsageSummary(_M):
    roles: list[RoleUsage] = []
    cost_usd: float | None = None
    priced: bool = False
    unpriced_models: list[str] = []


class RerunStat(_M):
    trial: int
    trials: int = 0
    successes: int = 0
    success_rate: float | None = None
    tokens: int = 0
    retries: int = 0
    retried_trials: int = 0


class Reruns(_M):
    reruns: list[RerunStat] = []
    best: int | None = None
    worst: int | None = None
    spread_pp: float | None = None


class RetryEffect(_M):
    retried: int = 0
    retried_failed: int = 0
    clean: int = 0
    clean_failed: int = 0
    rate_retried: float | None = None
    rate_clean: float | None = None
    p_value: float | None = None
    p_greater: float | None = None
    enough_data: bool = False
    note: str = ""


class BootstrapInfo(_M):
    resamples: int
    seed: int
    confidence: float = 0.95
    method: str = "percentile bootstrap over tasks; overall clustered by domain"


class ArmAnalysis(_M):
    arm: str
    n: int
    overall: Figures
    macro: Macro
    domains: dict[str, Figures] = {}
    usage: UsageSummary = UsageSummary()
    reruns: Reruns = Reruns()
    retries: RetryEffect = RetryEffect()
    consistency: list[TaskConsistency] = []
    failures: Taxonomy | None = None
    failures_by_domain: dict[str, Taxonomy] = {}
    memory: MemoryFigures | None = None


class Analysis(_M):
    run_dir: str
    run_id: str | None = None
    name: str | None = None
    n: int
    arms_planned: list[str] = []
    tasks_planned: int = 0
    trials_planned: int = 0
    bootstrap: BootstrapInfo
    sections: dict[str, str] = {}
    arms: dict[str, ArmAnalysis] = {}



# ------------------------------------------------------------------------------------ building
# (below the models: usage.py imports them, and this code imports usage.py inside functions)

COMPONENT_NAMES = ("DB", "ENV_ASSERTION", "ACTION", "COMMUNICATE", "NL_ASSERTION")


class Plan(_M):
    """What the config snapshot planned: arms, tasks per domain, trials per task, prices."""

    arms: list[str]
    tasks: dict[str, list[str]]
    n: int
    prices: dict[str, Any] = {}
    plugins: dict[str, list[dict[str, Any]]] = {}  # arm → its plug-in settings as configured
    data_root: str | None = None
    run_id: str | None = None
    name: str | None = None

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
    sections = {"consistency": "ok", "failures": "ok"}
    tables = _task_tables(plan, sections)
    tasks = sum(len(ids) for ids in plan.tasks.values())
    out = Analysis(run_dir=run_dir, run_id=plan.run_id, name=plan.name, n=plan.n, arms_planned=plan.arms,
                   tasks_planned=tasks, trials_planned=len(plan.arms) * tasks * plan.n,
                   bootstrap=BootstrapInfo(resamples=resamples, seed=seed), sections=sections)
    for name in plan.arms if arm is None else [arm]:
        out.arms[name] = _analyze_arm(store, plan, name, resamples, seed, tables)
    attach_ab(store, config, [a.memory for a in out.arms.values() if a.memory is not None], arms=plan.arms,
              plugins=plan.plugins, tasks=plan.tasks, n=plan.n, run_dir=run_dir)
    return out


def _analyze_arm(store: Any, plan: Plan, arm: str, resamples: int, seed: int,
                 tables: dict[str, tuple[dict, Any]] | None) -> ArmAnalysis:
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
                              extracts.components.get(d, {}))
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
    overall = _figures("overall", rows, len(planned), n, all_counts, ci_all, total_comps)
    calls = store.iter_model_calls(arm=arm)  # streamed: 100,000 trials hold millions of calls
    if len(rows) < len(stored):  # some stored trials are outside the plan: leave their calls out
        calls = (c for c in calls if (c["domain"], c["task_id"]) in planned and 0 <= c["trial"] < n)
    result = ArmAnalysis(arm=arm, n=n, overall=overall, macro=_macro(domains, ci_all, n), domains=domains,
                         usage=u.role_usage(calls, plan.prices), reruns=u.reruns(valid, n),
                         retries=u.retry_effect(valid))
    result.consistency = rank(extracts.consistency.results())
    if extracts.memory is not None:
        result.memory = extracts.memory.figures(arm, modes)
    if tables is not None:
        result.failures = taxonomy(extracts.labels)
        result.failures_by_domain = {d: taxonomy([x for x in extracts.labels if x[0].domain == d]) for d in plan.tasks}
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
             components: dict[str, list[int]]) -> Figures:
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
    for c in COMPONENT_NAMES:
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


def _task_tables(plan: Plan, sections: dict[str, str]) -> dict[str, tuple[dict, Any]] | None:
    from agentrig.bench.tau import data as tau_data
    from agentrig.bench.tau.domains import get_domain
    from agentrig.errors import AgentrigError

    out = {}
    for d in plan.tasks:
        try:
            out[d] = ({t.id: t for t in tau_data.load_tasks(plan.data_root, d)}, get_domain(d))
        except AgentrigError as exc:
            sections["failures"] = f"unavailable: the tasks of domain {d!r} cannot be loaded ({exc})"
            return None
    return out


def _read_records(store: Any, plan: Plan, arm: str, planned: set, tables: dict[str, tuple[dict, Any]] | None,
                  memory: MemoryCollector | None = None) -> _Extracts:
    from .reliability import is_success

    ex = _Extracts()
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
            for c in COMPONENT_NAMES:
                acc = comps.setdefault(c, [0, 0, 0])
                value = info.components.get(c)
                if value is not None:
                    acc[0] += 1
                    acc[1] += int(is_success(value))
                acc[2] += int(c in basis)
        if tables is not None and not is_success(rec.verdict.reward):
            tasks, spec = tables[key.domain]
            task = tasks.get(key.task_id)
            label = classify(rec, task, spec) if task is not None else None
            if label is not None:
                ex.labels.append((key, label))
        ex.consistency.add(rec)
        if memory is not None:
            memory.add(rec)
    return ex
