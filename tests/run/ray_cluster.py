"""A real local Ray cluster for the tests: a head and one more worker node, each `ray start`ed in
its own process group (so that tearing down ends exactly the processes it started, and no other
Ray on the machine)."""

from __future__ import annotations

import os
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


def cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


class LocalCluster:
    """``ray start --head`` on 127.0.0.1 (``head_cpus``) plus one worker node (``worker_cpus``)."""

    def __init__(self, env: dict[str, str], head_cpus: int = 2, worker_cpus: int = 1):
        self.env = {k: v for k, v in env.items() if not k.startswith("RAY_")}
        self.env["RAY_USAGE_STATS_ENABLED"] = "0"
        self.temp = tempfile.mkdtemp(prefix="ar-ray-", dir="/tmp")  # short: Ray's socket paths
        self.port = free_port()
        self.address = f"127.0.0.1:{self.port}"
        self.groups: dict[str, int] = {}
        try:
            self._start("head", "--head", "--port", str(self.port), "--num-cpus", str(head_cpus),
                        "--include-dashboard", "false", "--temp-dir", self.temp)
            self._start("worker", "--address", self.address, "--num-cpus", str(worker_cpus))
        except BaseException:
            self.stop()
            raise

    def _start(self, name: str, *args: str) -> None:
        proc = subprocess.Popen([RAY, "start", "--node-ip-address", "127.0.0.1", "--disable-usage-stats", *args],
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=self.env,
                                start_new_session=True)
        self.groups[name] = proc.pid  # its own process group: every daemon it starts stays in it
        out, _ = proc.communicate(timeout=180)
        if proc.returncode != 0:
            raise RuntimeError(f"ray start ({name}) failed:\n{out[-3000:]}")

    def pids(self, node: str) -> list[int]:
        return group_pids(self.groups[node])

    def processes(self, node: str, needle: str) -> list[int]:
        return [p for p in self.pids(node) if needle in cmdline(p)]

    def stop(self) -> list[int]:
        """End both nodes (SIGTERM, then SIGKILL); returns what is still alive (nothing, normally)."""
        started = {p for g in self.groups.values() for p in group_pids(g)}
        for sig, wait in ((signal.SIGTERM, 15.0), (signal.SIGKILL, 10.0)):
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
        return left

    def session_files(self) -> list[Path]:
        return [p for p in Path(self.temp).rglob("*") if p.is_file() and not p.is_symlink()]
