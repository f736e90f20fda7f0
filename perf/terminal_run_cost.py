"""What `agentrig run` of a terminal experiment costs a user: wall and CPU of the whole command.

Each round runs the CLI (``python -m agentrig.cli run EXP.toml --json``) as a user runs it, in a
cgroup of its own in the ``cpuacct`` hierarchy (cgroup v1, root), so that every process the
command starts is counted — also what its long-lived helpers (the spawner factory, the warm
verifier) fork and reap themselves. The experiment: real tasks (``--tasks DIR --task-ids …``,
e.g. Terminal-Bench's, never committed), one ``bash`` arm per tool mode (one run each), k trials,
a concurrency, against the scripted solution endpoint (its own process, started once). The layers
are built by a first, untimed run.

Given several source trees (``--tree NAME=SRC``, e.g. a copy of an earlier commit's ``src``), the
rounds alternate between them, so that each before/after pair shares the machine's state; the
load average is printed with every round.

    .venv/bin/python perf/terminal_run_cost.py --tasks /work/tb/core --task-ids hello-world,… \\
        --tree old=/tmp/old/src --tree new=src [--rounds 3] [--trials 2] [--concurrency 2]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

CPUACCT = Path("/sys/fs/cgroup/cpuacct")
KEY = "sk-terminal-run-cost"


def start_endpoint(tasks: Path, src: str) -> tuple[subprocess.Popen, str]:
    proc = subprocess.Popen([sys.executable, "-m", "agentrig.bench.terminal.scripted.solution_endpoint", "--no-auth",
                             "--tasks", str(tasks)], stdout=subprocess.PIPE, text=True,
                            env={**os.environ, "PYTHONPATH": src})
    assert proc.stdout is not None
    return proc, proc.stdout.readline().strip()


def write_experiment(work: Path, tasks: Path, ids: list[str], mode: str, trials: int, concurrency: int,
                     base_url: str, cache: Path, run_dir: Path, warm: bool) -> Path:
    path = work / f"exp-{mode}.toml"
    path.write_text(f'name = "run-cost-{mode}"\n[benchmark]\nkind = "terminal"\ntasks = "{tasks}"\n'
                    f'task_ids = {json.dumps(ids)}\n'
                    f'[sandbox]\ncache_dir = "{cache}"\nbuild_network = "host-settings"\n'
                    f'warm_verifier = {str(warm).lower()}\n'
                    f'[run]\ntrials = {trials}\nconcurrency = {concurrency}\ndir = "{run_dir}"\nmax_steps = 200\n'
                    f'[channel]\nbase_url = "{base_url}"\napi_key_env = "RUN_COST_KEY"\nmodel = "solution"\n'
                    f'[[arms]]\nname = "bash-{mode}"\nagent = {{ kind = "bash", tool_mode = "{mode}", step_limit = 200 }}\n')
    return path


def run_once(src: str, exp: Path, cgroup_name: str, profile: Path | None = None) -> dict:
    """One `agentrig run` in a fresh cpuacct cgroup: wall seconds, CPU seconds, its JSON summary."""
    cg = CPUACCT / cgroup_name
    cg.mkdir(exist_ok=True)
    procs = str(cg / "cgroup.procs")

    def enter() -> None:
        with open(procs, "w") as f:
            f.write(str(os.getpid()))

    cmd = [sys.executable]
    if profile is not None:
        cmd += ["-m", "cProfile", "-o", str(profile)]
    cmd += ["-m", "agentrig.cli"]
    cmd += ["run", str(exp), "--json"]
    load = os.getloadavg()[0]
    started = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, preexec_fn=enter,
                          env={**os.environ, "PYTHONPATH": src, "RUN_COST_KEY": KEY})
    wall = time.perf_counter() - started
    cpu = int((cg / "cpuacct.usage").read_text()) / 1e9
    for _ in range(100):
        try:
            cg.rmdir()
            break
        except OSError:
            time.sleep(0.05)
    if proc.returncode != 0:
        raise SystemExit(f"agentrig run failed ({proc.returncode}):\n{proc.stderr[-3000:]}\n{proc.stdout[-2000:]}")
    out = json.loads(proc.stdout)
    trials = sum(a["valid"] for a in out["arms"].values())
    reward = sum((a["mean_reward"] or 0) * a["valid"] for a in out["arms"].values())
    return {"wall": wall, "cpu": cpu, "trials": trials, "solved": round(reward), "load": load,
            "invalid": sum(a["invalid"] for a in out["arms"].values())}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--tasks", required=True)
    ap.add_argument("--task-ids", required=True)
    ap.add_argument("--tree", action="append", required=True, help="NAME=SRC (a src directory)")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--trials", type=int, default=2)
    ap.add_argument("--concurrency", type=int, default=2)
    ap.add_argument("--modes", default="native,text")
    ap.add_argument("--cold-verifier", action="store_true", help="warm_verifier = false")
    ap.add_argument("--cache", default="/tmp/terminal-run-cost-cache", help="the layers' cache (kept between runs)")
    ap.add_argument("--profile", help="a directory: cProfile each run's CLI process into it")
    args = ap.parse_args()
    if os.geteuid() != 0 or not CPUACCT.is_dir():
        raise SystemExit("needs root and a cgroup v1 cpuacct hierarchy")
    trees = dict(t.split("=", 1) for t in args.tree)
    trees = {k: str(Path(v).resolve()) for k, v in trees.items()}
    for src in trees.values():  # as an installed package has them (PYTHONDONTWRITEBYTECODE may be set here)
        subprocess.run([sys.executable, "-m", "compileall", "-q", src], check=True, stdout=subprocess.DEVNULL)
    ids = args.task_ids.split(",")
    modes = args.modes.split(",")
    work = Path(tempfile.mkdtemp(prefix="run-cost-"))
    tasks = work / "tasks"
    tasks.mkdir()
    for i in ids:
        (tasks / i).symlink_to(Path(args.tasks).resolve() / i)
    first = next(iter(trees.values()))
    endpoint, url = start_endpoint(tasks, first)
    results: dict[tuple[str, str], list[dict]] = {}
    try:
        n = 0
        for rnd in range(args.rounds + 1):  # round 0: build the layers, warm the page cache (not counted)
            order = list(trees) if rnd % 2 == 0 else list(reversed(trees))
            for name in order:
                for mode in modes:
                    n += 1
                    run_dir = work / f"run-{n}"
                    exp = write_experiment(work, tasks, ids, mode, args.trials, args.concurrency, url,
                                           Path(args.cache), run_dir, not args.cold_verifier)
                    prof = Path(args.profile) / f"{name}-{mode}-{rnd}.prof" if args.profile and rnd else None
                    r = run_once(trees[name], exp, f"run-cost-{os.getpid()}-{n}", prof)
                    shutil.rmtree(run_dir, ignore_errors=True)
                    tag = "warm-up" if rnd == 0 else f"round {rnd}"
                    print(f"{tag:<8} {name:<8} {mode:<7} load {r['load']:5.2f}  trials {r['trials']:3d} "
                          f"solved {r['solved']:3d} invalid {r['invalid']}  wall {r['wall']:6.2f} s  "
                          f"{r['trials'] / r['wall']:5.2f} trials/s  CPU {r['cpu']:6.2f} s  "
                          f"{r['cpu'] / max(1, r['trials']):.3f} CPU s/trial", flush=True)
                    if rnd:
                        results.setdefault((name, mode), []).append(r)
    finally:
        endpoint.terminate()
        endpoint.wait()
        shutil.rmtree(work, ignore_errors=True)
    print("\nmedians:")
    for (name, mode), rs in results.items():
        rate = statistics.median(r["trials"] / r["wall"] for r in rs)
        cpu = statistics.median(r["cpu"] / max(1, r["trials"]) for r in rs)
        print(f"  {name:<8} {mode:<7} {rate:5.2f} trials/s  {cpu:.3f} CPU s/trial  (wall {statistics.median(r['wall'] for r in rs):.2f} s)")


if __name__ == "__main__":
    main()
