"""Terminations as a figure (analysis/figure.py): how the valid trials of each arm ended (the
arm's ``overall.terminations``, counted with the core figures; written nowhere else in the JSON)."""

from __future__ import annotations

from typing import Any

from rich.markup import escape

from agentrig.types import Strict

from .figure import ArmInputs, Figure
from .text import table


class TerminationCounts(Strict):
    counts: dict[str, int] = {}  # termination → valid trials, most frequent first


class Terminations(Figure):
    id = "terminations"
    result = TerminationCounts
    json_keys = ()  # in overall.terminations
    report_slot = "usage"

    def compute(self, arm: ArmInputs) -> TerminationCounts:
        return TerminationCounts(counts=arm.overall.terminations)

    def load(self, data: dict[str, Any]) -> TerminationCounts:
        overall = data["overall"]
        counts = overall.get("terminations") if isinstance(overall, dict) else overall.terminations
        return TerminationCounts(counts=counts or {})

    def print(self, results: dict[str, TerminationCounts], out: Any, analysis: Any) -> bool:
        names = list(dict.fromkeys(x for r in results.values() for x in r.counts))
        if not names:
            return True
        t = table("terminations (valid trials)", ("termination", "left"), *[(escape(a), "right") for a in results])
        for name in names:
            t.add_row(escape(name), *[str(r.counts.get(name, 0)) for r in results.values()])
        t.print(out)
        return True
