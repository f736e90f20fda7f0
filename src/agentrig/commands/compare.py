"""``agentrig compare RUN_A[:ARM] RUN_B[:ARM]``: open both sides, compare, print, exit code.

A side is a run directory, optionally followed by ``:ARM`` (required when the run has several
arms). The usual A/B is one run directory with two arms: ``runs/x:baseline runs/x:candidate``.
Exit code 0, or 1 when ``--fail-if-worse`` trips (see ``analysis.compare`` for the rule); user
errors raise ConfigError / DataError.
"""

from __future__ import annotations

import json
from pathlib import Path

from rich.console import Console
from rich.text import Text

from agentrig.errors import ConfigError
from agentrig.tables import FitTable

from agentrig.analysis import compare as cmp
from agentrig.analysis.config_diff import differences
from agentrig.analysis.sides import LoadedSide, leakage, load_side

SHOWN_FLIPS = 20
SHOWN_DIFFS = 25


def _k(a: LoadedSide, b: LoadedSide) -> int:
    if a.side.trials and b.side.trials:
        return min(a.side.trials, b.side.trials)
    most = [max((n for n, _ in s.counts.values()), default=1) for s in (a, b)]
    return max(1, min(most))


def compare_command(side_a: str, side_b: str, *, as_json: bool, fail_if_worse: bool, metric: str = "pass^1",
                    alpha: float = 0.05, allow_mismatch: bool, out: Console) -> int:
    if metric not in cmp.METRICS:
        raise ConfigError(f"--metric {metric!r}: use one of {', '.join(cmp.METRICS)}")
    if not 0 < alpha < 1:
        raise ConfigError(f"--alpha {alpha}: give a level between 0 and 1 (e.g. 0.05)")
    a, b = load_side(side_a, "A"), load_side(side_b, "B")
    if Path(a.side.run_dir).resolve() == Path(b.side.run_dir).resolve() and a.side.arm == b.side.arm:
        raise ConfigError(f"both sides are {a.side.label}; compare two arms (RUN:ARM_A RUN:ARM_B) or two runs")
    if not set(a.counts) & set(b.counts):
        raise ConfigError(f"{a.side.label} and {b.side.label} have no task with a valid trial on both sides; "
                          "nothing to pair (check the run directories, or play the runs first)")
    diffs = differences(a.config, b.config)
    result = cmp.build(a.side, b.side, a.counts, b.counts, diffs, k=_k(a, b), metric=metric, alpha=alpha,
                       fail_if_worse=fail_if_worse, allow_mismatch=allow_mismatch, warnings=leakage(a, b))
    if as_json:
        out.file.write(json.dumps(result.model_dump(mode="json"), indent=2, ensure_ascii=False) + "\n")
        out.file.flush()
    else:
        render(out, result)
    return result.exit_code


# ------------------------------------------------------------------------------------- output


def _f(x: float | None) -> str:
    return "-" if x is None else f"{x:.3f}"


def _flip(f: cmp.Flip) -> str:
    return f"{f.domain}/{f.task_id} ({f.a[0]}/{f.a[1]} → {f.b[0]}/{f.b[1]})"


def render(out: Console, r: cmp.Comparison) -> None:
    if r.mismatch and r.allow_mismatch:
        out.print(Text(f"!! MISMATCH ALLOWED (--allow-mismatch): the sides differ in {len(r.mismatch)} setting(s) "
                       "besides the arms' intended changes; the significance below is NOT a controlled "
                       "comparison", style="bold white on red"))
    out.print(Text.assemble(("A ", "bold"), r.a.label, (f"  ({r.a.run_id})" if r.a.run_id else "", "dim")))
    out.print(Text.assemble(("B ", "bold"), r.b.label, (f"  ({r.b.run_id})" if r.b.run_id else "", "dim")))
    p = r.paired
    out.print(Text(f"paired tasks: {p.tasks} (only on A: {p.only_a}, only on B: {p.only_b}); "
                   f"pass^{p.k} over {p.tasks_k} task(s) with ≥ {p.k} valid trials on both sides"
                   + (f", {p.excluded_k} excluded" if p.excluded_k else "")))
    level = f"{100 * r.ci_level:g}% CI"
    t = FitTable()
    for col, justify in (("", "left"), ("tasks", "right"), ("A", "right"), ("B", "right"),
                         ("Δ (B − A)", "right"), (level, "right"), ("", "left")):
        t.add_column(col, justify, group="ci" if col in (level, "") else None)  # type: ignore[arg-type]
    shown = r.shown_metrics()
    for m in shown:
        ci = "-" if m.ci is None else f"[{m.ci[0]:+.3f}, {m.ci[1]:+.3f}]"
        delta = "-" if m.delta is None else f"{m.delta:+.3f}"
        sig = {"worse": Text("worse", style="red"), "better": Text("better", style="green"),
               "none": Text("n.s.", style="dim"), None: Text("")}[m.significance]
        t.add_row(m.name, str(m.tasks), _f(m.a), _f(m.b), delta, ci, sig)
    t.print(out)
    mc = r.mcnemar
    out.print(Text(f"McNemar (task passes when > half its valid trials succeed): both {mc.both}, "
                   f"A only {mc.a_only}, B only {mc.b_only}, neither {mc.neither}; exact p = {mc.p:.4g}"))
    for m in shown:
        if m.note:
            out.print(Text(f"{m.name}: {m.note}", style="yellow"))
    for name, flips, style in (("worse", r.flips.worse, "red"), ("better", r.flips.better, "green")):
        if flips:
            out.print(Text(f"flipped {name} ({len(flips)}), A → B successes/valid trials:", style=style))
            for f in flips[:SHOWN_FLIPS]:
                out.print(Text(f"  {_flip(f)}"), soft_wrap=True)  # a task id is never broken
            if len(flips) > SHOWN_FLIPS:
                out.print(Text(f"  … {len(flips) - SHOWN_FLIPS} more (see --json)", style="dim"))
    _render_config(out, r)
    for w in r.warnings:
        out.print(Text("WARNING: ", style="bold yellow") + Text(w), soft_wrap=True)
    refused = bool(r.mismatch) and not r.allow_mismatch
    out.print(Text("verdict: ", style="bold") + Text(r.verdict, style="bold red" if refused else "bold"))
    if r.gate.enabled:
        if r.gate.tripped:
            out.print(Text("gate: FAIL — ", style="bold red") + Text(r.gate.reason or ""))
        else:
            out.print(Text("gate: pass — ", style="bold green") + Text(f"rule: {r.gate.rule}"))


def _render_config(out: Console, r: cmp.Comparison) -> None:
    diffs = r.config.differences
    if not diffs:
        out.print(Text("configuration: the sides are identical apart from the arm name"))
        return
    n = {k: sum(d.kind == k for d in diffs) for k in ("intended", "info", "mismatch")}
    out.print(Text(f"configuration: {len(diffs)} difference(s): {n['intended']} intended (arm tables), "
                   f"{n['mismatch']} mismatch, {n['info']} informational"))
    order = sorted(diffs, key=lambda d: ("mismatch", "intended", "info").index(d.kind))
    for d in order[:SHOWN_DIFFS]:
        tag, style = {"mismatch": ("MISMATCH", "bold red"), "intended": ("intended", "cyan"),
                      "info": ("info", "dim")}[d.kind]
        out.print(Text(f"  {tag:<9}", style=style) + Text(d.line()))
    if len(order) > SHOWN_DIFFS:
        out.print(Text(f"  … {len(order) - SHOWN_DIFFS} more (see --json)", style="dim"))
