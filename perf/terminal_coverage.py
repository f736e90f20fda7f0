"""How many real Terminal-Bench-format tasks agentrig runs: the coverage figure (issues 24 and 33).

For each task set given (a folder of TB1 ``task.yaml`` and Harbor ``task.toml`` task folders, read
as they are) — Terminal-Bench's core tasks, the adapter datasets of ``terminal-bench-datasets``
(EvoEval, aider-polyglot, DevEval, SWE-bench-verified, LiveCodeBench-Pro…), your own — it runs
**``agentrig audit --bench terminal --tasks SET --task-ids … --json``**, the command a user runs,
with its defaults and only the audit options given after ``--`` (no hidden settings: the
figure is what that command reports): per task the support check, then one oracle and one no-op
trial played as ``agentrig run`` plays them. A task *runs* when its oracle gets reward 1 and the
no-op 0.

``--sample N`` takes a fixed sample of each set: N tasks (per ``--group-by`` group: every language
of aider-polyglot with ``'polyglot_([a-z]+)_'``), first in the order of their ids' SHA-256.
Per set and over all it prints the tasks that run, those that do not (by cause) and those left out
of the share (files the copy lacks, no reference solution, hosts or images beyond the package
registries), and writes every row to ``--json`` (each set's audit JSON beside it, under
``coverage-audits/``).

Getting the tasks (never commit them): the ``fetch`` tool of this workplace brings a public
repository's snapshot here as a git directory; ``extract`` writes one folder of it out and records
the files the snapshot lacks (it holds no file of 4 MiB or more, and no Git LFS content) in
``DEST/.absent.json`` — a task with such a file is reported ``missing_files`` naming them, never run
with the file silently gone:

    # TB's core tasks: github:laude-institute/terminal-bench is not fetchable here; a copy of its
    # tasks/ folder (94 tasks, July 2025) sits inside github:camel-ai/camel:
    .venv/bin/python perf/terminal_coverage.py extract /work/.mirror/camel-ai+camel/repo \\
        7955886894c2051654d09f7fc0478382b455cb45:examples/workforce/terminal_bench/tasks /tmp/tb/core
    # the adapter datasets: github:rese1f/terminal-bench-datasets (a copy of laude-institute's)
    for d in aider_polyglot deveval evoeval livecodebenchpro swebench-verified; do
      .venv/bin/python perf/terminal_coverage.py extract /work/.mirror/rese1f+terminal-bench-datasets/repo \\
          17d2b935:datasets/$d /tmp/tb/$d; done
    # Terminal-Bench 2.0 in Harbor's format: a copy inside github:yujianll/skill-usage (89 tasks)
    .venv/bin/python perf/terminal_coverage.py extract /work/.mirror/yujianll+skill-usage/repo \\
        f9f89fadc42150d0b3de9dfa8ff31da31607ca89:terminal-bench-2 /tmp/tb/tb2
    nice .venv/bin/python perf/terminal_coverage.py /tmp/tb/core --json core.json -- --concurrency 2
    nice .venv/bin/python perf/terminal_coverage.py /tmp/tb/{aider_polyglot,deveval,evoeval,livecodebenchpro,swebench-verified} \\
        --sample 10 --group-by 'polyglot_([a-z]+)_' --json adapters.json -- --concurrency 2 [--sandbox podman]
    nice .venv/bin/python perf/terminal_coverage.py /tmp/tb/tb2 --sample 10 --json tb2.json -- --concurrency 2
    .venv/bin/python perf/terminal_coverage.py compare bwrap.json podman.json   # same verdict per task?

Needs root (bwrap), mmdebstrap (the base roots, built once each) and the package registries
(the tasks' own ``RUN apt-get``/``pip install``/``npm install`` steps).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import platform
import re
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


def task_dirs(tasks_dir: Path) -> list[str]:
    """The task folders of a set: every directory holding a ``task.yaml`` (TB1) or ``task.toml`` (Harbor)."""
    return sorted(p.name for p in tasks_dir.iterdir()
                  if p.is_dir() and ((p / "task.yaml").is_file() or (p / "task.toml").is_file()))


def sample(ids: list[str], n: int | None, group_by: str | None) -> list[str]:
    """A fixed sample: per group (the first group of ``group_by`` matched in the id, e.g. the language
    of ``polyglot_cpp_…``; ids it does not match form one group), the ``n`` ids first in the order of
    their SHA-256 — the same tasks on every machine and in every run, chosen by no one's look at them."""
    if n is None:
        return list(ids)
    groups: dict[str, list[str]] = {}
    for task_id in ids:
        found = re.search(group_by, task_id) if group_by else None
        groups.setdefault(found.group(1) if found and found.groups() else "", []).append(task_id)
    chosen = [t for members in groups.values()
              for t in sorted(members, key=lambda t: hashlib.sha256(t.encode()).hexdigest())[:n]]
    return sorted(chosen)


