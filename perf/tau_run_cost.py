"""`agentrig run` on τ²'s airline tasks, start to finish, as a user runs it (issue 36).

The whole command in its own process — start-up, planning, the trials, the store, the analysis and
the report — against the gold-scripting endpoint (``python -m agentrig.bench.tau.scripted.gold_endpoint``,
its own process, not counted): an LLM agent and an LLM user, k=1, concurrency 8, a fresh run
directory each time; the plain command (its summary table, stdout a pipe: no live display). Wall time, and the CPU time of the command's whole process tree (its own and
every child's it waited for: ``wait4``'s rusage). ``--old SRC`` alternates another tree's ``src/``
(say the commit before a change) with this one, run by run, so both see the same machine.

    .venv/bin/python perf/tau_run_cost.py --data ROOT [--repeats 5] [--old /tmp/old/src] [--pyc] [--json out.json]

``--data``: a τ²-bench data root whose airline domain has the 50 tasks of the ``base`` split
(``agentrig data pull tau2``; the shared test data holds only the 30 of ``train``: then 30 are played).
``--pyc``: with a bytecode cache (a warm-up run fills one per tree); without it every module of
agentrig is compiled at each start when ``PYTHONDONTWRITEBYTECODE`` is set, as in this environment.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
KEY_ENV = "AGENTRIG_BENCH_KEY"
KEY = "sk-bench-gold-0123456789abcdef"

EXPERIMENT = """\
name = "airline"
[benchmark]
kind = "tau2"
data = "{data}"
domains = ["airline"]
[run]
trials = 1
seed = 300
concurrency = 8
dir = "{run_dir}"
[user]
kind = "llm"
guidelines = "auto"
[judge]
nl_assertions = "auto"
[channel]
base_url = "{base}"
api_key_env = "{key_env}"
max_concurrency = 16
timeout_s = 120
[roles.agent]
model = "gold"
temperature = 0.0
[roles.user]
model = "gold"
temperature = 0.0
[[arms]]
name = "gold"
agent = {{ kind = "llm", tool_mode = "native" }}
"""


def start_gold(data: Path) -> tuple[subprocess.Popen, str]:
    proc = subprocess.Popen([sys.executable, "-m", "agentrig.bench.tau.scripted.gold_endpoint", "--data", str(data),
                             "--api-key-env", KEY_ENV], stdout=subprocess.PIPE, text=True,
                            env={**os.environ, KEY_ENV: KEY, "PYTHONPATH": str(REPO / "src")})
    base = proc.stdout.readline().strip()
    if not base.startswith("http"):
        proc.kill()
        raise SystemExit(f"the gold endpoint did not start (printed {base!r})")
    return proc, base


def one_run(src: str, data: Path, base: str, tmp: Path, pyc: Path | None) -> dict:
    """One ``agentrig run`` as a cold process; wall time and the CPU of its whole tree."""
    d = Path(tempfile.mkdtemp(prefix="run-", dir=tmp))
    toml = d / "exp.toml"
    toml.write_text(EXPERIMENT.format(data=data, run_dir=d / "run", base=base, key_env=KEY_ENV), encoding="utf-8")
    env = {**os.environ, KEY_ENV: KEY, "PYTHONPATH": src}
    if pyc is not None:
        env["PYTHONPYCACHEPREFIX"] = str(pyc)
        if not pyc.exists():  # fill the cache once (a run of its own, not measured)
            warm = {**env}
            warm.pop("PYTHONDONTWRITEBYTECODE", None)
            subprocess.run([*command(), "run", str(toml), "--dir", str(d / "warm")], env=warm, capture_output=True)
    load = os.getloadavg()[0]
    t0 = time.perf_counter()
    proc = subprocess.Popen([*command(), "run", str(toml)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    out, err = proc.communicate()
    wall = time.perf_counter() - t0
    if proc.returncode != 0:
        raise SystemExit(f"agentrig run failed ({proc.returncode}): {err.decode()[-2000:]}")
    played = sqlite3.connect(d / "run" / "trials.sqlite").execute(
        "SELECT count(*), sum(reward) FROM trials WHERE valid").fetchone()
    return {"wall_s": wall, "load": load, "trials": played[0], "reward": played[1]}


def command() -> list[str]:
    exe = Path(sys.executable).with_name("agentrig")
    return [str(exe)] if exe.exists() else [sys.executable, "-c", "from agentrig.cli import main; main()"]


def timed_run(src: str, data: Path, base: str, tmp: Path, pyc: Path | None) -> dict:
    """``one_run`` with the tree's CPU from RUSAGE_CHILDREN before and after: the reaped command's
    own and that of every child it reaped (only this command runs between the two readings)."""
    import resource

    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    res = one_run(src, data, base, tmp, pyc)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    res["cpu_s"] = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return res


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, default=Path(os.environ.get("AGENTRIG_TAU2_DATA", "")))
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--old", help="another tree's src/ to alternate with this one")
    ap.add_argument("--pyc", action="store_true", help="with a bytecode cache per tree")
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    if not (args.data / "domains" / "airline" / "tasks.json").exists():
        raise SystemExit(f"--data {args.data}: no domains/airline/tasks.json there (agentrig data pull tau2 --dest DIR)")
    trees = [("new", str(REPO / "src"))] + ([("old", args.old)] if args.old else [])
    tmp = Path(tempfile.mkdtemp(prefix="tau-run-cost-"))
    gold, base = start_gold(args.data)
    rows: dict[str, list[dict]] = {name: [] for name, _ in trees}
    try:
        if args.pyc:  # fill each tree's cache first (and discard that run)
            for name, src in trees:
                one_run(src, args.data, base, tmp, tmp / f"pyc-{name}")
        for i in range(args.repeats):
            for name, src in (trees if i % 2 == 0 else trees[::-1]):
                pyc = tmp / f"pyc-{name}" if args.pyc else None
                res = timed_run(src, args.data, base, tmp, pyc)
                rows[name].append({k: res[k] for k in ("wall_s", "cpu_s", "load")})
                print(f"{name:4s} wall {res['wall_s']:6.2f} s  cpu {res['cpu_s']:5.2f} s  load {res['load']:4.1f}  "
                      f"{res['trials']} trials, reward sum {res['reward']}", flush=True)
    finally:
        gold.terminate()
        gold.wait(timeout=10)
    report = {"machine": f"{os.cpu_count()} cores, {platform.processor() or platform.machine()}, Python {platform.python_version()}",
              "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "pyc": args.pyc, "runs": rows}
    for name, rs in rows.items():
        report[name] = {"median_wall_s": statistics.median(r["wall_s"] for r in rs),
                        "median_cpu_s": statistics.median(r["cpu_s"] for r in rs),
                        "load": [round(r["load"], 1) for r in rs]}
        print(f"{name}: median wall {report[name]['median_wall_s']:.2f} s, median CPU {report[name]['median_cpu_s']:.2f} s, "
              f"load {report[name]['load']}")
    if args.json:
        args.json.write_text(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
