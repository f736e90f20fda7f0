"""Where a terminal trial's CPU goes: each phase of a bwrap trial, measured apart.

The script moves itself into a cgroup of its own in the ``cpuacct`` hierarchy (cgroup v1, root),
so that every process a trial starts — bwrap and its init, the spawner (zygote) started ahead of
time, the agent's commands, the verifier's helper, bash, pytest — is counted, whoever reaps it.
Then, for each of the benchmark tasks, at concurrency 1 on a cached layer, it plays the phases of
a trial one after the other with a pause between them (so that work a phase leaves running, such
as the next spawner's start, is counted with it) and reads ``cpuacct.usage`` around each:

- sandbox start (bwrap, the trial's cgroups, handing over the pre-started spawner, starting the next)
- the agent's commands: the task's solution as the solution endpoint sends it, and the submit command
- the verifier: ``verify`` as a trial runs it, and apart: its helper process (``run_verifier("true")``),
  a cold ``python -c 'import pytest'`` through it, and the tests themselves
- teardown (killing the namespace, removing the cgroups and the trial's directory)

Also, on the host: a cold pytest on one task's tests with and without plugin autoload.

    .venv/bin/python perf/terminal_trial_profile.py [--rounds 5]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from agentrig.bench.terminal.sandbox import SandboxSettings, open_sandbox
from agentrig.bench.terminal.tasks.staging import verifier_python
from agentrig.bench.terminal.tasks.taskfile import builtin_tasks_dir, load_tasks
from agentrig.bench.terminal.verifier import verify
from agentrig.bench.terminal.scripted.solution_endpoint import SolutionScript

TASK_IDS = ["write-marker", "word-frequency", "log-error-summary", "merge-json-config", "fix-python-bug",
            "csv-region-totals", "stale-lock", "harbor-dedupe-emails"]
CPUACCT = Path("/sys/fs/cgroup/cpuacct")
PAUSE_S = 0.3


class Meter:
    """CPU seconds of this process and everything it starts (a cpuacct cgroup of our own)."""

    def __init__(self) -> None:
        self.dir = CPUACCT / f"agentrig-profile-{os.getpid()}"
        self.dir.mkdir(exist_ok=True)
        (self.dir / "cgroup.procs").write_text(str(os.getpid()))

    def now(self) -> float:
        return int((self.dir / "cpuacct.usage").read_text()) / 1e9

    def close(self) -> None:
        from agentrig.bench.terminal.sandbox import spawner, warm

        spawner._stop_factory()  # the long-lived helpers would keep the cgroup busy until exit
        warm._stop()
        parent = self.dir.parent / "cgroup.procs"
        parent.write_text(str(os.getpid()))
        for _ in range(100):
            try:
                self.dir.rmdir()
                return
            except OSError:
                time.sleep(0.05)


async def _phase(meter: Meter, into: dict[str, list[float]], name: str, coro):
    before = meter.now()
    result = await coro
    await asyncio.sleep(PAUSE_S)
    into.setdefault(name, []).append(meter.now() - before)
    return result


async def profile_task(meter: Meter, task, settings: SandboxSettings, out: dict[str, list[float]]) -> None:
    script = SolutionScript.from_task(task)
    box = await _phase(meter, out, "sandbox start", open_sandbox(task, settings, label="profile"))
    try:
        async def agent() -> None:
            for command in (*script.commands, script.submit_command()):
                await box.run(command, timeout_s=120)

        await _phase(meter, out, "agent commands", agent())
        result = await _phase(meter, out, "verifier (verify)", verify(box, task))
        assert result.resolved, (task.id, result.output[-2000:])
        await _phase(meter, out, "  helper + bash (run_verifier true)",
                     box.run_verifier("true", timeout_s=30, env={}, extra_ro_binds={}))
        python, binds = verifier_python()
        await _phase(meter, out, "  cold python -c 'import pytest'",
                     box.run_verifier(f"{python} -s -c 'import pytest'", timeout_s=30, env={}, extra_ro_binds=binds))
    finally:
        await _phase(meter, out, "sandbox teardown", box.close())


def host_pytest(meter: Meter, tests: Path, rounds: int) -> dict[str, float]:
    out: dict[str, list[float]] = {}
    flags = ["-p", "no:cacheprovider", f"--confcutdir={tests}", "-rA"]
    with tempfile.TemporaryDirectory() as cwd:
        for _ in range(rounds):
            for name, env in (("autoload on", {}), ("autoload off", {"PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"})):
                before = meter.now()
                subprocess.run([sys.executable, "-s", "-m", "pytest", *flags, str(tests / "test_outputs.py"), "--co", "-q"],
                               env={**os.environ, **env}, cwd=cwd, capture_output=True)
                out.setdefault(f"pytest --co, {name}", []).append(meter.now() - before)
            before = meter.now()
            subprocess.run([sys.executable, "-s", "-c", "import pytest"], cwd=cwd, capture_output=True)
            out.setdefault("python -c 'import pytest'", []).append(meter.now() - before)
            before = meter.now()
            subprocess.run([sys.executable, "-s", "-c", "pass"], cwd=cwd, capture_output=True)
            out.setdefault("python -c pass", []).append(meter.now() - before)
    return {k: statistics.median(v) for k, v in out.items()}


async def main_async(rounds: int) -> None:
    if os.geteuid() != 0 or not CPUACCT.is_dir():
        raise SystemExit("needs root and a cgroup v1 cpuacct hierarchy at /sys/fs/cgroup/cpuacct")
    tasks, _ = load_tasks(builtin_tasks_dir(), task_ids=TASK_IDS)
    meter = Meter()
    try:
        with tempfile.TemporaryDirectory(prefix="agentrig-profile-") as cache:
            settings = SandboxSettings(cache_dir=Path(cache))
            for task in tasks:  # build the layers (not measured)
                await (await open_sandbox(task, settings)).close()
            per_task: dict[str, dict[str, list[float]]] = {}
            for _ in range(rounds):
                for task in tasks:
                    await profile_task(meter, task, settings, per_task.setdefault(task.id, {}))
        host = host_pytest(meter, tasks[0].tests_dir, rounds)
    finally:
        meter.close()
    names = list(next(iter(per_task.values())))
    print(f"machine: {platform.machine()} {os.cpu_count()} cores, Python {platform.python_version()}, "
          f"load average {os.getloadavg()[0]:.2f}; medians of {rounds} rounds, CPU ms (all processes)\n")
    print(f"{'phase':<38}" + "".join(f"{t[:12]:>13}" for t in per_task) + f"{'mean':>9}")
    for name in names:
        meds = [statistics.median(per_task[t][name]) * 1000 for t in per_task]
        print(f"{name:<38}" + "".join(f"{m:>13.1f}" for m in meds) + f"{statistics.mean(meds):>9.1f}")
    trial = [sum(statistics.median(per_task[t][n]) for n in ("sandbox start", "agent commands", "verifier (verify)",
                                                             "sandbox teardown")) * 1000 for t in per_task]
    print(f"{'trial (start+commands+verify+teardown)':<38}" + "".join(f"{m:>13.1f}" for m in trial)
          + f"{statistics.mean(trial):>9.1f}")
    print("\non the host (no sandbox), CPU ms:")
    for name, value in host.items():
        print(f"  {name:<36}{value * 1000:>8.1f}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rounds", type=int, default=5)
    asyncio.run(main_async(ap.parse_args().rounds))


if __name__ == "__main__":
    main()