# an image from elsewhere, in each engine's words: bwrap builds no root for it, podman/docker cannot pull it
_IMAGE_ELSEWHERE = re.compile(r"no recipe builds the (?:base )?image|is not a supported base|the base image \S+ cannot be pulled"
                              r"|COPY --from|--from=")


def verdict(row: dict) -> str:
    """The coverage's verdict for one of the audit's rows: ``runs`` for ``ok``; an excluded task's
    cause (``needs_container``, ``needs_network``, …, the reason's first word) — ``needs_image`` for an
    image from elsewhere, which each engine words its own way (bwrap: no recipe builds it, podman and
    docker: it cannot be pulled), so the engines' verdicts compare; a broken oracle that
    could not reach a host beyond the registries is ``needs_network``, one with no reference solution
    (no solution file, or one that holds no command) ``no_solution``; else the audit's status."""
    status, reason = row["status"], row.get("reason") or ""
    if status == "ok":
        return "runs"
    if status == "excluded" and _IMAGE_ELSEWHERE.search(reason):
        return "needs_image"  # bwrap: no recipe builds it (needs_container); podman/docker: it cannot be pulled (needs_network)
    if status == "excluded":
        return reason.split(":", 1)[0].strip() or "excluded"
    if status == "broken" and ("no reference solution" in reason  # no file, or one with no command
                               or "has no command (the solution does nothing)" in reason):  # audits before it said so
        return "no_solution"  # no reference solution to play: an oracle that cannot pass anywhere
    if status == "broken" and (row.get("oracle") or {}).get("unreached"):
        return "needs_network"  # the build's, solution's or tests' fetches could not reach their hosts
    return status


def audit_set(tasks_dir: Path, ids: list[str], audit_args: list[str], out_dir: Path) -> list[dict]:
    """``agentrig audit --bench terminal --tasks DIR --task-ids … --json`` plus the given audit
    options — the command a user runs, with nothing else set — and its rows."""
    if not ids:
        return []
    out = out_dir / f"{tasks_dir.name}.audit.json"
    command = [str(Path(sys.executable).with_name("agentrig")), "audit", "--bench", "terminal", "--tasks", str(tasks_dir),
               "--task-ids", ",".join(ids), "--json", *audit_args]
    print("$ " + " ".join(command[1:4] + ["--tasks", str(tasks_dir), "--task-ids", f"<{len(ids)} ids>", "--json",
                                          *audit_args]), flush=True)
    with open(out, "w") as stdout:  # the lines as they come go to stderr: shown here as they are known
        code = subprocess.run(command, stdout=stdout, check=False).returncode
    try:
        doc = json.loads(out.read_text())
    except json.JSONDecodeError:
        raise SystemExit(f"agentrig audit on {tasks_dir} gave no JSON (exit {code}); its output: {out}") from None
    return doc["tasks"]


