"""``analyze`` and ``report`` on a synthetic store of 100,000 trials (500 tasks × 4 arms × 50 trials).

How the store is made (fast, and realistic enough for the analysis to do all its work):

1. A real run plays the built-in bikeshop domain's 16 tasks with four reference arms (gold,
   flaky-gold at drop 0.2 and 0.5, noop), 6 trials each: real trajectories, real verdicts, real
   failures (dropped actions, nothing done).
2. A data root is written whose bikeshop domain has ``--tasks`` tasks: copies of the 16 with new
   ids (``<id>-<i>``), so failures are classified against real gold actions.
3. Each synthetic trial copies a random real trial of the same arm and original task (outcome,
   messages, reward info), gets its own key, seed and duration, and model calls for its agent
   and user messages (tokens, latency; ~3% with a rate-limit retry). ~0.5% of the trials first
   get an invalid attempt (a channel failure) that the "runner" replayed.
4. Everything is stored with ``Store.append`` (one transaction per trial, as the runner does).

Then it times ``analyze_run`` (what ``agentrig analyze`` computes) and ``analyze_command``
(``agentrig analyze --json``, output to /dev/null), ``write_report`` (the whole
``agentrig report``, analysis included) and the report alone given the analysis, and prints the
report's size and what it embeds. ``--browser`` also opens the report in headless Chromium and
times the load and the opening of a trajectory.

    .venv/bin/python perf/analysis_scale.py [--tasks 500] [--trials 50] [--keep DIR]
        [--json out.json] [--browser]

Targets (issue 5): analysis under 30 s; report under 60 s and under 50 MB.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import asyncio
import json
import os
import platform
import random
import resource
import shutil
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
ARMS = """
[[arms]]
name = "gold"
agent = { kind = "gold" }

[[arms]]
name = "flaky-20"
agent = { kind = "flaky-gold", drop_p = 0.2 }

[[arms]]
name = "flaky-50"
agent = { kind = "flaky-gold", drop_p = 0.5 }

[[arms]]
name = "noop"
agent = { kind = "noop" }
"""
TEMPLATE_TRIALS = 6
RETRY_SHARE = 0.03
INVALID_SHARE = 0.005


def real_run(where: Path) -> Path:
    from agentrig.commands.run import run_command

    toml = where / "templates.toml"
    toml.write_text(f"""name = "scale-templates"
