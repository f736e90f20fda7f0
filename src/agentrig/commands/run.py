"""``agentrig run``: load, open, plan, play, print.

Output: people get a progress line (on a terminal) and a summary per arm; ``--json`` prints one
JSON object on stdout and nothing else (messages go to stderr). Exit codes (docs/experiments.md):
0 done, 1 a user error, a fatal channel error or a stalled run (the run stops, finished trials
kept), 3 the run finished but an arm has no valid trial (nothing it played can be scored: every
trial was spoiled by the channel or the sandbox), 130 Ctrl-C; a run stopped by its budget
(``[run] max_cost``/``max_tokens``, run/budget.py) exits 0 with status "budget".
``--estimate`` prints what the whole plan will take (run/estimate.py) and plays nothing else.
"""

from __future__ import annotations

import asyncio
import json
import logging
import signal
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.console import Console
from rich.markup import escape
from rich.text import Text

from agentrig.tables import FitTable, output_console

from agentrig.run import experiment
from agentrig.run.progress import progress_for
from agentrig.run.executor import Executor, Outcome, Stats, stall_limit
from agentrig.run.outages import as_json as outage_json
from agentrig.run.outages import describe
from agentrig.run.budget import Budget, check_prices
from agentrig.store.replay_cache import ReplayCache
from agentrig.run.runner import Run, close_channels, make_channels, open_run, plan, summarize

if TYPE_CHECKING:
    from agentrig.run.smoke import SmokeReport

EXIT_INTERRUPTED = 130
EXIT_NO_VALID_TRIAL = 3  # an arm ended with no valid trial: nothing of it can be scored


def _fmt(x: float | None) -> str:
    return "-" if x is None else f"{x:.3f}"


# ------------------------------------------------------------------------------------------ run


async def _execute(r: experiment.Resolved, run: Run, specs: list, stats: Stats, progress,
                   budget: Budget | None = None, cache: ReplayCache | None = None) -> Outcome:
    if r.exp.run.executor == "ray":  # the trials on a Ray cluster; the store and the rest as here
        from agentrig.run.ray.executor import RayExecutor

        channels: dict = {}
        ex: Executor = RayExecutor(r, run.store, run.run_id, channels, stats)
    else:
        channels = make_channels(r, run.run_id)
        if cache is not None:  # [channel] cache = "replay" (store/replay_cache.py)
            cache.attach(channels)
        ex = Executor(r, run.store, run.run_id, channels, stats)
    if budget is not None:  # [run] max_cost / max_tokens: stop as Ctrl-C does once spent (run/budget.py)
        ex.on_record = budget.hook(ex, ex.on_record)
    # a Python-level handler, not the loop's: it runs before the next line of any trial, so a
    # trial that comes back after Ctrl-C (its sandbox got the signal too) is never stored
    def on_sigint(_signum: int, _frame: Any) -> None:
        ex.request_stop()
        signal.signal(signal.SIGINT, signal.default_int_handler)  # a second Ctrl-C interrupts at once

    installed, previous = False, None
    try:
        previous = signal.signal(signal.SIGINT, on_sigint)
        installed = True
    except ValueError:  # not the main thread: no signals here
        pass
    try:
        with progress:
            outcome = await ex.run(specs)
        outcome.outages = ex.outages
        if budget is not None and budget.reached is not None and outcome.status == "interrupted":
            outcome.status = "budget"
        return outcome
    finally:
        if installed:
            signal.signal(signal.SIGINT, previous if previous is not None else signal.default_int_handler)
        await close_channels(channels)


