"""Reruns as a figure (analysis/figure.py): rerun i = the valid trials of index i over all tasks —
the best and worst rerun, their spread, tokens and retries (``usage.reruns`` computes it)."""

from __future__ import annotations

from typing import Any

from rich.markup import escape

from .figure import ArmInputs, Figure
from .summary import Reruns
from .text import f, pct, table
from .usage import reruns

RERUN_ROWS = 20  # more reruns than this: only best / worst / spread


class RerunsFigure(Figure):
    id = "reruns"
    result = Reruns
    json_keys = ("reruns",)
    analyze_slot = "details"
    report_slot = "usage"

    def compute(self, arm: ArmInputs) -> Reruns:
        return reruns(arm.valid, arm.n)

    def dump(self, dumped: Any) -> dict[str, Any]:
        return {"reruns": Reruns().model_dump() if dumped is None else dumped}

    def print(self, results: dict[str, Reruns], out: Any, analysis: Any) -> bool:
        n = analysis.n
        t = table("reruns (rerun i = trial i of every task)", ("arm", "left"), ("best", "right"), ("worst", "right"),
                  ("spread pp", "right"), ("tokens min–max", "right"), ("retries", "right"))
        for arm, r in results.items():
            rated = {s.trial: s for s in r.reruns}

            def at(i: int | None) -> str:
                return "-" if i is None else f"#{i} {pct(rated[i].success_rate)}"

            toks = [s.tokens for s in r.reruns if s.trials]
            t.add_row(escape(arm), at(r.best), at(r.worst), f(r.spread_pp, 1),
                      f"{min(toks):,}–{max(toks):,}" if toks else "-", str(sum(s.retries for s in r.reruns)))
        t.print(out)
        if 1 < n <= RERUN_ROWS:
            t = table("success rate per rerun", ("rerun", "right"), *[(escape(a), "right") for a in results])
            for i in range(n):
                t.add_row(str(i), *[f"{pct(r.reruns[i].success_rate)} ({r.reruns[i].successes}/"
                                    f"{r.reruns[i].trials})" for r in results.values()])
            t.print(out)
        return True
