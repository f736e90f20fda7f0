"""The report's core figures from ``Analysis`` models: summary, pass^k curves, consistency gap
(every other figure is a registered one, drawn by ``drawers.drawn``), and the helpers they share.

Each function turns analysis models into plain dicts (and SVG ``Markup``) for the template; no
number is computed here that the analysis already gives — only laid out."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from agentrig.analysis.summary import Analysis, ArmAnalysis, Estimate, Figures

from . import svg


@dataclass
class ArmView:
    """One arm of the report: its label and its run's analysis."""

    label: str
    index: int
    analysis: ArmAnalysis
    run_label: str

    @property
    def color(self) -> str:
        return svg.color(self.index)


def arm_views(labels: list[tuple[str, str, str]], analyses: dict[str, Analysis | None]) -> list[ArmView]:
    """``labels`` = (label, run label, arm) per arm in report order; ``analyses`` by run label."""
    out = []
    for i, (label, run, arm) in enumerate(labels):
        a = analyses.get(run)
        if a is not None and arm in a.arms:
            out.append(ArmView(label, i, a.arms[arm], run))
    return out


def pct(x: float | None, digits: int = 1) -> str:
    return "–" if x is None else f"{100 * x:.{digits}f}%"


def est(e: Estimate, *, percent: bool = True) -> dict[str, str]:
    if e.value is None:
        return {"value": "–", "ci": ""}
    if percent:
        value, ci = pct(e.value), (f"{pct(e.low)} – {pct(e.high)}" if e.low is not None else "")
    else:
        value = f"{e.value:+.1f}"
        ci = f"{e.low:+.1f} – {e.high:+.1f}" if e.low is not None and e.high is not None else ""
    return {"value": value, "ci": ci}


def _num(x: float | None, digits: int = 3) -> str:
    return "–" if x is None else f"{x:.{digits}f}"


def _int(x: int | float | None) -> str:
    return "–" if x is None else f"{x:,.0f}"


CAUSE_CHARS = 40  # of an invalid cause in the summary table (a sandbox's can run to hundreds); whole in its title


def _clip(text: str, n: int) -> str:
    return text if len(text) <= n else text[: n - 1].rstrip() + "…"


def _figure_row(label: str, f: Figures, n: int, cost: float | None = None) -> dict[str, Any]:
    causes = ", ".join(f"{_clip(c, CAUSE_CHARS)} ×{k}" for c, k in list(f.invalid_causes.items())[:4])
    causes_full = "; ".join(f"{c} ×{k}" for c, k in f.invalid_causes.items())
    return {
        "label": label, "scope": f.scope,
        "valid": f"{f.valid:,}/{f.trials_planned:,}", "invalid": f.invalid, "missing": f.missing,
        "invalid_attempts": f.invalid_attempts, "invalid_causes": causes, "invalid_causes_full": causes_full,
        "tasks": f"{f.tasks}/{f.tasks_planned}", "mean_reward": _num(f.mean_reward),
        "pass_1": est(f.pass_1), "pass_n": est(f.pass_n), "gap": est(f.gap_pp, percent=False),
        "mean_at_n": pct(f.mean_at_n), "mixed": pct(f.mixed_fraction, 0), "mixed_tasks": f.mixed_tasks,
        "excluded": f.pass_n_excluded, "n": n,
        "tokens": _int(f.resources.tokens_mean), "seconds": _num(f.resources.duration_mean_s, 2),
        "cost": "–" if cost is None else f"${cost:,.2f}",
    }


def summary(arms: list[ArmView]) -> dict[str, Any]:
    rows, domains = [], []
    for a in arms:
        u = a.analysis.figures.get("usage")
        cost = u.cost_usd if u is not None and u.priced else None
        rows.append({**_figure_row(a.label, a.analysis.overall, a.analysis.n, cost),
                     "color": a.color})
        if len(a.analysis.domains) > 1:
            for name, f in a.analysis.domains.items():
                domains.append(_figure_row(a.label, f, a.analysis.n))
    return {"rows": rows, "domains": domains, "n": max((a.analysis.n for a in arms), default=0)}


def passk_chart(arms: list[ArmView]) -> dict[str, Any]:
    series, table_k = [], 0
    for a in arms:
        curve = [p for p in a.analysis.overall.curve if p.pass_hat.value is not None]
        pts = [(p.k, p.pass_hat.value) for p in curve]
        band = [(p.k, p.pass_hat.low, p.pass_hat.high) for p in curve
                if p.pass_hat.low is not None and p.pass_hat.high is not None]
        if pts:
            series.append(svg.Series(a.label, pts, band, a.color))
            table_k = max(table_k, len(a.analysis.overall.curve))
    if not series:
        return {"svg": None, "table": []}
    chart = svg.line_chart(series, x_label="k (trials that must all succeed)", y_label="pass^k",
                           label="pass^k curves with 95% confidence bands")
    ks = sorted({p.k for a in arms for p in a.analysis.overall.curve})
    shown = ks if len(ks) <= 12 else sorted({ks[0], ks[-1], *ks[:: max(1, len(ks) // 8)]})
    table = []
    for a in arms:
        by_k = {p.k: p for p in a.analysis.overall.curve}
        table.append({"label": a.label, "cells": [
            {"k": k, **(est(by_k[k].pass_hat) if k in by_k else {"value": "–", "ci": ""}),
             "pass_at": pct(by_k[k].pass_at) if k in by_k else "–"} for k in shown]})
    return {"svg": chart, "ks": shown, "table": table}


def gap_chart(arms: list[ArmView]) -> dict[str, Any]:
    bars = []
    for a in arms:
        g = a.analysis.overall.gap_pp
        if g.value is not None:
            bars.append(svg.Bar(a.label, g.value, g.low, g.high, a.color,
                                note=f"{g.value:.1f} pp" + (f" [{g.low:.1f}, {g.high:.1f}]" if g.low is not None else "")))
    if not bars:
        return {"svg": None, "rows": []}
    chart = svg.hbars(bars, unit=" pp", label="consistency gap per arm, percentage points")
    rows = [{"label": a.label, "mean_at_n": pct(a.analysis.overall.mean_at_n),
             "pass_n": est(a.analysis.overall.pass_n), "gap": est(a.analysis.overall.gap_pp, percent=False),
             "mixed": f"{a.analysis.overall.mixed_tasks} ({pct(a.analysis.overall.mixed_fraction, 0)})",
             "n": a.analysis.n} for a in arms]
    return {"svg": chart, "rows": rows}


def differing(c: Any) -> dict[str, list[str]]:
    """What differs between a comparison's two sides (``config_diff``), for its banner: the arms'
    own settings (``intended``), anything else that changes what is measured (``unintended``: the
    banner is red), and what differs without changing it (``info``: seed, execution settings,
    agentrig's version)."""
    out: dict[str, list[str]] = {"intended": [], "unintended": [], "info": []}
    for d in c.config.differences:
        out["unintended" if d.kind == "mismatch" else d.kind].append(d.line())
    return out