def _print_summary(out: Console, r: experiment.Resolved, run: Run, summary: dict, outcome: Outcome) -> None:
    t = FitTable()
    k = r.exp.run.trials
    cols = [("arm", "left"), ("valid", "right"), ("invalid", "right"), ("reward", "right"), ("pass^1", "right")]
    if k > 1:
        cols += [(f"pass^{k}", "right"), ("gap pp", "right")]
    cols += [("tokens", "right"), ("retries", "right")]
    for col, justify in cols:
        t.add_column(col, justify)  # type: ignore[arg-type]
    for name, s in summary.items():
        row = [escape(name), f"{s['valid']}/{s['planned']}", str(s["invalid"]), _fmt(s["mean_reward"]),
               _fmt(s["pass_1"])]
        if k > 1:
            row += [_fmt(s["pass_k"]), "-" if s["gap"] is None else f"{100 * s['gap']:.1f}"]
        row += [f"{s['prompt_tokens'] + s['completion_tokens']:,}", str(s["retries"])]
        t.add_row(*row)
    t.print(out)
    for name, s in summary.items():
        for cause, n in list(s["invalid_causes"].items())[:5]:
            out.print(Text(f"  {name}: {n} invalid attempt(s): {cause}", style="yellow"))
    for o in outcome.outages:
        out.print(Text(f"  outage: {describe(o)}", style="yellow"))
    out.print(Text(f"run directory: {run.dir}"))
    if outcome.status == "done":
        missing = sum(s["invalid"] + s["missing"] for s in summary.values())
        if missing:
            out.print(Text(f"{missing} trial(s) are not valid yet; rerun the same command to play them again.",
                           style="yellow"))
        fmt = next(iter(r.benchmark.export_formats), "jsonl")  # τ²: tau2; a benchmark without its own: jsonl
        out.print(Text(f"export: agentrig export {run.dir} --format {fmt}", style="dim"))


def _fatal_message(outcome: Outcome, run: Run) -> str:
    err = outcome.fatal
    assert err is not None
    d = err.diagnosis
    role = f" for role '{outcome.fatal_role}'" if outcome.fatal_role else ""
    return (f"the run stopped: a fatal channel error{role} (trial {outcome.fatal_trial})\n"
            f"  {d.code}: {d.message}\n  fix: {d.fix}\n"
            f"{outcome.stored} trial(s) finished in this session; every finished trial is kept in {run.dir}. "
            "Fix the problem and rerun the same command to resume.")


def _stalled_message(outcome: Outcome, run: Run, r: experiment.Resolved) -> str:
    n = stall_limit(r.exp.run.concurrency)
    if (outcome.stalled_cause or "").startswith("sandbox:"):  # a terminal sandbox, not the channel
        return (f"the run stopped: the last {n} trial attempts were all spoiled by the sandbox, the last one by\n"
                f"  {outcome.stalled_cause}\n"
                f"  fix: check the sandbox with `agentrig doctor --sandbox`\n"
                f"Every finished trial is kept in {run.dir}; rerun the same command to resume.")
    if (outcome.stalled_cause or "").startswith("worker_lost"):  # the Ray executor's workers kept dying
        return (f"the run stopped: the last {n} trial attempts all lost their Ray worker, the last one by\n"
                f"  {outcome.stalled_cause}\n"
                f"  fix: check the cluster (`ray status`; the workers' logs under the head's session directory)\n"
                f"Every finished trial is kept in {run.dir}; rerun the same command to resume.")
    return (f"the run stopped: the last {n} trial attempts were all spoiled by the channel, the last one by\n"
            f"  {outcome.stalled_cause}\n"
            f"  fix: the endpoint seems down or overloaded; check it with `agentrig doctor --config {r.source}`\n"
            f"Every finished trial is kept in {run.dir}; rerun the same command to resume.")


def _json(summary: dict, run: Run, outcome: Outcome, planned: int) -> dict[str, Any]:
    error = None
    if outcome.fatal is not None:
        d = outcome.fatal.diagnosis
        error = {"code": d.code, "message": d.message, "fix": d.fix, "role": outcome.fatal_role,
                 "trial": outcome.fatal_trial}
    elif outcome.stalled_cause is not None:
        code = outcome.stalled_cause.split(":", 1)[0]
        error = {"code": code, "message": f"too many trials in a row spoiled by the channel: {outcome.stalled_cause}",
                 "fix": "check the endpoint with `agentrig doctor`, then rerun the same command",
                 "role": None, "trial": None}
    return {"run_dir": str(run.dir), "run_id": run.run_id, "status": outcome.status, "played": planned,
            "stored": outcome.stored, "error": error, "arms": summary}


