"""The shape of a trial's model usage, for ``run --estimate`` (run/estimate.py).

A conversation resends its whole history with every call: the prompt of a role's j-th call in a
trial is about P0 + g·j (P0: the system prompt, the policy, the tool schemas and the first
message; g: what one turn adds to the history), so a trial of n calls takes n·P0 + g·n(n−1)/2
prompt tokens — they grow with the square of the turns — and n·c completion tokens. How many
calls a trial of a task makes comes from the benchmark (``Benchmark.expected_calls``: τ²'s from the
task's gold actions), scaled by k, the sampled trials' calls over their predictions (a real model
takes more turns than the gold conversation).

Per arm and role, fitted on the sample trials (the run's stored trials or a smoke play): k, P0 and
g (least squares over every sampled call), c (the mean). The *size* of a task is then n = k·calls
for model calls and n·P0 + g·n(n−1)/2 + n·c for tokens and cost; ``estimate.extrapolate`` scales
the sizes by the samples' usage over their sizes. A role the benchmark predicts nothing for has
size 1 for every task (the estimate is then the mean per trial, as without a model).

``sample_task`` picks the task a smoke play samples: one whose trials exercise the most roles, of
median predicted length (so the fit sees several calls of each role, not the shortest task).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

Group = tuple[str, str]  # (domain, task id)
Calls = list[tuple[float, float] | None]  # a trial's calls of one role: (prompt, completion) tokens, None: failed


@dataclass
class RoleShape:
    """The fitted shape of one arm's role (see the module docstring)."""

    calls: dict[Group, float] = field(default_factory=dict)  # the benchmark's prediction per task
    k: float | None = None  # None: no prediction — every task's size is 1
    p0: float = 0.0
    g: float = 0.0
    c: float = 0.0

    def size(self, group: Group, metric: int) -> float:
        """metric 0: model calls; 1 and 2: tokens and cost (cost follows the tokens)."""
        if self.k is None:
            return 1.0
        n = self.k * self.calls.get(group, 0.0)
        if metric == 0:
            return n
        return n * self.p0 + self.g * n * max(0.0, n - 1) / 2 + n * self.c


def _line(points: list[tuple[int, float]]) -> tuple[float, float]:
    """(P0, g) of prompt = P0 + g·j by least squares; g = 0 when j never varies or the fit slopes down."""
    n = len(points)
    mean_j = sum(j for j, _ in points) / n
    mean_p = sum(p for _, p in points) / n
    sjj = sum((j - mean_j) ** 2 for j, _ in points)
    if sjj == 0:
        return mean_p, 0.0
    g = sum((j - mean_j) * (p - mean_p) for j, p in points) / sjj
    if g <= 0:
        return mean_p, 0.0
    return max(0.0, mean_p - g * mean_j), g


def fit(predicted: dict[Group, float] | None, trials: dict[Any, tuple[Group, Calls]]) -> RoleShape:
    """The shape of a role from its sampled trials: trial → (its task, the role's calls in order, each
    (prompt, completion) tokens or None for a call that failed); ``predicted``: calls per task, or None."""
    shape = RoleShape()
    points = [(j, call[0]) for _, calls in trials.values() for j, call in enumerate(calls) if call is not None]
    if points:
        shape.p0, shape.g = _line(points)
        answered = [call[1] for _, calls in trials.values() for call in calls if call is not None]
        shape.c = sum(answered) / len(answered)
    if predicted is None or not trials:
        return shape
    seen = sum(len(calls) for _, calls in trials.values())
    expected = 0.0
    for group, calls in trials.values():
        if group not in predicted or (predicted[group] <= 0 and calls):
            return shape  # the prediction does not cover what was played: no model
        expected += predicted[group]
    if expected <= 0 or seen <= 0:
        return shape
    shape.calls, shape.k = dict(predicted), seen / expected
    return shape


def predicted_calls(r: Any, arm: Any) -> dict[str, dict[Group, float]]:
    """role → task → the benchmark's predicted calls of one trial (roles it predicts for every task)."""
    out: dict[str, dict[Group, float]] = {}
    missing: set[str] = set()
    for domain, task in r.tasks:
        found = r.benchmark.expected_calls(r, arm, domain, task)
        for role in set(out) | set(found or {}):
            if found is None or role not in found:
                missing.add(role)
            else:
                out.setdefault(role, {})[(domain, task.id)] = float(found[role])
    return {role: v for role, v in out.items() if role not in missing and len(v) == len(r.tasks)}


def sample_task(r: Any) -> tuple[str, Any] | None:
    """The task a smoke play for the estimate samples (module docstring); None: the benchmark
    predicts nothing, so its own smoke task."""
    scored = []
    for i, (domain, task) in enumerate(r.tasks):
        roles, total, known = 0, 0.0, False
        for arm in r.arms:
            found = r.benchmark.expected_calls(r, arm, domain, task)
            if found is None:
                continue
            known = True
            roles += sum(1 for n in found.values() if n > 0)
            total += sum(found.values())
        if known:
            scored.append((roles, total, i))
    if not scored:
        return None
    most = max(s[0] for s in scored)
    ranked = sorted((total, i) for roles, total, i in scored if roles == most)
    return r.tasks[ranked[len(ranked) // 2][1]]


__all__ = ["RoleShape", "fit", "predicted_calls", "sample_task"]
