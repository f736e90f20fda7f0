"""How many of Terminal-Bench's real tasks agentrig runs: the coverage figure (issue 24, item 5).

For every task of a Terminal-Bench ``tasks/`` folder (TB1 ``task.yaml`` and Harbor ``task.toml``
directories, read as they are):

1. the verdict of ``agentrig tasks list --bench terminal`` for the sandbox (``task_support``): a
   task the sandbox cannot run is excluded before anything is played, with the reason;
2. for the others, ``agentrig audit``'s trials (``audit.audit_one``): one oracle trial and one
   no-op trial, played as ``agentrig run`` plays them, on bwrap with ``[sandbox] root = "image"``
   (a root built from packages for the task's ``FROM``) by default, each task within
   ``--task-timeout`` seconds. A task *runs* when its oracle gets reward 1 and the no-op 0.

It prints one line per task as it is known — every task that does not run says why — and the
totals, and writes every row to ``--json``. Tasks are never special-cased by name.

Getting the tasks (never commit them): the ``fetch`` tool of this workplace brings a public
repository's snapshot here as a git directory; ``extract`` writes one folder of it out and records
the files the snapshot lacks (it holds no file of 4 MiB or more, and no Git LFS content) in
``DEST/.absent.json`` — a task with such a file is reported ``missing_files`` naming them, never run
with the file silently gone:

    # github:laude-institute/terminal-bench (tasks/ or original-tasks/), where a snapshot is stored;
    # this session's was a copy of its tasks/ folder (94 tasks, July 2025) inside github:camel-ai/camel:
    .venv/bin/python benchmarks/terminal_coverage.py extract /work/.mirror/camel-ai+camel/repo \\
        7955886894c2051654d09f7fc0478382b455cb45:examples/workforce/terminal_bench/tasks /tmp/tb-tasks
    nice .venv/bin/python benchmarks/terminal_coverage.py /tmp/tb-tasks --json /tmp/coverage.json \\
        [--task-ids a,b] [--task-timeout 600] [--concurrency 2] [--root image|host] [--network true|task]
        [--merge EARLIER.json]   # with --task-ids: re-run a few tasks, keep the others' rows from EARLIER
    .venv/bin/python benchmarks/terminal_coverage.py compare bwrap.json podman.json   # same verdict per task?

Needs root (bwrap), mmdebstrap (the base roots, built once each) and the package registries
(the tasks' own ``RUN apt-get``/``pip install`` steps).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

ABSENT = ".absent.json"


def extract(git_dir: str, spec: str, dest: Path) -> None:
    """Write REV:PATH of a git directory to DEST; list the blobs the snapshot lacks in DEST/.absent.json."""
    rev, _, prefix = spec.partition(":")
    prefix = prefix.strip("/")
    listing = subprocess.run(["git", "--git-dir", git_dir, "ls-tree", "-r", "-z", rev, "--", prefix],
                             check=True, capture_output=True).stdout.decode()
    absent: list[str] = []
    dest.mkdir(parents=True, exist_ok=True)
    for entry in filter(None, listing.split("\0")):
        meta, path = entry.split("\t", 1)
        mode, kind, sha = meta.split()
        rel = os.path.relpath(path, prefix) if prefix else path
        target = dest / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        if kind != "blob":
            continue
        blob = subprocess.run(["git", "--git-dir", git_dir, "cat-file", "blob", sha], capture_output=True)
        if blob.returncode != 0:
            absent.append(rel)
            continue
        if mode == "120000":
            target.unlink(missing_ok=True)
            target.symlink_to(blob.stdout.decode())
            continue
        target.write_bytes(blob.stdout)
        if mode == "100755":
            target.chmod(0o755)
    (dest / ABSENT).write_text(json.dumps(sorted(absent), indent=1))
    tasks = sum(1 for p in dest.iterdir() if p.is_dir())
    print(f"{tasks} task directories in {dest}; {len(absent)} file(s) the snapshot lacks (listed in {dest / ABSENT})")


def absent_files(tasks_dir: Path) -> dict[str, list[str]]:
    """task id → the files of it the copy lacks (from extract's list)."""
    found: dict[str, list[str]] = {}
    listing = tasks_dir / ABSENT
    if listing.is_file():
        for rel in json.loads(listing.read_text()):
            task_id, _, inner = rel.partition("/")
            found.setdefault(task_id, []).append(inner)
    return found


async def measure(args: argparse.Namespace) -> dict:
    from agentrig.bench.terminal.audit import TaskAudit, audit_one, empty_solution
    from agentrig.bench.terminal.availability import task_support
    from agentrig.bench.terminal.sandbox.base import SandboxSettings
    from agentrig.bench.terminal.taskfile import load_tasks

    tasks_dir = Path(args.tasks)
    ids = [t for t in args.task_ids.split(",") if t] if args.task_ids else None
    tasks, invalid = load_tasks(tasks_dir, task_ids=ids, skip_invalid=True)
    absent = absent_files(tasks_dir)
    build_network = "host-settings" if args.build_network == "host-settings" else args.build_network == "true"
    network = {"true": True, "false": False, "task": None}[args.network]
    settings = SandboxSettings(kind=args.sandbox, root=args.root, cache_dir=args.cache_dir, build_network=build_network,
                               network=network)
    stream = open(args.json.with_suffix(".jsonl"), "a") if args.json else None  # noqa: SIM115 - rows as they come
    total = len(tasks) + len(invalid)
    rows: list[dict] = []
    counter = [0]
    started = time.monotonic()

    def report(row: dict) -> None:
        counter[0] += 1
        rows.append(row)
        if stream is not None:
            stream.write(json.dumps(row) + "\n")
            stream.flush()
        extra = f" · oracle {row['oracle']} · noop {row['noop']}" if row.get("oracle") is not None else ""
        print(f"[{counter[0]}/{total}] {row['task_id']}: {row['verdict']}{extra} · {row['duration_s']:.0f} s"
              + ("" if row["verdict"] == "runs" else f" — {row['reason']}"), flush=True)

    for bad in invalid:
        report({"task_id": bad.task_id, "verdict": "invalid", "stage": "load", "duration_s": 0.0,
                "reason": f"{bad.file}: {bad.field}: {bad.problem}"})
    to_play = []
    for task in tasks:
        if task.id in absent:
            report({"task_id": task.id, "verdict": "missing_files", "stage": "list", "duration_s": 0.0,
                    "reason": "missing_files: the copy lacks " + ", ".join(absent[task.id])})
            continue
        found = task_support(task, settings.kind, settings.network)
        if not found.ok:
            report({"task_id": task.id, "verdict": found.exclusion or "excluded", "stage": "list", "duration_s": 0.0,
                    "reason": found.reason})
            continue
        to_play.append(task)

    gate = asyncio.Semaphore(args.concurrency)

    def outcome(o: object) -> str | None:
        if o is None:
            return None
        if not o.valid:  # type: ignore[attr-defined]
            return "invalid"
        return f"{o.reward:g} ({o.failure_mode or o.termination})"  # type: ignore[attr-defined]

    async def one(task: object) -> None:
        async with gate:
            audit: TaskAudit = await audit_one(task, settings, args.task_timeout)
        verdict = "runs" if audit.status == "ok" else audit.status
        if audit.status == "excluded":
            verdict = audit.reason.split(":", 1)[0].strip() or "excluded"
        elif audit.status == "broken" and audit.oracle is not None and audit.oracle.unreached:
            verdict = "needs_network"  # the build's, solution's or tests' fetches could not reach their hosts
        elif audit.status == "broken" and empty_solution(task):
            verdict = "no_solution"  # no reference solution to play: an oracle that cannot pass anywhere
        report({"task_id": audit.task_id, "verdict": verdict, "stage": "audit", "status": audit.status,
                "reason": audit.reason, "oracle": outcome(audit.oracle), "noop": outcome(audit.noop),
                "duration_s": audit.duration_s,
                "oracle_detail": (audit.oracle.detail or "")[-1500:] if audit.oracle else None,
                "oracle_failed_tests": audit.oracle.failed_tests if audit.oracle else None})

    await asyncio.gather(*(one(t) for t in to_play))
    if args.merge:  # the tasks not selected now keep their rows from an earlier run (same settings, said so)
        earlier = json.loads(Path(args.merge).read_text())
        now = {r["task_id"] for r in rows}
        for row in earlier["rows"]:
            if row["task_id"] not in now:
                rows.append({**row, "from": str(args.merge)})
        total = len(rows)
    verdicts = Counter(r["verdict"] for r in rows)
    return {"machine": f"{platform.machine()} {os.cpu_count()} cores, Python {platform.python_version()}",
            "load_at_end": round(os.getloadavg()[0], 1), "wall_s": round(time.monotonic() - started, 1),
            "settings": {"sandbox": settings.kind, "root": settings.root, "task_timeout_s": args.task_timeout,
                         "build_network": settings.build_network, "network": args.network,
                         "concurrency": args.concurrency,
                         "ubuntu_archive": os.environ.get("AGENTRIG_UBUNTU_ARCHIVE") or None},
            "tasks": total, "played": len(to_play) + sum(1 for r in rows if r.get("from") and r["stage"] == "audit"),
            "merged_from": str(args.merge) if args.merge else None, "verdicts": dict(verdicts),
            "rows": sorted(rows, key=lambda r: r["task_id"])}


def compare(first: Path, second: Path) -> int:
    """Per task, the verdicts of two runs (bwrap and podman, say): the tasks whose verdicts differ,
    and how many agree. Exit status 1 when any differs."""
    a, b = ({r["task_id"]: r for r in json.loads(p.read_text())["rows"]} for p in (first, second))
    both = sorted(set(a) & set(b))
    differ = [t for t in both if a[t]["verdict"] != b[t]["verdict"]]
    for task in differ:
        print(f"{task}: {a[task]['verdict']} ({first.name}) vs {b[task]['verdict']} ({second.name}) — "
              f"{(b[task].get('reason') or '')[:200]}")
    only = sorted(set(a) ^ set(b))
    print(f"{len(both) - len(differ)} of {len(both)} tasks with the same verdict in both"
          + (f"; in one run only: {', '.join(only)}" if only else ""))
    return 1 if differ else 0


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "compare":
        parser = argparse.ArgumentParser(prog="terminal_coverage.py compare")
        parser.add_argument("first", type=Path)
        parser.add_argument("second", type=Path)
        a = parser.parse_args(sys.argv[2:])
        sys.exit(compare(a.first, a.second))
    if len(sys.argv) > 1 and sys.argv[1] == "extract":
        parser = argparse.ArgumentParser(prog="terminal_coverage.py extract")
        parser.add_argument("git_dir")
        parser.add_argument("spec", help="REV:PATH of the tasks folder")
        parser.add_argument("dest", type=Path)
        a = parser.parse_args(sys.argv[2:])
        extract(a.git_dir, a.spec, a.dest)
        return
    parser = argparse.ArgumentParser()
    parser.add_argument("tasks", help="a Terminal-Bench tasks folder (see the module docstring)")
    parser.add_argument("--task-ids", default=None)
    parser.add_argument("--sandbox", default="bwrap")
    parser.add_argument("--root", default="image", choices=("image", "host"))
    parser.add_argument("--task-timeout", type=float, default=600.0)
    parser.add_argument("--network", default="true", choices=("true", "false", "task"),
                        help="[sandbox] network for the trials: true (default) as Terminal-Bench's harness gives "
                             "every task container the network; task: the task's allow_internet (agentrig's default)")
    parser.add_argument("--build-network", default="host-settings", choices=("host-settings", "true", "false"),
                        help="[sandbox] build_network: host-settings (default) gives RUN steps this machine's "
                             "package-index settings (pip configuration, CA bundle), as a user here would set it")
    parser.add_argument("--concurrency", type=int, default=2)
    parser.add_argument("--cache-dir", type=Path, default=None)
    parser.add_argument("--json", type=Path, default=None)
    parser.add_argument("--merge", type=Path, default=None,
                        help="an earlier run's --json: tasks not selected by --task-ids keep their rows from it "
                             "(re-run only the tasks a fix touches; the rows say which run they come from)")
    args = parser.parse_args()
    print(f"machine: {platform.machine()} {os.cpu_count()} cores, load {os.getloadavg()[0]:.1f}; "
          f"{args.sandbox} root={args.root} network={args.network} build_network={args.build_network}, "
          f"ubuntu={os.environ.get('AGENTRIG_UBUNTU_ARCHIVE') or 'debian stand-in'}, "
          f"{args.task_timeout:g} s per task, {args.concurrency} at once", flush=True)
    doc = asyncio.run(measure(args))
    beyond = [r["task_id"] for r in doc["rows"] if beyond_registries(r)]
    eligible = doc["tasks"] - len(beyond)
    runs = doc["verdicts"].get("runs", 0)
    doc["acceptance"] = {"beyond_registries": beyond, "eligible": eligible, "runs": runs,
                         "share": round(runs / eligible, 3) if eligible else None}
    if args.json:
        args.json.write_text(json.dumps(doc, indent=1))
    v = doc["verdicts"]
    print("\nnot run, by cause:")
    for verdict in sorted(k for k in v if k != "runs"):
        ids = [r["task_id"] for r in doc["rows"] if r["verdict"] == verdict]
        print(f"  {verdict} ({len(ids)}): {', '.join(ids)}")
    print(f"\n{doc['tasks']} tasks: {runs} run (oracle 1, no-op 0) of {doc['played']} played; "
          + ", ".join(f"{n} {k}" for k, n in sorted(v.items()) if k != "runs")
          + f" · {doc['wall_s']:.0f} s wall, load {doc['load_at_end']}")
    print(f"{len(beyond)} need more than the package registries, lack files or have no solution ({', '.join(beyond)}); "
          f"of the other {eligible}: {runs} run = {100 * runs / max(eligible, 1):.0f}%")


def beyond_registries(row: dict) -> bool:
    """A task the acceptance's denominator leaves out, by its verdict and reason: its files are
    incomplete; its build, solution or tests need a host or an image beyond the package registries
    (also a solution asking for package versions or packages only the real base's archive has, e.g.
    Ubuntu's, which only Debian's registry stands in for here); or it has no reference solution (its solution script
    holds no command), so no engine's oracle can pass it."""
    reason, verdict = row.get("reason") or "", row["verdict"]
    if verdict in ("missing_files", "invalid", "no_solution"):
        return True
    if verdict == "base_substituted" and "archive does not have" in reason:
        return True
    if verdict == "needs_network" and ("could not reach" in reason or "cannot be pulled" in reason):
        return True  # a host, or (container engines) an image from a registry, beyond the registries here
    if verdict == "needs_container" and ("is not a supported base" in reason or "--from" in reason):
        return True
    return verdict == "needs_services" and "(image " in reason


if __name__ == "__main__":
    main()
