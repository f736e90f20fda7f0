"""The acceptance run of issue 32: installed agents × sandboxes × tasks, with faults and an outage.

For each sandbox (``--sandboxes``, default bwrap, podman, docker), one ``agentrig run`` of
mini-swe-agent, Codex CLI and Claude Code (``--agents``; ``command`` adds the example command
agent) on the built-in tasks and real Terminal-Bench tasks (``--tb-tasks DIR --tb-ids …``), the
solution endpoint as their model answering 20 % of requests with a fault (429, 500, a malformed
body) and killed once some trials are stored, restarted on the same port 20 s later
(``agentrig.bench.terminal.scripted.installed_run.play``). Per (agent, sandbox) it prints the trials valid (each
exactly once) and solved, the channel's retries for faults against the faults the endpoint
injected (its ``--log``), the calls recorded against the completions the endpoint answered (count
and usage), what the agent saw of the faults, and "accepted" or what is wrong (exit 1).

The built-in tasks leave out ``shell-session-state``: its checks run in the trial's own persistent
shell, which an installed agent never types into (it runs its own shells), so no installed agent
can pass it. Codex plays ``stale-lock`` but is not required to solve it: its exec policy refuses
the ``rm -f`` of the task's scripted solution ("rm -f style commands are not permitted").

Terminal-Bench's tasks are fetched at benchmark time, never committed: ``perf/terminal_coverage.py``'s
docstring says how to extract its ``tasks/`` folder (94 tasks, July 2025). The ten default ids are
tasks whose oracle passes on bwrap and podman (docs/terminal.md) and whose build is quick:

    nice .venv/bin/python perf/installed_agents.py --tb-tasks /tmp/tb-tasks \\
        [--sandboxes bwrap,podman] [--concurrency 2] [--outage-s 20] [--json out.json]

Needs root (bwrap), podman with runc, dockerd for docker, mmdebstrap (the base roots) and the
package registries (the tasks' own ``RUN apt-get`` / ``pip install``); the agents' tool roots are
installed on demand (``agentrig agents install``).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import tempfile
import time
from pathlib import Path

from agentrig.bench.terminal.tasks.taskfile import builtin_tasks_dir, load_tasks
from agentrig.bench.terminal.scripted.installed_run import AGENTS, play, problems

TB_IDS = ("hello-world,grid-pattern-transform,openssl-selfsigned-cert,sqlite-db-truncate,heterogeneous-dates,"
          "fix-permissions,organization-json-generator,processing-pipeline,polyglot-c-py,recover-obfuscated-files")
NOT_FOR_INSTALLED = {"shell-session-state"}  # checked in the trial's own shell, which installed agents never use
# played, but not required to be solved: Codex 0.169's exec policy refuses `rm -f` ("rm -f style
# commands are not permitted"), and stale-lock's scripted solution removes the stale lock that way
REFUSED = {"codex": {"stale-lock"}}


def task_dir(workdir: Path, tb_tasks: Path | None, tb_ids: list[str]) -> tuple[Path, list[str]]:
    """One directory of the chosen tasks (links to the built-in ones and to the fetched ones)."""
    out = workdir / "tasks"
    out.mkdir(parents=True, exist_ok=True)
    builtin, _ = load_tasks(builtin_tasks_dir())
    ids = []
    for t in builtin:
        if t.id not in NOT_FOR_INSTALLED:
            (out / t.id).symlink_to(t.path)
            ids.append(t.id)
    for tid in tb_ids if tb_tasks else []:
        if not (tb_tasks / tid).is_dir():
            raise SystemExit(f"--tb-ids: {tid} is not a task of {tb_tasks}")
        (out / tid).symlink_to((tb_tasks / tid).resolve())
        ids.append(tid)
    return out, ids


def line(arm: str, sandbox: str, a: dict, n: int) -> str:
    return (f"{arm:15} {sandbox:7} valid {a['trials']}/{n} solved {a['solved']}/{n} · retries {a['fault_retries']} "
            f"vs faults {a['faults_injected']} (+{a['outage_retries']} in the outage) · calls {a['calls_answered']} vs "
            f"log {a['log_answered']} · tokens {a['usage'][0]}+{a['usage'][1]} vs log {a['log_usage'][0]}+{a['log_usage'][1]}"
            f" · agent saw {'nothing' if not a['agent_saw_fault'] else len(a['agent_saw_fault'])}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--agents", default=",".join(AGENTS), help="comma-separated agent kinds (and/or command)")
    ap.add_argument("--sandboxes", default="bwrap,podman,docker")
    ap.add_argument("--tb-tasks", type=Path, help="Terminal-Bench's tasks/ folder, fetched (see the docstring)")
    ap.add_argument("--tb-ids", default=TB_IDS, help="comma-separated Terminal-Bench task ids")
    ap.add_argument("--builtin-only", action="store_true", help="no Terminal-Bench tasks")
    ap.add_argument("--concurrency", type=int, default=2)
    ap.add_argument("--fault-rate", type=float, default=0.2)
    ap.add_argument("--outage-s", type=float, default=20.0, help="how long the endpoint is down mid-run (0: none)")
    ap.add_argument("--outage-after", type=int, default=4, help="valid trials stored before the endpoint is killed")
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--workdir", type=Path, help="where the runs go (default: a temporary directory)")
    ap.add_argument("--json", type=Path, help="write the report here")
    args = ap.parse_args()
    agents = tuple(a for a in args.agents.split(",") if a)
    tb_ids = [] if args.builtin_only else [t for t in args.tb_ids.split(",") if t]
    if tb_ids and args.tb_tasks is None:
        ap.error("--tb-tasks DIR is needed for the Terminal-Bench tasks (or --builtin-only)")
    report: dict = {"machine": {"cpus": os.cpu_count(), "platform": platform.platform(), "load_start": os.getloadavg()},
                    "agents": list(agents), "fault_rate": args.fault_rate, "outage_s": args.outage_s, "runs": {}}
    all_problems: list[str] = []
    started = time.time()
    with tempfile.TemporaryDirectory(prefix="agentrig-installed-acceptance-") as tmp:
        workdir = args.workdir or Path(tmp)
        tasks, ids = task_dir(workdir / "t", args.tb_tasks, tb_ids)
        report["tasks"] = ids
        planned = {a: {f"{t}#0" for t in ids if t not in REFUSED.get(a, ())} for a in agents}
        for sandbox in [s for s in args.sandboxes.split(",") if s]:
            print(f"== {sandbox}: {len(agents)} agents x {len(ids)} tasks", flush=True)
            run = play(workdir / sandbox, agents=agents, sandbox=sandbox, tasks=tasks, concurrency=args.concurrency,
                       fault_rate=args.fault_rate, seed=args.seed, outage_s=args.outage_s,
                       outage_after=args.outage_after, name=f"installed-{sandbox}",
                       sandbox_extra='build_network = "host-settings"')
            found = problems(run, planned)
            run["problems"] = found
            report["runs"][sandbox] = run
            for arm, a in run["arms"].items():
                print(line(arm, sandbox, a, len(ids)), flush=True)
            print(f"   {sandbox}: {run['elapsed_s']} s, endpoint down {run['outage'].get('down_s')} s after "
                  f"{run['outage'].get('valid_at_kill')} valid trials; outages recorded: "
                  f"{[(o.get('duration_s'), o.get('calls_held'), o.get('resumed')) for o in run['outages']]}", flush=True)
            for p in found:
                print(f"   NOT ACCEPTED ({sandbox}): {p}", flush=True)
            all_problems += [f"{sandbox}: {p}" for p in found]
    report["elapsed_s"] = round(time.time() - started, 1)
    report["machine"]["load_end"] = os.getloadavg()
    report["problems"] = all_problems
    if args.json:
        args.json.write_text(json.dumps(report, indent=2, default=str))
    print("accepted: every trial valid once and solved, retries = faults injected, calls = the endpoint's log, "
          "no fault seen by an agent" if not all_problems else f"NOT ACCEPTED: {len(all_problems)} problem(s)")
    return 1 if all_problems else 0


if __name__ == "__main__":
    sys.exit(main())
