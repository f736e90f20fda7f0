"""Instability per trajectory and per task, and whether it predicts real inconsistency.

From the scored steps (``instability.scored_steps``) and the run's valid trials, per arm and
sampling temperature:

- **trajectory**: the mean instability over its resampled steps, its most unstable step.
- **task**: the mean of its trajectories' instability; its *unstable steps* — step indexes whose
  instability, averaged over the task's resampled trials, is at least ``threshold`` (most
  unstable first); the **observed fork step** of its reruns: where they part
  (``decisions.parting_step``: the first decision step at which not every valid trial took the
  same decision, or one trial had stopped deciding while another went on; None when all reruns
  decided alike) — the same definition as ``agentrig analyze``'s ``diverge_step``; and its
  **mixed-outcome rate**: the share of pairs of its valid trials with different outcomes
  (``2c(n − c) / (n(n − 1))``; 0 when all agree).
- **validation**: Spearman's ρ between task instability and the mixed-outcome rate, with a
  percentile-bootstrap 95% CI (tasks resampled with replacement, ``bootstrap.DEFAULT_RESAMPLES``
  replicates; replicates where ρ is undefined are left out), over the tasks (with ≥ 2 valid
  trials) that show ANY instability or ANY mixed outcome — the tasks sitting at (0, 0) say
  nothing about whether one predicts the other, and many of them inflate ρ — and, labelled, over
  all tasks; each with its count of tasks. With fewer than ``MIN_TASKS`` informative tasks the
  sentence says there are too few to judge. Also the share of forked tasks whose most unstable
  step is at or before the observed fork. The ``sentence`` says it plainly: "instability predicts
  mixed outcomes here (ρ = 0.62 [0.31, 0.85] over 12 tasks with any instability or mixed outcome;
  over all 50 tasks: ρ = 0.44 [0.22, 0.72])" or "… does not predict …".
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

import numpy as np

from agentrig.types import Strict

from .bootstrap import CONFIDENCE, DEFAULT_RESAMPLES, DEFAULT_SEED, scope_seed
from .decisions import decision_key, parting_step, tool_schemas
from .instability import UnstableStep, action_of, scored_steps, steps_of
from .reliability import is_success

__all__ = ["TrajectoryInstability", "TaskInstability", "Validation", "InstabilityReport", "instability_report",
           "spearman", "fork_step", "DEFAULT_THRESHOLD", "threshold_of"]

# a step is unstable when, averaged over its task's resampled trials, at least one action in ten
# leaves the majority decision (docs/consistency.md says why)
DEFAULT_THRESHOLD = 0.1
MIN_TASKS = 3


class TrajectoryInstability(Strict):
    domain: str
    task_id: str
    trial: int
    steps: int
    mean: float
    max: float
    max_step: int
    success: bool | None


class TaskInstability(Strict):
    domain: str
    task_id: str
    n: int
    c: int
    mixed_rate: float
    trials_scored: int
    instability: float
    unstable_steps: list[int]
    step_instability: dict[int, float]
    most_unstable_step: int | None
    fork_step: int | None


class Validation(Strict):
    tasks: int  # tasks with any instability or any mixed outcome (≥ 2 valid trials): ρ's tasks
    rho: float | None
    ci: tuple[float, float] | None
    tasks_all: int = 0  # every task with ≥ 2 valid trials
    rho_all: float | None = None
    ci_all: tuple[float, float] | None = None
    forked_tasks: int
    at_or_before_fork: int
    sentence: str
    fork_sentence: str


class InstabilityReport(Strict):
    arm: str
    temperature: float
    threshold: float
    samples: int  # samples stored in all
    steps: int
    trajectories: list[TrajectoryInstability]
    tasks: list[TaskInstability]
    validation: Validation


# ------------------------------------------------------------------------------------ figures


def _ranks(x: np.ndarray) -> np.ndarray:
    """Ranks from 0, ties sharing their average rank."""
    order = np.argsort(x, kind="mergesort")
    xs = x[order]
    first = np.r_[True, xs[1:] != xs[:-1]]
    starts = np.flatnonzero(first)
    ends = np.r_[starts[1:], len(x)] - 1
    ranks = np.empty(len(x))
    ranks[order] = ((starts + ends) / 2.0)[np.cumsum(first) - 1]
    return ranks


def spearman(x: Any, y: Any) -> float | None:
    """Spearman's rank correlation (average ranks for ties); None when either side is constant."""
    x, y = np.asarray(x, float), np.asarray(y, float)
    if len(x) < 2 or np.all(x == x[0]) or np.all(y == y[0]):
        return None
    rx, ry = _ranks(x), _ranks(y)
    rx, ry = rx - rx.mean(), ry - ry.mean()
    return float((rx * ry).sum() / np.sqrt((rx * rx).sum() * (ry * ry).sum()))


