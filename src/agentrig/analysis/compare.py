"""Paired A/B comparison of two sides (a run directory and one of its arms): Δpass^1, Δpass^k,
bootstrap confidence intervals, an exact McNemar test, the tasks that flipped, the gate.

Sides and pairing. A side is ``RUN_DIR[:ARM]``; side A is the baseline, side B the candidate, and
every Δ is B − A. Only valid trials count. The paired tasks are the (domain, task_id) that have at
least one valid trial on both sides; tasks played by one side only are counted, not compared.

Figures (per side, over the paired tasks):
- pass^1 = mean over tasks of c/n (c successes of n valid trials; success = reward 1, as
  ``reliability.is_success``);
- pass^k with τ²-bench's estimator C(c,k)/C(n,k), where k = the smaller of the two sides' planned
  trials per task (``experiment.run.trials`` in the config snapshot), over the paired tasks that
  have at least k valid trials on BOTH sides (others are counted as excluded);
- Δ with a paired-bootstrap CI at level 1 − alpha (95% by default): resample tasks with
  replacement, the same draw for both sides (so Δ of a resample is the mean of the per-task
  differences of the drawn tasks), stratified by domain (each domain keeps its task count),
  ``RESAMPLES`` draws from ``np.random.default_rng(seed)``, percentile interval;
- the consistency gap, pass^1 − pass^k per task (k > 1), over the same tasks as pass^k, with
  its paired-bootstrap CI; lower is better, so B is called better when the CI is below 0;
- McNemar (exact, two-sided) on per-task pass/fail. A task passes on a side when MORE than half of
  its valid trials succeed (a tie, e.g. 2 of 4, is a fail). With b = tasks passing on A only and
  c = tasks passing on B only, p = min(1, 2 · Σ_{i ≤ min(b,c)} C(b+c, i) / 2^(b+c)); p = 1 when
  b + c = 0. The flips are those b tasks ("worse") and c tasks ("better").

Significance and the gate (one rule for both metrics, the same as the reported CI): B is
significantly WORSE on a metric when the upper end of the (1 − alpha) CI of Δ is below 0, BETTER
when the lower end is above 0, otherwise there is no significant difference. With fewer than
``MIN_TASKS`` (10) tasks in a metric no difference is called significant (the percentile bootstrap
of a handful of tasks collapses onto their common value; ``note`` says so). ``--fail-if-worse``
exits 1 when B is significantly worse on ``--metric`` (pass^1 or pass^k). McNemar's p is reported
beside it, not gated on. When the configurations differ in more than the arms' intended changes
(``config_diff``), no difference is called significant ("not comparable: …"; ``significance`` is
null) and the gate exits 1 with that reason — unless ``allow_mismatch``, which computes the
significance anyway and flags the output (banner; ``mismatch`` non-empty, ``allow_mismatch``
true). A gated metric that cannot be computed (no task with k valid trials on both sides) trips
the gate with that reason.

JSON shape of ``agentrig compare --json`` (``Comparison.model_dump(mode="json")``)::

    {
      "a": {"label": "runs/x:gold", "run_dir": "...", "arm": "gold", "run_id": "...",
            "trials": 4,                  # planned trials per task (null when unknown)
            "tasks": 16, "valid_trials": 64},        # everything this side played
      "b": {... same ...},
      "paired": {"tasks": 16, "only_a": 0, "only_b": 0,
                 "k": 4, "tasks_k": 16, "excluded_k": 0},
      "ci_level": 0.95, "alpha": 0.05,
      "bootstrap": {"resamples": 4000, "seed": 0, "stratified_by": "domain"},
      "metrics": {
        "pass^1": {"name": "pass^1", "k": 1, "tasks": 16, "a": 1.0, "b": 0.3125,
                   "delta": -0.6875, "ci": [-0.9375, -0.4375],
                   "significance": "worse",         # "worse" | "better" | "none" | null
                   "note": null},                   # why no significance is called, if so
        "pass^k": {"name": "pass^4", "k": 4, ...}  # a/b/delta/ci null when tasks == 0
      },
      "mcnemar": {"both": 5, "a_only": 11, "b_only": 0, "neither": 0, "p": 0.000977},
      "flips": {"worse":  [{"domain": "bikeshop", "task_id": "...", "a": [4, 4], "b": [0, 4]}],
                "better": [...]},               # a / b = [successes, valid trials]
      "config": {"differences": [{"path": "arm.agent.kind", "a": "gold", "b": "noop",
                                  "kind": "intended"}]},   # kind: intended | mismatch | info
      "comparable": true,                 # no "mismatch" difference
      "allow_mismatch": false,
      "mismatch": [],                     # "path: a → b" lines of the mismatch differences
      "verdict": "B is significantly worse than A on pass^1 (Δ -0.688, 95% CI [-0.938, -0.438])",
      "gate": {"enabled": true, "metric": "pass^1", "alpha": 0.05,
               "rule": "fail when the upper end of the 95% CI of Δpass^1 (B − A) is below 0 (…)",
               "tripped": true, "reason": "..."},   # reason null when not tripped
      "exit_code": 1,
      "warnings": []     # e.g. guidelines derived from tasks a side is evaluated on
    }
    (``metrics`` also holds "gap" — "gap (pass^1 − pass^k)" — when k > 1.)
"""