def measure(args: argparse.Namespace) -> dict:
    started = time.monotonic()
    out_dir = (args.json.parent if args.json else Path(".")) / "coverage-audits"
    out_dir.mkdir(parents=True, exist_ok=True)
    rows: list[dict] = []
    sets = []
    for tasks_dir in map(Path, args.tasks):
        ids = task_dirs(tasks_dir)
        if args.task_ids:
            ids = [t for t in ids if t in set(args.task_ids.split(","))]
        chosen = sample(ids, args.sample, args.group_by)
        absent = absent_files(tasks_dir)
        set_rows = [{"set": tasks_dir.name, "task_id": t, "verdict": "missing_files", "status": "missing_files",
                     "duration_s": 0.0, "reason": "missing_files: the copy lacks " + ", ".join(absent[t])}
                    for t in chosen if t in absent]
        set_started = time.monotonic()
        for row in audit_set(tasks_dir, [t for t in chosen if t not in absent], args.audit_args, out_dir):
            oracle, noop = row.get("oracle") or {}, row.get("noop") or {}
            set_rows.append({"set": tasks_dir.name, "task_id": row["task_id"], "verdict": verdict(row),
                             "status": row["status"], "reason": row["reason"], "duration_s": row.get("duration_s", 0.0),
                             "oracle": outcome(oracle), "noop": outcome(noop),
                             "oracle_detail": (oracle.get("detail") or "")[-1500:] or None,
                             "oracle_failed_tests": oracle.get("failed_tests")})
        rows += set_rows
        sets.append({"set": tasks_dir.name, "path": str(tasks_dir), "tasks": len(ids), "sampled": len(chosen),
                     "wall_s": round(time.monotonic() - set_started, 1), **tally(set_rows)})
    if args.merge:  # the tasks not audited now keep their rows from an earlier run (same settings, said so)
        earlier = json.loads(Path(args.merge).read_text())
        now = {(r["set"], r["task_id"]) for r in rows}
        rows += [{**r, "from": str(args.merge)} for r in earlier["rows"] if (r.get("set"), r["task_id"]) not in now]
    return {"machine": f"{platform.machine()} {os.cpu_count()} cores, Python {platform.python_version()}",
            "load_at_end": round(os.getloadavg()[0], 1), "wall_s": round(time.monotonic() - started, 1),
            "audit_args": args.audit_args, "sample": args.sample, "group_by": args.group_by,
            "ubuntu_archive": os.environ.get("AGENTRIG_UBUNTU_ARCHIVE") or None,
            "merged_from": str(args.merge) if args.merge else None,
            "sets": sets, "total": tally(rows), "rows": sorted(rows, key=lambda r: (r["set"], r["task_id"]))}


def outcome(o: dict) -> str | None:
    if not o:
        return None
    if not o.get("valid", True):
        return "invalid"
    return f"{o.get('reward') or 0:g} ({o.get('failure_mode') or o.get('termination')})"


def tally(rows: list[dict]) -> dict:
    """Run / left out of the share (by cause) / not running (by cause), and the share of the eligible."""
    left_out = Counter(r["verdict"] for r in rows if beyond_registries(r))
    not_running = Counter(r["verdict"] for r in rows if r["verdict"] != "runs" and not beyond_registries(r))
    runs = sum(r["verdict"] == "runs" for r in rows)
    eligible = len(rows) - sum(left_out.values())
    return {"runs": runs, "eligible": eligible, "share": round(runs / eligible, 3) if eligible else None,
            "left_out": dict(left_out), "not_running": dict(not_running),
            "left_out_ids": sorted(r["task_id"] for r in rows if beyond_registries(r)),
            "not_running_ids": sorted(r["task_id"] for r in rows if r["verdict"] != "runs" and not beyond_registries(r))}


def _normalized(row: dict) -> str:
    """A row's verdict, an image from elsewhere named ``needs_image`` also in rows written before it was."""
    if row["verdict"] in ("needs_container", "needs_network") and _IMAGE_ELSEWHERE.search(row.get("reason") or ""):
        return "needs_image"
    return row["verdict"]


