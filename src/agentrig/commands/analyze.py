"""``agentrig analyze RUN [--arm A] [--json]``: the figures of a run, for people or programs.

People get rich tables: a summary per arm (pass^1, pass^n and the consistency gap with their 95%
bootstrap intervals, Mean@n, the mixed-outcome fraction), the pass^k curve, reward components,
terminations, usage, reruns, the retries check, the most inconsistent tasks and the failure
classes; for arms with the memory plug-in, its figures (injection rate, overhead over the agent,
failures) and each memory arm's paired A/B against the baseline arm. ``--json`` prints one JSON object — ``Analysis.model_dump()`` — on stdout, nothing else.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.text import Text

from agentrig.store.rundir import open_run_dir
from agentrig.tables import FitTable, Stack

from agentrig.analysis.instability_view import reports_of
from agentrig.analysis.memory import decisions_text, injected_text
from agentrig.analysis.build import analyze_run
from agentrig.analysis.figure import FigureView, print_figures
from agentrig.analysis.summary import Analysis, ArmAnalysis, Estimate, Figures

TOP_TASKS = 10
RERUN_ROWS = 20  # more reruns than this: only best / worst / spread


def analyze_command(run_dir: Path, *, arm: str | None, as_json: bool, out: Console,
                    resamples: int | None = None, seed: int | None = None) -> int:
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


# ------------------------------------------------------------------------------------ helpers


def _table(title: str, *cols: tuple, key: int = 1) -> FitTable:
    """A figure table; a column is (header, justify) or (header, justify, group) (kept together
    when the table is split), with justify "wrap" for prose that may wrap at spaces."""
    t = FitTable(title, key=key)
    for name, justify, *group in cols:
        wrap = justify == "wrap"
        t.add_column(name, "left" if wrap else justify, wrap=wrap, group=group[0] if group else None)
    return t


def _ci(header: str) -> Stack:
    return Stack(header, "[95% CI]")


def _f(x: float | None, digits: int = 3) -> str:
    return "-" if x is None else f"{x:.{digits}f}"


def _est(e: Estimate, digits: int = 3) -> str:
    if e.value is None:
        return "-"
    if e.low is None or e.high is None:
        return _f(e.value, digits)
    return f"{e.value:.{digits}f} [{e.low:.{digits}f}, {e.high:.{digits}f}]"


def _est_cell(e: Estimate, digits: int = 3) -> Stack | str:
    """An estimate with its interval below it (beside it when the table is wide enough)."""
    if e.value is None or e.low is None or e.high is None:
        return _est(e, digits)
    return Stack(f"{e.value:.{digits}f}", f"[{e.low:.{digits}f}, {e.high:.{digits}f}]")


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{100 * x:.1f}%"


# ------------------------------------------------------------------------------------ printing


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
    _components(out, arms)
    _terminations(out, arms)
    print_figures(arms, "figures", out, _view_table)
    _usage(out, arms)
    _reruns(out, arms, n)
    _retries(out, arms)
    _consistency(out, arms, a.sections.get("consistency", "ok"))
    _failures(out, arms, a.sections.get("failures", "ok"))
    _memory(out, arms)
    print_figures(arms, "end", out, _view_table)


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


def _components(out: Console, arms: list[ArmAnalysis]) -> None:
    """One row per component, one column per arm: "pct passed/trials" (trials: the valid trials
    where it was computed). An arm gets an "in basis" column only where that count differs from
    the trials for some component (τ²'s reward basis); else the title says they are equal.
    Components named TASK::NAME (terminal tests) are listed under a row naming their task when the
    table with whole names does not fit the console on one line a row."""
    names = list(dict.fromkeys(c for a in arms for c in a.overall.components))  # the benchmark's components
    if not names:
        return
    basis = {a.arm: any(r.in_basis != r.trials for r in a.overall.components.values()) for a in arms}
    cols: list[tuple] = [("component", "left")]
    for a in arms:
        cols.append((escape(a.arm), "right", a.arm))
        if basis[a.arm]:
            cols.append(("in basis", "right", a.arm))
    equal = [a.arm for a in arms if not basis[a.arm]]
    note = ("in basis (trials whose reward uses it) = trials for every component" if len(equal) == len(arms) else
            f"in basis = trials for {', '.join(equal)}" if equal else "in basis = trials whose reward uses it")
    title = f"reward components: passed/trials per arm (trials: valid trials where computed; —: in none; {note})"
    t = _component_table(title, cols, arms, names, basis, grouped=False)
    if not t.fits(out.width) and all("::" in c for c in names):
        t = _component_table(title, cols, arms, names, basis, grouped=True)
    t.print(out)


def _component_table(title: str, cols: list[tuple], arms: list[ArmAnalysis], names: list[str],
                     basis: dict[str, bool], *, grouped: bool) -> FitTable:
    t = _table(title, *cols)
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
        for a in arms:
            r = a.overall.components.get(c)
            cells.append("—" if r is None or r.rate is None else f"{_pct_short(r.rate)} {r.passed}/{r.trials}")
            if basis[a.arm]:
                cells.append("" if r is None else str(r.in_basis))
        t.add_row(*cells, label=c)
    return t


def _pct_short(x: float) -> str:
    """A rate as a percent: "100%", "50%", "66.7%" (one decimal only when it is not whole)."""
    v = round(100 * x, 1)
    return f"{v:.0f}%" if v == int(v) else f"{v:.1f}%"


def _view_table(view: FigureView, out: Console) -> None:
    """A figure of the figure protocol (analysis/figure.py) as the table its view gives."""
    t = _table(view.title, (view.columns[0], "left"), *[(escape(c), "right") for c in view.columns[1:]])
    for row in view.rows:
        t.add_row(escape(row[0]), *[escape(c) for c in row[1:]])
    t.print(out)
    if view.note:
        out.print(Text(view.note, style="dim"))


def _terminations(out: Console, arms: list[ArmAnalysis]) -> None:
    names = list(dict.fromkeys(x for a in arms for x in a.overall.terminations))
    if not names:
        return
    t = _table("terminations (valid trials)", ("termination", "left"), *[(escape(a.arm), "right") for a in arms])
    for name in names:
        t.add_row(escape(name), *[str(a.overall.terminations.get(name, 0)) for a in arms])
    t.print(out)


def _usage(out: Console, arms: list[ArmAnalysis]) -> None:
    calls = _table("usage per role: requests", ("arm", "left"), ("role", "left"), ("requests", "right"),
                   ("failed", "right"), ("attempts", "right"), ("retries (by cause)", "wrap"),
                   (Stack("latency s", "p50/p90/p99"), "right"), key=2)
    tokens = _table("usage per role: tokens and cost", ("arm", "left"), ("role", "left"), ("prompt", "right"),
                    ("completion", "right"), ("reasoning", "right"), ("cached", "right"), ("cost", "right"), key=2)
    for a in arms:
        for r in a.usage.roles:
            causes = ", ".join(f"{c} {k}" for c, k in r.retries_by_cause.items())
            lat = "/".join(_f(x, 2) for x in (r.latency_p50_s, r.latency_p90_s, r.latency_p99_s))
            calls.add_row(escape(a.arm), escape(r.role), str(r.requests), str(r.failed), str(r.attempts),
                          escape(f"{r.retries}" + (f" ({causes})" if causes else "")), lat)
            tokens.add_row(escape(a.arm), escape(r.role), f"{r.prompt_tokens:,}", f"{r.completion_tokens:,}",
                           f"{r.reasoning_tokens:,}", f"{r.cached_tokens:,}",
                           "unknown" if r.cost_usd is None else f"${r.cost_usd:.4f}")
    if calls.rows:
        calls.print(out)
        tokens.print(out)
    for a in arms:
        u, s = a.usage, a.overall.resources
        cost = "unknown" + (f" (no price for {', '.join(u.unpriced_models)})" if u.unpriced_models else "") \
            if u.cost_usd is None else f"${u.cost_usd:.4f}"
        calls = "no model calls" if not u.roles else f"cost {cost}"
        out.print(Text(f"  {a.arm}: {calls}; per trial: tokens {_f(s.tokens_mean, 0)} (CV {_f(s.tokens_cv, 2)}, "
                       f"within task {_f(s.tokens_cv_within_task, 2)}), time {_f(s.duration_mean_s, 2)} s "
                       f"(CV {_f(s.duration_cv, 2)}, within task {_f(s.duration_cv_within_task, 2)})"))


def _reruns(out: Console, arms: list[ArmAnalysis], n: int) -> None:
    t = _table("reruns (rerun i = trial i of every task)", ("arm", "left"), ("best", "right"), ("worst", "right"),
               ("spread pp", "right"), ("tokens min–max", "right"), ("retries", "right"))
    for a in arms:
        r = a.reruns
        rated = {s.trial: s for s in r.reruns}

        def at(i: int | None) -> str:
            return "-" if i is None else f"#{i} {_pct(rated[i].success_rate)}"

        toks = [s.tokens for s in r.reruns if s.trials]
        t.add_row(escape(a.arm), at(r.best), at(r.worst), _f(r.spread_pp, 1),
                  f"{min(toks):,}–{max(toks):,}" if toks else "-", str(sum(s.retries for s in r.reruns)))
    t.print(out)
    if 1 < n <= RERUN_ROWS:
        t = _table("success rate per rerun", ("rerun", "right"), *[(escape(a.arm), "right") for a in arms])
        for i in range(n):
            t.add_row(str(i), *[f"{_pct(a.reruns.reruns[i].success_rate)} ({a.reruns.reruns[i].successes}/"
                                f"{a.reruns.reruns[i].trials})" for a in arms])
        t.print(out)


def _times(x: float | None) -> str:
    return "-" if x is None else f"×{x:.2f}"


def _memory(out: Console, arms: list[ArmAnalysis]) -> None:
    mem = [(a, a.memory) for a in arms if a.memory is not None]
    if not mem:
        return
    t = _table("memory plug-in: what it did (valid trials; rate = injected / triggers)", ("arm", "left"),
               ("mode", "left"), ("trig./trial", "right"), ("injected", "right"), ("rate", "right"),
               ("/step", "right"), ("decisions", "wrap"), ("edits/trig.", "right"), ("bank", "right"))
    for a, m in mem:
        t.add_row(escape(a.arm), escape(", ".join(m.modes)), _f(m.triggers_per_trial, 1), escape(injected_text(m)),
                  _pct(m.injection_rate), _f(m.injections_per_step, 2), escape(decisions_text(m)),
                  _f(m.edit_tool_calls_per_trigger, 2), _f(m.bank_entries_mean, 1))
    t.print(out)
    t = _table("memory plug-in: overhead per trial (memory calls against the agent's own)", ("arm", "left"),
               (Stack("tokens", "memory"), "right"), (Stack("tokens", "agent"), "right"), (Stack("tokens", "×"), "right"),
               (Stack("seconds", "memory"), "right"), (Stack("seconds", "agent"), "right"),
               (Stack("seconds", "×"), "right"), (Stack("share", "of trial"), "right"), ("failed calls", "wrap"))
    for a, m in mem:
        tok, lat = m.tokens, m.latency_s
        t.add_row(escape(a.arm), _f(tok.memory_per_trial, 0), _f(tok.agent_per_trial, 0), _times(tok.ratio),
                  _f(lat.memory_per_trial, 2), _f(lat.agent_per_trial, 2), _times(lat.ratio), _pct(m.latency_share),
                  f"{m.failed_calls}/{m.calls}" + (f" in {m.failed_trials} trial(s)" if m.failed_calls else ""))
    t.print(out)
    base = next((m.baseline for _, m in mem if m.baseline), None)
    if base is None:
        out.print(Text(f"memory A/B: {mem[0][1].ab_note or ''}", style="yellow"))
        return
    t = _table(f"memory arms against the baseline {escape(base)} (as `agentrig compare RUN:{escape(base)} RUN:ARM`; "
               "Δ = arm − baseline)", ("arm", "left"), ("tasks", "right"), (_ci("Δpass^1"), "right"),
               (_ci("Δpass^k"), "right"), ("McNemar p", "right"), ("better/worse", "right"), ("", "left"))

    def delta(m: Any, prefix: str = "") -> Stack | str:
        if m is None or m.delta is None or m.ci is None:
            return "-"
        sig = {"worse": "worse", "better": "better", "none": "n.s."}.get(m.significance or "", "not called")
        return Stack(f"{prefix}{m.delta:+.3f}", f"[{m.ci[0]:+.3f}, {m.ci[1]:+.3f}]", sig)

    notes: dict[str, list[str]] = {}
    for a, m in mem:
        if m.ab is None:
            t.add_row(escape(a.arm), "-", "-", "-", "-", "-", escape(m.ab_note or ""))
            continue
        c = m.ab
        pk = c.metrics.get("pass^k")
        t.add_row(escape(a.arm), str(c.paired.tasks), delta(c.metrics.get("pass^1")),
                  delta(pk, f"k={pk.k}: " if pk is not None else ""), f"{c.mcnemar.p:.3g}",
                  f"{len(c.flips.better)}/{len(c.flips.worse)}",
                  "" if c.comparable else Text("NOT COMPARABLE", style="bold red"))
        note = c.verdict if not c.comparable else c.metrics["pass^1"].note
        if note:
            notes.setdefault(note, []).append(a.arm)
    t.print(out)
    for note, names in notes.items():
        out.print(Text(f"  {', '.join(names)}: {note}", style="yellow"))


def _retries(out: Console, arms: list[ArmAnalysis]) -> None:
    out.print(Text("retries and failures (valid trials)", style="bold"))
    for a in arms:
        r = a.retries
        out.print(Text(f"  {a.arm}: failure rate {_pct(r.rate_retried)} with retries ({r.retried_failed}/{r.retried}), "
                       f"{_pct(r.rate_clean)} without ({r.clean_failed}/{r.clean}); {r.note}"))


def _consistency(out: Console, arms: list[ArmAnalysis], status: str) -> None:
    if status != "ok":
        out.print(Text(f"consistency: {status}", style="yellow"))
        return
    for a in arms:
        shown = [c for c in a.consistency if c.n >= 2]
        items = [c for c in shown if c.mixed or c.distinct_chains > 1][:TOP_TASKS]
        if not items:
            if shown:
                out.print(Text(f"consistency: {a.arm}: every task took one tool-call chain and one outcome "
                               "on all its trials"))
            continue
        t = _table(f"most inconsistent tasks: {a.arm}", ("task", "left"), ("outcomes", "left"),
                   ("chains", "right"), ("by name", "right"), ("diverge at", "right"), ("similarity", "right"))
        for c in items:
            label = c.task_id if len(a.domains) == 1 else f"{c.domain}/{c.task_id}"
            t.add_row(escape(label), c.pattern, str(c.distinct_chains), str(c.distinct_name_chains),
                      "-" if c.diverge_step is None else str(c.diverge_step), _f(c.similarity, 2))
        t.print(out)


def _failures(out: Console, arms: list[ArmAnalysis], status: str) -> None:
    if status != "ok":
        out.print(Text(f"failure classes: {status}", style="yellow"))
        return
    for a in arms:
        tax = a.failures
        if tax is None or not tax.failed:
            continue
        t = _table(f"failure classes: {a.arm} ({tax.failed} failed valid trial(s))", ("class", "left"),
                   ("primary", "right"), ("any", "right"), ("examples", "wrap"))
        for c in tax.classes:
            if not c.any:
                continue
            ex = ", ".join(f"{k.task_id}#{k.trial}" for k in c.examples)
            t.add_row(escape(c.label), str(c.primary), str(c.any), escape(ex))
        t.print(out)
