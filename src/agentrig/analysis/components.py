"""Reward components as a figure (analysis/figure.py): per component, the valid trials where it
was computed and passed, and those whose reward basis holds it. The numbers are the arm's
``overall.components`` (computed with the core figures, in the analysis's record pass); this
figure shows them, and writes nothing else to the JSON."""

from __future__ import annotations

from typing import Any

from rich.markup import escape

from agentrig.tables import FitTable
from agentrig.types import Strict

from .figure import ArmInputs, Figure
from .summary import ComponentRate
from .text import pct_short, table


class ComponentRates(Strict):
    components: dict[str, ComponentRate] = {}


class Components(Figure):
    id = "components"
    result = ComponentRates
    json_keys = ()  # in overall.components
    report_slot = "usage"

    def compute(self, arm: ArmInputs) -> ComponentRates:
        return ComponentRates(components=arm.overall.components)

    def load(self, data: dict[str, Any]) -> ComponentRates:
        overall = data["overall"]
        comps = overall.get("components") if isinstance(overall, dict) else overall.components
        return ComponentRates.model_validate({"components": comps or {}})

    def print(self, results: dict[str, ComponentRates], out: Any, analysis: Any) -> bool:
        """One row per component, one column per arm: "pct passed/trials" (trials: the valid trials
        where it was computed). An arm gets an "in basis" column only where that count differs from
        the trials for some component (τ²'s reward basis); else the title says they are equal.
        Components named TASK::NAME (terminal tests) are listed under a row naming their task when the
        table with whole names does not fit the console on one line a row."""
        names = list(dict.fromkeys(c for r in results.values() for c in r.components))  # the benchmark's
        if not names:
            return True
        basis = {a: any(x.in_basis != x.trials for x in r.components.values()) for a, r in results.items()}
        cols: list[tuple] = [("component", "left")]
        for a in results:
            cols.append((escape(a), "right", a))
            if basis[a]:
                cols.append(("in basis", "right", a))
        equal = [a for a in results if not basis[a]]
        note = ("in basis (trials whose reward uses it) = trials for every component" if len(equal) == len(results)
                else f"in basis = trials for {', '.join(equal)}" if equal else "in basis = trials whose reward uses it")
        title = f"reward components: passed/trials per arm (trials: valid trials where computed; —: in none; {note})"
        t = _component_table(title, cols, results, names, basis, grouped=False)
        if not t.fits(out.width) and all("::" in c for c in names):
            t = _component_table(title, cols, results, names, basis, grouped=True)
        t.print(out)
        return True


def _component_table(title: str, cols: list[tuple], results: dict[str, ComponentRates], names: list[str],
                     basis: dict[str, bool], *, grouped: bool) -> FitTable:
    t = table(title, *cols)
    task = None
    for c in names:
        label = c
        if grouped:
            head, _, label = c.partition("::")
            if head != task:
                task = head
                t.add_row(escape(f"{head}::"), *[""] * (len(cols) - 1), label=f"{head}::")
            label = "  " + label
        cells = [escape(label)]
        for a, res in results.items():
            r = res.components.get(c)
            cells.append("—" if r is None or r.rate is None else f"{pct_short(r.rate)} {r.passed}/{r.trials}")
            if basis[a]:
                cells.append("" if r is None else str(r.in_basis))
        t.add_row(*cells, label=c)
    return t
