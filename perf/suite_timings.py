"""The timings the test suite used to assert, measured here instead (tests check behaviour only).

Each figure times the same work as its test, on the same data (the builders are the tests' own):

- store: 1,000 trials of 22 messages appended (one transaction each), decoded, verdict rows
  (``tests/run/test_store.py``);
- consistency: 500 tasks × 50 trials of tool-call chains, all 1,225 pairs per task, ranked
  (``tests/analysis/test_consistency.py``);
- bootstrap: pass^k intervals for 500 tasks × 50 trials, k = 1..50, B = 2,000, 4 domains + macro
  (``tests/analysis/test_bootstrap.py``); the paired A/B bootstrap of 500 tasks, B = 4,000
  (``tests/analysis/test_compare.py``);
- analyze: ``agentrig analyze`` with its tables on a 10,000-trial store (2 arms × 100 tasks × 50
  trials; ``tests/analysis/test_analyze_cmd.py``), wall and CPU;
- with τ²-bench data: a copy of airline's db (``load_db``), and loading a 2,285-task telecom
  tasks file cold and cached (``tests/bench/tau/test_data.py``). The gold replays of airline and
  telecom are timed by ``perf/gold_replay.py``.

Each figure is the median of ``--repeat`` runs; "budget" is the bound its test used to assert.

    .venv/bin/python perf/suite_timings.py [--repeat 3] [--data ROOT]
"""

from __future__ import annotations

import argparse
import io
import os
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Callable

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))  # the tests' data builders

import numpy as np  # noqa: E402
from rich.console import Console  # noqa: E402

from agentrig.analysis import compare as cmp  # noqa: E402
from agentrig.commands.analyze import analyze_command  # noqa: E402
from agentrig.analysis.bootstrap import intervals  # noqa: E402
from agentrig.analysis.consistency import rank, task_consistency_from_chains  # noqa: E402
from agentrig.bench.tau import data  # noqa: E402
from agentrig.bench.tau.domains import available_domains  # noqa: E402
from agentrig.bench.tau.state import load_db  # noqa: E402
from agentrig.store.store import Store  # noqa: E402
from tests.analysis.test_analyze_cmd import synthetic_10000  # noqa: E402
from tests.analysis.test_consistency import random_chains  # noqa: E402
from tests.bench.tau.test_data import full_size_telecom  # noqa: E402
from tests.run.test_store import thousand_records  # noqa: E402


def timed(fn: Callable[[], object]) -> tuple[float, float]:
    """(wall seconds, CPU seconds of this process) of one call."""
    wall, cpu = time.perf_counter(), time.process_time()
    fn()
    return time.perf_counter() - wall, time.process_time() - cpu


class Figures:
    def __init__(self, repeat: int) -> None:
        self.repeat = repeat
        print("| figure | wall s (median) | CPU s (median) | former test budget |")
        print("|---|---:|---:|---|")

    def row(self, name: str, budget: str, make: Callable[[], Callable[[], object]]) -> None:
        """Times ``make()()`` ``repeat`` times; ``make`` prepares fresh inputs outside the clock."""
        runs = [timed(make()) for _ in range(self.repeat)]
        wall = statistics.median(w for w, _ in runs)
        cpu = statistics.median(c for _, c in runs)
        print(f"| {name} | {wall:.4f} | {cpu:.4f} | {budget} |", flush=True)


def store_figures(fig: Figures, tmp: Path) -> None:
    recs = thousand_records()
    n = iter(range(10**6))

    def fresh_store() -> Store:
        return Store.open(tmp / f"s{next(n)}.sqlite")

    def append() -> Callable[[], object]:
        store = fresh_store()
        return lambda: ([store.append(r) for r in recs], store.close())

    filled = fresh_store()
    for r in recs:
        filled.append(r)
    fig.row("store: append 1,000 trials", "< 5 s CPU", append)
    fig.row("store: decode 1,000 trials", "< 5 s CPU", lambda: lambda: sum(1 for _ in filled.records()))
    fig.row("store: verdict rows of 1,000 trials", "-", lambda: filled.verdict_rows)
    filled.close()


def analysis_figures(fig: Figures, tmp: Path) -> None:
    tasks = random_chains(500)
    fig.row("consistency: 500 tasks × 50 trials", "< 10 s wall",
            lambda: lambda: rank(task_consistency_from_chains("a", "d", f"t{k}", t) for k, t in enumerate(tasks)))
    rng = np.random.default_rng(4)
    n, c = np.full(500, 50), rng.binomial(50, rng.uniform(0, 1, 500))
    fig.row("bootstrap: pass^k CIs, 500 tasks, B = 2,000", "< 1 s wall",
            lambda: lambda: intervals(n, c, 50, group_sizes=[125] * 4, resamples=2000, seed=1))
    rng = np.random.default_rng(0)
    ca = {("d", str(i)): (8, int(rng.integers(0, 9))) for i in range(500)}
    cb = {("d", str(i)): (8, int(rng.integers(0, 9))) for i in range(500)}
    fig.row("compare: paired bootstrap, 500 tasks, B = 4,000", "< 1 s wall",
            lambda: lambda: cmp.paired_stats(ca, cb, k=8, resamples=4000))
    run = tmp / "run10k"
    synthetic_10000(run)
    available_domains()  # the one-time import of the domain modules is not part of the figure
    out = Console(file=io.StringIO(), width=220)
    fig.row("analyze with tables: 10,000 trials", "< 3 s CPU",
            lambda: lambda: analyze_command(run, arm=None, as_json=False, out=out))


def data_figures(fig: Figures, tmp: Path, root: Path) -> None:
    airline = root / "domains" / "airline" / "db.json"
    load_db(airline)  # parsed once per process; the figure is the copy
    fig.row("airline db: one copy (load_db, parsed before)", "< 0.15 s wall", lambda: lambda: load_db(airline))
    big = full_size_telecom(root, tmp / "telecom-root")
    tasks_file = big / "domains" / "telecom" / "tasks.json"
    print(f"(telecom tasks file: 2,285 tasks, {tasks_file.stat().st_size / 1e6:.1f} MB)")

    def cold() -> Callable[[], object]:
        now = time.time_ns()
        os.utime(tasks_file, ns=(now, now))  # a new mtime: the cache is stale, the file is parsed again
        return lambda: data.load_tasks(big, "telecom")

    fig.row("telecom: load 2,285 tasks, cold", "< 2 s wall", cold)
    fig.row("telecom: load 2,285 tasks, cached", "< 0.05 s wall", lambda: lambda: data.load_tasks(big, "telecom"))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--data", default=os.environ.get("AGENTRIG_TAU2_DATA", str(REPO.parent / "shared" / "tau2-data")))
    args = ap.parse_args()
    print(f"machine: {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}, "
          f"load average {os.getloadavg()[0]:.2f}")
    fig = Figures(args.repeat)
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        store_figures(fig, tmp)
        analysis_figures(fig, tmp)
        root = Path(args.data)
        if (root / "domains" / "airline" / "db.json").is_file():
            data_figures(fig, tmp, data.resolve_data_root(root))
        else:
            print(f"(no τ²-bench data at {root}: the db and tasks-file figures are skipped; --data ROOT)")


if __name__ == "__main__":
    main()
