"""The report's figures from ``Analysis`` models: summary, pass^k curves, consistency gap, usage,
the memory plug-in (``memory``).

Each function turns analysis models into plain dicts (and SVG ``Markup``) for the template; no
number is computed here that the analysis already gives — only laid out."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from agentrig.analysis.memory import decisions_text, injected_text
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
        u = a.analysis.usage
        rows.append({**_figure_row(a.label, a.analysis.overall, a.analysis.n, u.cost_usd if u.priced else None),
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


def usage(arms: list[ArmView]) -> dict[str, Any]:
    rows, arms_out = [], []
    for a in arms:
        u = a.analysis.usage
        for r in u.roles:
            causes = ", ".join(f"{c} ×{n}" for c, n in sorted(r.retries_by_cause.items(), key=lambda x: -x[1]))
            rows.append({"label": a.label, "role": r.role, "models": ", ".join(r.models), "requests": _int(r.requests),
                         "failed": _int(r.failed), "attempts": _int(r.attempts), "retries": _int(r.retries),
                         "causes": causes, "prompt": _int(r.prompt_tokens), "completion": _int(r.completion_tokens),
                         "reasoning": _int(r.reasoning_tokens), "cached": _int(r.cached_tokens),
                         "p50": _num(r.latency_p50_s, 2), "p90": _num(r.latency_p90_s, 2),
                         "p99": _num(r.latency_p99_s, 2),
                         "cost": "–" if r.cost_usd is None or not u.priced else f"${r.cost_usd:,.4f}"})
        res = a.analysis.overall.resources
        rr = a.analysis.reruns
        ret = a.analysis.retries
        arms_out.append({
            "label": a.label,
            "cost": "–" if u.cost_usd is None or not u.priced else f"${u.cost_usd:,.2f}",
            "priced": u.priced, "unpriced": ", ".join(u.unpriced_models),
            "tokens_mean": _int(res.tokens_mean), "tokens_cv": _num(res.tokens_cv, 2),
            "tokens_cv_task": _num(res.tokens_cv_within_task, 2), "seconds_mean": _num(res.duration_mean_s, 2),
            "seconds_cv": _num(res.duration_cv, 2),
            "reruns": [{"trial": x.trial, "rate": pct(x.success_rate), "trials": x.trials, "tokens": _int(x.tokens),
                        "retries": x.retries} for x in rr.reruns],
            "best": rr.best, "worst": rr.worst, "spread": "–" if rr.spread_pp is None else f"{rr.spread_pp:.1f} pp",
            "retry_note": ret.note,
            "retry": {"retried": ret.retried, "retried_failed": ret.retried_failed, "clean": ret.clean,
                      "clean_failed": ret.clean_failed, "rate_retried": pct(ret.rate_retried),
                      "rate_clean": pct(ret.rate_clean), "p": _num(ret.p_value, 3)},
            # a component computed in no trial (not computed, or nothing to check) shows "—"
            "components": [{"name": c, "rate": "—" if v.rate is None else pct(v.rate), "trials": v.trials,
                            "passed": v.passed,
                            "in_basis": v.in_basis} for c, v in a.analysis.overall.components.items()],
            "terminations": sorted(a.analysis.overall.terminations.items(), key=lambda x: -x[1]),
        })
    return {"roles": rows, "arms": arms_out}


def _times(x: float | None) -> str:
    return "–" if x is None else f"×{x:.2f}"


def _delta(m: Any) -> dict[str, str]:
    if m is None or m.delta is None:
        return {"value": "–", "ci": "", "significance": ""}
    ci = "" if m.ci is None else f"{100 * m.ci[0]:+.1f} – {100 * m.ci[1]:+.1f} pp"
    return {"value": f"{100 * m.delta:+.1f} pp", "ci": ci,
            "significance": m.significance or "not called (configurations differ)"}


def differing(c: Any) -> dict[str, list[str]]:
    """What differs between a comparison's two sides (``config_diff``), for its banner: the arms'
    own settings (``intended``), anything else that changes what is measured (``unintended``: the
    banner is red), and what differs without changing it (``info``: seed, execution settings,
    agentrig's version)."""
    out: dict[str, list[str]] = {"intended": [], "unintended": [], "info": []}
    for d in c.config.differences:
        out["unintended" if d.kind == "mismatch" else d.kind].append(d.line())
    return out


def memory(arms: list[ArmView]) -> dict[str, Any]:
    """Per memory arm: what the plug-in did and cost, and its paired A/B against the baseline arm
    (``analysis.memory``); a Δpass^1 chart of the variants."""
    rows, ab, bars = [], [], []
    baselines = []
    for a in arms:
        m = a.analysis.memory
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
    # one baseline arm name per run (a report of several runs names them with their run)
    baseline = baselines[0][1] if len(baselines) == 1 else ", ".join(f"{r}:{b}" for r, b in baselines) or None
    chart = svg.hbars(bars, unit=" pp", label=f"Δpass^1 of each memory arm against {baseline or 'the baseline'}, "
                      "paired-bootstrap 95% intervals") if bars else None
    return {"rows": rows, "ab": ab, "baseline": baseline, "svg": chart}

