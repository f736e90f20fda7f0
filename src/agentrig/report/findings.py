"""The report's A/B findings: which sides to compare, and the differences between arms or runs
(``analysis.compare``). The figures of each arm (where behaviour forks, why trials fail, …) are
drawn by ``figures.drawn``."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agentrig.analysis import compare as cmp
from agentrig.analysis.sides import leakage, load_side
from agentrig.analysis.config_diff import differences

from . import svg
from .figures import differing, pct

MAX_COMPARISONS = 12


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
