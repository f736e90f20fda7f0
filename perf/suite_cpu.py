"""Where the test suite's CPU goes: every process that ran during it, by kind, from the kernel's
process accounting.

    .venv/bin/python perf/suite_cpu.py [--out FILE] [-- PYTEST_ARGS ...]   # runs the suite (root)
    .venv/bin/python perf/suite_cpu.py --read FILE                          # sums up a kept record

The suite is CPU-bound on a 2-core machine (docs/performance.md, "Where the suite's time goes"):
its wall time is its CPU seconds over the cores, so what to cut is read from CPU, not from
``--durations``. A test's own rusage misses much of it — daemons and containers nobody waits for
(dockerd, podman's conmon and its containers, Ray's raylet and workers), processes orphaned by a
Ctrl-C or a SIGKILL, a Python agent's starter that outlives its run. BSD process accounting
(``acct(2)``, switched on by Debian's ``accton``, package ``acct``) writes one record for every process
that exits, whoever its parent: its command name, parent, start, elapsed time and CPU. This script
switches it on into a file of its own, runs ``pytest`` (by default exactly as ``make test`` does:
``-q -n 3 --dist loadfile --no-loadscope-reorder``) in the foreground, switches it off, and prints:

- the machine's busy CPU over the run (``/proc/stat``: every process and the kernel, other users'
  work included — run it on a quiet machine), and how much of it the records account for;
- the CPU by kind of process (below), and the commands that cost most.

A record bears the name of the process's last thread to exit, so Node/Bun and Ray processes often
appear under a thread's name (``JSCWarmUp``, ``grpc_global_tim``…); the kinds group the names seen
on this machine, and the table of commands shows the raw names. Needs root (``accton``); the
accounting is switched off at the end (``accton off``), also when pytest fails or is interrupted.
The record file and a sidecar JSON (the pytest process's pid, the run's times and ``/proc/stat``
before and after) are kept for ``--read``.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import platform
import shutil
import struct
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
MAKE_TEST_ARGS = ["-q", "-n", "3", "--dist", "loadfile", "--no-loadscope-reorder"]

# struct acct_v3 (linux/acct.h): flag, version, tty, exitcode, uid, gid, pid, ppid, btime, etime
# (float, clock ticks), utime, stime, mem, io, rw, minflt, majflt, swaps (comp_t), comm[16]
_V3 = struct.Struct("<BBHIIIIIIf8H16s")
_AFORK = 0x01  # the process forked and did not exec
_TICKS = 100   # AHZ: comp_t and etime count in 1/100 s

PYTHON = "other Python (AppWorld workers, scripted endpoints, Python agents, verifiers' pytest)"
PYTHON_NAMES = {"python", "python3", "python3.11", "python3.12", "pytest", "pip"}  # split by parent in the summary

# kinds, first match wins; a name not here is "shells, core utilities and the rest"
KINDS: list[tuple[str, set[str], tuple[str, ...]]] = [
    ("agentrig commands (`agentrig …` processes: runs, in-process τ² trials, the channel)", {"agentrig"}, ()),
    ("installed agents' tool roots (mini-swe-agent's own Python: litellm's import)", {"ld-linux-x86-64", "mini"}, ()),
    ("Codex CLI (Rust: its threads' names)", {"codex", "sqlx-sqlite-wor", "notify-rs inoti", "tokio-rt-worker"}, ()),
    ("Claude Code / Node (Bun: its threads' names)",
     {"claude", "node", "JSCWarmUp", "HTTP Client", "mi-scavenger", "JITWorker", "HeapHelper", "fs.watch"},
     ("Bun Pool",)),
    ("container engines (podman, docker, runc, conmon, their networking)",
     {"podman", "conmon", "runc", "exe", "docker", "dockerd", "containerd", "containerd-shim", "iptables",
      "ip6tables", "netavark", "aardvark-dns", "slirp4netns", "buildah", "docker-proxy", "catatonit"},
     ("runc:", "containerd-")),
    ("package installs in image builds (apt, dpkg)",
     {"apt-get", "apt-config", "apt-key", "dpkg", "dpkg-query", "dpkg-deb", "dpkg-split", "dpkg-preconfigu",
      "store", "http", "https", "gpgv", "mmdebstrap", "ca-certificates", "update-ca-certif"}, ()),
    ("Ray (raylet, GCS, workers, their gRPC threads)",
     {"raylet", "gcs_server", "grpc_global_tim", "default-executo", "event_engine", "timer_manager",
      "resolver-execut", "task_event_buff", "client.poll0", "worker.user_obj", "nexting_thread", "PipeReaderThd"},
     ("ray::", "ray")),
    ("Chromium (the report's test)", {"chromium", "ThreadPoolForeg", "HangWatcher", "CrShutdownDetec"}, ("chrome",)),
    (PYTHON, PYTHON_NAMES, ()),
]
REST = "shells, core utilities and the rest"
PYTEST = "pytest itself (its main process and xdist workers: collection and in-process tests)"


def read_records(path: Path) -> list[dict]:
    data = path.read_bytes()
    if data and data[1] & 0x0F != 3:
        raise SystemExit(f"{path}: not version-3 process accounting records (version byte {data[1] & 0x0F}); "
                         "this script reads Linux's acct_v3 format only")
    out = []
    for off in range(0, len(data) - _V3.size + 1, _V3.size):
        (flag, _ver, _tty, _exit, _uid, _gid, pid, ppid, btime, etime, ut, st, *_rest, comm) = _V3.unpack_from(data, off)
        out.append({"pid": pid, "ppid": ppid, "btime": btime, "etime": etime / _TICKS,
                    "cpu": (_comp(ut) + _comp(st)) / _TICKS, "fork": bool(flag & _AFORK),
                    "comm": comm.rstrip(b"\0").decode(errors="replace")})
    return out


def _comp(v: int) -> int:
    """comp_t: a 13-bit mantissa and a 3-bit base-8 exponent."""
    return (v & 0x1FFF) << (3 * (v >> 13))


def kind_of(comm: str) -> str:
    for name, names, prefixes in KINDS:
        if comm in names or any(comm.startswith(p) for p in prefixes):
            return name
    return REST


def _busy(line: str) -> float:
    """CPU seconds a /proc/stat `cpu` line counts as busy (all but idle and iowait)."""
    ticks = [int(x) for x in line.split()[1:]]
    return (sum(ticks) - ticks[3] - ticks[4]) / os.sysconf("SC_CLK_TCK")


def summary(records: list[dict], side: dict) -> str:
    pytest_pids = {side["pytest_pid"]} if side.get("pytest_pid") else set()
    pytest_pids |= {r["pid"] for r in records if r["ppid"] in pytest_pids and r["comm"].startswith("python")
                    and r["etime"] >= 0.5 * side.get("wall_s", 0)}  # xdist workers: as long as the run
    by_kind: dict[str, list] = collections.defaultdict(lambda: [0.0, 0])
    by_comm: dict[str, list] = collections.defaultdict(lambda: [0.0, 0])
    for r in records:
        k = PYTEST if r["pid"] in pytest_pids else kind_of(r["comm"])
        by_kind[k][0] += r["cpu"]
        by_kind[k][1] += 1
        by_comm[r["comm"]][0] += r["cpu"]
        by_comm[r["comm"]][1] += 1
    total = sum(v[0] for v in by_kind.values())
    python_by_parent = _other_python_by_parent(records, pytest_pids)
    lines = []
    if side:
        busy = side["busy_after"] - side["busy_before"]
        lines.append(f"pytest {' '.join(side.get('args', []))}: exit {side.get('rc')}, wall {side['wall_s']:.0f} s, "
                     f"{side.get('machine', '?')}, {os.cpu_count()} cores; machine busy {busy:.0f} CPU s ({busy / side['wall_s']:.2f} cores); "
                     f"the records account for {total:.0f} CPU s ({100 * total / busy:.0f} %: the rest is the kernel's "
                     "threads and what was still running when accounting stopped)")
    else:
        lines.append(f"{len(records)} processes, {total:.0f} CPU s")
    lines.append("")
    lines.append(f"{'CPU s':>8} {'share':>6} {'procs':>7}  kind")
    for k, (cpu, n) in sorted(by_kind.items(), key=lambda kv: -kv[1][0]):
        lines.append(f"{cpu:8.1f} {100 * cpu / total:5.1f}% {n:7d}  {k}")
        if k == PYTHON:
            for who, (pcpu, pn) in sorted(python_by_parent.items(), key=lambda kv: -kv[1][0]):
                lines.append(f"{pcpu:8.1f} {'':6} {pn:7d}    {who}")
    lines.append("")
    lines.append(f"{'CPU s':>8} {'procs':>7}  command (the 25 costliest)")
    for c, (cpu, n) in sorted(by_comm.items(), key=lambda kv: -kv[1][0])[:25]:
        lines.append(f"{cpu:8.1f} {n:7d}  {c}")
    return "\n".join(lines)


def _other_python_by_parent(records: list[dict], pytest_pids: set[int]) -> dict[str, list]:
    """"Other Python" by who started it: a record's parent is the record of its ppid whose lifetime
    holds the child's start (pids are reused over a run; start times count in whole seconds)."""
    by_pid: dict[int, list[dict]] = collections.defaultdict(list)
    for r in records:
        by_pid[r["pid"]].append(r)

    def parent(r: dict) -> dict | None:
        fits = [p for p in by_pid.get(r["ppid"], ()) if p["btime"] <= r["btime"] + 1
                and r["btime"] <= p["btime"] + p["etime"] + 2]
        return max(fits, key=lambda p: p["btime"]) if fits else None

    out: dict[str, list] = collections.defaultdict(lambda: [0.0, 0])
    for r in records:
        if r["pid"] in pytest_pids or r["comm"] not in PYTHON_NAMES:
            continue
        p = parent(r)
        if r["fork"]:
            who = "forked, no exec (a Python agent's trials from its starter, multiprocessing)"
        elif r["ppid"] in pytest_pids:
            who = "started by a test (scripted endpoints, tools run directly)"
        elif p is not None and p["comm"] == "agentrig":
            who = "started by agentrig (AppWorld workers, Python agents' starters and runners, anchors)"
        elif r["ppid"] == 1 or p is None:
            who = "orphaned or parent unknown"
        else:
            who = "started by other processes (verifiers' pytest in sandboxes, tools' own Python)"
        out[who][0] += r["cpu"]
        out[who][1] += 1
    return out