def spearman_ci(x: Any, y: Any, *, resamples: int = DEFAULT_RESAMPLES, seed: Any = DEFAULT_SEED,
                confidence: float = CONFIDENCE) -> tuple[float, float] | None:
    x, y = np.asarray(x, float), np.asarray(y, float)
    rng = np.random.default_rng(seed)
    stats = []
    for _ in range(resamples):
        idx = rng.integers(0, len(x), len(x))
        rho = spearman(x[idx], y[idx])
        if rho is not None:
            stats.append(rho)
    if len(stats) < resamples // 2:
        return None
    tail = 100 * (1 - confidence) / 2
    lo, hi = np.percentile(stats, [tail, 100 - tail])
    return float(lo), float(hi)


def fork_step(sequences: list[list[dict]], schemas: dict[str, dict] | None = None) -> int | None:
    """Where reruns part, from their actions (``decisions.parting_step``)."""
    return parting_step([[decision_key(a, schemas) for a in seq] for seq in sequences])


def _fmt(x: float) -> str:
    return f"{x:.2f}".replace("-", "−")


def _figure(rho: float | None, ci: tuple[float, float] | None, tasks: int, what: str) -> str:
    if rho is None:
        return f"ρ undefined over {tasks} {what}"
    return (f"ρ = {_fmt(rho)}" + (f" [{_fmt(ci[0])}, {_fmt(ci[1])}]" if ci else " [CI undefined]")
            + f" over {tasks} {what}")


def _sentences(rho: float | None, ci: tuple[float, float] | None, tasks: int, rho_all: float | None,
               ci_all: tuple[float, float] | None, tasks_all: int, forked: int, before: int) -> tuple[str, str]:
    informative = "tasks with any instability or mixed outcome"
    overall = f"over all: {_figure(rho_all, ci_all, tasks_all, 'tasks')}"
    if tasks < MIN_TASKS:
        sentence = (f"too few tasks to judge whether instability predicts mixed outcomes: {tasks} of {tasks_all} "
                    f"tasks with reruns show any instability or mixed outcome (at least {MIN_TASKS} needed)")
    elif rho is None:
        sentence = (f"cannot validate instability here: instability or the mixed-outcome rate is the same "
                    f"for all {tasks} {informative} ({overall})")
    else:
        figure = f"{_figure(rho, ci, tasks, informative)}; {overall}"
        if ci is not None and ci[0] > 0:
            sentence = f"instability predicts mixed outcomes here ({figure})"
        elif ci is not None and ci[1] < 0:
            sentence = f"instability runs against mixed outcomes here ({figure})"
        else:
            sentence = f"instability does not predict mixed outcomes here ({figure})"
    if forked:
        fork = f"the most unstable step is at or before the observed fork in {before} of {forked} forked tasks"
    else:
        fork = "no task's reruns forked, so no fork to compare with"
    return sentence, fork


# ------------------------------------------------------------------------------------ report


def _sequences(store: Any, arm: str | None, schemas: dict) -> dict[str, dict[tuple[str, str], list]]:
    """Per arm and task: (trial, success, decision keys) of its valid trials; fills ``schemas``
    (the tools' schemas per trial)."""
    out: dict[str, dict[tuple[str, str], list]] = defaultdict(lambda: defaultdict(list))
    for record in store.records(arm, valid=True):
        k = record.key
        tools = schemas.setdefault((k.arm, k.domain, k.task_id, k.trial), tool_schemas(record))
        keys = [decision_key(action_of(m.tool_calls, m.content), tools) for _s, _t, m in steps_of(record)]
        out[k.arm][(k.domain, k.task_id)].append((k.trial, is_success(record.verdict.reward), keys))
    return out


def _r(x: Any) -> Any:
    if x is None:
        return None
    return round(x, 6) if isinstance(x, float) else (round(x[0], 6), round(x[1], 6))


def _rho(tasks: list[TaskInstability], arm: str, scope: str,
         resamples: int) -> tuple[float | None, tuple[float, float] | None]:
    x = [tk.instability for tk in tasks]
    y = [tk.mixed_rate for tk in tasks]
    rho = spearman(x, y) if len(tasks) >= MIN_TASKS else None
    ci = spearman_ci(x, y, resamples=resamples, seed=scope_seed(DEFAULT_SEED, arm, scope)) if rho is not None else None
    return rho, ci


