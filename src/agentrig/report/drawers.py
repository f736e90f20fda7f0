"""How the report draws the figures of the figure protocol (``analysis/figure.py``).

A figure is drawn from its view (``figure_generic.html``: a table, and bars when the view gives
them) unless a drawer is registered here under its id: a function from the figure's results by
report label (and the arms) to the template's data, and the template that draws it. The analysis
never imports the report; the report knows a figure only by its id.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from agentrig.analysis import figure as protocol

from . import svg

__all__ = ["DRAWERS", "drawn"]

Drawer = Callable[[dict[str, dict[str, Any]], list[Any]], Any]


def _instability(results: dict[str, dict[str, Any]], arms: list[Any]) -> list[dict[str, Any]]:
    """Per resampled arm and temperature: the validation sentences and its tasks, most unstable first."""
    from agentrig.analysis.instability_view import TOP_TASKS, reports_of, unstable_text

    runs = list(dict.fromkeys(a.run_label for a in arms))
    order = {a.label: (runs.index(a.run_label), a.analysis.arm) for a in arms}
    out = []
    for label in sorted(results, key=lambda x: order[x]):
        for r in reports_of({label: results[label]}):
            several = len({t.domain for t in r.tasks}) > 1
            rows = [{"task": f"{t.domain}/{t.task_id}" if several else t.task_id, "c": t.c, "n": t.n,
                     "mixed": f"{t.mixed_rate:.2f}", "instability": f"{t.instability:.3f}",
                     "unstable": unstable_text(t), "fork": "–" if t.fork_step is None else str(t.fork_step)}
                    for t in sorted(r.tasks, key=lambda x: (-x.instability, x.domain, x.task_id))[:TOP_TASKS]]
            out.append({"label": label, "temperature": f"{r.temperature:g}", "steps": r.steps, "samples": r.samples,
                        "trajectories": len(r.trajectories), "threshold": f"{r.threshold:g}",
                        "sentence": r.validation.sentence, "fork_sentence": r.validation.fork_sentence, "rows": rows})
    return out


# figure id → (drawer, template)
DRAWERS: dict[str, tuple[Drawer, str]] = {
    "instability": (_instability, "figure_instability.html"),
}


def _generic(fig: protocol.Figure, by_label: dict[str, Any], colors: dict[str, str]) -> dict[str, Any] | None:
    view = fig.view(protocol.results_of(fig, list(by_label.values())))
    if view is None:
        return None
    bars = [svg.Bar(b.name, b.value, color=colors.get(b.name, svg.PALETTE[0]), note=b.note or "") for b in view.bars]
    chart = svg.hbars(bars, unit=view.unit, label=view.title) if bars else None
    return {"id": view.id, "template": "figure_generic.html", "title": view.title, "columns": view.columns,
            "rows": view.rows, "note": view.note, "svg": chart}


def drawn(arms: list[Any]) -> dict[str, list[dict[str, Any]]]:
    """Every registered figure over the report's arms (``ArmView``), drawn, by the slot of the page
    it goes to (``Figure.report_slot``)."""
    by_label, colors, views = {}, {}, []
    for a in arms:  # an arm's figures under its report label (several runs may share arm names)
        if a.analysis is not None and a.analysis.figures:
            by_label[a.label] = a.analysis.model_copy(update={"arm": a.label})
            colors[a.label] = a.color
            views.append(a)
    out: dict[str, list[dict[str, Any]]] = {}
    for fig in protocol.registered():
        results = protocol.results_of(fig, list(by_label.values()))
        if not results:
            continue
        if fig.id in DRAWERS:
            draw, template = DRAWERS[fig.id]
            item: dict[str, Any] | None = {"id": fig.id, "template": template, "data": draw(results, views)}
        else:
            item = _generic(fig, by_label, colors)
        if item is not None:
            out.setdefault(fig.report_slot, []).append(item)
    return out
