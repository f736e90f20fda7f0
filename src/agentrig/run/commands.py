"""The glue of ``agentrig run`` and ``agentrig export``: load, open, plan, play, print.

Output: people get a progress line (on a terminal) and a summary per arm; ``--json`` prints one
JSON object on stdout and nothing else (messages go to stderr). Exit codes: 0 done, 1 a user
error or a fatal channel error (the run stops, finished trials kept), 130 Ctrl-C.
"""

from __future__ import annotations

import asyncio
import json
import logging
import signal
import sys
from pathlib import Path
from typing import Any

from rich import box
from rich.console import Console
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from agentrig.errors import ConfigError, DataError

from . import experiment
from .progress import progress_for
from .executor import Executor, Outcome, Stats, stall_limit
from .runner import CONFIG_FILE, STORE_FILE, Run, close_channels, make_channels, open_run, plan, summarize
from .smoke import SmokeReport, run_smoke
from .store import Store

EXIT_INTERRUPTED = 130


def _fmt(x: float | None) -> str:
    return "-" if x is None else f"{x:.3f}"


# ------------------------------------------------------------------------------------------ run


async def _execute(r: experiment.Resolved, run: Run, specs: list, stats: Stats, progress) -> Outcome:
    channels = make_channels(r, run.run_id)
    ex = Executor(r, run.store, run.run_id, channels, stats)
    loop = asyncio.get_running_loop()
    installed = False

    def on_sigint() -> None:
        ex.request_stop()
        loop.remove_signal_handler(signal.SIGINT)  # a second Ctrl-C interrupts at once

    try:
        loop.add_signal_handler(signal.SIGINT, on_sigint)
        installed = True
    except (NotImplementedError, RuntimeError, ValueError):  # not the main thread / no signals here
        pass
    try:
        with progress:
            return await ex.run(specs)
    finally:
        if installed:
            loop.remove_signal_handler(signal.SIGINT)
        await close_channels(channels)


def _print_summary(out: Console, r: experiment.Resolved, run: Run, summary: dict, outcome: Outcome) -> None:
    t = Table(title=None, show_edge=False, pad_edge=False, box=box.SIMPLE_HEAD, padding=(0, 1))
    k = r.exp.run.trials
    cols = [("arm", "left"), ("valid", "right"), ("invalid", "right"), ("reward", "right"), ("pass^1", "right")]
    if k > 1:
        cols += [(f"pass^{k}", "right"), ("gap pp", "right")]
    cols += [("tokens", "right"), ("retries", "right")]
    widest = max([len("arm"), *(len(name) for name in summary)])
    for col, justify in cols:
        width = widest if col == "arm" else len(col)
        t.add_column(col, justify=justify, no_wrap=True, min_width=width)  # type: ignore[arg-type]
    for name, s in summary.items():
        row = [escape(name), f"{s['valid']}/{s['planned']}", str(s["invalid"]), _fmt(s["mean_reward"]),
               _fmt(s["pass_1"])]
        if k > 1:
            row += [_fmt(s["pass_k"]), "-" if s["gap"] is None else f"{100 * s['gap']:.1f}"]
        row += [f"{s['prompt_tokens'] + s['completion_tokens']:,}", str(s["retries"])]
        t.add_row(*row)
    out.print(t)
    for name, s in summary.items():
        for cause, n in list(s["invalid_causes"].items())[:5]:
            out.print(Text(f"  {name}: {n} invalid attempt(s): {cause}", style="yellow"))
    out.print(Text(f"run directory: {run.dir}"))
    if outcome.status == "done":
        missing = sum(s["invalid"] + s["missing"] for s in summary.values())
        if missing:
            out.print(Text(f"{missing} trial(s) are not valid yet; rerun the same command to play them again.",
                           style="yellow"))
        out.print(Text(f"export: agentrig export {run.dir} --format tau2", style="dim"))


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
                run_dir: Path | None = None, out: Console | None = None, err: Console | None = None) -> int:
    out = out or Console(highlight=False, soft_wrap=True)
    err = err or Console(stderr=True, highlight=False, soft_wrap=True)
    # the channel's retry warnings are in the store and the summary; not a flood on the terminal
    logger = logging.getLogger("agentrig")
    if not logger.handlers:
        logger.addHandler(logging.NullHandler())
    r = experiment.load(path, run_dir)
    if smoke:
        report = asyncio.run(run_smoke(r, r.run_dir))
        if as_json:
            sys.stdout.write(json.dumps(report.as_dict(), indent=2) + "\n")
        else:
            print_smoke(out, report)
        return 0 if report.ok else 1
    run = open_run(r, force=force)
    try:
        if run.note:
            err.print(Text(run.note, style="yellow"))
        specs = plan(r, run.store)
        total = len(r.arms) * len(r.tasks) * r.exp.run.trials
        if not as_json:
            err.print(Text(f"{r.name}: {len(r.arms)} arm(s) × {len(r.tasks)} task(s) × {r.exp.run.trials} trial(s) "
                           f"= {total}; {total - len(specs)} already stored, {len(specs)} to play → {run.dir}"))
        stats = Stats()
        progress = progress_for(stats, out, r.name, enabled=not as_json and bool(specs))
        try:
            outcome = asyncio.run(_execute(r, run, specs, stats, progress))
        except KeyboardInterrupt:  # a second Ctrl-C
            outcome = Outcome("interrupted", stored=stats.valid + stats.invalid_attempts)
        summary = summarize(r, run.store)
        report_path = _write_report(run, err) if outcome.stored or not specs else None
        if as_json:
            doc = _json(summary, run, outcome, len(specs))
            doc["report"] = str(report_path) if report_path is not None else None
            sys.stdout.write(json.dumps(doc, indent=2) + "\n")
        else:
            _print_summary(out, r, run, summary, outcome)
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
        return 0
    finally:
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
        for c in a.roles:
            mark = Text("  ✓ ", style="green") if c.status == "ok" else Text("  ✗ ", style="red")
            code = f"{c.code}: " if c.code and c.status != "ok" else ""
            out.print(mark + Text(f"{c.role:<7}{code}{c.detail}"))
            if c.fix and c.status != "ok":
                out.print(Text(f"      fix: {c.fix}", style="dim"))
    verdict = Text("smoke check passed: the full run can start", style="green") if report.ok else \
        Text("smoke check failed: fix the problems above before a full run", style="red")
    out.print(verdict)
    out.print(Text(f"smoke trials: {report.store}", style="dim"))


