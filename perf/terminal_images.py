"""Base images built from packages: the build once, the cached lookup, a trial's start on the root.

- build: ``ensure_base_root`` of REF into a fresh images directory (``--build``; minutes, network).
- cached: ``ensure_base_root`` when the root is already built (the usual case).
- start + teardown: ``open_sandbox`` + ``close`` of a bwrap trial on the built root
  (``[sandbox] root = "image"``, the task's layer cached) next to the same on the host's root.
  Target: median < 100 ms.

    .venv/bin/python perf/terminal_images.py [--ref python:3.11-slim-bookworm] [--trials 40] [--build]
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

from agentrig.bench.terminal.images import ensure_base_root, resolve_base
from agentrig.bench.terminal.sandbox import SandboxSettings, open_sandbox
from agentrig.bench.terminal.tasks.taskmodel import TerminalTask


async def start_teardown(task: TerminalTask, settings: SandboxSettings, n: int) -> list[float]:
    await (await open_sandbox(task, settings)).close()  # the layer, once
    times = []
    for _ in range(n):
        started = time.perf_counter()
        sandbox = await open_sandbox(task, settings)
        await sandbox.close()
        times.append(time.perf_counter() - started)
    return times


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--ref", default="ghcr.io/laude-institute/t-bench/python-3-13")
    parser.add_argument("--trials", type=int, default=40)
    parser.add_argument("--build", action="store_true", help="also time a fresh build into a temp images dir")
    args = parser.parse_args()
    recipe = resolve_base(args.ref)
    assert recipe is not None, f"no recipe for {args.ref}"
    print(f"machine: {platform.machine()} {os.cpu_count()} cores, Python {platform.python_version()}, load {os.getloadavg()[0]:.1f}")
    if args.build:
        with tempfile.TemporaryDirectory() as fresh:
            started = time.perf_counter()
            ensure_base_root(recipe, cache=Path(fresh))
            print(f"build {args.ref}: {time.perf_counter() - started:.1f} s")
    ensure_base_root(recipe)
    cached = []
    for _ in range(20):
        started = time.perf_counter()
        ensure_base_root(recipe)
        cached.append(time.perf_counter() - started)
    print(f"cached lookup: {statistics.median(cached) * 1e3:.3f} ms")
    with tempfile.TemporaryDirectory() as tmp:
        task_dir = Path(tmp) / "probe"
        (task_dir / "tests").mkdir(parents=True)
        (task_dir / "Dockerfile").write_text(f"FROM {args.ref}\nRUN echo built > /app/marker\n")
        task = TerminalTask(id="probe", path=task_dir, format="tb1", instruction="probe",
                            dockerfile=task_dir / "Dockerfile", tests_dir=task_dir / "tests")
        for root in ("image", "host"):
            settings = SandboxSettings(cache_dir=Path(tmp) / "cache", root=root)
            times = asyncio.run(start_teardown(task, settings, args.trials))
            p90 = sorted(times)[int(len(times) * 0.9) - 1]
            print(f"start + teardown on the {root} root: median {statistics.median(times) * 1e3:.1f} ms (p90 {p90 * 1e3:.1f} ms)")


if __name__ == "__main__":
    main()
