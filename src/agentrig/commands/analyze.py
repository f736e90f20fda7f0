"""``agentrig analyze RUN [--arm A] [--json]``: the figures of a run, for people or programs.

People get rich tables: a summary per arm (pass^1, pass^n and the consistency gap with their 95%
bootstrap intervals, Mean@n, the mixed-outcome fraction) and the pass^k curve, then every
registered figure (the figure protocol, ``analysis/figure.py``) by its slot — reward components,
terminations, durations, a benchmark's own (AppWorld's goal completion); usage, reruns, the retries
check, the most inconsistent tasks, the failure classes, a plug-in's own (the memory plug-in's
injection rate, overhead and A/B against the baseline arm); decision instability last. Each figure
prints itself (its text view), or its view's table. ``--json`` prints one JSON object —
``Analysis.model_dump()`` — on stdout, nothing else.
"""

from __future__ import annotations

import sys
from pathlib import Path

from rich.console import Console
from rich.markup import escape
from rich.text import Text

from agentrig.store.rundir import open_run_dir
from agentrig.tables import Stack

from agentrig.analysis.instability_view import reports_of
from agentrig.analysis.build import analyze_run
from agentrig.analysis.figure import print_figures
from agentrig.analysis.summary import Analysis, ArmAnalysis, Figures
from agentrig.analysis.text import ci as _ci, est_cell as _est_cell, f as _f, pct as _pct, table as _table
from agentrig.analysis.text import view_table
from agentrig.plugins import load_builtin

SLOTS = ("figures", "details", "end")  # where figures print, in order (analysis/figure.py)


def analyze_command(run_dir: Path, *, arm: str | None, as_json: bool, out: Console,
                    resamples: int | None = None, seed: int | None = None) -> int:
    load_builtin()  # the plug-ins' figures
    store, config = open_run_dir(run_dir)
    try:
        analysis = analyze_run(store, config, run_dir=str(run_dir), arm=arm, resamples=resamples, seed=seed)
    finally:
        store.close()
    if as_json:
        # decision instability, when the run was resampled: a registered figure (arms.*.figures.instability),
        # also listed at the top as before
        analysis.instability = reports_of({a: x.figures["instability"] for a, x in analysis.arms.items()
                                           if "instability" in x.figures})
        text = analysis.model_dump_json(indent=2)
        (out.file if out is not None else sys.stdout).write(text + "\n")
        return 0
    print_analysis(out, analysis)
    return 0


def print_analysis(out: Console, a: Analysis) -> None:
    n = a.n
    head = (f"{a.name or 'run'} ({a.run_id or '?'}): {len(a.arms_planned)} arm(s) × {a.tasks_planned} task(s) × "
            f"{n} trial(s) = {a.trials_planned} planned" + ("" if len(a.arms) == len(a.arms_planned) else
                                                          f"; showing {', '.join(a.arms)}"))
    out.print(Text(head, style="bold"))
    out.print(Text(f"95% intervals: percentile bootstrap over tasks, B = {a.bootstrap.resamples}, seed "
                   f"{a.bootstrap.seed}; overall resampled within domains", style="dim"))
    arms = list(a.arms.values())
    _summary(out, arms, n)
    _curve(out, arms, n)
    for slot in SLOTS:
        print_figures(a, slot, out, view_table)


def _summary(out: Console, arms: list[ArmAnalysis], n: int) -> None:
    several = any(len(a.domains) > 1 for a in arms)
    title = "summary" + (" (an arm's first row: all its tasks; below it: the macro average and each domain)"
                         if several else "")
    t = _table(title, ("arm", "left"), ("valid", "right"), ("invalid", "right"), (_ci("pass^1"), "right"),
               (_ci(f"pass^{n}"), "right"), (_ci("gap pp"), "right"), (f"Mean@{n}", "right"), ("mixed", "right"),
               (Stack("excl.", f"k={n}"), "right"))

    def row(name: str, f: Figures, label: str) -> None:
        t.add_row(escape(name), f"{f.valid}/{f.trials_planned}", str(f.invalid), _est_cell(f.pass_1),
                  _est_cell(f.pass_n), _est_cell(f.gap_pp, 1), _f(f.mean_at_n), _pct(f.mixed_fraction),
                  str(f.pass_n_excluded), label=label)

    for a in arms:
        row(a.arm, a.overall, a.arm + (" · overall" if len(a.domains) > 1 else ""))
        if len(a.domains) > 1:
            m = a.macro
            t.add_row("  macro", "", "", _est_cell(m.pass_1), _est_cell(m.pass_n), _est_cell(m.gap_pp, 1),
                      _f(m.mean_at_n), _pct(m.mixed_fraction), "", label=f"{a.arm} · macro")
            for f in a.domains.values():
                row(f"  {f.scope}", f, f"{a.arm} · {f.scope}")
    t.print(out)
    for a in arms:
        causes = a.overall.invalid_causes
        if causes:
            listed = ", ".join(f"{escape(c)} ×{k}" for c, k in list(causes.items())[:5])
            out.print(Text.from_markup(f"  [yellow]{escape(a.arm)}: {a.overall.invalid_attempts} invalid "
                                       f"attempt(s): {listed}[/yellow]"))


def _curve(out: Console, arms: list[ArmAnalysis], n: int) -> None:
    cols = [("k", "right")]
    for a in arms:
        cols += [(_ci(f"{escape(a.arm)} pass^k"), "right", a.arm), ("pass@k", "right", a.arm),
                 ("tasks", "right", a.arm)]
    t = _table("pass^k curve (overall)", *cols)
    for k in range(1, n + 1):
        cells = [str(k)]
        for a in arms:
            p = a.overall.curve[k - 1]
            cells += [_est_cell(p.pass_hat), _f(p.pass_at), f"{p.tasks}" + (f" (-{p.excluded})" if p.excluded else "")]
        t.add_row(*cells)
    t.print(out)
