"""A real local Ray cluster for the tests: a head and one more worker node, each `ray start`ed in
its own process group (so that tearing down ends exactly the processes it started, and no other
Ray on the machine).

The worker node can be made a machine of its own as far as files go: it runs in a mount namespace
where the ``hide`` directories are empty read-only mounts (the driver's data, the tests' temporary
files), with a HOME of its own (``worker_home``: its caches). Its processes see the host's files
through ``/proc/PID/root`` (``worker_view``)."""

from __future__ import annotations

import functools
import os
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

RAY = str(Path(sys.executable).with_name("ray"))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _table() -> dict[int, tuple[int, int]]:
    """pid → (ppid, pgid) of every live process (from /proc)."""
    out = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2:].split()
        if fields[0] != "Z":
            out[int(entry.name)] = (int(fields[1]), int(fields[2]))
    return out


def group_pids(pgid: int) -> list[int]:
    """The live processes of a process group and their descendants (Ray's worker processes
    start sessions of their own, as children of the node's raylet)."""
    table = _table()
    found = {pid for pid, (_, g) in table.items() if g == pgid}
    grew = True
    while grew:
        more = {pid for pid, (pp, _) in table.items() if pp in found} - found
        found |= more
        grew = bool(more)
    return sorted(found)


def _alive(pids: set[int]) -> list[int]:
    table = _table()
    return sorted(p for p in pids if p in table)


@functools.cache
def _unshare() -> list[str] | None:
    """The command that starts a process in a mount namespace of its own, if this machine allows it
    (root: ``unshare -m``; otherwise through a user namespace)."""
    if shutil.which("unshare") is None:
        return None
    for cmd in (["unshare", "-m", "--propagation", "private"], ["unshare", "-rm", "--propagation", "private"]):
        probe = subprocess.run([*cmd, "sh", "-c", "mount -t tmpfs -o ro agentrig-probe /tmp"], capture_output=True)
        if probe.returncode == 0:
            return cmd
    return None


def cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


class LocalCluster:
    """``ray start --head`` on 127.0.0.1 (``head_cpus``) plus one worker node (``worker_cpus``);
    ``hide``: directories the worker node does not see (when mount namespaces are available here:
    ``isolated``)."""

    def __init__(self, env: dict[str, str], head_cpus: int = 2, worker_cpus: int = 1, hide: list[Path] = ()):
        self.env = {k: v for k, v in env.items() if not k.startswith("RAY_")}
        self.env["RAY_USAGE_STATS_ENABLED"] = "0"
        self.temp = tempfile.mkdtemp(prefix="ar-ray-", dir="/tmp")  # short: Ray's socket paths
        self.worker_home = Path(self.temp + "-home")
        self.port = free_port()
        self.address = f"127.0.0.1:{self.port}"
        self.groups: dict[str, int] = {}
        self.hidden = [Path(h) for h in hide if Path(h).is_dir()]
        self.isolated = bool(self.hidden) and _unshare() is not None
        try:
            self._start("head", "--head", "--port", str(self.port), "--num-cpus", str(head_cpus),
                        "--include-dashboard", "false", "--temp-dir", self.temp)
            self.worker_home.mkdir()
            env = {k: v for k, v in self.env.items() if k != "XDG_CACHE_HOME"}
            self._start("worker", "--address", self.address, "--num-cpus", str(worker_cpus),
                        env={**env, "HOME": str(self.worker_home)}, hide=self.hidden if self.isolated else [])
        except BaseException:
            self.stop()
            raise

    def _start(self, name: str, *args: str, env: dict[str, str] | None = None, hide: list[Path] = ()) -> None:
        cmd = [RAY, "start", "--node-ip-address", "127.0.0.1", "--disable-usage-stats", *args]
        if hide:  # a mount namespace of its own, where each hidden directory is an empty read-only tmpfs
            script = "set -e; for d in \"$@\"; do mount -t tmpfs -o ro,mode=755 agentrig-hidden \"$d\"; done; exec " + shlex.join(cmd)
            cmd = [*_unshare(), "sh", "-c", script, "sh", *map(str, hide)]
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                env=self.env if env is None else env, start_new_session=True)
        self.groups[name] = proc.pid  # its own process group: every daemon it starts stays in it
        out, _ = proc.communicate(timeout=180)
        if proc.returncode != 0:
            raise RuntimeError(f"ray start ({name}) failed:\n{out[-3000:]}")

    def pids(self, node: str) -> list[int]:
        return group_pids(self.groups[node])

    def processes(self, node: str, needle: str) -> list[int]:
        return [p for p in self.pids(node) if needle in cmdline(p)]

    def worker_view(self, path: Path) -> Path:
        """``path`` as the worker node's processes see it (its raylet's root)."""
        raylet = self.processes("worker", "raylet")
        assert raylet, "the worker node's raylet is not running"
        return Path(f"/proc/{raylet[0]}/root") / Path(path).relative_to("/")

    def stop(self) -> list[int]:
        """End both nodes (SIGTERM, then SIGKILL); returns what is still alive (nothing, normally).
        Ray's GCS server and autoscaler monitor outlive a SIGTERM by more than 15 s, so the grace is
        short: the nodes' state is thrown away with their temporary directory anyway."""
        started = {p for g in self.groups.values() for p in group_pids(g)}
        for sig, wait in ((signal.SIGTERM, 3.0), (signal.SIGKILL, 10.0)):
            for pid in started:
                try:
                    os.kill(pid, sig)
                except ProcessLookupError:
                    pass
            end = time.monotonic() + wait
            while time.monotonic() < end and _alive(started):
                time.sleep(0.2)
        left = _alive(started) + [p for g in self.groups.values() for p in group_pids(g) if p not in started]
        if not left:
            shutil.rmtree(self.temp, ignore_errors=True)
            shutil.rmtree(self.worker_home, ignore_errors=True)
        return left

    def session_files(self) -> list[Path]:
        """Every file of Ray's session directory and of the worker node's HOME (its caches)."""
        return [p for root in (Path(self.temp), self.worker_home) for p in root.rglob("*")
                if p.is_file() and not p.is_symlink()]
