"""AppWorld's own aggregate figures: task goal completion and scenario goal completion.

AppWorld reports two numbers for a set of tasks (its ``Metric``): **task goal completion** (TGC) —
the share of tasks whose every test passed — and **scenario goal completion** (SGC) — the share of
scenarios (the tasks generated from one scenario: ids ``<scenario>_<n>``) whose every task passed.
With k trials per task each trial index i is one rerun of the whole set: the figures are computed
per rerun, over the tasks whose trial i is valid (a scenario counts when every one of its tasks
has a valid trial i), and averaged over reruns. ``GoalCompletion`` is their figure of the figure
protocol (``analysis/figure.py``): ``analyze`` prints it, ``--json`` holds it under
``figures.goal_completion``, the report draws it — for AppWorld runs only.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from agentrig.analysis.figure import ArmInputs, Bar, Figure, FigureView
from agentrig.types import Strict

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


def _pct(x: float | None) -> str:
    return "—" if x is None else f"{100 * x:.1f}%"


class Goals(Strict):
    task_goal_completion: float | None = None
    scenario_goal_completion: float | None = None


class GoalCompletion(Figure):
    """AppWorld's task and scenario goal completion of an arm (None for other benchmarks' runs)."""

    id = "goal_completion"
    result = Goals

    def compute(self, arm: ArmInputs) -> Goals | None:
        if getattr(arm.bench, "kind", None) != "appworld":
            return None
        got = goal_completion(arm.rows, arm.n)
        return Goals(task_goal_completion=got["task goal completion"],
                     scenario_goal_completion=got["scenario goal completion"])

    def view(self, results: dict[str, Any]) -> FigureView | None:
        rows = [[arm, _pct(r.task_goal_completion), _pct(r.scenario_goal_completion)] for arm, r in results.items()]
        bars = [Bar(name=arm, value=100 * r.task_goal_completion, note=_pct(r.task_goal_completion))
                for arm, r in results.items() if r.task_goal_completion is not None]
        return FigureView(id=self.id, title="AppWorld goal completion (per rerun, averaged over reruns)",
                          columns=["arm", "task goal completion", "scenario goal completion"], rows=rows, bars=bars,
                          unit="%", note="task: every test of the task passed; scenario: every task of the scenario "
                                         "passed (AppWorld's own two metrics)")
