"""What a terminal sandbox costs: start + teardown per trial, and overhead per command.

- start + teardown: ``open_sandbox`` + ``close`` of a bwrap trial sandbox for a task whose build
  layer is cached (the usual case from the second trial on). Target: median < 100 ms.
- per command: ``sandbox.run("true")`` (stateless: a fresh ``bash -lc``; persistent: one line to
  the trial's bash) next to a bare ``subprocess.run(["bash", "-lc", "true"])`` with the same
  environment. Target: < 10 ms over the bare run.
- layer choice: a bare bwrap with ``--tmp-overlay`` per directory next to one with a per-trial
  upper directory on disk (``--overlay``), start to ready and kill — the figure behind the
  choice of upper directories (which also give the build cache and ``keep``).
- oracle trials per second on the built-in tasks at concurrency 4: an experiment of kind
  terminal (the ``oracle`` arm, every built-in task, ``--oracle-trials`` trials each) played by the
  runner's executor exactly as ``agentrig run`` plays it (sandbox, agent phase, verifier, one store
  transaction per trial), after the layers were built by the selection's build check.

    .venv/bin/python perf/terminal_overhead.py [--trials 40] [--commands 200] [--oracle-trials 4]
    .venv/bin/python perf/terminal_overhead.py --sandbox podman [--trials 10] [--commands 50]

``--sandbox podman``: the same figures for the podman sandbox (a container per trial on the task's
image, built once per process; no raw-bwrap rows); the bare command is then a ``podman exec`` into
an idle container of the same image, the figure a harness that execs each command pays at least.
``--sandbox docker``: the same for docker (a daemon must answer: ``scripts/start-dockerd.sh`` starts
agentrig's own, which this finds by itself; ``kill PID`` stops it after).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from agentrig.bench.terminal.sandbox import BASE_ENV, SandboxSettings, open_sandbox
from agentrig.bench.terminal.sandbox.bwrap import bwrap_binary
from agentrig.bench.terminal.sandbox.bwrap import HOST_DIRS, host_symlinks
from agentrig.bench.terminal.tasks.taskmodel import TerminalTask


def _ms(values: list[float]) -> float:
    return statistics.median(values) * 1000


async def start_teardown(task: TerminalTask, settings: SandboxSettings, n: int) -> list[float]:
    await (await open_sandbox(task, settings)).close()  # build the layer once
    times = []
    for _ in range(n):
        started = time.perf_counter()
        sandbox = await open_sandbox(task, settings)
        await sandbox.close()
        times.append(time.perf_counter() - started)
    return times


async def per_command(task: TerminalTask, settings: SandboxSettings, n: int) -> list[float]:
    sandbox = await open_sandbox(task, settings)
    try:
        for _ in range(10):
            await sandbox.run("true", 30)
        times = []
        for _ in range(n):
            started = time.perf_counter()
            result = await sandbox.run("true", 30)
            times.append(time.perf_counter() - started)
            assert result.exit_code == 0, result
        return times
    finally:
        await sandbox.close()


def bare_command(n: int, home: str) -> list[float]:
    env = {**BASE_ENV, "HOME": home}
    times = []
    for _ in range(n + 10):
        started = time.perf_counter()
        subprocess.run(["bash", "-lc", "true"], env=env, cwd=home, check=True)
        times.append(time.perf_counter() - started)
    return times[10:]


def raw_bwrap(n: int, upper_dirs: bool) -> list[float]:
    binary = str(bwrap_binary())
    times = []
    for _ in range(n):
        scratch = Path(tempfile.mkdtemp(prefix="agentrig-bwrap-bench-"))
        started = time.perf_counter()
        args = [binary, "--tmpfs", "/"]
        for name in HOST_DIRS:
            if not Path("/", name).is_dir():
                continue
            args += ["--overlay-src", f"/{name}"]
            if upper_dirs:
                (scratch / "u" / name).mkdir(parents=True)
                (scratch / "w" / name).mkdir(parents=True)
                args += ["--overlay", str(scratch / "u" / name), str(scratch / "w" / name), f"/{name}"]
            else:
                args += ["--tmp-overlay", f"/{name}"]
        for name, target in host_symlinks().items():
            args += ["--symlink", target, f"/{name}"]
        args += ["--proc", "/proc", "--dev", "/dev", "--unshare-pid", "--unshare-net", "--as-pid-1", "--die-with-parent",
                 "--", "/bin/sh", "-c", "echo ready; exec sleep 1000"]
        proc = subprocess.Popen(args, stdout=subprocess.PIPE)
        assert proc.stdout is not None and proc.stdout.readline().strip() == b"ready"
        proc.kill()
        proc.wait()
        shutil.rmtree(scratch, ignore_errors=True)
        times.append(time.perf_counter() - started)
    return times


async def bare_exec(task: TerminalTask, settings: SandboxSettings, n: int) -> list[float]:
    """``podman exec`` (or ``docker exec``) ``CONTAINER bash -lc true`` into an idle container of the task's image."""
    from agentrig.bench.terminal.sandbox.engine import engine_cli

    sandbox = await open_sandbox(task, settings)  # its container: the image, limits and network of a trial
    try:
        cli = [*engine_cli(settings.kind), "exec", sandbox.name, "bash", "-lc", "true"]
        times = []
        for _ in range(n + 5):
            started = time.perf_counter()
            subprocess.run(cli, check=True, stdin=subprocess.DEVNULL)
            times.append(time.perf_counter() - started)
        return times[5:]
    finally:
        await sandbox.close()


