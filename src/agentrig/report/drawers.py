"""How the report draws the registered figures (the figure protocol, ``analysis/figure.py``):
``drawn(arms)`` loops over the registry and draws each figure at the slot of the page it names.

A figure is drawn from its view (``figure_generic.html``: a table, and bars when the view gives
them) unless a drawer is registered here under its id:

- ``DRAWERS``: a function from the figure's results by report label (and the report's arms,
  ``figures.ArmView``) to the template's data (None: nothing to draw), and the template that draws
  it at the figure's slot (``fig.data`` in the template); ``NAV``: the page's navigation link of a
  figure with a section of its own;
- ``PARTS``: for the figures at slot ``"usage"``, a function from one arm's result (and the arm)
  to its part of that arm's block in the usage section, and the part's template (``part.data``).

The analysis never imports the report; the report knows a figure only by its id.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from agentrig.analysis import figure as protocol

from . import svg
from .figures import ArmView, _int, _num, differing, pct

__all__ = ["DRAWERS", "NAV", "PARTS", "drawn", "wanted_trials"]

Drawer = Callable[[dict[str, Any], list[ArmView]], Any]
Part = Callable[[Any, ArmView], dict[str, Any]]

CLASS_COLORS = {
    "ran_out": "#7f7f7f", "format_errors": "#a0522d", "context_overflow": "#5a5a8c", "extra_write": "#c23b5a", "early_stop": "#8a55c9",
    "wrong_arguments": "#e07b28",
    "partial_compound": "#d4a72c", "missing_action": "#3b6fd4", "communication_miss": "#1f9bb0",
    "judged_behaviour": "#2c9a5a", "other": "#b5b5b5",
}


def _link(label: str, domain: str, task: str, trial: int) -> dict[str, Any]:
    return {"arm": label, "domain": domain, "task": task, "trial": trial, "text": f"{task}#{trial}"}


# ---- consistency, failures (analysis/consistency.py, analysis/failures.py) -----------------------


def _consistency(results: dict[str, Any], arms: list[ArmView]) -> list[dict[str, Any]]:
    """Per arm: where it forks — its most inconsistent tasks and the options at each fork."""
    from agentrig.analysis.consistency import FORKS_SHOWN, shown

    out = []
    for a in arms:
        result = results.get(a.label)
        items = result.tasks if result is not None else []
        rows = []
        for tc in shown(result) if result is not None else []:
            forks = [{"call": f.call if f.call is not None else "(conversation ended)", "trials": len(f.trials),
                      "successes": f.successes,
                      "link": _link(a.label, tc.domain, tc.task_id, f.trials[0]) if f.trials else None}
                     for f in tc.fork[:FORKS_SHOWN]]
            rows.append({"task": f"{tc.domain}/{tc.task_id}", "pattern": tc.pattern, "c": tc.c, "n": tc.n,
                         "mixed": tc.mixed, "chains": tc.distinct_chains, "name_chains": tc.distinct_name_chains,
                         "diverge": "–" if tc.diverge_step is None else tc.diverge_step,
                         "similarity": "–" if tc.similarity is None else f"{tc.similarity:.2f}",
                         "modal": pct(tc.modal_share, 0), "forks": forks})
        mixed = sum(1 for t in items if t.mixed)
        forked = sum(1 for t in items if t.distinct_chains > 1)
        out.append({"label": a.label, "tasks": len(items), "mixed": mixed, "forked": forked, "rows": rows})
    return out


def _failures(results: dict[str, Any], arms: list[ArmView]) -> dict[str, Any]:
    """Counts of primary (and any) classes per arm, with example trials to open."""
    note = "No failed valid trials." if arms and all(a.label in results for a in arms) \
        else "No failure taxonomy (the analysis is unavailable, or every trial passed)."
    classes: dict[str, str] = {}
    per_arm = []
    for a in arms:
        if a.label not in results:
            continue
        tax = results[a.label].overall
        counts = {}
        for c in tax.classes:
            classes.setdefault(c.id, c.label)
            counts[c.id] = c
        per_arm.append((a, tax, counts))
    if not per_arm:
        return {"svg": None, "rows": [], "arms": [], "note": note}
    seen = {c for _, _, counts in per_arm for c, cc in counts.items() if cc.any or cc.primary}
    order = [c for c in CLASS_COLORS if c in seen] + sorted(c for c in seen if c not in CLASS_COLORS)
    colors = {classes[c]: CLASS_COLORS.get(c, svg.color(i)) for i, c in enumerate(order)}
    bars = [(a.label, [(classes[c], counts[c].primary if c in counts else 0) for c in order]) for a, _, counts in per_arm]
    chart = svg.stacked(bars, colors, label="failed valid trials by primary failure class") \
        if any(t.failed for _, t, _ in per_arm) else None
    rows = []
    for c in order:
        cells = []
        for a, tax, counts in per_arm:
            cc = counts.get(c)
            if cc is None:
                cells.append({"primary": 0, "any": 0, "share": "–", "examples": []})
                continue
            examples = [_link(a.label, k.domain, k.task_id, k.trial) for k in cc.examples]
            if not examples:
                examples = [_link(a.label, k.domain, k.task_id, k.trial) for k in cc.secondary_examples]
            cells.append({"primary": cc.primary, "any": cc.any,
                          "share": pct(cc.primary / tax.failed, 0) if tax.failed else "–", "examples": examples})
        rows.append({"id": c, "label": classes[c], "color": colors[classes[c]], "cells": cells})
    return {"svg": chart, "rows": rows, "arms": [{"label": a.label, "failed": t.failed} for a, t, _ in per_arm],
            "note": note}


# ---- decision instability (analysis/instability_view.py) -----------------------------------------


def _instability(results: dict[str, Any], arms: list[ArmView]) -> list[dict[str, Any]] | None:
    """Per resampled arm and temperature: the validation sentences and its tasks, most unstable first."""
    from agentrig.analysis.instability_view import TOP_TASKS, reports_of, unstable_text

    if not results:
        return None
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


# ---- the memory plug-in (plugins/memory/figure.py) ------------------------------------------------


def _times(x: float | None) -> str:
    return "–" if x is None else f"×{x:.2f}"


def _delta(m: Any) -> dict[str, str]:
    if m is None or m.delta is None:
        return {"value": "–", "ci": "", "significance": ""}
    ci = "" if m.ci is None else f"{100 * m.ci[0]:+.1f} – {100 * m.ci[1]:+.1f} pp"
    return {"value": f"{100 * m.delta:+.1f} pp", "ci": ci,
            "significance": m.significance or "not called (configurations differ)"}


def _memory(results: dict[str, Any], arms: list[ArmView]) -> dict[str, Any] | None:
    """Per memory arm: what the plug-in did and cost, and its paired A/B against the baseline arm;
    a Δpass^1 chart of the variants."""
    from agentrig.plugins.memory.figure import decisions_text, injected_text

    rows, ab, bars = [], [], []
    baselines = []
    for a in arms:
        m = results.get(a.label)
        if m is None:
            continue
        if m.baseline and (a.run_label, m.baseline) not in baselines:
            baselines.append((a.run_label, m.baseline))
        t, lat = m.tokens, m.latency_s
        rows.append({
            "label": a.label, "color": a.color, "modes": ", ".join(m.modes), "trials": m.trials,
            "triggers": m.triggers, "triggers_per_trial": _num(m.triggers_per_trial, 1),
            "injected": injected_text(m), "rate": pct(m.injection_rate), "per_step": _num(m.injections_per_step, 2),
            "decisions": decisions_text(m), "rejected": m.edit_rejected,
            "edits": _num(m.edit_tool_calls_per_trigger, 2), "bank": _num(m.bank_entries_mean, 1),
            "tokens": _int(t.memory_per_trial), "agent_tokens": _int(t.agent_per_trial), "tokens_ratio": _times(t.ratio),
            "tokens_trigger": _int(t.per_trigger),
            "seconds": _num(lat.memory_per_trial, 2), "agent_seconds": _num(lat.agent_per_trial, 2),
            "seconds_ratio": _times(lat.ratio), "share": pct(m.latency_share),
            "failed": m.failed_calls, "calls": m.calls, "failed_trials": m.failed_trials,
            "causes": ", ".join(f"{c} ×{n}" for c, n in m.failure_causes.items()), "trigger_errors": m.trigger_errors,
        })
        c = m.ab
        if c is None:
            ab.append({"label": a.label, "note": m.ab_note or "", "metrics": [], "comparable": True})
            continue
        p1 = c.metrics.get("pass^1")
        if p1 is not None and p1.delta is not None:
            lo, hi = p1.ci if p1.ci is not None else (None, None)
            tag = p1.significance or "not comparable"
            bars.append(svg.Bar(a.label, 100 * p1.delta, None if lo is None else 100 * lo,
                                None if hi is None else 100 * hi, a.color, note=f"{100 * p1.delta:+.1f} pp ({tag})"))
        ab.append({"label": a.label, "note": None, "verdict": c.verdict, "comparable": c.comparable,
                   "differs": differing(c), "tasks": c.paired.tasks, "k": c.paired.k, "mcnemar_p": f"{c.mcnemar.p:.3g}",
                   "better": len(c.flips.better), "worse": len(c.flips.worse),
                   "metrics": [{"name": x.name, "a": pct(x.a), "b": pct(x.b), **_delta(x)} for x in c.shown_metrics()]})
    if not rows:
        return None
    # one baseline arm name per run (a report of several runs names them with their run)
    baseline = baselines[0][1] if len(baselines) == 1 else ", ".join(f"{r}:{b}" for r, b in baselines) or None
    chart = svg.hbars(bars, unit=" pp", label=f"Δpass^1 of each memory arm against {baseline or 'the baseline'}, "
                      "paired-bootstrap 95% intervals") if bars else None
    return {"rows": rows, "ab": ab, "baseline": baseline, "svg": chart}


# ---- the usage section: usage, and each arm's parts ------------------------------------------------


def _usage(results: dict[str, Any], arms: list[ArmView]) -> dict[str, Any]:
    """Model calls per role of every arm (the section's table)."""
    rows = []
    for a in arms:
        u = results.get(a.label)
        for r in u.roles if u is not None else []:
            causes = ", ".join(f"{c} ×{n}" for c, n in sorted(r.retries_by_cause.items(), key=lambda x: -x[1]))
            rows.append({"label": a.label, "role": r.role, "models": ", ".join(r.models), "requests": _int(r.requests),
                         "failed": _int(r.failed), "attempts": _int(r.attempts), "retries": _int(r.retries),
                         "causes": causes, "prompt": _int(r.prompt_tokens), "completion": _int(r.completion_tokens),
                         "reasoning": _int(r.reasoning_tokens), "cached": _int(r.cached_tokens),
                         "p50": _num(r.latency_p50_s, 2), "p90": _num(r.latency_p90_s, 2),
                         "p99": _num(r.latency_p99_s, 2),
                         "cost": "–" if r.cost_usd is None or not u.priced else f"${r.cost_usd:,.4f}"})
    return {"roles": rows}


def _usage_part(u: Any, a: ArmView) -> dict[str, Any]:
    res = a.analysis.overall.resources
    return {"cost": "–" if u.cost_usd is None or not u.priced else f"${u.cost_usd:,.2f}",
            "priced": u.priced, "unpriced": ", ".join(u.unpriced_models),
            "tokens_mean": _int(res.tokens_mean), "tokens_cv": _num(res.tokens_cv, 2),
            "tokens_cv_task": _num(res.tokens_cv_within_task, 2), "seconds_mean": _num(res.duration_mean_s, 2),
            "seconds_cv": _num(res.duration_cv, 2)}


def _components_part(r: Any, a: ArmView) -> dict[str, Any]:
    # a component computed in no trial (not computed, or nothing to check) shows "—"
    return {"components": [{"name": c, "rate": "—" if v.rate is None else pct(v.rate), "trials": v.trials,
                            "passed": v.passed, "in_basis": v.in_basis} for c, v in r.components.items()]}


def _terminations_part(r: Any, a: ArmView) -> dict[str, Any]:
    return {"terminations": sorted(r.counts.items(), key=lambda x: -x[1])}


def _reruns_part(rr: Any, a: ArmView) -> dict[str, Any]:
    return {"reruns": [{"trial": x.trial, "rate": pct(x.success_rate), "trials": x.trials, "tokens": _int(x.tokens),
                        "retries": x.retries} for x in rr.reruns],
            "best": rr.best, "worst": rr.worst, "spread": "–" if rr.spread_pp is None else f"{rr.spread_pp:.1f} pp"}


def _retries_part(ret: Any, a: ArmView) -> dict[str, Any]:
    return {"retry_note": ret.note,
            "retry": {"retried": ret.retried, "retried_failed": ret.retried_failed, "clean": ret.clean,
                      "clean_failed": ret.clean_failed, "rate_retried": pct(ret.rate_retried),
                      "rate_clean": pct(ret.rate_clean), "p": _num(ret.p_value, 3)}}


# figure id → (drawer, template)
DRAWERS: dict[str, tuple[Drawer, str]] = {
    "usage": (_usage, "figure_usage.html"),
    "consistency": (_consistency, "figure_consistency.html"),
    "failures": (_failures, "figure_failures.html"),
    "instability": (_instability, "figure_instability.html"),
    "memory": (_memory, "figure_memory.html"),
}

# figure id → (anchor, label) of its link in the page's navigation (a figure with a section of its own)
NAV: dict[str, tuple[str, str]] = {"memory": ("memory", "Memory")}

# figure id → (its part of an arm's block in the usage section, template), in the registry's order
PARTS: dict[str, tuple[Part, str]] = {
    "usage": (_usage_part, "part_usage.html"),
    "components": (_components_part, "part_components.html"),
    "terminations": (_terminations_part, "part_terminations.html"),
    "reruns": (_reruns_part, "part_reruns.html"),
    "retries": (_retries_part, "part_retries.html"),
}


# ---- the loop over the registry ----------------------------------------------------------------------


def _generic(fig: protocol.Figure, results: dict[str, Any], colors: dict[str, str]) -> dict[str, Any] | None:
    view = fig.view(results)
    if view is None:
        return None
    bars = [svg.Bar(b.name, b.value, color=colors.get(b.name, svg.PALETTE[0]), note=b.note or "") for b in view.bars]
    chart = svg.hbars(bars, unit=view.unit, label=view.title) if bars else None
    return {"id": view.id, "template": "figure_generic.html", "title": view.title, "columns": view.columns,
            "rows": view.rows, "note": view.note, "svg": chart, "nav": None}


def drawn(arms: list[ArmView]) -> dict[str, Any]:
    """Every registered figure over the report's arms, drawn, by the slot of the page it goes to
    (``Figure.report_slot``); ``"arms"``: each arm's block of the usage section, the parts the
    figures at slot ``"usage"`` draw for it (``PARTS``)."""
    by_label = [a.analysis.model_copy(update={"arm": a.label}) for a in arms]  # several runs may share arm names
    colors = {a.label: a.color for a in arms}
    parts: dict[str, list[dict[str, Any]]] = {a.label: [] for a in arms}
    out: dict[str, Any] = {}
    for fig in protocol.registered():
        results = protocol.results_of(fig, by_label)
        if fig.id in PARTS:
            draw_part, part_template = PARTS[fig.id]
            for a in arms:
                if a.label in results:
                    parts[a.label].append({"template": part_template, "data": draw_part(results[a.label], a)})
        if fig.id in DRAWERS:
            draw, template = DRAWERS[fig.id]
            data = draw(results, arms)
            item = None if data is None else {"id": fig.id, "template": template, "data": data,
                                              "nav": NAV.get(fig.id)}
        elif fig.id in PARTS or not results:
            continue
        else:
            item = _generic(fig, results, colors)
        if item is not None:
            out.setdefault(fig.report_slot, []).append(item)
    out["arms"] = [{"label": a.label, "parts": parts[a.label]} for a in arms]
    return out


def wanted_trials(arms: list[ArmView]) -> dict[str, set[tuple[str, str, int]]]:
    """Trials the figures link to, by arm label (their trajectories should be in the file)."""
    out: dict[str, set[tuple[str, str, int]]] = {}
    for a in arms:
        keys = out.setdefault(a.label, set())
        for fig in protocol.registered():
            result = a.analysis.figures.get(fig.id)
            if result is not None:
                keys.update(fig.linked_trials(result))
    return out
