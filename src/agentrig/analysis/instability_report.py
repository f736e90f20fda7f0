"""Instability per trajectory and per task, and whether it predicts real inconsistency.

From the scored steps (``instability.scored_steps``) and the run's valid trials, per arm and
sampling temperature:

- **trajectory**: the mean instability over its resampled steps, its most unstable step.
- **task**: the mean of its trajectories' instability; its *unstable steps* — step indexes whose
  instability, averaged over the task's resampled trials, is at least ``threshold`` (most
  unstable first); the **observed fork step** of its reruns: the first decision step at which
  not every valid trial took a similar action (some pair's action similarity below
  ``FORK_SIMILARITY``, or one trial had stopped deciding while another went on); None when all
  reruns decided alike; and its **mixed-outcome rate**: the share of pairs of its valid trials
  with different outcomes (``2c(n − c) / (n(n − 1))``; 0 when all agree).
- **validation**: Spearman's ρ over tasks (with ≥ 2 valid trials) between task instability and
  the mixed-outcome rate, with a percentile-bootstrap 95% CI (tasks resampled with replacement,
  ``bootstrap.DEFAULT_RESAMPLES`` replicates; replicates where ρ is undefined are left out), and
  the share of forked tasks whose most unstable step is at or before the observed fork. The
  ``sentence`` says it plainly: "instability predicts mixed outcomes here (ρ = 0.62 [0.31, 0.85]
  over 12 tasks)" or "… does not predict …".
"""

from __future__ import annotations

from collections import defaultdict
from itertools import combinations
from typing import Any

import numpy as np
from pydantic import BaseModel, ConfigDict

from .bootstrap import CONFIDENCE, DEFAULT_RESAMPLES, DEFAULT_SEED, scope_seed
from .instability import UnstableStep, action_of, scored_steps, similarity, steps_of
from .reliability import is_success

__all__ = ["TrajectoryInstability", "TaskInstability", "Validation", "InstabilityReport", "instability_report",
           "spearman", "fork_step", "FORK_SIMILARITY", "DEFAULT_THRESHOLD"]

FORK_SIMILARITY = 0.9
DEFAULT_THRESHOLD = 0.1
MIN_TASKS = 3


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class TrajectoryInstability(_Model):
    domain: str
    task_id: str
    trial: int
    steps: int
    mean: float
    max: float
    max_step: int
    success: bool | None


class TaskInstability(_Model):
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


class Validation(_Model):
    tasks: int
    rho: float | None
    ci: tuple[float, float] | None
    forked_tasks: int
    at_or_before_fork: int
    sentence: str
    fork_sentence: str


class InstabilityReport(_Model):
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


def fork_step(sequences: list[list[dict]]) -> int | None:
    """The first decision step where the trials' actions are not all alike (see the docstring)."""
    if len(sequences) < 2:
        return None
    for i in range(max(len(s) for s in sequences)):
        if any(len(s) <= i for s in sequences):
            return i
        if any(similarity(a[i], b[i]) < FORK_SIMILARITY for a, b in combinations(sequences, 2)):
            return i
    return None


def _fmt(x: float) -> str:
    return f"{x:.2f}".replace("-", "−")


def _sentences(rho: float | None, ci: tuple[float, float] | None, tasks: int, forked: int, before: int) -> tuple[str, str]:
    if tasks < MIN_TASKS:
        sentence = f"too few tasks with reruns to validate instability ({tasks}; at least {MIN_TASKS} needed)"
    elif rho is None:
        sentence = (f"cannot validate instability here: instability or the mixed-outcome rate is the same "
                    f"for all {tasks} tasks")
    else:
        figure = f"ρ = {_fmt(rho)}" + (f" [{_fmt(ci[0])}, {_fmt(ci[1])}]" if ci else " [CI undefined]") + f" over {tasks} tasks"
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


def _sequences(store: Any, arm: str) -> dict[tuple[str, str], list[tuple[int, bool, list[dict]]]]:
    out: dict[tuple[str, str], list[tuple[int, bool, list[dict]]]] = defaultdict(list)
    for record in store.records(arm, valid=True):
        actions = [action_of(m.tool_calls, m.content) for _s, _t, m in steps_of(record)]
        out[(record.key.domain, record.key.task_id)].append(
            (record.key.trial, is_success(record.verdict.reward), actions))
    return out


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
            fork_step=fork_step([a for _tr, _ok, a in sorted(rows)])))
    usable = [tk for tk in tasks if tk.n >= 2]
    x = [tk.instability for tk in usable]
    y = [tk.mixed_rate for tk in usable]
    rho = spearman(x, y) if len(usable) >= MIN_TASKS else None
    ci = spearman_ci(x, y, resamples=resamples, seed=scope_seed(DEFAULT_SEED, arm, "instability")) \
        if rho is not None else None
    forked = [tk for tk in tasks if tk.fork_step is not None]
    before = sum(1 for tk in forked if tk.most_unstable_step is not None and tk.most_unstable_step <= tk.fork_step)
    sentence, fork_sentence = _sentences(rho, ci, len(usable), len(forked), before)
    validation = Validation(tasks=len(usable), rho=None if rho is None else round(rho, 6),
                            ci=None if ci is None else (round(ci[0], 6), round(ci[1], 6)),
                            forked_tasks=len(forked), at_or_before_fork=before, sentence=sentence,
                            fork_sentence=fork_sentence)
    return InstabilityReport(arm=arm, temperature=temperature, threshold=threshold,
                             samples=sum(len(s.samples) for s in steps), steps=len(steps),
                             trajectories=trajectories, tasks=tasks, validation=validation)


def instability_report(store: Any, arm: str | None = None, *, threshold: float = DEFAULT_THRESHOLD,
                       resamples: int = DEFAULT_RESAMPLES) -> list[InstabilityReport]:
    """One report per (arm, temperature) with resampled steps in the open ``store``."""
    groups: dict[tuple[str, float], list[UnstableStep]] = defaultdict(list)
    for s in scored_steps(store, arm):
        groups[(s.arm, s.temperature)].append(s)
    cache: dict[str, Any] = {}
    out = []
    for (a, temp), steps in sorted(groups.items()):
        if a not in cache:
            cache[a] = _sequences(store, a)
        out.append(_one(a, temp, steps, cache[a], threshold, resamples))
    return out
