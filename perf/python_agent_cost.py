"""What a Python agent's trial costs, forked from the run's starter or started afresh (issue 36).

`agentrig run` as a user runs it — the examples' two Python agents (plain `openai`; the OpenAI
Agents SDK in Chat Completions), one arm each, on τ²'s airline tasks — against the gold-scripting
endpoint (its own process, not counted), with the starter (the default) and with
``AGENTRIG_PYTHON_AGENT_FORKS=0`` (each trial's interpreter started afresh, as before the starter),
alternated run by run. Per run: wall time, and the CPU of the command's whole process tree in a
cpuacct cgroup of its own (the starter and the trials it forks are not the command's waited-for
children, so rusage would miss them); without a writable cgroup v1 ``cpuacct`` it says so and
stops.

    .venv/bin/python perf/python_agent_cost.py [--data ROOT] [--tasks 12] [--repeats 3] [--json out.json]
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
sys.path.insert(0, str(Path(__file__).resolve().parent))

from tau_run_cost import KEY, KEY_ENV, command, start_gold  # noqa: E402

CGROUPS = Path("/sys/fs/cgroup/cpuacct")
ARMS = {"py-openai": 'entry = "openai_agent:make"',
        "py-sdk-chat": 'entry = "agents_sdk_agent:make", settings = { api = "chat" }'}

EXPERIMENT = """\
name = "python-agents"
[benchmark]
kind = "tau2"
data = "{data}"
domains = ["airline"]
task_ids = {{ airline = {ids} }}
[run]
trials = 1
seed = 36
concurrency = 4
dir = "{run_dir}"
[channel]
base_url = "{base}"
api_key_env = "{key_env}"
model = "gold"
max_concurrency = 16
timeout_s = 120
{arms}"""


def experiment(path: Path, data: Path, base: str, ids: list[str], run_dir: Path) -> None:
    examples = json.dumps([str(REPO / "examples" / "python_agents")])
    arms = "".join(f'[[arms]]\nname = "{name}"\nagent = {{ kind = "python", {spec}, path = {examples} }}\n'
                   for name, spec in ARMS.items())
    path.write_text(EXPERIMENT.format(data=data, ids=json.dumps(ids), run_dir=run_dir, base=base, key_env=KEY_ENV,
                                      arms=arms), encoding="utf-8")


def one_run(forks: bool, data: Path, base: str, ids: list[str], tmp: Path) -> dict:
    d = Path(tempfile.mkdtemp(prefix="run-", dir=tmp))
    experiment(d / "exp.toml", data, base, ids, d / "run")
    env = {**os.environ, KEY_ENV: KEY, "AGENTRIG_PYTHON_AGENT_FORKS": "1" if forks else "0"}
    env.pop("PYTHONPATH", None)
    group = CGROUPS / f"agentrig-pyagent-{os.getpid()}-{d.name}"
    group.mkdir()
    load = os.getloadavg()[0]
    try:
        t0 = time.perf_counter()
        proc = subprocess.run([*command(), "run", str(d / "exp.toml")], capture_output=True, env=env,
                              preexec_fn=lambda: (group / "cgroup.procs").write_text(str(os.getpid())))
        wall = time.perf_counter() - t0
        for _ in range(200):  # the starter exits as the command's end of its socket closes
            if not (group / "cgroup.procs").read_text().split():
                break
            time.sleep(0.05)
        cpu = int((group / "cpuacct.usage").read_text()) / 1e9
    finally:
        group.rmdir()
    if proc.returncode != 0:
        raise SystemExit(f"agentrig run failed ({proc.returncode}): {proc.stderr.decode()[-2000:]}")
    played = sqlite3.connect(d / "run" / "trials.sqlite").execute(
        "SELECT count(*), sum(reward) FROM trials WHERE valid").fetchone()
    return {"forks": forks, "wall_s": wall, "cpu_s": cpu, "load": load, "trials": played[0], "reward": played[1]}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, default=Path(os.environ.get("AGENTRIG_TAU2_DATA", REPO.parent / "shared" / "tau2-data")))
    ap.add_argument("--tasks", type=int, default=12, help="airline tasks per arm (train split, file order)")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    split = args.data / "domains" / "airline" / "split_tasks.json"
    if not split.exists():
        raise SystemExit(f"--data {args.data}: no domains/airline/split_tasks.json there (agentrig data pull tau2 --dest DIR)")
    if not os.access(CGROUPS, os.W_OK):
        raise SystemExit(f"{CGROUPS} is not writable here: this benchmark needs cgroup v1's cpuacct (run as root)")
    ids = json.loads(split.read_text())["train"][:args.tasks]
    tmp = Path(tempfile.mkdtemp(prefix="python-agent-cost-"))
    gold, base = start_gold(args.data)
    rows: list[dict] = []
    try:
        for i in range(args.repeats):
            for forks in ((True, False) if i % 2 == 0 else (False, True)):
                row = one_run(forks, args.data, base, ids, tmp)
                rows.append(row)
                print(f"forks={'on ' if forks else 'off'} {row['trials']} trials  wall {row['wall_s']:.1f} s  "
                      f"cpu {row['cpu_s']:.1f} s ({row['cpu_s'] / row['trials']:.2f} s/trial)  "
                      f"reward {row['reward']:.0f}  load {row['load']:.1f}", flush=True)
    finally:
        gold.kill()
        gold.wait()
    summary = {}
    for forks in (True, False):
        mine = [r for r in rows if r["forks"] is forks]
        summary["on" if forks else "off"] = {
            "cpu_s_per_trial": statistics.median(r["cpu_s"] / r["trials"] for r in mine),
            "wall_s": statistics.median(r["wall_s"] for r in mine)}
    print(f"median per trial: starter {summary['on']['cpu_s_per_trial']:.2f} CPU s, afresh "
          f"{summary['off']['cpu_s_per_trial']:.2f} CPU s; wall {summary['on']['wall_s']:.1f} s vs "
          f"{summary['off']['wall_s']:.1f} s ({platform.processor() or platform.machine()}, {os.cpu_count()} cores)")
    if args.json:
        args.json.write_text(json.dumps({"rows": rows, "summary": summary}, indent=2), encoding="utf-8")


if __name__ == "__main__":
    main()
