"""Decision instability as a figure (the figure protocol, ``analysis/figure.py``) and its text for
people (``agentrig instability`` and ``agentrig analyze``).

``DecisionInstability`` computes, for an arm of a run that ``agentrig instability`` resampled, its
``InstabilityReport`` per sampling temperature (``instability_report``, at the threshold the
experiment file set); ``analyze`` prints it last, the report draws it in its consistency section
(drawer ``instability`` in ``report/drawers.py``). Nothing for runs never resampled."""

from __future__ import annotations

from rich.console import Console
from rich.markup import escape
from rich.text import Text

from agentrig.tables import FitTable
from agentrig.types import Strict

from typing import Any

from .figure import ArmInputs, Figure, FigureView
from .instability_report import InstabilityReport, instability_report, threshold_of

TOP_TASKS = 15
STEPS_SHOWN = 4


def unstable_text(task: object) -> str:
    """``3 (0.42), 1 (0.20)``: a task's unstable steps with their instability, most unstable first."""
    steps = getattr(task, "unstable_steps")
    means = getattr(task, "step_instability")
    shown = [f"{s} ({means[s]:.2f})" for s in steps[:STEPS_SHOWN]]
    more = len(steps) - STEPS_SHOWN
    return ", ".join(shown) + (f", +{more}" if more > 0 else "") if shown else "none"


def print_reports(reports: list[InstabilityReport], out: Console) -> None:
    if not reports:
        out.print(Text("instability: the run was never resampled (agentrig instability RUN)", style="dim"))
        return
    for r in reports:
        several = len({t.domain for t in r.tasks}) > 1
        out.print(Text(f"decision instability: {r.arm} (temperature {r.temperature:g}; {r.steps} steps of "
                       f"{len(r.trajectories)} trajectories, {r.samples} samples; unstable = instability ≥ "
                       f"{r.threshold:g})", style="bold"))
        out.print(Text(f"  {r.validation.sentence}"))
        out.print(Text(f"  {r.validation.fork_sentence}"))
        t = FitTable(f"unstable steps next to the fork of the reruns: {r.arm}", key=1)
        for name, justify in (("task", "left"), ("outcomes", "right"), ("mixed", "right"),
                              ("instability", "right"), ("unstable steps (instability)", "left"),
                              ("fork step", "right")):
            t.add_column(name, justify)  # type: ignore[arg-type]
        for task in sorted(r.tasks, key=lambda x: (-x.instability, x.domain, x.task_id))[:TOP_TASKS]:
            label = f"{task.domain}/{task.task_id}" if several else task.task_id
            t.add_row(escape(label), f"{task.c}/{task.n}", f"{task.mixed_rate:.2f}", f"{task.instability:.3f}",
                      unstable_text(task), "-" if task.fork_step is None else str(task.fork_step))
        t.print(out)


class Instability(Strict):
    reports: list[InstabilityReport] = []  # per sampling temperature


def reports_of(results: dict[str, Instability]) -> list[InstabilityReport]:
    """The reports of the arms' results, ordered by (arm, temperature)."""
    reports = [r for res in results.values() for r in res.reports]
    return sorted(reports, key=lambda r: (r.arm, r.temperature))


class DecisionInstability(Figure):
    id = "instability"
    result = Instability
    analyze_slot = "end"
    report_slot = "consistency"

    def compute(self, arm: ArmInputs) -> Instability | None:
        if arm.store is None:
            return None
        reports = instability_report(arm.store, arm.arm, threshold=threshold_of(arm.config))
        return Instability(reports=reports) if reports else None

    def view(self, results: dict[str, Instability]) -> FigureView | None:
        rows = [[r.arm, f"{r.temperature:g}", str(r.steps), f"{len([t for t in r.tasks if t.unstable_steps])}",
                 r.validation.sentence] for r in reports_of(results)]
        return FigureView(id=self.id, title="decision instability", rows=rows,
                          columns=["arm", "temperature", "steps", "tasks with unstable steps", "validation"])

    def print(self, results: dict[str, Instability], out: Any, analysis: Any) -> bool:
        if results:
            print_reports(reports_of(results), out)
        return True
