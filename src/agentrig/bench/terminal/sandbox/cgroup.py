"""Per-trial cgroups: the process-count and memory bounds, a CPU quota, and killing a command whole.

A trial gets a ``pids`` cgroup, and a ``memory`` or ``cpu`` one when it has that bound (cgroup v1
hierarchies, as on these machines where root may write them), under the cgroup agentrig itself
runs in. (An unbounded ``cpu`` group is not neutral: all trials' groups share one ``agentrig``
parent, which the scheduler weighs as a single process against everything else on the machine.) In the
``pids`` hierarchy every command gets a child cgroup of its own: a command's processes, however
they fork (``setsid``, ``nohup``, double-fork daemons), stay in it, so a timeout can kill exactly
that command and everything it started — and nothing another command started.

Why cgroups and not rlimits: ``RLIMIT_NPROC`` counts processes per user and root ignores it;
``RLIMIT_AS`` bounds address space, not memory, and breaks runtimes that reserve large virtual
areas. Where no cgroup is writable (not root, or a cgroup v2 tree not delegated to us) the
sandbox still runs; ``available()`` says why, the doctor reports it, the bounds are not enforced
and a timeout kills the command's process group plus the processes that carry its marker.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import time
from pathlib import Path

CONTROLLERS = ("pids", "memory", "cpu")


def _v1_dirs() -> dict[str, Path]:
    """controller -> the directory of the cgroup this process is in (cgroup v1 only)."""
    mounts: dict[str, tuple[str, str]] = {}
    try:
        for line in Path("/proc/self/mountinfo").read_text().splitlines():
            left, _, right = line.partition(" - ")
            fields, rfields = left.split(), right.split()
            if len(rfields) < 3 or rfields[0] != "cgroup":
                continue
            for option in rfields[2].split(","):
                if option in CONTROLLERS:
                    mounts[option] = (fields[4], fields[3])  # mount point, hierarchy root
        own: dict[str, str] = {}
        for line in Path("/proc/self/cgroup").read_text().splitlines():
            _, names, path = line.split(":", 2)
            for name in names.split(","):
                own[name] = path
    except OSError:
        return {}
    dirs = {}
    for controller, (mountpoint, root) in mounts.items():
        path = own.get(controller)
        if path is None:
            continue
        rel = path[len(root):] if root != "/" and path.startswith(root) else path
        dirs[controller] = Path(mountpoint) / rel.lstrip("/")
    return dirs


def available() -> str | None:
    """None when per-trial cgroups work here; else why not."""
    dirs = _v1_dirs()
    if "pids" not in dirs:
        return "no writable cgroup v1 'pids' hierarchy (cgroup v2 delegation is not supported yet)"
    probe = dirs["pids"] / "agentrig" / f"probe-{os.getpid()}"
    try:
        probe.mkdir(parents=True, exist_ok=True)
        probe.rmdir()
    except OSError as exc:
        return f"cannot create a cgroup under {dirs['pids']}: {exc.strerror}"
    return None


class TrialCgroups:
    """The cgroups of one trial. ``join_files`` are written with a process id to join them."""

    def __init__(self, dirs: dict[str, Path]) -> None:
        self.dirs = dirs  # controller -> this trial's cgroup directory
        self._count = 0

    @classmethod
    def create(cls, name: str, *, memory_mb: int | None, pids: int | None, cpus: float | None) -> TrialCgroups | None:
        if available() is not None:
            return None
        _sweep_once()
        made: dict[str, Path] = {}
        try:
            for controller, parent in _v1_dirs().items():
                if (controller == "memory" and memory_mb is None) or (controller == "cpu" and cpus is None):
                    continue  # a group that bounds nothing would only weigh the trial: under the shared
                    # ``agentrig`` parent every sandbox of the machine counted as one process to the scheduler
                path = parent / "agentrig" / name
                path.mkdir(parents=True, exist_ok=True)
                made[controller] = path
            group = cls(made)
            if pids is not None:
                _write(made["pids"] / "pids.max", str(pids))
            if memory_mb is not None and "memory" in made:
                limit = str(memory_mb * 1024 * 1024)
                _write(made["memory"] / "memory.limit_in_bytes", limit)
                with contextlib.suppress(OSError):  # swap accounting may be off
                    _write(made["memory"] / "memory.memsw.limit_in_bytes", limit)
            if cpus is not None and "cpu" in made:
                _write(made["cpu"] / "cpu.cfs_period_us", "100000")
                _write(made["cpu"] / "cpu.cfs_quota_us", str(max(1000, int(cpus * 100000))))
            return group
        except OSError:
            for path in made.values():
                with contextlib.suppress(OSError):
                    path.rmdir()
            return None

    def new_command(self) -> tuple[Path, list[str]]:
        """A fresh pids cgroup for one command: (its directory, the cgroup.procs files to join)."""
        self._count += 1
        command_dir = self.dirs["pids"] / f"c{self._count}"
        command_dir.mkdir(exist_ok=True)
        files = [str(command_dir / "cgroup.procs")]
        files += [str(self.dirs[c] / "cgroup.procs") for c in ("memory", "cpu") if c in self.dirs]
        return command_dir, files

    def move(self, pid: int, command_dir: Path) -> None:
        """Move a running process (the persistent shell, idle) into a command's cgroup."""
        _write(command_dir / "cgroup.procs", str(pid))

    async def kill(self, command_dir: Path) -> None:
        """SIGKILL every process of the cgroup (and its children) until it is empty."""
        await kill_cgroup(command_dir)

    def oom_kills(self) -> int:
        path = self.dirs.get("memory")
        if path is None:
            return 0
        with contextlib.suppress(OSError, ValueError):
            for line in (path / "memory.oom_control").read_text().splitlines():
                if line.startswith("oom_kill "):
                    return int(line.split()[1])
        return 0

    async def close(self) -> None:
        """Kill everything left in the trial and remove its cgroups."""
        await self.kill(self.dirs["pids"])
        for controller, path in self.dirs.items():
            if controller != "pids":
                for pid in _procs(path):
                    with contextlib.suppress(ProcessLookupError, PermissionError):
                        os.kill(pid, signal.SIGKILL)
            for dirpath in reversed(_subtree(path)):
                for _ in range(100):
                    try:
                        dirpath.rmdir()
                        break
                    except FileNotFoundError:
                        break
                    except OSError:
                        await asyncio.sleep(0.01)