def _write_report(run: Run, err: Console) -> Path | None:
    """The run's HTML report, written at the end of every run (a failure here never fails the run)."""
    from agentrig.report import write_report

    try:
        return write_report([run.dir])
    except Exception as exc:  # noqa: BLE001 - the trials are stored; the report can be rebuilt
        err.print(Text(f"note: the report could not be written ({type(exc).__name__}: {exc}); "
                       f"rebuild it with `agentrig report {run.dir}`", style="yellow"))
        return None


def run_command(path: Path, *, as_json: bool = False, smoke: bool = False, force: bool = False,
                run_dir: Path | None = None, out: Console | None = None, err: Console | None = None,
                estimate: bool = False) -> int:
    out = out or output_console(soft_wrap=True)
    err = err or Console(stderr=True, highlight=False, soft_wrap=True)
    # the channel's retry warnings are in the store and the summary; not a flood on the terminal
    logger = logging.getLogger("agentrig")
    if not logger.handlers:
        logger.addHandler(logging.NullHandler())
    # --smoke / --estimate play one task per arm: its trial builds what it needs, nothing else is built
    r = experiment.load(path, run_dir, prepare=not (smoke or estimate))
    if estimate:  # tokens and cost of the whole plan, from a smoke play or the run's stored trials
        from agentrig.run.estimate import estimate_command

        return estimate_command(r, as_json=as_json, out=out, err=err)
    if smoke:
        from agentrig.run.smoke import run_smoke

        report = asyncio.run(run_smoke(r, r.run_dir))
        if as_json:
            sys.stdout.write(json.dumps(report.as_dict(), indent=2) + "\n")
        else:
            print_smoke(out, report)
        return 0 if report.ok else 1
    if r.exp.run.executor == "ray":  # before the run directory: a missing extra is a setup error
        from agentrig.run.ray.executor import require_ray

        require_ray(r.source)
    check_prices(r)
    ReplayCache.check(r)
    run = open_run(r, force=force)
    cache: ReplayCache | None = None
    try:
        if run.note:
            err.print(Text(run.note, style="yellow"))
        specs = plan(r, run.store)
        total = len(r.arms) * len(r.tasks) * r.exp.run.trials
        for label, why in r.excluded.items():  # tasks the benchmark left out: never played, never failed
            err.print(Text(f"excluded: {label}: {why}", style="yellow"))
        if not as_json:
            err.print(Text(f"{r.name}: {len(r.arms)} arm(s) × {len(r.tasks)} task(s) × {r.exp.run.trials} trial(s) "
                           f"= {total}; {total - len(specs)} already stored, {len(specs)} to play → {run.dir}"))
        stats = Stats()
        budget = Budget.of_run(r, run.store)  # None without [run] max_cost / max_tokens
        if budget is not None and budget.at_start:
            specs_to_play: list = []  # the run's budget is spent already: nothing is played
        else:
            specs_to_play = specs
            cache = ReplayCache.for_run(r, run.dir)  # None unless [channel] cache = "replay"
        progress = progress_for(stats, out, r.name, enabled=not as_json and bool(specs_to_play))
        try:
            # nothing to play (a resume of a finished run): no channel, no SDK, no event loop
            outcome = asyncio.run(_execute(r, run, specs_to_play, stats, progress, budget, cache)) \
                if specs_to_play else Outcome("budget" if specs else "done")
        except KeyboardInterrupt:  # a second Ctrl-C
            outcome = Outcome("interrupted", stored=stats.valid + stats.invalid_attempts)
        summary = summarize(r, run.store)
        report_path = _write_report(run, err) if outcome.stored or not specs else None
        if as_json:
            doc = _json(summary, run, outcome, len(specs))
            if r.excluded:  # tasks the benchmark left out (a key only when there are some)
                doc["excluded"] = dict(r.excluded)
            if outcome.outages:  # endpoint outages of this session (a key only when there were some)
                doc["outages"] = outage_json(outcome.outages)
            if budget is not None:  # [run] max_cost / max_tokens: the spend and whether it stopped the run
                doc["budget"] = budget.state().model_dump()
            doc["report"] = str(report_path) if report_path is not None else None
            sys.stdout.write(json.dumps(doc, indent=2) + "\n")
        else:
            _print_summary(out, r, run, summary, outcome)
            if budget is not None:
                out.print(Text(budget.describe(stopped=outcome.status == "budget"),
                               style="yellow" if budget.reached else "dim"))
            if report_path is not None:
                out.print(Text(f"report: {report_path}", style="dim"))
        if outcome.status == "fatal":
            err.print(Text("error: ", style="bold red") + Text(_fatal_message(outcome, run)))
            return 1
        if outcome.status == "stalled":
            err.print(Text("error: ", style="bold red") + Text(_stalled_message(outcome, run, r)))
            return 1
        if outcome.status == "interrupted":
            err.print(Text(f"interrupted: {outcome.stored} trial(s) stored in this session, every finished trial "
                           f"is kept in {run.dir}; rerun the same command to resume."))
            return EXIT_INTERRUPTED
        if outcome.status == "budget" and budget is not None:  # a clean stop: exit 0, the summary says why
            err.print(Text("budget: ", style="bold yellow") + Text(budget.stop_message(run.dir)))
            return 0
        empty = [name for name, s in summary.items() if s["planned"] and not s["valid"]]
        if empty:  # a script must not read a run in which an arm scored nothing as a success
            err.print(Text("error: ", style="bold red") + Text(
                f"arm(s) {', '.join(empty)} ended with no valid trial: every trial was spoiled by the "
                "infrastructure (see the invalid causes above). Fix the cause (`agentrig doctor --config "
                "EXPERIMENT`; for terminal tasks `agentrig doctor --sandbox`) and rerun the same command: "
                "the invalid trials are played again."))
            return EXIT_NO_VALID_TRIAL
        return 0
    finally:
        if cache is not None:
            cache.close()
        run.close()


