"""The podman acceptance run of issue 24 on real Terminal-Bench tasks (or the built-in ones).

Plays ``agentrig.bench.terminal.scripted.killed_run.killed_and_resumed``: an oracle arm and a bash arm (native
tool calls) whose model is the solution endpoint answering a share of requests with faults (429,
500, malformed), ``agentrig run`` SIGKILLed once some trials are stored and a container is up,
then the same command again — and checks that every planned trial is stored valid exactly once, solved, and that
neither runner left a container, task image or volume in podman. Prints the report and
"accepted" or what is wrong (exit 1).

Tasks: fetch Terminal-Bench's tasks at benchmark time, never commit them. In this workplace a
snapshot of its ``tasks/`` folder (94 tasks, July 2025) is a folder of github:camel-ai/camel
(the ``fetch`` tool brings it to /work/.mirror/camel-ai+camel/repo); write the chosen tasks out
with ``perf/terminal_coverage.py extract`` (or ``git cat-file`` per file), then:

    nice .venv/bin/python perf/terminal_podman_acceptance.py --tasks /tmp/tb-tasks \\
        --task-ids hello-world,grid-pattern-transform,... [--trials 1] [--concurrency 2] [--json out.json]

Without ``--tasks``: the built-in tasks (also a test: tests/bench/terminal/test_podman_runs.py).
Needs root, podman with runc, mmdebstrap (the base roots, built once each) and the package
registries (the tasks' own ``RUN apt-get`` / ``pip install`` steps, with the host's settings).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import tempfile
from pathlib import Path

from agentrig.bench.terminal.tasks.taskfile import builtin_tasks_dir, load_tasks
from agentrig.bench.terminal.scripted.killed_run import killed_and_resumed, problems


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tasks", type=Path, help="a directory of task directories (default: the built-in tasks)")
    ap.add_argument("--task-ids", help="comma-separated task ids (default: every task of --tasks)")
    ap.add_argument("--trials", type=int, default=1)
    ap.add_argument("--concurrency", type=int, default=2)
    ap.add_argument("--fault-rate", type=float, default=0.2)
    ap.add_argument("--kill-after", type=int, default=3, help="valid trials stored before the SIGKILL")
    ap.add_argument("--workdir", type=Path, help="where the run goes (default: a temporary directory)")
    ap.add_argument("--json", type=Path, help="write the report here")
    args = ap.parse_args()
    ids = [t for t in (args.task_ids or "").split(",") if t] or None
    tasks, _ = load_tasks(args.tasks or builtin_tasks_dir(), task_ids=ids)
    planned = {f"{arm}/{t.id}#{i}" for arm in ("oracle", "bash") for t in tasks for i in range(args.trials)}
    with tempfile.TemporaryDirectory(prefix="agentrig-podman-acceptance-") as tmp:
        report = killed_and_resumed(args.workdir or Path(tmp), tasks=args.tasks, task_ids=ids, sandbox="podman",
                                    trials=args.trials, concurrency=args.concurrency, fault_rate=args.fault_rate,
                                    kill_after=args.kill_after)
    report["machine"] = {"cpus": os.cpu_count(), "platform": platform.platform(), "load": os.getloadavg()}
    report["problems"] = problems(report, planned)
    if args.json:
        args.json.write_text(json.dumps(report, indent=2, default=str))
    print(f"{len(tasks)} tasks x 2 arms x {args.trials} trial(s): {report['stored_valid']} valid, "
          f"{report['invalid_attempts']} invalid attempts replayed, {report['retries']} channel retries "
          f"({dict(report['retry_causes'])}); killed after {report['valid_at_kill']} valid; "
          f"left at the kill: {report.get('left_at_kill')}; after: {report.get('left_after')}; {report['elapsed_s']} s")
    for problem in report["problems"]:
        print(f"NOT ACCEPTED: {problem}")
    if not report["problems"]:
        print("accepted: every trial valid once and solved, nothing left in podman")
    return 1 if report["problems"] else 0


if __name__ == "__main__":
    sys.exit(main())
