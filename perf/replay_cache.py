"""The replay cache (``[channel] cache = "replay"``): what it costs live, what it saves on a replay.

The gold-scripting endpoint (in this process, a thread) plays every role of the bikeshop tasks
with a fixed latency per request (``--latency``, as a hosted model would). Three runs of the same
plan through the real CLI:

- ``off``: cache off, live (the reference);
- ``fill``: cache on, live — every answer written to ``replay.sqlite`` (the overhead of filling);
- ``replay``: a fresh run directory holding only the ``fill`` run's ``replay.sqlite``: every trial
  is played again and every call replays — the endpoint should see no request.

    .venv/bin/python perf/replay_cache.py [--tasks 8] [--trials 2] [--latency 0.1]
"""

from __future__ import annotations

import argparse
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from agentrig.testing.fake_endpoint import ThreadedFakeEndpoint
from agentrig.bench.tau.scripted.gold_endpoint import GoldEndpoint

KEY, KEY_ENV = "sk-bench-replay-0011223344", "AGENTRIG_BENCH_REPLAY_KEY"
AGENTRIG = str(Path(sys.executable).with_name("agentrig"))


def toml(base: str, tasks: int, trials: int, cache: str) -> str:
    return f"""
name = "replay-bench"
[benchmark]
domains = ["bikeshop"]
num_tasks = {tasks}
[run]
trials = {trials}
concurrency = 4
[user]
kind = "llm"
guidelines = "builtin"
[judge]
nl_assertions = "never"
[channel]
base_url = "{base}"
api_key_env = "{KEY_ENV}"
model = "gold"
cache = "{cache}"
[[arms]]
name = "gold-llm"
agent = {{ kind = "llm" }}
"""


def run(where: Path, base: str, args: argparse.Namespace, cache: str, endpoint: GoldEndpoint) -> tuple[float, int]:
    exp = where / "exp.toml"
    exp.write_text(toml(base, args.tasks, args.trials, cache), encoding="utf-8")
    before = len(endpoint.requests)
    t0 = time.perf_counter()
    p = subprocess.run([AGENTRIG, "run", str(exp), "--json", "--dir", str(where / "run")],
                       env={**os.environ, KEY_ENV: KEY}, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    if p.returncode != 0:
        raise SystemExit(f"run failed: {p.stderr[-2000:]}")
    return wall, len(endpoint.requests) - before


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--tasks", type=int, default=8)
    ap.add_argument("--trials", type=int, default=2)
    ap.add_argument("--latency", type=float, default=0.1, help="seconds per request at the endpoint")
    args = ap.parse_args()
    endpoint = GoldEndpoint(None, api_key=KEY, record=True, delay_s=args.latency)
    with ThreadedFakeEndpoint(endpoint=endpoint) as served, tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        for d in ("off", "fill", "replay"):
            (root / d).mkdir()
        off = run(root / "off", served.base_url, args, "off", endpoint)
        fill = run(root / "fill", served.base_url, args, "replay", endpoint)
        (root / "replay" / "run").mkdir()
        shutil.copy(root / "fill" / "run" / "replay.sqlite", root / "replay" / "run" / "replay.sqlite")
        replay = run(root / "replay", served.base_url, args, "replay", endpoint)
        size = (root / "fill" / "run" / "replay.sqlite").stat().st_size
    n = args.tasks * args.trials
    print(f"machine: {os.cpu_count()} cores, {platform.processor() or platform.machine()}, Python {platform.python_version()}")
    print(f"plan: bikeshop, {args.tasks} tasks x {args.trials} trials = {n} trials, concurrency 4, "
          f"endpoint latency {args.latency:g}s/request")
    print(f"{'run':<8}{'wall s':>8}{'requests':>10}{'vs off':>8}")
    for name, (wall, reqs) in (("off", off), ("fill", fill), ("replay", replay)):
        print(f"{name:<8}{wall:>8.2f}{reqs:>10}{wall / off[0]:>7.2f}x")
    print(f"replay.sqlite: {size / 1024:.0f} KiB for {fill[1]} answers")


if __name__ == "__main__":
    main()