async def oracle_rate(work: Path, trials: int, concurrency: int = 4, kind: str = "bwrap") -> tuple[int, int, float]:
    """(trials played, trials resolved, seconds) of the oracle on every built-in task."""
    from agentrig.run import experiment
    from agentrig.run.executor import Executor, close_channels, make_channels
    from agentrig.run.session import open_run, plan

    path = work / "oracle.toml"
    path.write_text(f'name = "oracle-rate"\n[benchmark]\nkind = "terminal"\n[sandbox]\nkind = "{kind}"\n'
                    f'cache_dir = "{work / "cache"}"\n'
                    f'[run]\ntrials = {trials}\nconcurrency = {concurrency}\ndir = "{work / "run"}"\n'
                    '[[arms]]\nname = "oracle"\nagent = { kind = "oracle" }\n')
    r = experiment.load(path)  # selects the tasks and builds their layers (cached)
    run = open_run(r)
    specs = plan(r, run.store)
    channels = make_channels(r, run.run_id)
    try:
        ex = Executor(r, run.store, run.run_id, channels)
        started = time.perf_counter()
        await ex.run(specs)
        elapsed = time.perf_counter() - started
    finally:
        await close_channels(channels)
        run.close()
    return ex.stats.finished, ex.stats.successes, elapsed


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--trials", type=int, default=40)
    parser.add_argument("--commands", type=int, default=200)
    parser.add_argument("--oracle-trials", type=int, default=4, help="trials per built-in task for the oracle rate")
    parser.add_argument("--sandbox", choices=["bwrap", "podman", "docker"], default="bwrap")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="agentrig-terminal-bench-"))
    try:
        task_dir = work / "task"
        task_dir.mkdir()
        (task_dir / "data.txt").write_text("x\n")
        (task_dir / "Dockerfile").write_text("FROM ubuntu:24.04\nWORKDIR /app\nCOPY data.txt ./\nRUN echo ok > /built\n")
        task = TerminalTask(id="bench", path=task_dir, format="tb1", instruction="bench", dockerfile=task_dir / "Dockerfile")
        base = SandboxSettings(cache_dir=work / "cache", kind=args.sandbox)
        print(f"machine: {platform.machine()} {os.cpu_count()} cores, Python {platform.python_version()}, "
              f"{platform.system()} {platform.release()}, euid {os.geteuid()}; load average {os.getloadavg()[0]:.2f}")
        if args.sandbox != "bwrap":
            await _container_figures(task, base, args, work)
            return
        tmp_ov = raw_bwrap(args.trials, upper_dirs=False)
        upper = raw_bwrap(args.trials, upper_dirs=True)
        print(f"raw bwrap start+kill, --tmp-overlay per dir : median {_ms(tmp_ov):6.1f} ms")
        print(f"raw bwrap start+kill, upper dirs on disk    : median {_ms(upper):6.1f} ms")
        trials = await start_teardown(task, base, args.trials)
        print(f"sandbox start + teardown (cached layer)     : median {_ms(trials):6.1f} ms  "
              f"p90 {statistics.quantiles(trials, n=10)[-1] * 1000:6.1f} ms  (target < 100 ms)")
        home = str(work / "home")
        os.makedirs(home)
        bare = bare_command(args.commands, home)
        print(f"bare subprocess.run(bash -lc true)          : median {_ms(bare):6.2f} ms")
        for shell in ("stateless", "persistent"):
            times = await per_command(task, base.model_copy(update={"shell": shell}), args.commands)
            print(f"sandbox.run('true'), {shell:<10}             : median {_ms(times):6.2f} ms  "
                  f"overhead {_ms(times) - _ms(bare):+6.2f} ms  ratio {_ms(times) / _ms(bare):5.2f}  (target < +10 ms)")
        played, solved, seconds = await oracle_rate(work, args.oracle_trials)
        print(f"oracle on the built-in tasks, concurrency 4 : {played / seconds:6.2f} trials/s  "
              f"({played} trials, {solved} resolved, {seconds:.1f} s)")
    finally:
        shutil.rmtree(work, ignore_errors=True)


async def _container_figures(task: TerminalTask, base: SandboxSettings, args, work: Path) -> None:
    trials = await start_teardown(task, base, args.trials)
    print(f"{base.kind} sandbox start + teardown (image built) : median {_ms(trials):7.1f} ms  "
          f"p90 {statistics.quantiles(trials, n=10)[-1] * 1000:7.1f} ms")
    bare = await bare_exec(task, base, args.commands)
    print(f"bare {base.kind} exec bash -lc true              : median {_ms(bare):7.2f} ms")
    for shell in ("stateless", "persistent"):
        times = await per_command(task, base.model_copy(update={"shell": shell}), args.commands)
        print(f"sandbox.run('true'), {shell:<10}             : median {_ms(times):7.2f} ms  "
              f"over a bare exec {_ms(times) - _ms(bare):+7.2f} ms")
    played, solved, seconds = await oracle_rate(work, args.oracle_trials, kind=base.kind)
    print(f"oracle on the built-in tasks, concurrency 4 : {played / seconds:6.2f} trials/s  "
          f"({played} trials, {solved} resolved, {seconds:.1f} s; the task images built in the first trials)")


if __name__ == "__main__":
    if sys.platform != "linux":
        raise SystemExit("the bwrap sandbox is Linux-only")
    asyncio.run(main())
