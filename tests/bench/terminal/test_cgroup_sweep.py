"""A runner killed hard may leave a sandbox's processes running in its trial cgroups: the next
runner's first trial reaps them (bench/terminal/sandbox/cgroup.py ``_sweep_once``) — and touches
nothing of a runner that is alive."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from agentrig.bench.terminal.sandbox import cgroup

pytestmark = pytest.mark.skipif(cgroup.available() is not None, reason=f"no per-trial cgroups here: {cgroup.available()}")


def _group_with_sleeper(name: str) -> tuple[Path, subprocess.Popen]:
    group = cgroup._v1_dirs()["pids"] / "agentrig" / name
    command = group / "c1"
    command.mkdir(parents=True)
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)"], start_new_session=True)
    (command / "cgroup.procs").write_text(str(sleeper.pid))
    return group, sleeper


def test_the_cgroups_of_a_dead_runner_are_emptied_and_removed_a_live_ones_kept(monkeypatch):
    gone = subprocess.Popen(["true"])
    gone.wait()  # a runner that is dead: its pid names its trial cgroups
    dead_group, orphan = _group_with_sleeper(f"t-sweep-{gone.pid}")
    live_group, busy = _group_with_sleeper(f"t-sweep-live-{os.getpid()}")
    try:
        monkeypatch.setattr(cgroup, "_SWEPT", False)
        cgroup._sweep_once()
        assert orphan.wait(timeout=30) == -9  # the dead runner's sandbox process is killed
        assert not dead_group.exists()
        assert busy.poll() is None and live_group.is_dir()  # a live runner's trial is not touched
        assert int((live_group / "c1" / "cgroup.procs").read_text().split()[0]) == busy.pid
    finally:
        for proc in (orphan, busy):
            proc.kill()
            proc.wait()
        for group in (dead_group, live_group):
            for d in (group / "c1", group):
                if d.is_dir():
                    d.rmdir()


def test_a_trial_gets_a_cpu_or_memory_group_only_for_a_bound_it_has():
    """An unbounded ``cpu`` group is not neutral: every trial's group sits under one ``agentrig``
    parent, which the scheduler weighs as one process against the rest of the machine (a loaded
    machine starved the sandboxes). Only ``pids`` is always made (a command is killed whole by it)."""
    dirs = cgroup._v1_dirs()
    plain = cgroup.TrialCgroups.create(f"t-bounds-plain-{os.getpid()}", memory_mb=None, pids=64, cpus=None)
    bounded = cgroup.TrialCgroups.create(f"t-bounds-full-{os.getpid()}", memory_mb=128, pids=64, cpus=0.5)
    try:
        assert plain is not None and bounded is not None
        assert set(plain.dirs) == {"pids"}
        for controller in ("cpu", "memory"):
            if controller in dirs:  # the hierarchies this machine has
                assert not (dirs[controller] / "agentrig" / f"t-bounds-plain-{os.getpid()}").exists()
                assert controller in bounded.dirs
        if "cpu" in bounded.dirs:
            assert (bounded.dirs["cpu"] / "cpu.cfs_quota_us").read_text().strip() == "50000"
        if "memory" in bounded.dirs:
            assert int((bounded.dirs["memory"] / "memory.limit_in_bytes").read_text()) == 128 * 2**20
        _, files = plain.new_command()
        assert len(files) == 1  # a command joins its pids group only
    finally:
        import asyncio

        for group in (plain, bounded):
            if group is not None:
                asyncio.run(group.close())