[benchmark]
domains = ["bikeshop"]
[run]
trials = {TEMPLATE_TRIALS}
seed = 11
concurrency = 8
[user]
kind = "scripted"
[judge]
nl_assertions = "never"
{ARMS}""", encoding="utf-8")
    run_dir = where / "templates"
    with contextlib.redirect_stdout(io.StringIO()):  # its JSON summary is not this benchmark's output
        code = run_command(toml, run_dir=run_dir, as_json=True)
    if code != 0:
        raise SystemExit("the template run failed")
    return run_dir


def data_root(where: Path, n_tasks: int) -> tuple[Path, list[str], dict[str, str]]:
    """A data root with ``n_tasks`` bikeshop tasks; returns (root, ids, id → original id)."""
    from agentrig.bench.tau import data as tau_data

    src = tau_data.domain_dir(None, "bikeshop")
    dst = where / "data" / "domains" / "bikeshop"
    shutil.copytree(src, dst)
    originals = json.loads((src / "tasks.json").read_text(encoding="utf-8"))
    tasks, origin = [], {}
    for i in range(n_tasks):
        t = dict(originals[i % len(originals)])
        new_id = f"{t['id']}-{i:03d}"
        origin[new_id] = t["id"]
        t["id"] = new_id
        tasks.append(t)
    (dst / "tasks.json").write_text(json.dumps(tasks), encoding="utf-8")
    (dst / "split_tasks.json").write_text(json.dumps({"base": [t["id"] for t in tasks]}), encoding="utf-8")
    return where / "data", [t["id"] for t in tasks], origin


def synthesize(templates_dir: Path, root: Path, ids: list[str], origin: dict[str, str], trials: int,
               run_dir: Path) -> tuple[int, float]:
    from agentrig.store.store import Store
    from agentrig.types import Attempt, ModelCall, TrialKey, TrialRecord, Usage, Verdict

    rng = random.Random(2026)
    with Store.open(templates_dir / "trials.sqlite", create=False) as src:
        by: dict[tuple[str, str], list[TrialRecord]] = {}
        for rec in src.records(valid=True):
            by.setdefault((rec.key.arm, rec.key.task_id), []).append(rec)
        comparability = src.get_meta("comparability")
    config = json.loads((templates_dir / "config.json").read_text(encoding="utf-8"))
    run_id = "scale-synthetic"
    config.update(name="scale", run_id=run_id, run_dir=str(run_dir), data_root=str(root), tasks={"bikeshop": ids},
                  splits={"bikeshop": "base"})
    config["experiment"]["name"] = "scale"
    config["experiment"]["run"]["trials"] = trials
    run_dir.mkdir(parents=True, exist_ok=True)
    (run_dir / "config.json").write_text(json.dumps(config, indent=1), encoding="utf-8")
    arms = [a["name"] for a in config["experiment"]["arms"]]

    def calls_for(rec: TrialRecord) -> tuple[list, list[ModelCall]]:
        msgs, calls = [], []
        for m in rec.trajectory.messages:
            if m.role in ("assistant", "user") and m.turn > 0:
                retry = rng.random() < RETRY_SHARE
                attempts = ([Attempt(cause="rate_limited", status=429, latency_s=0.05, wait_s=0.5)] if retry else [])
                attempts.append(Attempt(latency_s=round(rng.uniform(0.3, 2.5), 3)))
                prompt = rng.randint(900, 6000)
                calls.append(ModelCall(role="agent" if m.role == "assistant" else "user",
                                       purpose="agent" if m.role == "assistant" else "user", turn=m.turn,
                                       model="synthetic-model", usage=Usage(prompt_tokens=prompt,
                                                                            completion_tokens=rng.randint(20, 400),
                                                                            cached_tokens=prompt // 2),
                                       latency_s=sum(a.latency_s + a.wait_s for a in attempts), attempts=attempts,
                                       finish_reason="tool_calls" if m.tool_calls else "stop"))
                m = m.model_copy(update={"call": len(calls) - 1})
            msgs.append(m)
        return msgs, calls

    n = 0
    start = time.perf_counter()
    with Store.open(run_dir / "trials.sqlite") as store:
        store.set_meta("config", config)
        if comparability is not None:
            store.set_meta("comparability", comparability)
        store.set_meta("run", {"run_id": run_id, "name": "scale", "created_at": "2026-01-01T00:00:00+00:00"})
        for arm in arms:
            for task_id in ids:
                pool = by[(arm, origin[task_id])]
                for trial in range(trials):
                    tpl = rng.choice(pool)
                    msgs, calls = calls_for(tpl)
                    key = TrialKey(arm=arm, domain="bikeshop", task_id=task_id, trial=trial)
                    traj = tpl.trajectory.model_copy(update={"messages": msgs, "model_calls": calls})
                    base = dict(key=key, run_id=run_id, seed=rng.getrandbits(31),
                                started_at="2026-01-01T00:00:00+00:00")
                    if rng.random() < INVALID_SHARE:
                        bad = tpl.trajectory.model_copy(update={
                            "messages": msgs[:2], "events": [],
                            "model_calls": [ModelCall(role="agent", purpose="agent", turn=2, model="synthetic-model",
                                                      attempts=[Attempt(cause="server_error", status=503)] * 6,
                                                      error="retries_exhausted")]})
                        store.append(TrialRecord(**base, attempt=0, duration_s=4.0, trajectory=bad,
                                                 verdict=Verdict(valid=False, termination="channel_error",
                                                                 invalid_cause="retries_exhausted: 503 ×6")))
                        n += 1
                    store.append(TrialRecord(**base, attempt=0, duration_s=round(tpl.duration_s + rng.uniform(5, 60), 2),
                                             trajectory=traj, verdict=tpl.verdict))
                    n += 1
    return n, time.perf_counter() - start


def open_in_browser(report: Path, profile: Path) -> dict[str, float | int | list]:
    sys.path.insert(0, str(REPO))
    from tests.report.cdp import Browser  # the tests' DevTools client

    async def go() -> dict:
        async with await Browser.launch(profile) as b:
            page = await b.page()
            t0 = time.perf_counter()
            await page.goto(report.resolve().as_uri(), timeout=300)
            await page.eval("new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)))")
            load = time.perf_counter() - t0
            t1 = time.perf_counter()
            opened = await page.eval("(() => { const c = document.querySelector('#grid-host span.c.fail:not(.out)');"
                                     " if (!c) return 0; c.click(); return document.querySelectorAll('#viewer .msg').length; })()")
            click = time.perf_counter() - t1
            cells = await page.eval("document.querySelectorAll('#grid-host span.c').length")
            return {"load_s": load, "open_s": click, "messages": opened, "cells_on_page": cells, "errors": page.errors}

    return asyncio.run(go())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--tasks", type=int, default=500)
    ap.add_argument("--trials", type=int, default=50)
    ap.add_argument("--keep", type=Path, help="build the store here and keep it (default: a temporary directory)")
    ap.add_argument("--json", type=Path, help="also write the figures as JSON")
    ap.add_argument("--browser", action="store_true", help="open the report in headless chromium and time it")
    args = ap.parse_args()

    from rich.console import Console

    from agentrig.commands.analyze import analyze_command
    from agentrig.analysis.build import analyze_run
    from agentrig.report import write_report
    from agentrig.report.write import build_context
    from agentrig.report.collect import collect, open_runs
    from agentrig.store.store import Store

    where = args.keep or Path(tempfile.mkdtemp(prefix="agentrig-scale-"))
    where.mkdir(parents=True, exist_ok=True)
    run_dir = where / "scale"
    figures: dict[str, float | int | str] = {"machine": f"{platform.processor() or platform.machine()}, "
                                                        f"Python {platform.python_version()}"}
    if not (run_dir / "trials.sqlite").exists():
        t0 = time.perf_counter()
        templates = real_run(where)
        root, ids, origin = data_root(where, args.tasks)
        figures["templates_s"] = time.perf_counter() - t0
        rows, build_s = synthesize(templates, root, ids, origin, args.trials, run_dir)
        figures.update(rows=rows, build_s=build_s, build_rows_per_s=rows / build_s)
    figures["store_mb"] = (run_dir / "trials.sqlite").stat().st_size / 1e6
    config = json.loads((run_dir / "config.json").read_text(encoding="utf-8"))

    with Store.open(run_dir / "trials.sqlite", create=False) as store:
        figures["trials_valid"] = store.counts()["valid"]
        t0 = time.perf_counter()
        analysis = analyze_run(store, config, run_dir=str(run_dir))
        figures["analyze_s"] = time.perf_counter() - t0
    figures["analysis_sections"] = ", ".join(f"{k}: {v}" for k, v in analysis.sections.items())
    with open(os.devnull, "w", encoding="utf-8") as sink:
        t0 = time.perf_counter()
        analyze_command(run_dir, arm=None, as_json=True, out=Console(file=sink))
        figures["analyze_cmd_s"] = time.perf_counter() - t0

    t0 = time.perf_counter()
    path = write_report([run_dir], where / "report.html")
    figures["report_s"] = time.perf_counter() - t0
    figures["report_mb"] = path.stat().st_size / 1e6

    t0 = time.perf_counter()
    c = collect(open_runs([run_dir]))
    try:
        ctx = build_context(c, analyses={str(run_dir): analysis})
    finally:
        c.close()
    figures["report_given_analysis_s"] = time.perf_counter() - t0
    figures["embedded_trajectories"] = len(ctx["blocks"])
    figures["peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024

    if args.browser:
        profile = Path(tempfile.mkdtemp(prefix="agentrig-chromium-"))
        try:
            b = open_in_browser(path, profile)
        finally:
            shutil.rmtree(profile, ignore_errors=True)
        figures.update({f"browser_{k}": v for k, v in b.items() if k != "errors"})
        figures["browser_errors"] = len(b["errors"])

    cells = args.tasks * 4 * args.trials
    print(f"\nanalysis and report at scale: {args.tasks} tasks × 4 arms × {args.trials} trials = {cells:,} trials "
          f"({figures['machine']})\n")
    table = [
        ("store build (Store.append)", f"{figures['build_s']:.1f} s" if "build_s" in figures else "reused",
         (f"{figures['build_rows_per_s']:,.0f} rows/s; " if "build_s" in figures else "")
         + f"{figures['store_mb']:.0f} MB"),
        ("analyze (analyze_run)", f"{figures['analyze_s']:.1f} s", "target < 30 s"),
        ("agentrig analyze --json (analyze_command)", f"{figures['analyze_cmd_s']:.1f} s", "open + analyze + JSON"),
        ("report (write_report, analysis included)", f"{figures['report_s']:.1f} s", "target < 60 s"),
        ("report given the analysis", f"{figures['report_given_analysis_s']:.1f} s", "collect + compare + embed"),
        ("report size", f"{figures['report_mb']:.1f} MB", f"target < 50 MB; {figures['embedded_trajectories']} "
                                                          "trajectories embedded"),
        ("peak RSS", f"{figures['peak_rss_mb']:.0f} MB", ""),
    ]
    if args.browser:
        table.append(("chromium: load / open a trial", f"{figures['browser_load_s']:.1f} s / {figures['browser_open_s']:.2f} s",
                      f"{figures['browser_errors']} console errors"))
    w = max(len(r[0]) for r in table)
    for name, value, note in table:
        print(f"  {name:<{w}}  {value:>12}  {note}")
    print(f"\n  sections: {figures['analysis_sections']}\n  report: {path}")
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2), encoding="utf-8")
    if not args.keep:
        shutil.rmtree(where, ignore_errors=True)


if __name__ == "__main__":
    main()
