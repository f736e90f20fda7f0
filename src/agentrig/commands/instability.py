"""``agentrig instability RUN``: parse, resample the run's decision steps (run/resample.py), print.

Before starting, the estimate per arm: calls, tokens (each step's original prompt and completion
tokens per sample) and money (the run's price table); ``--estimate`` stops there. After, the
totals the channel counted, and the instability report (``analysis.instability_report``). What is
resampled and how (the rebuilt requests, the seeds, resume, what is never scored): run/resample.py.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from rich.console import Console
from rich.markup import escape

from agentrig.analysis.instability_report import DEFAULT_THRESHOLD
from agentrig.errors import ConfigError
from agentrig.run.resample import Resampling


def _money(x: float | None) -> str:
    return "no price for the model in the run's price table" if x is None else f"${x:,.4f}"


def instability_command(run_dir: Path, *, arm: str | None, tasks: str | None, samples: int, temperature: float,
                        max_steps: int, concurrency: int | None, only_estimate: bool, as_json: bool,
                        threshold: float | None = None, out: Console | None = None) -> int:
    """``threshold``: a step is unstable at or above it (default: the experiment file's
    ``[analysis] instability_threshold``, else ``DEFAULT_THRESHOLD``)."""
    if threshold is not None and not 0 < threshold <= 1:
        raise ConfigError(f"--threshold {threshold}: give a share of actions above 0 and at most 1 (default "
                          f"{DEFAULT_THRESHOLD:g})")
    for name, value, low in (("--samples", samples, 1), ("--max-steps", max_steps, 1)):
        if value < low:
            raise ConfigError(f"{name} {value}: give at least {low}")
    if not 0 < temperature <= 2:
        raise ConfigError(f"--temperature {temperature}: give a sampling temperature above 0 (at most 2); "
                          "at 0 every sample would repeat the taken action")
    if concurrency is not None and concurrency < 1:
        raise ConfigError(f"--concurrency {concurrency}: give at least 1")
    out = out or Console(stderr=as_json)
    rs = Resampling.open(run_dir, arm=arm, tasks=tasks, samples=samples, temperature=temperature,
                         max_steps=max_steps, only_estimate=only_estimate)
    try:
        estimates = rs.estimates
        for p, e in zip(rs.plans, estimates):
            if not as_json:
                out.print(f"[bold]{escape(p.arm)}[/]: {e['steps']} steps of {e['trials']} trials, {e['calls']} calls to "
                          f"make ({e['stored_samples']} samples already stored); about {e['prompt_tokens']:,} prompt + "
                          f"{e['completion_tokens']:,} completion tokens, {_money(e['cost_usd'])}", highlight=False)
            if p.unrecorded and not as_json:
                out.print(f"  {len(p.unrecorded)} trials cannot be resampled: they were stored before agentrig recorded "
                          f"agent requests (first: {escape(p.unrecorded[0])}); rerun them in a new run to resample",
                          highlight=False)
        rs.require_work()
        if only_estimate:
            if as_json:
                sys.stdout.write(json.dumps({"estimate": estimates}, indent=2) + "\n")
            return 0
        totals = rs.resample(concurrency)
        reports = rs.reports(threshold)
    finally:
        rs.close()
    if as_json:
        sys.stdout.write(json.dumps({"estimate": estimates, "totals": totals,
                                     "reports": [r.model_dump(mode="json") for r in reports]}, indent=2) + "\n")
        return 0
    for t in totals:
        u = t["usage"] or {}
        out.print(f"[bold]{escape(t['arm'])}[/]: {t['stored']} samples stored, {t['failed']} calls failed (not stored; "
                  f"run again to ask for them), {u.get('requests', 0)} calls, {u.get('retries', 0)} retries, "
                  f"{u.get('prompt_tokens', 0):,} prompt + {u.get('completion_tokens', 0):,} completion tokens, "
                  f"{_money(u.get('cost_usd'))}", highlight=False)
    from agentrig.analysis.instability_view import print_reports

    print_reports(reports, out)
    return 0
