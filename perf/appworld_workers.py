"""AppWorld workers: the per-trial world reset and what a warm worker adds beyond the engine's work.

On the synthetic AppWorld tasks (``bench/appworld/synthetic.py``, built into a temporary directory
unless ``--data`` names a root), one pooled worker in AppWorld's own venv plays trials the way a
trial does — ``open`` (a fresh world: the reset), the task's solution as one ``execute``,
``completed``, ``evaluate`` — task after task, ``--trials`` times. Printed:

- **reset**: the seconds AppWorld takes to open a task's world in a warm worker (the worker's own
  clock around ``AppWorld(...)``), median and p90; the first (cold) open apart. Goal < 200 ms.
- **overhead**: per trial, the wall time of its requests seen from agentrig minus the engine's own
  seconds for them (open, execute, evaluate as the worker measures them; ``completed`` counted
  whole): pipes, JSON, the thread hand-off. Goal < 20 ms. And the round trip of an empty ``ping``.

    .venv/bin/python perf/appworld_workers.py [--trials 40] [--data ROOT] [--python PY]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import platform
import statistics
import tempfile
import time
from pathlib import Path

from agentrig.bench.appworld import env as aw_env
from agentrig.bench.appworld.data import dataset_ids, solution_code
from agentrig.bench.appworld.pool import WorkerPool
from agentrig.bench.appworld.synthetic import build


def pct(values: list[float], q: float) -> float:
    s = sorted(values)
    return s[min(len(s) - 1, int(q * len(s)))]


async def measure(python: Path, root: Path, trials: int) -> dict:
    ids = [t for t in dataset_ids(root, "dev") if solution_code(root, t)]
    pool = WorkerPool(python, root, 1)
    opens, overheads, pings, engine = [], [], [], []
    cold = None
    try:
        async with pool.lease() as w:
            for i in range(trials):
                task = ids[i % len(ids)]
                spent = own = 0.0
                t0 = time.perf_counter()
                opened = await w.call("open", task_id=task, exec_timeout_s=60, timeout_s=300)
                spent += time.perf_counter() - t0
                own += opened["open_s"]
                if cold is None:
                    cold = opened["open_s"]
                else:
                    opens.append(opened["open_s"])
                t0 = time.perf_counter()
                ran = await w.call("execute", code=solution_code(root, task), timeout_s=120)
                spent += time.perf_counter() - t0
                own += ran["exec_s"]
                t0 = time.perf_counter()
                await w.call("completed", timeout_s=60)
                spent += time.perf_counter() - t0
                t0 = time.perf_counter()
                result = await w.call("evaluate", timeout_s=300)
                spent += time.perf_counter() - t0
                own += result["eval_s"]
                assert result["success"], (task, result["failures"])
                overheads.append(spent - own)
                engine.append(own)
            for _ in range(200):
                t0 = time.perf_counter()
                await w.call("ping", timeout_s=10)
                pings.append(time.perf_counter() - t0)
    finally:
        pool.close()
    return {"cold": cold, "opens": opens, "overheads": overheads, "pings": pings, "engine": engine}


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--trials", type=int, default=40)
    ap.add_argument("--data", help="an AppWorld root (default: the synthetic tasks, built now)")
    ap.add_argument("--python", help="AppWorld's python (default: agentrig appworld setup's venv)")
    args = ap.parse_args()
    python = aw_env.resolve_python(args.python)
    status = aw_env.check(python)
    if not status.ok:
        raise SystemExit(f"{status.problem}; {status.fix}")
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(args.data) if args.data else build(python, Path(tmp) / "aw")
        got = asyncio.run(measure(python, root, args.trials))
    print(f"machine: {platform.machine()} {os.cpu_count()} cores, Python {platform.python_version()}, "
          f"appworld {status.appworld}, load {os.getloadavg()[0]:.1f}")
    o, h = got["opens"], got["overheads"]
    print(f"world reset (open, warm worker): median {statistics.median(o) * 1000:.1f} ms, p90 {pct(o, 0.9) * 1000:.1f} ms "
          f"over {len(o)} opens (goal < 200 ms); the worker's first open {got['cold'] * 1000:.0f} ms")
    print(f"engine's own work per trial (open + execute + evaluate): median {statistics.median(got['engine']) * 1000:.1f} ms")
    print(f"warm worker's overhead per trial: median {statistics.median(h) * 1000:.2f} ms, p90 {pct(h, 0.9) * 1000:.2f} ms "
          f"(goal < 20 ms); ping round trip median {statistics.median(got['pings']) * 1e6:.0f} µs")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
