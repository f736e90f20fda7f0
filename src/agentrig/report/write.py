"""The report of one or more runs: one self-contained HTML file.

``write_report(run_dirs, out_path)`` builds it (``agentrig run``, ``agentrig report`` and
``agentrig demo`` call it; commands/report.py prints where the file went). The file needs no
network: CSS, script and plots are inline; trajectories are JSON blocks parsed only when opened.

Steps: open the runs → the outcome grid from the stores' light rows (``collect``) → the analysis
of each run (``analysis.build.analyze_run``: every registered figure, the plug-ins' included) → the
A/B comparisons when there are several arms or runs (``analysis.compare``) → the figures drawn by
their slots (``drawers``) → choose and embed trajectories (``embed``) → render (``render``).
"""

from __future__ import annotations

import os
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from agentrig import __version__
from agentrig.analysis.build import analyze_run
from agentrig.analysis.summary import Analysis
from agentrig.errors import AgentrigError, DataError

from agentrig.plugins import load_builtin

from . import drawers, figures, findings
from .collect import Collected, collect, grid_payload, open_runs
from .embed import Embedded, Limits, embed
from .render import render
from .safe import json_for_script

REPORT_FILE = "report.html"


def _analyses(c: Collected, notes: list[dict[str, str]], given: dict[str, Analysis] | None
              ) -> dict[str, Analysis | None]:
    out: dict[str, Analysis | None] = {}
    known = {Path(k).resolve(): v for k, v in (given or {}).items()}
    for run in c.runs:
        if run.dir.resolve() in known:
            out[run.label] = known[run.dir.resolve()]
            continue
        try:
            out[run.label] = analyze_run(run.store, run.config, run_dir=str(run.dir))
        except AgentrigError as exc:
            notes.append({"level": "warn", "text": f"{run.label}: the analysis could not be computed ({exc}); "
                                                   "the grid and trajectories come straight from the store."})
            out[run.label] = None
            continue
        for section, state in (out[run.label].sections or {}).items():  # type: ignore[union-attr]
            if state != "ok":
                notes.append({"level": "warn", "text": f"{run.label}: {section} {state}"})
    return out


def _wanted(c: Collected, views: list[figures.ArmView]) -> dict[int, set[tuple[int, int]]]:
    task_ix = {t: i for i, t in enumerate(c.tasks)}
    label_ix = {a.label: i for i, a in enumerate(c.arms)}
    out: dict[int, set[tuple[int, int]]] = {}
    for label, keys in drawers.wanted_trials(views).items():
        ai = label_ix.get(label)
        if ai is None:
            continue
        out[ai] = {(task_ix[(d, t)], k) for d, t, k in keys if (d, t) in task_ix}
    return out


def _viewer_hints(c: Collected) -> dict[str, Any]:
    """The runs' benchmarks' rendering hints for the trajectory viewer, merged (``benchmark.py``)."""
    from agentrig.benchmark import benchmark_of_config

    out: dict[str, Any] = {"code_arguments": {}, "events": {}}
    for run in c.runs:
        try:
            hints = benchmark_of_config(run.config).viewer_hints or {}
        except AgentrigError:  # a run of a benchmark this agentrig does not know: no hints
            continue
        for part in out:
            out[part].update(hints.get(part) or {})
    return out


def _embedded_summary(e: Embedded, total: int) -> str:
    n = len(e.blocks)
    size = f"{e.bytes / 1e6:.1f} MB" if e.bytes >= 1e5 else f"{e.bytes / 1e3:.0f} kB"
    if e.complete:
        return f"every trial's trajectory ({n:,}, {size} of JSON)."
    why = " The size budget was reached." if e.budget_hit else ""
    return (f"{n:,} of {total:,} trajectories ({size}): failed trials first (spread over tasks), trials with no "
            f"valid attempt, a sample of passed trials, and every trial another section links to.{why} "
            "Every trial still has its grid cell with outcome, reward, termination and counts.")


