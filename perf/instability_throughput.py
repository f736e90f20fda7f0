"""Resampling throughput of ``agentrig instability`` against the local gold endpoint.

A run of the built-in bikeshop domain (16 tasks × ``--trials``) is played first through the
gold-scripting endpoint (its own process; LLM agent and LLM user). Then every decision step of
every trial is resampled ``--samples`` times — the command's own planning and ``resample`` (the
channel, the semaphore, the parsing, one store transaction per step) — against the endpoint
answering with ``--delay-ms`` added to every reply, at ``--concurrency`` calls in flight.

Figures: achieved resampling calls/s against the endpoint-bound ideal ``concurrency ÷ delay``
(target ≥ 90%), and calls/s with the endpoint answering at once (the CPU-bound rate of this
machine's two processes). The wall time counts the calls only (planning and the report after are
printed apart). Also the rate while every slot is busy (until fewer calls than the concurrency
remain), as the trials' figure (b) of perf/throughput.py is measured. The first round of
calls answers only after ``--delay-ms``, so a short run cannot reach the ideal: with 1,540 calls
(``--trials 4``) at most 96% is possible (25 rounds of 64 in 5.0 s), with 3,080 (the default 8)
98%.

    .venv/bin/python perf/instability_throughput.py [--trials 8] [--samples 5]
                                                          [--delay-ms 200] [--concurrency 64]
"""

from __future__ import annotations

import argparse
import asyncio
import io
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

KEY_ENV = "AGENTRIG_BENCH_KEY"
KEY = "sk-bench-instability-0123456789"


def start_gold(delay_ms: float) -> tuple[subprocess.Popen, str]:
    proc = subprocess.Popen([sys.executable, "-m", "agentrig.bench.tau.scripted.gold_endpoint", "--api-key-env", KEY_ENV,
                             "--delay-ms", str(delay_ms)], stdout=subprocess.PIPE, text=True,
                            env={**os.environ, KEY_ENV: KEY})
    base = proc.stdout.readline().strip()
    if not base.startswith("http"):
        proc.kill()
        raise SystemExit(f"the gold endpoint did not start (printed {base!r})")
    return proc, base


def stop(proc: subprocess.Popen) -> None:
    proc.terminate()
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()


def experiment(directory: Path, base: str, trials: int, concurrency: int) -> Path:
    path = directory / "bench.toml"
    path.write_text(f"""
name = "instability-bench"
[benchmark]
domains = ["bikeshop"]
[run]
trials = {trials}
seed = 7
concurrency = 16
[user]
kind = "llm"
guidelines = "builtin"
[judge]
nl_assertions = "never"
[channel]
base_url = "{base}"
api_key_env = "{KEY_ENV}"
max_concurrency = {concurrency}
[roles.agent]
model = "gold"
[roles.user]
model = "gold"
[[arms]]
name = "llm"
agent = {{ kind = "llm" }}
""", encoding="utf-8")
    return path


def resample_once(run_dir: Path, base: str, samples: int, concurrency: int) -> dict:
    """Plan and resample every step of the run against ``base`` (the run's endpoint is replaced)."""
    from agentrig.store import instability as instability_store
    from agentrig.run import resample as ic
    from agentrig.store.rundir import open_run_dir

    store, config = open_run_dir(run_dir)
    try:
        config = json.loads(json.dumps(config))
        config["experiment"]["channel"]["base_url"] = base
        arm = ic._arms(config)["llm"]
        t0 = time.perf_counter()
        p = ic.plan(store, config, "llm", arm, tasks=None, samples=samples, temperature=0.5, max_steps=15)
        planned = time.perf_counter() - t0
        instability_store.ensure(store)
        ends: list[float] = []  # when each sample's call came back
        original = ic._sample

        async def timed(*args, **kwargs):
            try:
                return await original(*args, **kwargs)
            finally:
                ends.append(time.perf_counter())

        ic._sample = timed
        t0 = time.perf_counter()
        try:
            totals = asyncio.run(ic.resample(store, p, run_id=config.get("run_id"), temperature=0.5,
                                             concurrency=concurrency))
        finally:
            ic._sample = original
        wall = time.perf_counter() - t0
    finally:
        store.close()
    calls = totals["stored"] + totals["failed"]
    # steady state, as perf/throughput.py's (b): while every one of the `concurrency` slots
    # is busy, i.e. until fewer calls than that remain (the last ones drain with slots idle)
    busy = sorted(ends)[: max(0, len(ends) - totals["concurrency"])]
    steady = len(busy) / (busy[-1] - t0) if busy else None
    return {"calls": calls, "failed": totals["failed"], "wall_s": wall, "steady_calls_per_s": steady,
            "steady_window_s": busy[-1] - t0 if busy else 0.0,
            "plan_s": planned, "steps": len(p.jobs), "concurrency": totals["concurrency"]}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--trials", type=int, default=8)
    ap.add_argument("--samples", type=int, default=5)
    ap.add_argument("--delay-ms", type=float, default=200.0)
    ap.add_argument("--concurrency", type=int, default=64)
    args = ap.parse_args()
    os.environ[KEY_ENV] = KEY
    from rich.console import Console

    from agentrig.commands.run import run_command

    with tempfile.TemporaryDirectory() as tmp:
        tmp_path = Path(tmp)
        proc, base = start_gold(0.0)
        try:
            exp = experiment(tmp_path, base, args.trials, args.concurrency)
            run_dir = tmp_path / "run"
            import contextlib

            with contextlib.redirect_stdout(io.StringIO()):
                assert run_command(exp, run_dir=run_dir, as_json=True, out=Console(file=io.StringIO())) == 0
            fast_dir = tmp_path / "fast"
            import shutil

            shutil.copytree(run_dir, fast_dir)
            fast = resample_once(fast_dir, base, args.samples, args.concurrency)
        finally:
            stop(proc)
        proc, slow_base = start_gold(args.delay_ms)
        try:
            slow = resample_once(run_dir, slow_base, args.samples, args.concurrency)
        finally:
            stop(proc)
    ideal = args.concurrency / (args.delay_ms / 1000.0)
    achieved = slow["calls"] / slow["wall_s"]
    load = " ".join(f"{x:.1f}" for x in os.getloadavg())
    print(f"machine: {platform.processor() or platform.machine()}, {os.cpu_count()} cores, Python "
          f"{platform.python_version()}, load average {load}")
    print(f"resampled {slow['steps']} steps × {args.samples} samples = {slow['calls']} calls "
          f"(planning {slow['plan_s']:.2f} s)")
    print(f"endpoint answering at once: {fast['calls'] / fast['wall_s']:.0f} calls/s "
          f"(concurrency {fast['concurrency']})")
    print(f"endpoint +{args.delay_ms:g} ms, concurrency {slow['concurrency']}: {achieved:.1f} calls/s, ideal "
          f"{ideal:.1f} → {100 * achieved / ideal:.1f}% of the endpoint-bound ideal over the whole run")
    if slow["steady_calls_per_s"]:
        steady = slow["steady_calls_per_s"]
        print(f"    while all {slow['concurrency']} slots are busy ({slow['steady_window_s']:.1f} s): {steady:.1f} calls/s "
              f"→ {100 * steady / ideal:.1f}% (target ≥ 90%, measured as the trials' figure (b))")


if __name__ == "__main__":
    main()