from __future__ import annotations

from collections.abc import Iterable
from math import comb
from typing import Literal

import numpy as np
from pydantic import BaseModel

from .config_diff import Difference
from .reliability import is_success, pass_hat_k_task

RESAMPLES = 4000
SEED = 0
MIN_TASKS = 10  # fewer paired tasks: the percentile bootstrap is too unreliable to call significance
_CHUNK_CELLS = 1 << 21  # resample draws held at once (resamples × tasks)

TaskId = tuple[str, str]  # (domain, task_id)
Counts = dict[TaskId, tuple[int, int]]  # (valid trials n, successes c)
Significance = Literal["worse", "better", "none"]
METRICS = ("pass^1", "pass^k")


class Side(BaseModel):
    label: str
    run_dir: str
    arm: str
    run_id: str | None = None
    trials: int | None = None  # planned per task
    tasks: int = 0  # tasks with a valid trial
    valid_trials: int = 0


class Paired(BaseModel):
    tasks: int
    only_a: int
    only_b: int
    k: int
    tasks_k: int
    excluded_k: int


class Bootstrap(BaseModel):
    resamples: int
    seed: int
    stratified_by: str = "domain"


class Metric(BaseModel):
    name: str
    k: int
    tasks: int
    a: float | None = None
    b: float | None = None
    delta: float | None = None
    ci: tuple[float, float] | None = None
    significance: Significance | None = None
    note: str | None = None  # why no significance is called (too few tasks, none at all)


class McNemar(BaseModel):
    both: int
    a_only: int
    b_only: int
    neither: int
    p: float


class Flip(BaseModel):
    domain: str
    task_id: str
    a: tuple[int, int]  # (successes, valid trials)
    b: tuple[int, int]


class Flips(BaseModel):
    worse: list[Flip]  # passed (majority) on A, failed on B
    better: list[Flip]


class ConfigCheck(BaseModel):
    differences: list[Difference]


class Gate(BaseModel):
    enabled: bool
    metric: str
    alpha: float
    rule: str
    tripped: bool = False
    reason: str | None = None


class Comparison(BaseModel):
    a: Side
    b: Side
    paired: Paired
    ci_level: float
    alpha: float
    bootstrap: Bootstrap
    metrics: dict[str, Metric]
    mcnemar: McNemar
    flips: Flips
    config: ConfigCheck
    comparable: bool
    allow_mismatch: bool
    mismatch: list[str]
    verdict: str
    gate: Gate
    exit_code: int
    # e.g. guidelines derived from tasks this side is evaluated on (see ``guideline_leakage``)
    warnings: list[str] = []

    def shown_metrics(self) -> list[Metric]:
        """The metrics to show, each once: pass^k with k = 1 is the same figure as pass^1."""
        return [m for key, m in self.metrics.items() if not (key == "pass^k" and m.k == 1)]


