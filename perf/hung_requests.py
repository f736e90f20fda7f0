"""Hung requests cut short: a run's wall time when 5% of requests never get an answer.

The gold-scripting endpoint (``python -m agentrig.bench.tau.scripted.gold_endpoint``, its own process) plays
every role of every airline and retail task; with ``--fault-rate 0.05 --fault-kinds hang`` one
request in twenty is held by the server and never answered. The runs go through the runner as
``agentrig run`` does (``perf/throughput.py``'s ``play``), with ``timeout_s = 120``:

- fault-free, adaptive timeouts on (the reference wall time);
- 5% hangs, adaptive timeouts on — target: at most 2× the reference, every trial valid;
- with ``--baseline``: 5% hangs, ``adaptive_timeout = false`` (every hang waits the full 120 s;
  several minutes).

    .venv/bin/python perf/hung_requests.py [--data ROOT] [--hang-rate 0.05] [--baseline]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from throughput import KEY, KEY_ENV, play, stop  # noqa: E402  (a sibling script)

CONCURRENCY = 8
TIMEOUT_S = 120


def start_gold(root: Path, *extra: str) -> tuple[subprocess.Popen, str]:
    proc = subprocess.Popen([sys.executable, "-m", "agentrig.bench.tau.scripted.gold_endpoint", "--data", str(root),
                             "--api-key-env", KEY_ENV, *extra],
                            stdout=subprocess.PIPE, text=True, env={**os.environ, KEY_ENV: KEY})
    base = proc.stdout.readline().strip()
    if not base.startswith("http"):
        proc.kill()
        raise SystemExit(f"the gold endpoint did not start (printed {base!r})")
    return proc, base


def write_toml(directory: Path, name: str, base: str, root: Path, adaptive: bool) -> Path:
    path = directory / f"{name}.toml"
    path.write_text(f"""
name = "{name}"
[benchmark]
data = "{root}"
domains = ["airline", "retail"]
split = "all"
[run]
trials = 1
concurrency = {CONCURRENCY}
[channel]
base_url = "{base}"
api_key_env = "{KEY_ENV}"
model = "gold"
timeout_s = {TIMEOUT_S}
max_attempts = 8
adaptive_timeout = {str(adaptive).lower()}
[[arms]]
name = "gold-llm"
agent = {{ kind = "llm" }}
""", encoding="utf-8")
    return path


def one_run(root: Path, tmp: Path, name: str, adaptive: bool, *gold_args: str) -> dict:
    proc, base = start_gold(root, *gold_args)
    try:
        directory = Path(tempfile.mkdtemp(prefix=name + "-", dir=tmp))
        return asyncio.run(play(write_toml(directory, name, base, root, adaptive)))
    finally:
        stop(proc)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", default=os.environ.get("AGENTRIG_TAU2_DATA", "../shared/tau2-data"))
    ap.add_argument("--hang-rate", type=float, default=0.05)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--baseline", action="store_true", help="also run with adaptive timeouts off (slow)")
    ap.add_argument("--json", metavar="PATH")
    args = ap.parse_args()
    root = Path(args.data).resolve()
    os.environ[KEY_ENV] = KEY  # the in-process runner reads the key from the environment
    hang = ("--fault-rate", str(args.hang_rate), "--fault-kinds", "hang", "--seed", str(args.seed))
    print(f"machine: {os.cpu_count()} cores, Python {platform.python_version()}; airline + retail, "
          f"concurrency {CONCURRENCY}, timeout_s {TIMEOUT_S}")
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        one_run(root, tmp, "warm-up", True)  # one-time costs (imports, data parsing) out of the figures
        rows = {"fault-free, adaptive": one_run(root, tmp, "clean", True)}
        rows[f"{args.hang_rate:.0%} hangs, adaptive"] = one_run(root, tmp, "hangs", True, *hang)
        if args.baseline:
            rows[f"{args.hang_rate:.0%} hangs, adaptive off"] = one_run(root, tmp, "hangs-fixed", False, *hang)
    ref = rows["fault-free, adaptive"]["wall_s"]
    print("| run | trials valid | invalid attempts | requests (retries over fault-free) | wall s | × fault-free |")
    print("|---|---:|---:|---:|---:|---:|")
    base_requests = rows["fault-free, adaptive"]["requests"]
    for name, res in rows.items():
        print(f"| {name} | {res['trials']} | {res['invalid']} | {res['requests']} ({res['requests'] - base_requests:+d}) "
              f"| {res['wall_s']:.1f} | {res['wall_s'] / ref:.2f} |")
    hung = rows[f"{args.hang_rate:.0%} hangs, adaptive"]
    ok = hung["wall_s"] <= 2 * ref and hung["invalid"] == 0 and hung["trials"] == rows["fault-free, adaptive"]["trials"]
    print(f"target (≤ 2× fault-free, every trial valid): {'met' if ok else 'MISSED'}")
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=2), encoding="utf-8")


if __name__ == "__main__":
    main()