def _one(arm: str, temperature: float, steps: list[UnstableStep], sequences: dict, threshold: float,
         resamples: int) -> InstabilityReport:
    by_traj: dict[tuple, list[UnstableStep]] = defaultdict(list)
    for s in steps:
        by_traj[(s.domain, s.task_id, s.trial)].append(s)
    outcome = {(d, t, tr): ok for (d, t), rows in sequences.items() for tr, ok, _a in rows}
    trajectories = []
    for (d, t, tr), rows in sorted(by_traj.items()):
        worst = max(rows, key=lambda s: (s.instability, -s.step))
        trajectories.append(TrajectoryInstability(
            domain=d, task_id=t, trial=tr, steps=len(rows), mean=round(sum(s.instability for s in rows) / len(rows), 6),
            max=worst.instability, max_step=worst.step, success=outcome.get((d, t, tr))))
    per_task: dict[tuple, list[TrajectoryInstability]] = defaultdict(list)
    for tj in trajectories:
        per_task[(tj.domain, tj.task_id)].append(tj)
    tasks = []
    for (d, t), tjs in sorted(per_task.items()):
        rows = sequences.get((d, t), [])
        n, c = len(rows), sum(1 for _tr, ok, _a in rows if ok)
        by_step: dict[int, list[float]] = defaultdict(list)
        for s in steps:
            if s.domain == d and s.task_id == t:
                by_step[s.step].append(s.instability)
        step_mean = {k: round(sum(v) / len(v), 6) for k, v in sorted(by_step.items())}
        unstable = sorted((k for k, v in step_mean.items() if v >= threshold), key=lambda k: (-step_mean[k], k))
        most = max(step_mean, key=lambda k: (step_mean[k], -k)) if step_mean and max(step_mean.values()) > 0 else None
        tasks.append(TaskInstability(
            domain=d, task_id=t, n=n, c=c, mixed_rate=round(2 * c * (n - c) / (n * (n - 1)), 6) if n > 1 else 0.0,
            trials_scored=len(tjs), instability=round(sum(x.mean for x in tjs) / len(tjs), 6),
            unstable_steps=unstable, step_instability=step_mean, most_unstable_step=most,
            fork_step=parting_step([a for _tr, _ok, a in sorted(rows)])))
    usable = [tk for tk in tasks if tk.n >= 2]
    informative = [tk for tk in usable if tk.instability > 0 or tk.mixed_rate > 0]
    rho, ci = _rho(informative, arm, "instability", resamples)
    rho_all, ci_all = _rho(usable, arm, "instability-all", resamples)
    forked = [tk for tk in tasks if tk.fork_step is not None]
    before = sum(1 for tk in forked if tk.most_unstable_step is not None and tk.most_unstable_step <= tk.fork_step)
    sentence, fork_sentence = _sentences(rho, ci, len(informative), rho_all, ci_all, len(usable), len(forked), before)
    validation = Validation(tasks=len(informative), rho=_r(rho), ci=_r(ci), tasks_all=len(usable),
                            rho_all=_r(rho_all), ci_all=_r(ci_all), forked_tasks=len(forked),
                            at_or_before_fork=before, sentence=sentence, fork_sentence=fork_sentence)
    return InstabilityReport(arm=arm, temperature=temperature, threshold=threshold,
                             samples=sum(len(s.samples) for s in steps), steps=len(steps),
                             trajectories=trajectories, tasks=tasks, validation=validation)


def threshold_of(config: dict | None) -> float:
    """The instability threshold an experiment file set (``[analysis] instability_threshold``, in
    the run's config snapshot), else ``DEFAULT_THRESHOLD``."""
    exp = (config or {}).get("experiment") or {}
    value = (exp.get("analysis") or {}).get("instability_threshold") if isinstance(exp, dict) else None
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else DEFAULT_THRESHOLD


def instability_report(store: Any, arm: str | None = None, *, threshold: float = DEFAULT_THRESHOLD,
                       resamples: int = DEFAULT_RESAMPLES) -> list[InstabilityReport]:
    """One report per (arm, temperature) with resampled steps in the open ``store``."""
    from agentrig.store.instability import read_rows

    rows = read_rows(store, arm)
    if not rows:
        return []
    schemas: dict = {}
    sequences = _sequences(store, arm, schemas)
    groups: dict[tuple[str, float], list[UnstableStep]] = defaultdict(list)
    for s in scored_steps(store, arm, schemas, rows):
        groups[(s.arm, s.temperature)].append(s)
    out = []
    for (a, temp), steps in sorted(groups.items()):
        out.append(_one(a, temp, steps, sequences.get(a, {}), threshold, resamples))
    return out
