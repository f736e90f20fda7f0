"""``agentrig run``: parse, hand the experiment to a run session (run/session.py), print.

The session loads and checks the experiment, opens or resumes the run directory, plans, plays with
the chosen executor (local or Ray), summarizes, writes the report and decides the exit code; this
module prints what it planned, its progress and what it returns.

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
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.console import Console
from rich.markup import escape
from rich.text import Text

from agentrig.tables import FitTable, output_console

from agentrig.run import experiment
from agentrig.run.progress import progress_for
from agentrig.run.executor import Outcome, stall_limit
from agentrig.run.outages import as_json as outage_json
from agentrig.run.outages import describe
from agentrig.run.session import EXIT_INTERRUPTED, EXIT_NO_VALID_TRIAL, Session, SessionResult

if TYPE_CHECKING:
    from agentrig.run.smoke import SmokeReport

__all__ = ["EXIT_INTERRUPTED", "EXIT_NO_VALID_TRIAL", "print_smoke", "run_command"]


def _fmt(x: float | None) -> str:
    return "-" if x is None else f"{x:.3f}"


# ------------------------------------------------------------------------------------------ run


def _print_summary(out: Console, session: Session, summary: dict, outcome: Outcome) -> None:
    r, run = session.r, session.run
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


def _fatal_message(outcome: Outcome, run: Any) -> str:
    err = outcome.fatal
    assert err is not None
    d = err.diagnosis
    role = f" for role '{outcome.fatal_role}'" if outcome.fatal_role else ""
    return (f"the run stopped: a fatal channel error{role} (trial {outcome.fatal_trial})\n"
            f"  {d.code}: {d.message}\n  fix: {d.fix}\n"
            f"{outcome.stored} trial(s) finished in this session; every finished trial is kept in {run.dir}. "
            "Fix the problem and rerun the same command to resume.")


def _stalled_message(outcome: Outcome, run: Any, r: experiment.Resolved) -> str:
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


def _json(summary: dict, run: Any, outcome: Outcome, planned: int) -> dict[str, Any]:
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


def run_command(path: Path, *, as_json: bool = False, smoke: bool = False, force: bool = False,
                run_dir: Path | None = None, out: Console | None = None, err: Console | None = None,
                estimate: bool = False) -> int:
    out = out or output_console(soft_wrap=True)
    err = err or Console(stderr=True, highlight=False, soft_wrap=True)
    # the channel's retry warnings are in the store and the summary; not a flood on the terminal
    logger = logging.getLogger("agentrig")
    if not logger.handlers:
        logger.addHandler(logging.NullHandler())
    if estimate or smoke:
        # they play one task per arm: its trial builds what it needs, nothing else is built
        r = experiment.load(path, run_dir, prepare=False)
        if estimate:  # tokens and cost of the whole plan, from a smoke play or the run's stored trials
            from agentrig.run.estimate import estimate_command

            return estimate_command(r, as_json=as_json, out=out, err=err)
        from agentrig.run.smoke import run_smoke

        report = asyncio.run(run_smoke(r, r.run_dir))
        if as_json:
            sys.stdout.write(json.dumps(report.as_dict(), indent=2) + "\n")
        else:
            print_smoke(out, report)
        return 0 if report.ok else 1
    session = Session.open(path, run_dir=run_dir, force=force)  # checked, opened (or resumed), planned
    try:
        r, run, specs = session.r, session.run, session.specs
        if run.note:
            err.print(Text(run.note, style="yellow"))
        for label, why in r.excluded.items():  # tasks the benchmark left out: never played, never failed
            err.print(Text(f"excluded: {label}: {why}", style="yellow"))
        if not as_json:
            total = session.total
            err.print(Text(f"{session.name}: {len(r.arms)} arm(s) × {len(r.tasks)} task(s) × {r.exp.run.trials} "
                           f"trial(s) = {total}; {total - len(specs)} already stored, {len(specs)} to play → {run.dir}"))
        progress = progress_for(session.stats, out, session.name, enabled=not as_json and bool(session.to_play))
    except BaseException:
        session.close()
        raise
    result = session.conduct(progress)  # played, summarized, reported; the run directory closed
    _print_result(result, session, out, err, as_json)
    return result.exit_code


def _print_result(result: SessionResult, session: Session, out: Console, err: Console, as_json: bool) -> None:
    r, run, budget, outcome, summary = session.r, session.run, session.budget, result.outcome, result.summary
    if result.report_error is not None:
        err.print(Text(f"note: the report could not be written ({result.report_error}); "
                       f"rebuild it with `agentrig report {run.dir}`", style="yellow"))
    if as_json:
        doc = _json(summary, run, outcome, len(session.specs))
        if r.excluded:  # tasks the benchmark left out (a key only when there are some)
            doc["excluded"] = dict(r.excluded)
        if outcome.outages:  # endpoint outages of this session (a key only when there were some)
            doc["outages"] = outage_json(outcome.outages)
        if budget is not None:  # [run] max_cost / max_tokens: the spend and whether it stopped the run
            doc["budget"] = budget.state().model_dump()
        doc["report"] = str(result.report) if result.report is not None else None
        sys.stdout.write(json.dumps(doc, indent=2) + "\n")
    else:
        _print_summary(out, session, summary, outcome)
        if budget is not None:
            out.print(Text(budget.describe(stopped=outcome.status == "budget"),
                           style="yellow" if budget.reached else "dim"))
        if result.report is not None:
            out.print(Text(f"report: {result.report}", style="dim"))
    if outcome.status == "fatal":
        err.print(Text("error: ", style="bold red") + Text(_fatal_message(outcome, run)))
    elif outcome.status == "stalled":
        err.print(Text("error: ", style="bold red") + Text(_stalled_message(outcome, run, r)))
    elif outcome.status == "interrupted":
        err.print(Text(f"interrupted: {outcome.stored} trial(s) stored in this session, every finished trial "
                       f"is kept in {run.dir}; rerun the same command to resume."))
    elif outcome.status == "budget" and budget is not None:  # a clean stop: exit 0, the summary says why
        err.print(Text("budget: ", style="bold yellow") + Text(budget.stop_message(run.dir)))
    elif result.empty_arms:  # a script must not read a run in which an arm scored nothing as a success
        err.print(Text("error: ", style="bold red") + Text(
            f"arm(s) {', '.join(result.empty_arms)} ended with no valid trial: every trial was spoiled by the "
            "infrastructure (see the invalid causes above). Fix the cause (`agentrig doctor --config "
            "EXPERIMENT`; for terminal tasks `agentrig doctor --sandbox`) and rerun the same command: "
            "the invalid trials are played again."))


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
