"""AppWorld's own aggregate figures: task goal completion and scenario goal completion.

AppWorld reports two numbers for a set of tasks (its ``Metric``): **task goal completion** (TGC) —
the share of tasks whose every test passed — and **scenario goal completion** (SGC) — the share of
scenarios (the tasks generated from one scenario: ids ``<scenario>_<n>``) whose every task passed.
With k trials per task each trial index i is one rerun of the whole set: the figures are computed
per rerun, over the tasks whose trial i is valid (a scenario counts when every one of its tasks
has a valid trial i), and averaged over reruns. ``analyze`` shows them per arm
(``Benchmark.arm_figures``), as fractions.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from .data import scenario_of


def goal_completion(rows: list[Any], n: int) -> dict[str, float | None]:
    """{"task goal completion": …, "scenario goal completion": …} from verdict rows (``domain``,
    ``task_id``, ``trial``, ``valid``, ``reward``); None when no rerun has a valid trial."""
    by_trial: dict[int, dict[str, float]] = defaultdict(dict)
    tasks = set()
    for r in rows:
        tasks.add(r.task_id)
        if r.valid and 0 <= r.trial < n:
            by_trial[r.trial][r.task_id] = 1.0 if (r.reward or 0.0) >= 1.0 else 0.0
    scenarios: dict[str, list[str]] = defaultdict(list)
    for t in tasks:
        scenarios[scenario_of(t)].append(t)
    tgc, sgc = [], []
    for i in range(n):
        got = by_trial.get(i) or {}
        if got:
            tgc.append(sum(got.values()) / len(got))
        whole = [min(got[t] for t in ts) for ts in scenarios.values() if all(t in got for t in ts)]
        if whole:
            sgc.append(sum(whole) / len(whole))
    return {"task goal completion": sum(tgc) / len(tgc) if tgc else None,
            "scenario goal completion": sum(sgc) / len(sgc) if sgc else None}