def _stat_cpu() -> float:
    with open("/proc/stat", encoding="ascii") as f:
        return _busy(f.readline())


def run(out: Path, pytest_args: list[str]) -> int:
    if os.geteuid() != 0:
        raise SystemExit("perf/suite_cpu.py: process accounting needs root (accton); run it as root, or "
                         "sum up a kept record with --read FILE")
    accton = shutil.which("accton") or ("/usr/sbin/accton" if Path("/usr/sbin/accton").exists() else None)
    if accton is None:
        raise SystemExit("perf/suite_cpu.py: `accton` not found; install Debian's `acct` package "
                         "(apt-get install acct)")
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_bytes(b"")
    side: dict = {"args": pytest_args, "machine": platform.processor() or platform.machine()}
    subprocess.run([accton, str(out)], check=True, stdout=subprocess.DEVNULL)
    try:
        side["busy_before"], t0 = _stat_cpu(), time.monotonic()
        proc = subprocess.Popen([sys.executable, "-m", "pytest", *pytest_args], cwd=REPO)
        side["pytest_pid"] = proc.pid
        try:
            side["rc"] = proc.wait()
        except KeyboardInterrupt:
            side["rc"] = proc.wait()
        side["busy_after"], side["wall_s"] = _stat_cpu(), time.monotonic() - t0
    finally:
        subprocess.run([accton, "off"], stdout=subprocess.DEVNULL)
    out.with_suffix(".json").write_text(json.dumps(side, indent=1), encoding="utf-8")
    print(summary(read_records(out), side))
    print(f"\nrecords: {out} (and {out.with_suffix('.json').name}); again with --read {out}")
    return side["rc"]  # pytest's: a failed suite is not a measurement to trust


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--read", type=Path, help="sum up a kept record file instead of running the suite")
    ap.add_argument("--out", type=Path, default=Path("/tmp/agentrig-suite-cpu/acct.dat"),
                    help="where the records go (default: %(default)s)")
    ap.add_argument("pytest_args", nargs="*", help=f"after --: pytest's arguments (default: {' '.join(MAKE_TEST_ARGS)})")
    args = ap.parse_args()
    if args.read:
        if not args.read.is_file():
            raise SystemExit(f"perf/suite_cpu.py: --read {args.read}: no such file")
        sidecar = args.read.with_suffix(".json")
        side = json.loads(sidecar.read_text(encoding="utf-8")) if sidecar.is_file() else {}
        print(summary(read_records(args.read), side))
        return 0
    return run(args.out, args.pytest_args or MAKE_TEST_ARGS)


if __name__ == "__main__":
    sys.exit(main())