def _key(row: dict) -> str:
    return f"{row['set']}/{row['task_id']}" if row.get("set") else row["task_id"]


def compare(first: Path, second: Path) -> int:
    """Per task, the verdicts of two runs (bwrap and podman, say): the tasks whose verdicts differ,
    and how many agree. Exit status 1 when any differs."""
    a, b = ({_key(r): {**r, "verdict": _normalized(r)} for r in json.loads(p.read_text())["rows"]} for p in (first, second))
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
    argv = sys.argv[1:]
    audit_args = argv[argv.index("--") + 1:] if "--" in argv else []
    parser = argparse.ArgumentParser(usage="terminal_coverage.py SET [SET …] [--sample N] [--group-by RE] "
                                           "[--json OUT] [-- AUDIT OPTIONS]")
    parser.add_argument("tasks", nargs="+", help="task sets: folders of Terminal-Bench/Harbor task folders")
    parser.add_argument("--sample", type=int, default=None,
                        help="per set (and per --group-by group) this many tasks, first by SHA-256 of their ids")
    parser.add_argument("--group-by", default=None,
                        help="a regular expression whose first group names a task's group (e.g. 'polyglot_([a-z]+)_': "
                             "every language of aider-polyglot sampled)")
    parser.add_argument("--task-ids", default=None, help="only these ids (comma-separated), in every set")
    parser.add_argument("--json", type=Path, default=None)
    parser.add_argument("--merge", type=Path, default=None,
                        help="an earlier run's --json: tasks not audited now keep their rows from it "
                             "(re-run only the tasks a fix touches; the rows say which run they come from)")
    args = parser.parse_args(argv[:argv.index("--")] if "--" in argv else argv)
    args.audit_args = audit_args
    print(f"machine: {platform.machine()} {os.cpu_count()} cores, load {os.getloadavg()[0]:.1f}; "
          f"agentrig audit {' '.join(audit_args) or '(its defaults)'}; "
          f"ubuntu={os.environ.get('AGENTRIG_UBUNTU_ARCHIVE') or 'debian stand-in'}", flush=True)
    doc = measure(args)
    if args.json:
        args.json.write_text(json.dumps(doc, indent=1))
    for part in [*doc["sets"], {"set": "all sets", **doc["total"], "tasks": None, "sampled": len(doc["rows"])}]:
        share = f"{part['runs']} of {part['eligible']} = {100 * part['share']:.0f}%" if part["eligible"] else "none eligible"
        print(f"\n{part['set']}: {part['sampled']} tasks" + (f" (of {part['tasks']})" if part.get("tasks") else "")
              + f" · run: {share}")
        for label, key in (("not running", "not_running"), ("left out of the share", "left_out")):
            if part[key]:
                print(f"  {label}: " + ", ".join(f"{n} {cause}" for cause, n in sorted(part[key].items())))
    print(f"\n{doc['wall_s']:.0f} s wall, load {doc['load_at_end']}")


def beyond_registries(row: dict) -> bool:
    """A task the acceptance's denominator leaves out, by its verdict and reason: its files are
    incomplete; its build, solution or tests need a host or an image beyond the package registries
    (also a solution asking for package versions or packages only the real base's archive has, e.g.
    Ubuntu's, which only Debian's registry stands in for here); or it has no reference solution (no solution file, or a
    solution script that holds no command), so no engine's oracle can pass it."""
    reason, verdict = row.get("reason") or "", row["verdict"]
    if verdict in ("missing_files", "invalid", "no_solution", "needs_image"):
        return True
    if verdict == "base_substituted" and "archive does not have" in reason:
        return True
    if verdict == "needs_network" and ("could not reach" in reason or "cannot be pulled" in reason):
        return True  # a host, or (container engines) an image from a registry, beyond the registries here
    if verdict == "needs_container" and ("no recipe builds" in reason or "is not a supported base" in reason or "--from" in reason):
        return True
    return verdict == "needs_services" and "(image " in reason


if __name__ == "__main__":
    main()