# --------------------------------------------------------------------------------------- export


def open_run_dir(run_dir: Path) -> tuple[Store, dict]:
    """A run directory's store (read-only use) and its configuration snapshot."""
    run_dir = Path(run_dir).expanduser()
    path = run_dir / STORE_FILE
    if not path.is_file():
        raise DataError(f"{run_dir}: not a run directory (no {STORE_FILE}); give the directory "
                        "`agentrig run` printed")
    store = Store.open(path, create=False)
    config = store.get_meta("config")
    if config is None:
        cfg_file = run_dir / CONFIG_FILE
        if not cfg_file.is_file():
            store.close()
            raise DataError(f"{run_dir}: the run's configuration snapshot is missing ({CONFIG_FILE})")
        config = json.loads(cfg_file.read_text(encoding="utf-8"))
    return store, config


def _pick(what: str, given: str | None, options: list[str], flag: str) -> str:
    if given is not None:
        if given not in options:
            raise ConfigError(f"no {what} {given!r} in this run; {what}s: {', '.join(options)}")
        return given
    if len(options) == 1:
        return options[0]
    raise ConfigError(f"the run has {len(options)} {what}s ({', '.join(options)}); the tau2 format holds one: "
                      f"choose it with {flag} NAME")


def _tau2_info(config: dict, arm: str, domain: str, policy: str) -> dict:
    from agentrig.bench.tau import user_prompts

    from .export import tau2_info

    exp = config["experiment"]
    arm_cfg = next(a for a in exp["arms"] if a["name"] == arm)
    roles = config["resolved"][arm]["roles"]
    agent_kind = arm_cfg["agent"]["kind"]
    user_kind = exp["user"]["kind"]

    def args(role: str) -> dict:
        rr = roles[role]
        return {k: rr[k] for k in ("temperature", "max_tokens", "seed") if rr.get(k) is not None}

    guidelines = None
    if user_kind == "llm":
        root = config.get("data_root")
        guidelines, _ = user_prompts.resolve_guidelines(exp["user"]["guidelines"], root, False)
    return tau2_info(
        domain=domain, policy=policy, max_steps=exp["run"]["max_steps"], max_errors=exp["run"]["max_errors"],
        num_trials=exp["run"]["trials"], seed=exp["run"]["seed"],
        agent_model=roles["agent"]["model"] if agent_kind == "llm" else None,
        agent_args=args("agent") if agent_kind == "llm" else None,
        agent_implementation="llm_agent" if agent_kind == "llm" else f"agentrig_{agent_kind}_agent",
        user_model=roles["user"]["model"] if user_kind == "llm" else None,
        user_args=args("user") if user_kind == "llm" else None,
        user_implementation="user_simulator" if user_kind == "llm" else "agentrig_scripted_user",
        user_guidelines=guidelines,
    )


def export_command(run_dir: Path, fmt: str, *, arm: str | None = None, domain: str | None = None,
                   out_path: Path | None = None) -> tuple[int, Path]:
    """Write the export; returns (how many records / simulations, the file written)."""
    from agentrig.bench.tau import data as tau_data

    from .export import export_jsonl, export_tau2

    if fmt not in ("jsonl", "tau2"):
        raise ConfigError(f"unknown export format {fmt!r}; use jsonl or tau2")
    store, config = open_run_dir(run_dir)
    try:
        arms = [a["name"] for a in config["experiment"]["arms"]]
        exports = Path(run_dir) / "exports"
        if fmt == "jsonl":
            if arm is not None:
                _pick("arm", arm, arms, "--arm")
            target = out_path or exports / (f"{arm}.jsonl" if arm else "trials.jsonl")
            target.parent.mkdir(parents=True, exist_ok=True)
            return export_jsonl(store, target, arm), target
        arm = _pick("arm", arm, arms, "--arm")
        domains = list(config["tasks"])
        domain = _pick("domain", domain, domains, "--domain")
        root = config.get("data_root")
        wanted = set(config["tasks"][domain])
        tasks = [t for t in tau_data.load_tasks(root, domain) if t.id in wanted]
        arm_cfg = next(a for a in config["experiment"]["arms"] if a["name"] == arm)
        policy = tau_data.load_policy(root, domain, arm_cfg["agent"]["policy"])
        info = _tau2_info(config, arm, domain, policy)
        target = out_path or exports / f"{arm}.{domain}.results.json"
        target.parent.mkdir(parents=True, exist_ok=True)
        return export_tau2(store, target, arm, tasks, info, domain=domain), target
    finally:
        store.close()


_open_run_dir = open_run_dir  # the older private name