def print_smoke(out: Console, report: SmokeReport) -> None:
    for a in report.arms:
        if a.valid is not None:
            trial = f"{a.termination}, reward {a.reward:g}" + ("" if a.valid else " (INVALID)")
        else:
            trial = "stopped"
        out.print(Text.assemble((f"arm {a.arm}", "bold"), f"  task {a.task}: {trial}"))
        if a.problem:
            out.print(Text(f"  trial problem: {a.problem}", style="red"))
        _print_transcript(out, a.transcript)
        for c in a.roles:
            mark = Text("  ✓ ", style="green") if c.status == "ok" else Text("  ✗ ", style="red")
            code = f"{c.code}: " if c.code and c.status != "ok" else ""
            out.print(mark + Text(f"{c.role:<7} {code}{c.detail}"))  # "analyst" is 7 letters: a space still follows
            if c.fix and c.status != "ok":
                out.print(Text(f"      fix: {c.fix}", style="dim"))
    verdict = Text("smoke check passed: the full run can start", style="green") if report.ok else \
        Text("smoke check failed: fix the problems above before a full run", style="red")
    out.print(verdict)
    out.print(Text(f"smoke trials: {report.store} (a run directory of its own: agentrig export "
                   f"{report.store.parent} --format jsonl)", style="dim"))


_LABEL_STYLE = {"thought": "cyan", "reply": "cyan", "action": "bold", "observation": "dim", "submission": "green",
                "format error": "red", "stop": "yellow", "tests": "magenta"}


def _print_transcript(out: Console, lines: list[tuple[str, str]]) -> None:
    """The benchmark's view of the smoke trial: one labelled block per line, indented."""
    for label, text in lines:
        body = text.rstrip("\n").split("\n")
        out.print(Text(f"  {label:<13}", style=_LABEL_STYLE.get(label, "")) + Text(body[0]))
        for line in body[1:]:
            out.print(Text(" " * 15 + line))