def build_context(c: Collected, *, analyses: dict[str, Analysis] | None = None, limits: Limits = Limits()) -> dict[str, Any]:
    load_builtin()  # the plug-ins' figures
    notes: list[dict[str, str]] = []
    per_run = _analyses(c, notes, analyses)
    labels = [(a.label, a.run.label, a.arm) for a in c.arms]
    views = figures.arm_views(labels, per_run)
    sides = [(a.run.label, a.run.dir, a.arm) for a in c.arms]
    comps, unpaired = findings.comparisons(sides, [a.label for a in c.arms]) if len(c.arms) > 1 else ([], [])
    for comp in comps:  # red only for a difference beyond the arms' own settings (figures.differing)
        if not comp.comparable:
            notes.append({"level": "bad", "text": f"{comp.b.label} vs {comp.a.label} is not a controlled comparison: "
                                                  f"besides the arms' own settings, {'; '.join(comp.mismatch[:3])}"
                                                  f"{' …' if len(comp.mismatch) > 3 else ''} (see A/B differences)."})
    notes += [{"level": "info", "text": u.note()} for u in unpaired]
    e = embed(c, limits, _wanted(c, views))
    total = sum(len(a.cells) for a in c.arms)
    if not e.complete:
        notes.append({"level": "info", "text": f"This file holds {len(e.blocks):,} of {total:,} trajectories "
                      "(a bounded set, so it opens quickly); the other trials show their outcome, reward, termination "
                      "and counts. `agentrig export RUN_DIR --format jsonl` has every trial."})
    invalid = sum(a.counts()["invalid"] for a in c.arms)
    if invalid:
        notes.append({"level": "info", "text": f"{invalid:,} trial(s) have no valid attempt (infrastructure faults, not "
                      "agent failures); they are left out of every figure. Rerun the experiment to replay them."})
    runs = [{"label": r.label, "dir": str(r.dir), "run_id": r.run_id, "arms": len(r.arm_names()),
             "tasks": len(r.task_keys()), "trials": r.trials} for r in c.runs]
    meta = {"version": __version__, "runs": runs, "embedded": len(e.blocks), "complete": e.complete,
            "viewer": _viewer_hints(c)}
    return {
        "title": " + ".join(dict.fromkeys(r.name for r in c.runs)), "version": __version__,
        "generated_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "runs": runs, "notes": notes,
        "summary": figures.summary(views), "passk": figures.passk_chart(views), "gap": figures.gap_chart(views),
        "ab": findings.ab(comps),
        "figures": drawers.drawn(views),  # every registered figure, by the page slot it goes to
        "counts": [{"label": a.label, **a.counts()} for a in c.arms],
        "embedded": {"complete": e.complete, "per_arm": e.per_arm, "summary": _embedded_summary(e, total)},
        "grid_json": json_for_script(grid_payload(c, e.ids)), "meta_json": json_for_script(meta),
        "blocks": e.blocks,
    }


def write_report(run_dirs: list[Path], out_path: Path | None = None, *, analyses: dict[str, Analysis] | None = None,
                 limits: Limits = Limits()) -> Path:
    """Write the report of ``run_dirs`` (default: ``<first run dir>/report.html``); returns its path.

    ``analyses`` (by run directory, as given) reuses analyses already computed."""
    dirs = [Path(d) for d in run_dirs]
    if not dirs:
        raise DataError("no run directory given; pass the directory `agentrig run` printed")
    target = Path(out_path) if out_path is not None else dirs[0] / REPORT_FILE
    if target.is_dir():
        target = target / REPORT_FILE
    runs = open_runs(dirs)
    c = collect(runs)
    try:
        html = render(build_context(c, analyses=analyses, limits=limits))
    finally:
        c.close()
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    tmp.write_text(html, encoding="utf-8")
    os.replace(tmp, target)
    return target
