"""The report's findings: where behaviour forks (consistency), why trials fail (taxonomy), and the
A/B differences between arms or runs (``analysis.compare``)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agentrig.analysis import compare as cmp
from agentrig.analysis.sides import leakage, load_side
from agentrig.analysis.config_diff import differences

from . import svg
from .figures import ArmView, differing, pct

CONSISTENCY_ROWS = 12
MAX_COMPARISONS = 12
CLASS_COLORS = {
    "ran_out": "#7f7f7f", "format_errors": "#a0522d", "context_overflow": "#5a5a8c", "extra_write": "#c23b5a", "early_stop": "#8a55c9",
    "wrong_arguments": "#e07b28",
    "partial_compound": "#d4a72c", "missing_action": "#3b6fd4", "communication_miss": "#1f9bb0",
    "judged_behaviour": "#2c9a5a", "other": "#b5b5b5",
}


def _link(label: str, domain: str, task: str, trial: int) -> dict[str, Any]:
    return {"arm": label, "domain": domain, "task": task, "trial": trial, "text": f"{task}#{trial}"}


def consistency(arms: list[ArmView]) -> list[dict[str, Any]]:
    out = []
    for a in arms:
        items = a.analysis.consistency
        rows = []
        for tc in [t for t in items if t.mixed or t.distinct_chains > 1][:CONSISTENCY_ROWS]:
            forks = [{"call": f.call if f.call is not None else "(conversation ended)", "trials": len(f.trials),
                      "successes": f.successes,
                      "link": _link(a.label, tc.domain, tc.task_id, f.trials[0]) if f.trials else None}
                     for f in tc.fork[:4]]
            rows.append({"task": f"{tc.domain}/{tc.task_id}", "pattern": tc.pattern, "c": tc.c, "n": tc.n,
                         "mixed": tc.mixed, "chains": tc.distinct_chains, "name_chains": tc.distinct_name_chains,
                         "diverge": "–" if tc.diverge_step is None else tc.diverge_step,
                         "similarity": "–" if tc.similarity is None else f"{tc.similarity:.2f}",
                         "modal": pct(tc.modal_share, 0), "forks": forks})
        mixed = sum(1 for t in items if t.mixed)
        forked = sum(1 for t in items if t.distinct_chains > 1)
        out.append({"label": a.label, "tasks": len(items), "mixed": mixed, "forked": forked, "rows": rows})
    return out


def failures(arms: list[ArmView]) -> dict[str, Any]:
    """Counts of primary (and any) classes per arm, with example trials to open."""
    classes: dict[str, str] = {}
    per_arm = []
    for a in arms:
        tax = a.analysis.failures
        if tax is None:
            continue
        counts = {}
        for c in tax.classes:
            classes.setdefault(c.id, c.label)
            counts[c.id] = c
        per_arm.append((a, tax, counts))
    if not per_arm:
        return {"svg": None, "rows": [], "arms": []}
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
    return {"svg": chart, "rows": rows, "arms": [{"label": a.label, "failed": t.failed} for a, t, _ in per_arm]}


def wanted_trials(arms: list[ArmView]) -> dict[str, set[tuple[str, str, int]]]:
    """Trials other sections link to, by arm label (their trajectories should be in the file)."""
    out: dict[str, set[tuple[str, str, int]]] = {}
    for a in arms:
        keys = out.setdefault(a.label, set())
        if a.analysis.failures is not None:
            for c in a.analysis.failures.classes:
                keys.update((k.domain, k.task_id, k.trial) for k in c.examples + c.secondary_examples)
        for tc in [t for t in a.analysis.consistency if t.mixed or t.distinct_chains > 1][:CONSISTENCY_ROWS]:
            keys.update((tc.domain, tc.task_id, f.trials[0]) for f in tc.fork[:4] if f.trials)
    return out


# -- A/B -------------------------------------------------------------------------------------------

def pairs(sides: list[tuple[str, Path, str]]) -> list[tuple[int, int]]:
    """Which sides to compare: ``sides`` = (run label, run dir, arm) in report order. Within each
    run, every arm against the run's first arm (the comparison the experiment was written for:
    e.g. the demo's bash-text against bash-native); an arm of a later run that the first run also
    has, against that arm instead (the same arm in two runs). Only a later run's lone arm with no
    namesake is compared across runs, with the first run's first arm (a guess ``comparisons`` keeps
    only when it is a controlled comparison)."""
    if len(sides) < 2:
        return []
    first_run = sides[0][0]
    base = {arm: i for i, (run, _, arm) in enumerate(sides) if run == first_run}
    run_first: dict[str, int] = {}
    run_size: dict[str, int] = {}
    for i, (run, _, _) in enumerate(sides):
        run_first.setdefault(run, i)
        run_size[run] = run_size.get(run, 0) + 1
    out = []
    for i, (run, _, arm) in enumerate(sides):
        if run == first_run:
            j = run_first[run]
        elif arm in base:
            j = base[arm]
        elif run_size[run] > 1:
            j = run_first[run]
        else:
            j = 0
        if i != j:
            out.append((j, i))
    return out[:MAX_COMPARISONS]


@dataclass
class Unpaired:
    """A guessed pair (arms of different runs and names) left out: it would not be controlled."""

    a: str
    b: str
    mismatch: list[str]

    def note(self) -> str:
        shown = "; ".join(self.mismatch[:4]) + (f"; … {len(self.mismatch) - 4} more" if len(self.mismatch) > 4 else "")
        return (f"{self.b} is not compared with {self.a}: their runs differ beyond the arms' own settings "
                f"({shown}), so an A/B of them would not be a controlled comparison. "
                "`agentrig compare` compares any two sides on request.")


def comparisons(sides: list[tuple[str, Path, str]], labels: list[str]) -> tuple[list[cmp.Comparison], list[Unpaired]]:
    """The A/B comparisons of ``pairs``, and the guessed pairs left out (``Unpaired``): the lone arm
    of a later run with no arm of its name in the first run is compared with the first run's first
    arm only when nothing but the arms' own settings differs. A pair the user asked for by name (the
    same arm in two runs) or within a run is always made, its differences flagged."""
    out, unpaired = [], []
    for j, i in pairs(sides):
        a = load_side(f"{sides[j][1]}:{sides[j][2]}", "A")
        b = load_side(f"{sides[i][1]}:{sides[i][2]}", "B")
        a.side.label, b.side.label = labels[j], labels[i]
        if not set(a.counts) & set(b.counts):
            continue
        diffs = differences(a.config, b.config)
        guessed = sides[i][0] != sides[j][0] and sides[i][2] != sides[j][2]
        mismatch = [d.line() for d in diffs if d.kind == "mismatch"]
        if guessed and mismatch:
            unpaired.append(Unpaired(labels[j], labels[i], mismatch))
            continue
        planned = [x for x in (a.side.trials, b.side.trials) if x]
        k = min(planned) if planned else 1
        out.append(cmp.build(a.side, b.side, a.counts, b.counts, diffs, k=k, warnings=leakage(a, b)))
    return out, unpaired


def _sig_color(sig: str | None) -> str:
    return {"worse": "#c23b5a", "better": "#2c9a5a", "none": "#3b6fd4"}.get(sig or "", "#9a9a9a")


def ab(comps: list[cmp.Comparison]) -> dict[str, Any]:
    if not comps:
        return {"svg": None, "rows": []}
    bars: list[svg.Bar | svg.Group] = []
    rows = []
    for c in comps:
        shown = c.shown_metrics()
        group = svg.Group(f"{c.b.label} − {c.a.label}")  # one titled group per comparison
        for m in shown:
            if m.delta is None:
                continue
            if group not in bars:
                bars.append(group)
            lo, hi = (m.ci if m.ci is not None else (None, None))
            tag = m.significance or "not comparable"
            bars.append(svg.Bar(f"Δ{m.name}", 100 * m.delta, None if lo is None else 100 * lo,
                                None if hi is None else 100 * hi, _sig_color(m.significance),
                                note=f"{100 * m.delta:+.1f} pp ({tag})"))
        rows.append({
            "a": c.a.label, "b": c.b.label, "verdict": c.verdict, "comparable": c.comparable,
            "differs": differing(c), "paired": c.paired.tasks, "only_a": c.paired.only_a, "only_b": c.paired.only_b,
            "k": c.paired.k, "mcnemar_p": f"{c.mcnemar.p:.3g}",
            "metrics": [{"name": m.name, "a": pct(m.a), "b": pct(m.b),
                         "delta": "–" if m.delta is None else f"{100 * m.delta:+.1f} pp",
                         "ci": "" if m.ci is None else f"{100 * m.ci[0]:+.1f} – {100 * m.ci[1]:+.1f} pp",
                         "significance": m.significance or "not called (configurations differ)", "tasks": m.tasks}
                        for m in shown],
            "worse": [f"{f.domain}/{f.task_id} ({f.a[0]}/{f.a[1]} → {f.b[0]}/{f.b[1]})" for f in c.flips.worse[:10]],
            "better": [f"{f.domain}/{f.task_id} ({f.a[0]}/{f.a[1]} → {f.b[0]}/{f.b[1]})" for f in c.flips.better[:10]],
            "n_worse": len(c.flips.worse), "n_better": len(c.flips.better),
            "differences": [d.line() for d in c.config.differences if d.kind != "info"][:15],
            "warnings": list(c.warnings),
        })
    chart = svg.hbars(bars, unit=" pp", label="A/B differences with paired-bootstrap 95% CIs", width=760) if bars else None
    return {"svg": chart, "rows": rows, "level": comps[0].ci_level}