# ------------------------------------------------------------------------------------ figures


def task_counts(outcomes: Iterable[tuple[str, str, float]]) -> Counts:
    """(domain, task_id, reward) of valid trials → {(domain, task_id): (n, c)}."""
    acc: dict[TaskId, list[int]] = {}
    for domain, task_id, reward in outcomes:
        nc = acc.setdefault((domain, task_id), [0, 0])
        nc[0] += 1
        nc[1] += is_success(reward)
    return {t: (n, c) for t, (n, c) in acc.items()}


def majority_pass(n: int, c: int) -> bool:
    """A task passes when more than half of its valid trials succeed (a tie fails)."""
    return 2 * c > n


def mcnemar_exact(b: int, c: int) -> float:
    """Exact two-sided McNemar p-value: the binomial(b + c, 1/2) tail at min(b, c), doubled."""
    n = b + c
    if n == 0:
        return 1.0
    tail = sum(comb(n, i) for i in range(min(b, c) + 1))
    return min(1.0, 2 * tail / 2 ** n)


def paired_bootstrap(diffs: np.ndarray, strata: np.ndarray, *, level: float, resamples: int,
                     rng: np.random.Generator) -> tuple[float, float]:
    """Percentile CI of the mean per-task difference, tasks resampled within each stratum."""
    n = len(diffs)
    if n == 0:
        raise ValueError("no tasks to resample")
    groups = [diffs[strata == s] for s in np.unique(strata)]
    sums = np.zeros(resamples)
    for g in groups:
        step = max(1, _CHUNK_CELLS // len(g))
        for start in range(0, resamples, step):
            stop = min(resamples, start + step)
            draw = rng.integers(0, len(g), size=(stop - start, len(g)))
            sums[start:stop] += g[draw].sum(axis=1)
    # rounding: sums of fractions that cancel must not land a hair below 0
    means = np.round(sums / n, 12)
    lo, hi = np.quantile(means, [(1 - level) / 2, 1 - (1 - level) / 2])
    return float(lo), float(hi)


def significance(ci: tuple[float, float]) -> Significance:
    lo, hi = ci
    if hi < 0:
        return "worse"
    if lo > 0:
        return "better"
    return "none"


def task_gap(n: int, c: int, k: int) -> float:
    """One task's consistency gap: pass^1 − pass^k (mean success minus every-time success)."""
    return c / n - pass_hat_k_task(n, c, k)


def _metric(name: str, k: int, tasks: list[TaskId], ca: Counts, cb: Counts, *, level: float,
            resamples: int, rng: np.random.Generator, gap: bool = False) -> Metric:
    """Δ of pass^k per task (``gap``: of pass^1 − pass^k, where lower is better: a CI above 0
    is called worse)."""
    if not tasks:
        return Metric(name=name, k=k, tasks=0, note=f"no task has {k} valid trials on both sides")
    figure = (lambda n, c: task_gap(n, c, k)) if gap else (lambda n, c: pass_hat_k_task(n, c, k))
    va = np.array([figure(*ca[t]) for t in tasks])
    vb = np.array([figure(*cb[t]) for t in tasks])
    diffs = vb - va
    _, strata = np.unique([d for d, _ in tasks], return_inverse=True)
    ci = paired_bootstrap(diffs, strata, level=level, resamples=resamples, rng=rng)
    a, b = float(va.mean()), float(vb.mean())
    few = len(tasks) < MIN_TASKS
    called = significance((-ci[1], -ci[0])) if gap else significance(ci)
    return Metric(name=name, k=k, tasks=len(tasks), a=a, b=b, delta=float(diffs.mean()), ci=ci,
                  significance="none" if few else called,
                  note=f"only {len(tasks)} paired task(s); significance needs at least {MIN_TASKS}" if few else None)


class Stats(BaseModel):
    paired: Paired
    metrics: dict[str, Metric]
    mcnemar: McNemar
    flips: Flips


def paired_stats(ca: Counts, cb: Counts, *, k: int, alpha: float = 0.05, resamples: int = RESAMPLES,
                 seed: int = SEED) -> Stats:
    """Δpass^1, Δpass^k (bootstrap CIs at level 1 − alpha), McNemar and flips over the tasks both
    count tables hold (with at least one valid trial)."""
    if k < 1:
        raise ValueError(f"k must be at least 1 (got {k})")
    ta = {t for t, (n, _) in ca.items() if n > 0}
    tb = {t for t, (n, _) in cb.items() if n > 0}
    tasks = sorted(ta & tb)
    tasks_k = [t for t in tasks if ca[t][0] >= k and cb[t][0] >= k]
    rng = np.random.default_rng(seed)
    level = 1 - alpha
    metrics = {
        "pass^1": _metric("pass^1", 1, tasks, ca, cb, level=level, resamples=resamples, rng=rng),
        "pass^k": _metric(f"pass^{k}", k, tasks_k, ca, cb, level=level, resamples=resamples, rng=rng),
    }
    if k > 1:  # the consistency gap: pass^1 − pass^k over the tasks with k valid trials on both sides
        metrics["gap"] = _metric(f"gap (pass^1 − pass^{k})", k, tasks_k, ca, cb, level=level,
                                 resamples=resamples, rng=rng, gap=True)
    cells = {"both": 0, "a_only": 0, "b_only": 0, "neither": 0}
    worse, better = [], []
    for t in tasks:
        pa, pb = majority_pass(*ca[t]), majority_pass(*cb[t])
        cell = "both" if pa and pb else "a_only" if pa else "b_only" if pb else "neither"
        cells[cell] += 1
        if pa != pb:
            flip = Flip(domain=t[0], task_id=t[1], a=(ca[t][1], ca[t][0]), b=(cb[t][1], cb[t][0]))
            (worse if pa else better).append(flip)
    return Stats(
        paired=Paired(tasks=len(tasks), only_a=len(ta - tb), only_b=len(tb - ta), k=k,
                      tasks_k=len(tasks_k), excluded_k=len(tasks) - len(tasks_k)),
        metrics=metrics,
        mcnemar=McNemar(**cells, p=mcnemar_exact(cells["a_only"], cells["b_only"])),
        flips=Flips(worse=worse, better=better),
    )


# --------------------------------------------------------------------------------- the verdict


def _pct(level: float) -> str:
    return f"{100 * level:g}%"


def gate_rule(metric: str, alpha: float) -> str:
    return (f"fail when the upper end of the {_pct(1 - alpha)} CI of Δ{metric} (B − A) is below 0 "
            f"(over at least {MIN_TASKS} paired tasks)")


def _describe(m: Metric, level: float) -> str:
    assert m.delta is not None and m.ci is not None
    return f"Δ {m.delta:+.3f}, {_pct(level)} CI [{m.ci[0]:+.3f}, {m.ci[1]:+.3f}]"


def decide(stats: Stats, diffs: list[Difference], *, metric: str, alpha: float, fail_if_worse: bool,
           allow_mismatch: bool) -> tuple[dict[str, Metric], list[str], str, Gate]:
    """(metrics with significance withheld when not comparable, mismatch lines, verdict, gate)."""
    if metric not in METRICS:
        raise ValueError(f"metric must be one of {METRICS}")
    mismatch = [d.line() for d in diffs if d.kind == "mismatch"]
    refuse = bool(mismatch) and not allow_mismatch
    metrics = {name: m.model_copy(update={"significance": None}) if refuse else m
               for name, m in stats.metrics.items()}
    m = metrics[metric]
    level = 1 - alpha
    gate = Gate(enabled=fail_if_worse, metric=metric, alpha=alpha, rule=gate_rule(m.name, alpha))
    if m.tasks == 0:
        verdict = f"{m.name}: {m.note}; nothing to compare"
    elif refuse:
        shown = "; ".join(mismatch[:3]) + (f"; … {len(mismatch) - 3} more" if len(mismatch) > 3 else "")
        verdict = (f"not comparable: the sides differ in more than the arms' intended changes ({shown}); "
                   f"{m.name} {_describe(m, level)}, not called significant")
    else:
        word = {"worse": "significantly worse than", "better": "significantly better than",
                "none": "not significantly different from"}[m.significance or "none"]
        verdict = f"B is {word} A on {m.name} ({_describe(m, level)})"
        if m.note:
            verdict += f" — {m.note}"
        if mismatch:
            verdict += f" — computed despite {len(mismatch)} configuration mismatch(es) (--allow-mismatch)"
    if fail_if_worse:
        if m.tasks == 0:
            gate.tripped, gate.reason = True, verdict
        elif refuse:
            gate.tripped = True
            gate.reason = verdict + "; pass --allow-mismatch to gate anyway"
        elif m.significance == "worse":
            gate.tripped = True
            gate.reason = f"B is significantly worse on {m.name}: {_describe(m, level)} (rule: {gate.rule})"
    return metrics, mismatch, verdict, gate


def build(a: Side, b: Side, counts_a: Counts, counts_b: Counts, diffs: list[Difference], *,
          k: int, metric: str = "pass^1", alpha: float = 0.05, fail_if_worse: bool = False,
          allow_mismatch: bool = False, resamples: int = RESAMPLES, seed: int = SEED,
          warnings: list[str] | None = None) -> Comparison:
    if not 0 < alpha < 1:
        raise ValueError(f"alpha must be between 0 and 1 (got {alpha})")
    stats = paired_stats(counts_a, counts_b, k=k, alpha=alpha, resamples=resamples, seed=seed)
    metrics, mismatch, verdict, gate = decide(stats, diffs, metric=metric, alpha=alpha,
                                              fail_if_worse=fail_if_worse, allow_mismatch=allow_mismatch)
    return Comparison(
        a=a, b=b, paired=stats.paired, ci_level=1 - alpha, alpha=alpha,
        bootstrap=Bootstrap(resamples=resamples, seed=seed), metrics=metrics, mcnemar=stats.mcnemar,
        flips=stats.flips, config=ConfigCheck(differences=diffs), comparable=not mismatch,
        allow_mismatch=allow_mismatch, mismatch=mismatch, verdict=verdict, gate=gate,
        exit_code=1 if gate.tripped else 0, warnings=list(warnings or []))


def guideline_leakage(label: str, comparability: dict | None, arm: str, tasks: Iterable[TaskId]) -> list[str]:
    """A warning per guidelines plug-in of the arm whose guidelines were derived from tasks the
    side is evaluated on (its source tasks, as the run's comparability snapshot recorded them,
    against the side's played tasks)."""
    plugins = (((comparability or {}).get("arms") or {}).get(arm) or {}).get("plugins") or []
    played = {f"{d}/{t}" for d, t in tasks}
    out = []
    for p in plugins:
        if not isinstance(p, dict) or p.get("kind") != "guidelines":
            continue
        overlap = sorted(played & set(p.get("source_tasks") or []))
        if overlap:
            shown = ", ".join(overlap[:5]) + (f", … {len(overlap) - 5} more" if len(overlap) > 5 else "")
            out.append(f"{label}: its guidelines (file {p.get('file_sha')}, from run {p.get('source_run')} arm "
                       f"{p.get('source_arm')}) were derived from {len(overlap)} of the {len(played)} task(s) it is "
                       f"evaluated on ({shown}): not a held-out evaluation; derive on another split")
    return out