async def kill_cgroup(path: Path) -> None:
    """SIGKILL every process of the cgroup at ``path`` (and of its children) until it is empty; no
    new forks there meanwhile (its ``pids.max``, where the pids controller is)."""
    for dirpath in _subtree(path):
        with contextlib.suppress(OSError):
            _write(dirpath / "pids.max", "0")
    for _ in range(500):
        pids = [pid for d in _subtree(path) for pid in _procs(d)]
        if not pids:
            return
        for pid in pids:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
        await asyncio.sleep(0.01)


_SWEPT = False


def _sweep_once() -> None:
    """Reap the trial cgroups of agentrig processes that died (names end in -PID): a runner killed
    hard (SIGKILL, OOM) may leave a sandbox's processes running — they are killed, then the
    cgroups removed. Once per process, before its first trial cgroup."""
    global _SWEPT
    if _SWEPT:
        return
    _SWEPT = True
    stale: list[Path] = []
    for parent in _v1_dirs().values():
        root = parent / "agentrig"
        if not root.is_dir():
            continue
        for trial in root.iterdir():
            owner = trial.name.rsplit("-", 1)[-1]
            if trial.is_dir() and owner.isdigit() and not Path(f"/proc/{owner}").exists():
                stale.append(trial)
    for trial in stale:  # first no new forks, then kill until empty (a second or so at most)
        for dirpath in _subtree(trial):
            with contextlib.suppress(OSError):
                if (dirpath / "pids.max").exists():
                    _write(dirpath / "pids.max", "0")
    for _ in range(100):
        left = [pid for trial in stale for d in _subtree(trial) for pid in _procs(d)]
        if not left:
            break
        for pid in left:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
        time.sleep(0.01)
    for trial in stale:
        for dirpath in reversed(_subtree(trial)):
            if not _procs(dirpath):
                with contextlib.suppress(OSError):
                    dirpath.rmdir()


def _subtree(path: Path) -> list[Path]:
    out = [path]
    with contextlib.suppress(OSError):
        out += [p for p in sorted(path.iterdir()) if p.is_dir()]
    return out


def _procs(path: Path) -> list[int]:
    try:
        return [int(x) for x in (path / "cgroup.procs").read_text().split()]
    except (OSError, ValueError):
        return []


def _write(path: Path, value: str) -> None:
    with open(path, "w") as handle:
        handle.write(value)
