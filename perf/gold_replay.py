"""Gold replay plus state judging of every airline, retail and telecom task in a data root.

For each task: a fresh environment with the task's initial state plays the gold actions (the gold
state), then the gold actions are judged as an agent's trajectory (predicted state replayed and
compared with the gold state; env assertions run). Target: under 10 s for the shared data on a
2-core machine (tau2-bench's own code needs about 100 s for the same work there).

    .venv/bin/python perf/gold_replay.py [--data ROOT] [--domains airline,retail,telecom]
"""

from __future__ import annotations

import argparse
import os
import platform
import time

from agentrig.bench.tau import data
from agentrig.bench.tau.domains import available_domains, get_domain
from agentrig.bench.tau.replay import clear_gold_cache, replay_gold


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", default=os.environ.get("AGENTRIG_TAU2_DATA", "../shared/tau2-data"))
    ap.add_argument("--domains", default="airline,retail,telecom")
    args = ap.parse_args()
    root = data.resolve_data_root(args.data)
    print(f"machine: {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}")
    print("| domain | tasks | seconds | ms/task | DB=1.0 | all env assertions hold |")
    print("|---|---:|---:|---:|---:|---:|")
    total_t, total_n = 0.0, 0
    for name in args.domains.split(","):
        if name not in available_domains():
            print(f"| {name} | (domain not implemented yet) | | | | |")
            continue
        spec = get_domain(name)
        tasks = data.load_tasks(root, name)
        ddir = data.domain_dir(root, name)
        clear_gold_cache()
        t0 = time.perf_counter()
        results = [replay_gold(spec, ddir, t) for t in tasks]
        secs = time.perf_counter() - t0
        db_ok = sum(r.judgement.db_reward == 1.0 for r in results)
        env_ok = sum(all(r.env_assertions) for r in results)
        print(f"| {name} | {len(tasks)} | {secs:.2f} | {secs / len(tasks) * 1000:.1f} | {db_ok} | {env_ok} |", flush=True)
        total_t += secs
        total_n += len(tasks)
    print(f"| **all** | {total_n} | {total_t:.2f} | | | |")


if __name__ == "__main__":
    main()
