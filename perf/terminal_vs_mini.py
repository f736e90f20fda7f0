"""agentrig next to mini-SWE-agent on real Terminal-Bench tasks, measured as a user pays it.

Three sides play the same trials (each task × ``--trials`` × tool mode) against the same scripted
endpoint (``python -m agentrig.bench.terminal.scripted.solution_endpoint --tasks DIR``, its own
process, not counted; ``--flavor mini`` for mini's side, which changes only the text-mode fence
label and the submit sentinel), each side a command of its own whose **whole process tree** is
counted in a ``cpuacct`` cgroup of its own (cgroup v1, root): its interpreter's start, its imports,
every process it or its helpers start, whoever reaps them, until the command exits.

- **agentrig** — the user's command: ``agentrig run EXP.toml --json`` (the console script beside
  this Python; ``--agentrig`` names another), EXP an experiment a user writes: kind terminal, the
  tasks folder and ids, one ``bash`` arm per tool mode (``native``, ``text``), ``trials = k``,
  ``concurrency = N``, the endpoint in ``[channel]``, everything else agentrig's defaults (bwrap,
  ``root = "image"``, the warm verifier). Counted: start-up, the plan, the sandboxes, shells,
  verifier, store, and the analysis and report it writes at its end. Its **fixed cost** is shown
  apart: the same command again on the finished run (it plays nothing, then summarizes and
  reports again).
- **mini-SWE-agent** — its own Python API, as its docs show: ``DefaultAgent(LitellmModel |
  LitellmTextbasedModel, LocalEnvironment)`` with its own ``default.yaml`` / ``mini_textbased.yaml``
  templates, in N worker processes (``multiprocessing``, spawned) each playing trials one after the
  other, run by mini's own interpreter (``--mini-python``; default: the anchors venv of
  ``tests/anchors.py``, mini-swe-agent 2.4.6, CPython 3.13). The tasks write to ``/app``, so each
  worker has a private mount namespace where the trial's copy of the task's ``/app`` is
  bind-mounted at ``/app`` and the tests at ``/tests`` — the one piece of isolation a local run of
  these tasks cannot do without; commands otherwise run on the host, as LocalEnvironment runs them.
  Then a fresh pytest per trial, as agentrig's cold verifier command runs it: ``python -s -P -m
  pytest -p no:cacheprovider --confcutdir=/tests -c /dev/null --rootdir=. /tests/test_outputs.py
  -rA`` from ``/app`` with ``PYTEST_DISABLE_PLUGIN_AUTOLOAD=1`` (``--pytest-python``: a Python with
  pytest; default this one). Its fixed cost: the same command with no trial (interpreter, imports,
  workers).
- **bare** — no harness, no model: the task's own solution (``bash solution.sh`` or each
  ``solution.yaml`` entry) and the same fresh pytest, in the same per-worker mount namespaces
  (workers in the pytest Python, which import nothing else).

mini's and the bare side's commands get a plain ``PATH`` (``/usr/local/sbin:…:/bin``, as an
image's, with a ``python`` → ``/usr/bin/python3`` first, as TB's images have), not this shell's
(whose pyenv shims would make every ``python3`` a shell script).

**Rounds alternate** the order of the sides (round 1: bare, mini, agentrig; round 2: agentrig, mini,
bare; …): the machine may be shared, so the 1-minute load average is recorded at each side's start
and end and printed beside its figures. Printed per side: CPU s per trial (the whole command ÷
trials), above the bare cost, trials per second (trials ÷ the whole command's wall time, at the
same concurrency), solved, the fixed cost; then the acceptance's two verdicts (agentrig's CPU per
trial above the bare cost at most half of mini's; its trials per second at least 1.2× mini's).
``--json FILE`` keeps every measurement and the machine's facts.

**The tasks.** Terminal-Bench's core ``tasks/`` (94 tasks, July 2025; fetched, never committed —
``perf/terminal_coverage.py``'s docstring gives the ``extract`` command, e.g. to ``/tmp/tb/core``).
mini and the bare side run commands on the host, where only ``/app`` (from the task's build layer,
built once by agentrig's builder on the host's root) is the task's, and **as root**: a task fits
when its build leaves the tools it needs as the host has them and its solution changes nothing of
the host's system. ``DEFAULT_TASKS`` below (15) was chosen by this rule, 2026-12-06: of the core
tasks ``agentrig audit`` runs (docs/terminal.md, "The coverage"), those whose build succeeds on the
host's root (12 do not: their ``pip install`` meets Debian's externally-managed Python, or their
``apt-get`` a package the host lacks), whose solution installs no package and adds no user or service
(the script refuses such a solution: ``HOST_CHANGES``; ``--allow-host-changes`` overrides), and
whose oracle then passes on the bare side on this machine (Debian 12 with gcc, sqlite3, openssl,
git, vim, tmux, jq, bc; ``/usr/bin/python3`` 3.11 without numpy) and in both tool modes on agentrig
and on mini. ``--task-ids`` gives any other selection; the solved counts show a task
that does not fit.

    .venv/bin/python perf/terminal_coverage.py extract /work/.mirror/camel-ai+camel/repo \\
        7955886894c2051654d09f7fc0478382b455cb45:examples/workforce/terminal_bench/tasks /tmp/tb/core
    .venv/bin/python perf/terminal_vs_mini.py --tasks /tmp/tb/core [--task-ids a,b,…] [--trials 2] \\
        [--concurrency 2] [--mode both] [--rounds 2] [--json out.json]

Needs root (bwrap; mount namespaces; cgroups). Builds (agentrig's layers, the host-root layers
mini's ``/app`` comes from) happen before the clock starts.
"""

from __future__ import annotations

import argparse
import ctypes
import json
import multiprocessing as mp
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

# See the docstring for the rule these were chosen by.
DEFAULT_TASKS = ["aimo-airline-departures", "extract-moves-from-video", "extract-safely", "fix-permissions",
                 "git-workflow-hack", "grid-pattern-transform", "hello-world", "intrusion-detection",
                 "openssl-selfsigned-cert", "polyglot-c-py", "processing-pipeline", "recover-obfuscated-files",
                 "sqlite-db-truncate", "tmux-advanced-workflow", "vim-terminal-task"]
KEY = "sk-bench-terminal-vs-mini"
CLONE_NEWNS = 0x00020000
PLAIN_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
HOST_CHANGES = re.compile(r"\b(apt-get|apt|pip3?|uv|npm|useradd|adduser|systemctl|service)\s+(install|add|start|restart|enable|update|-)")
CPUACCT = Path("/sys/fs/cgroup/cpuacct")
MODES = ("native", "text")


# ---------------------------------------------------------------- a process's own cgroup (perf/installed_vs_mini.py uses these)

_CPUACCT: Path | None = None


def _own_cpuacct() -> None:
    """Move this process (and so all it starts) into a cpuacct cgroup of its own, when possible."""
    global _CPUACCT
    if os.geteuid() != 0 or not (CPUACCT / "cpuacct.usage").exists():
        return
    d = CPUACCT / f"agentrig-vs-mini-{os.getpid()}"
    try:
        d.mkdir(exist_ok=True)
        (d / "cgroup.procs").write_text(str(os.getpid()))
        _CPUACCT = d
    except OSError:
        _CPUACCT = None


def _remove_cgroup(path: Path) -> None:
    """Remove a process's cpuacct cgroup once it has exited (helpers leave it only then)."""
    for _ in range(50):
        try:
            path.rmdir()
            return
        except FileNotFoundError:
            return
        except OSError:
            time.sleep(0.1)


def _cpu_s(who: int | None = None) -> float:
    """CPU seconds of everything this process started (its cpuacct cgroup; else itself and its
    waited-for children), or of one rusage target."""
    import resource

    if who is not None:
        u = resource.getrusage(who)
        return u.ru_utime + u.ru_stime
    if _CPUACCT is not None:
        return int((_CPUACCT / "cpuacct.usage").read_text()) / 1e9
    return _cpu_s(resource.RUSAGE_SELF) + _cpu_s(resource.RUSAGE_CHILDREN)


# ---------------------------------------------------------------- mini's and the bare side (no agentrig import)

def _mount(*args: str) -> None:
    subprocess.run(["mount", *args], check=True)


def _tests_pass(pytest_python: str) -> tuple[bool, str]:
    """The task's tests as agentrig's cold verifier command runs them (a fresh pytest from /app); the
    verdict, and the output's end when they failed."""
    verdict = subprocess.run([pytest_python, "-s", "-P", "-m", "pytest", "-p", "no:cacheprovider",
                              "--confcutdir=/tests", "-c", "/dev/null", "--rootdir=.", "/tests/test_outputs.py",
                              "-rA"], cwd="/app", capture_output=True, text=True, timeout=300,
                             env={**os.environ, "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"})
    return verdict.returncode == 0, "" if verdict.returncode == 0 else (verdict.stdout + verdict.stderr)[-1500:]


def _worker(jobs, results, kind: str, base_url: str, pytest_python: str) -> None:
    libc = ctypes.CDLL(None, use_errno=True)  # first, while the process has one thread
    if libc.unshare(CLONE_NEWNS) != 0:
        raise OSError(ctypes.get_errno(), "unshare(CLONE_NEWNS) failed: run as root")
    _mount("--make-rprivate", "/")
    if kind == "mini":
        import logging

        import litellm
        import yaml
        from minisweagent.agents.default import DefaultAgent
        from minisweagent.environments.local import LocalEnvironment
        from minisweagent.models.litellm_model import LitellmModel
        from minisweagent.models.litellm_textbased_model import LitellmTextbasedModel

        import minisweagent

        logging.disable(logging.WARNING)
        litellm.suppress_debug_info = True  # else a "Provider List" banner per call (no price for model "solution")
        cfgs = {m: yaml.safe_load((Path(minisweagent.__file__).parent / "config" / name).read_text())
                for m, name in (("native", "default.yaml"), ("text", "mini_textbased.yaml"))}
    while True:
        job = jobs.get()
        if job is None:
            break
        started = time.perf_counter()
        trial = Path(tempfile.mkdtemp(dir=job["scratch"]))
        shutil.copytree(job["app"], trial / "app", symlinks=True)
        _mount("--bind", str(trial / "app"), "/app")
        _mount("--bind", "-o", "ro", job["tests"], "/tests")
        try:
            if kind == "bare":  # the task's own commands, as a shell would run them, then the same tests
                for argv in job["solution"]:
                    subprocess.run(argv, cwd="/app", stdin=subprocess.DEVNULL, capture_output=True, timeout=600,
                                   env={"PATH": os.environ["PATH"], "HOME": "/root", "PAGER": "cat", "LANG": "C.UTF-8"})
                status, calls = "bare", 0
            else:
                cfg = cfgs[job["mode"]]
                agent_cfg = {**cfg["agent"], "step_limit": 200, "cost_limit": 0}
                agent_cfg.pop("mode", None)  # the interactive agent's setting
                model_cls = LitellmModel if job["mode"] == "native" else LitellmTextbasedModel
                model = model_cls(model_name="openai/solution", cost_tracking="ignore_errors",
                                  model_kwargs={**cfg["model"].get("model_kwargs", {}), "api_base": base_url,
                                                "api_key": KEY, "extra_headers": {"X-Agentrig-Task": job["task"],
                                                                                  "X-Agentrig-Role": "agent"}},
                                  **{k: v for k, v in cfg["model"].items() if k != "model_kwargs"})
                env = LocalEnvironment(cwd="/app", timeout=120, env=cfg["environment"]["env"])
                agent = DefaultAgent(model, env, **agent_cfg)
                info = agent.run(job["instruction"])
                status, calls = info.get("exit_status"), agent.n_calls
            agent_s = time.perf_counter() - started
            solved, tail = _tests_pass(pytest_python)
            results.put({"task": job["task"], "mode": job["mode"], "status": str(status), "calls": calls,
                         "solved": solved, "tail": tail, "agent_s": agent_s, "seconds": time.perf_counter() - started})
        finally:
            subprocess.run(["umount", "/tests"], check=False)
            subprocess.run(["umount", "/app"], check=False)
            shutil.rmtree(trial, ignore_errors=True)


def side(args) -> None:
    """One side's command (mini or bare): play the jobs of ``--jobs`` in N workers, print a JSON line."""
    os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"  # litellm: no download of its price table at import
    spec = json.loads(Path(args.jobs).read_text())
    ctx = mp.get_context("spawn")
    jobs, results = ctx.Queue(), ctx.Queue()
    for job in spec["jobs"]:
        jobs.put(job)
    workers = [ctx.Process(target=_worker, args=(jobs, results, args.side, spec["base_url"], spec["pytest_python"]))
               for _ in range(spec["concurrency"])]
    for _ in workers:
        jobs.put(None)
    for w in workers:
        w.start()
    done = [results.get() for _ in spec["jobs"]]
    for w in workers:
        w.join()
    print(json.dumps({"trials": len(done), "solved": sum(d["solved"] for d in done),
                      "unsolved": sorted(f"{d['task']} ({d['mode']})" for d in done if not d["solved"]),
                      "statuses": sorted({d["status"] for d in done}),
                      "model_calls": sum(d["calls"] for d in done),
                      "trial_s": sum(d["seconds"] for d in done) / max(1, len(done)),
                      "verifier_s": sum(d["seconds"] - d["agent_s"] for d in done) / max(1, len(done)),
                      "failures": {f"{d['task']} ({d['mode']})": d["tail"] for d in done if not d["solved"]},
                      "task_s": {d["task"]: round(max(e["seconds"] for e in done if e["task"] == d["task"]), 2)
                                 for d in done}}))


# ---------------------------------------------------------------- the driver

def measured(cmd: list[str], env: dict, label: str, cwd: str | None = None) -> dict:
    """Run one command in a cpuacct cgroup of its own; its whole tree's CPU, its wall time, the load."""
    cg = CPUACCT / f"agentrig-bench-{label}-{os.getpid()}-{time.monotonic_ns()}"
    cg.mkdir()
    load0 = os.getloadavg()[0]
    started = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=cwd,
                            preexec_fn=lambda: (cg / "cgroup.procs").write_text(str(os.getpid())))
    stdout, stderr = proc.communicate(timeout=3600)
    wall = time.perf_counter() - started
    left = [p for p in (cg / "cgroup.procs").read_text().split()]
    for _ in range(100):  # processes the command left behind still count, until they are gone
        if not left:
            break
        time.sleep(0.1)
        left = (cg / "cgroup.procs").read_text().split()
    cpu = int((cg / "cpuacct.usage").read_text()) / 1e9
    stat = dict(line.split() for line in (cg / "cpuacct.stat").read_text().splitlines())
    hz = os.sysconf("SC_CLK_TCK")
    try:
        cg.rmdir()
    except OSError:
        pass
    if proc.returncode != 0:
        raise SystemExit(f"{label}: {' '.join(cmd)} exited {proc.returncode}:\n{stderr[-4000:]}")
    return {"cpu_s": cpu, "user_s": int(stat["user"]) / hz, "system_s": int(stat["system"]) / hz, "wall_s": wall,
            "load": [round(load0, 2), round(os.getloadavg()[0], 2)], "left_processes": len(left),
            "stdout": stdout, "stderr": stderr}


def start_endpoint(flavor: str, tasks: Path) -> tuple[subprocess.Popen, str]:
    cmd = [sys.executable, "-m", "agentrig.bench.terminal.scripted.solution_endpoint", "--no-auth", "--flavor", flavor,
           "--tasks", str(tasks)]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    return proc, proc.stdout.readline().strip()


def experiment_toml(tasks: Path, task_ids: list[str], modes: list[str], trials: int, concurrency: int,
                    base_url: str, run_dir: Path) -> str:
    """The experiment a user writes for this comparison (agentrig's defaults for everything else)."""
    arms = "".join(f'\n[[arms]]\nname = "{m}"\nagent = {{ kind = "bash", tool_mode = "{m}" }}\n' for m in modes)
    return (f'name = "vs-mini"\n\n[benchmark]\nkind = "terminal"\ntasks = "{tasks}"\ntask_ids = {json.dumps(task_ids)}\n\n'
            f'[run]\ntrials = {trials}\nconcurrency = {concurrency}\ndir = "{run_dir}"\n\n'
            f'[channel]\nbase_url = "{base_url}"\napi_key_env = "BENCH_KEY"\nmodel = "solution"\n{arms}')


def prepare(tasks: Path, task_ids: list[str], allow_host_changes: bool = False) -> dict[str, dict]:
    """Each task's instruction, solution commands, tests and /app (its layer built on the host's root)."""
    import asyncio

    from agentrig.bench.terminal.sandbox import SandboxSettings, build_plan
    from agentrig.bench.terminal.sandbox.build import ensure_layer
    from agentrig.bench.terminal.tasks.taskfile import load_tasks

    loaded, invalid = load_tasks(tasks, task_ids=task_ids)
    if invalid or len(loaded) != len(task_ids):
        raise SystemExit(f"tasks not loaded from {tasks}: {invalid or sorted(set(task_ids) - {t.id for t in loaded})}")
    settings = SandboxSettings(root="host")
    out = {}
    for t in loaded:
        try:
            layer = asyncio.run(ensure_layer(t, build_plan(t), settings))
        except Exception as exc:  # noqa: BLE001 — a build the host's root cannot do: the task does not fit
            print(f"  left out: {t.id}: its build on the host's root failed ({str(exc).splitlines()[0][:120]})",
                  flush=True)
            continue
        app = layer.path / "top" / layer.workdir.lstrip("/")
        solution = ([["bash", str(t.solution_script)]] if t.solution_script is not None
                    else [["bash", "-c", step.command] for step in t.solution or []])
        text = (t.solution_script.read_text(errors="replace") if t.solution_script is not None
                else "\n".join(step.command for step in t.solution or []))
        if HOST_CHANGES.search(text) and not allow_host_changes:
            print(f"  left out: {t.id}: its solution changes the host's system ({HOST_CHANGES.search(text).group(0)!r}), "
                  "and mini and the bare side run it on the host as root (--allow-host-changes to play it anyway)",
                  flush=True)
            continue
        out[t.id] = {"task": t.id, "instruction": t.instruction, "app": str(app), "tests": str(t.tests_dir),
                     "solution": solution}
    return out


def play(which: str, ctx: dict, rnd: int) -> dict:
    """One side's whole command, measured; and its fixed cost (the same command playing nothing)."""
    work: Path = ctx["work"] / f"{which}-{rnd}"
    work.mkdir()
    n = len(ctx["task_ids"]) * ctx["trials"] * len(ctx["modes"])
    if which == "agentrig":
        exp = work / "exp.toml"
        exp.write_text(experiment_toml(ctx["tasks"], ctx["task_ids"], ctx["modes"], ctx["trials"], ctx["concurrency"],
                                       ctx["urls"]["agentrig"], work / "run"))
        cmd = [*ctx["agentrig"], "run", str(exp), "--json"]
        env = {**os.environ, "BENCH_KEY": KEY}
        m = measured(cmd, env, "agentrig", cwd=str(work))
        doc = json.loads(m.pop("stdout"))
        arms = doc["arms"]
        m["trials"] = sum(a["valid"] for a in arms.values())
        m["invalid"] = sum(a["invalid"] for a in arms.values())
        m["solved"] = sum(round((a["mean_reward"] or 0) * a["valid"]) for a in arms.values())
        m["per_arm"] = {k: {"valid": a["valid"], "mean_reward": a["mean_reward"]} for k, a in arms.items()}
        m.update(stored(work / "run"))
        fixed = measured(cmd, env, "agentrig-fixed", cwd=str(work))
        fixed.pop("stdout")
    else:
        def spec(jobs: list) -> Path:
            path = work / f"jobs-{len(jobs)}.json"
            path.write_text(json.dumps({"jobs": jobs, "concurrency": ctx["concurrency"], "pytest_python": sys.executable,
                                        "base_url": ctx["urls"]["mini"]}))
            return path

        (work / "scratch").mkdir()
        jobs = [{**ctx["prepared"][t], "mode": mode, "scratch": str(work / "scratch")}
                for _ in range(ctx["trials"]) for mode in ctx["modes"] for t in ctx["task_ids"]]
        python = ctx["mini_python"] if which == "mini" else sys.executable
        env = {"PATH": ctx["path"], "HOME": os.environ.get("HOME", "/root"), "LANG": "C.UTF-8"}
        cmd = [python, str(Path(__file__).resolve()), "--side", which, "--jobs"]
        m = measured([*cmd, str(spec(jobs))], env, which)
        m.update(json.loads(m.pop("stdout").strip().splitlines()[-1]))
        fixed = measured([*cmd, str(spec([]))], env, f"{which}-fixed")
        fixed.pop("stdout")
    m.pop("stderr", None)
    fixed.pop("stderr", None)
    m["fixed"] = fixed
    m["expected"] = n
    shutil.rmtree(work, ignore_errors=True)
    return m


def stored(run_dir: Path) -> dict:
    """From the run's records: the unsolved trials, and where a trial's wall time went (means)."""
    from agentrig.store.rundir import open_run_dir

    store, _ = open_run_dir(run_dir)
    recs = list(store.records(valid=True))
    n = max(1, len(recs))
    events = [e for r in recs for e in r.trajectory.events]
    return {"unsolved": sorted(f"{r.key.task_id} ({r.key.arm})" for r in recs if r.verdict.reward < 1),
            "trial_s": sum(r.duration_s for r in recs) / n,
            "verifier_s": sum(e.data.get("duration_s", 0) for e in events if e.plugin == "verifier") / n,
            "commands_s": sum(e.data.get("duration_s", 0) for e in events if e.kind == "command") / n,
            "model_s": sum(c.latency_s or 0 for r in recs for c in r.trajectory.model_calls) / n,
            "timed_out": sorted(f"{r.key.task_id} ({r.key.arm}, {e.plugin} {e.kind}, {r.duration_s:.0f} s)" for r in recs
                                for e in r.trajectory.events if e.data.get("timed_out")),
            "task_s": {r.key.task_id: round(max(x.duration_s for x in recs if x.key.task_id == r.key.task_id), 2)
                       for r in recs}}


def verdicts(agentrig_over: float, mini_over: float, rate_ratio: float) -> list[str]:
    if mini_over <= 0:
        cpu = (f"CPU above bare: agentrig {agentrig_over:+.3f} s, mini {mini_over:+.3f} s (mini not above the bare cost): "
               + ("MET (agentrig not above it either)" if agentrig_over <= 0 else "NOT MET"))
    else:
        ratio = agentrig_over / mini_over
        cpu = (f"CPU above bare: agentrig {agentrig_over:+.3f} s = {ratio:.2f} of mini's {mini_over:+.3f} s "
               f"(target ≤ 0.50): {'MET' if ratio <= 0.5 else 'NOT MET'}")
    rate = f"trials/s: agentrig {rate_ratio:.2f}× mini's (target ≥ 1.20×): {'MET' if rate_ratio >= 1.2 else 'NOT MET'}"
    return [cpu, rate]


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


def _compile_agentrig() -> None:
    """Bytecode for agentrig's modules, as a pip install leaves it (mini's venv has pip's): with
    PYTHONDONTWRITEBYTECODE=1 an uncompiled editable tree would be compiled anew at every start of
    ``agentrig run`` — a cost no installed user pays. ``compileall`` into ``__pycache__`` (git ignores it)."""
    import agentrig as package

    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPYCACHEPREFIX", "PYTHONDONTWRITEBYTECODE")}
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(Path(package.__file__).parent)], env=env,
                   check=True, stdout=subprocess.DEVNULL)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--tasks", help="Terminal-Bench's tasks/ folder (see the docstring: fetched, never committed)")
    ap.add_argument("--task-ids", help=f"comma-separated task ids (default: the {len(DEFAULT_TASKS)} of DEFAULT_TASKS)")
    ap.add_argument("--trials", type=int, default=2, help="trials per task and tool mode (k)")
    ap.add_argument("--concurrency", type=int, default=2)
    ap.add_argument("--mode", choices=["native", "text", "both"], default="both")
    ap.add_argument("--rounds", type=int, default=2, help="rounds, the order of the sides alternated")
    ap.add_argument("--sides", default="bare,mini,agentrig", help="the sides, in round 1's order")
    ap.add_argument("--mini-python", help="a Python with mini-swe-agent (default: tests/anchors.py's venv)")
    ap.add_argument("--agentrig", help="the agentrig command (default: the console script beside this Python)")
    ap.add_argument("--allow-host-changes", action="store_true",
                    help="play tasks whose solution installs packages or starts services (on the host, as root!)")
    ap.add_argument("--json", dest="json_out", help="write every measurement to this file")
    ap.add_argument("--side", choices=["mini", "bare"], help=argparse.SUPPRESS)
    ap.add_argument("--jobs", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.side:
        return side(args)
    if not args.tasks:
        raise SystemExit("--tasks DIR: Terminal-Bench's tasks/ folder (the docstring says how to get it)")
    if os.geteuid() != 0 or not (CPUACCT / "cpuacct.usage").exists():
        raise SystemExit("needs root and a cgroup v1 cpuacct hierarchy at /sys/fs/cgroup/cpuacct")
    tasks = Path(args.tasks).resolve()
    task_ids = args.task_ids.split(",") if args.task_ids else list(DEFAULT_TASKS)
    modes = list(MODES) if args.mode == "both" else [args.mode]
    sides = args.sides.split(",")
    mini_python = args.mini_python
    if mini_python is None and "mini" in sides:
        sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
        from tests.anchors import python_of

        mini_python = str(python_of())
    if "mini" in sides:
        probe = subprocess.run([mini_python, "-c", "import minisweagent; print(minisweagent.__version__)"],
                               capture_output=True, text=True, env={"PATH": PLAIN_PATH, "HOME": os.environ.get("HOME", "/root")})
        if probe.returncode != 0:
            raise SystemExit(f"--mini-python {mini_python}: no mini-swe-agent ({probe.stderr.strip()[-300:]})")
        mini_version = probe.stdout.strip().splitlines()[-1]
    else:
        mini_version = None
    agentrig = args.agentrig.split() if args.agentrig else [str(Path(sys.executable).parent / "agentrig")]
    _compile_agentrig()
    facts = {"cpu": _cpu_model(), "cores": os.cpu_count(), "python": platform.python_version(),
             "system": f"{platform.system()} {platform.release()}", "mini_swe_agent": mini_version,
             "mini_python": mini_python, "agentrig": " ".join(agentrig),
             "started_utc": time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime())}
    print(f"machine: {facts['cores']} cores ({facts['cpu']}), Python {facts['python']}, {facts['system']}; "
          f"mini-swe-agent {mini_version}; load {os.getloadavg()[0]:.2f}; {facts['started_utc']} UTC", flush=True)
    print(f"{len(task_ids)} tasks × {args.trials} trials × {len(modes)} mode(s), concurrency {args.concurrency}, "
          f"{args.rounds} round(s); preparing (builds, not timed) …", flush=True)
    prepared = prepare(tasks, task_ids, args.allow_host_changes)
    task_ids = [t for t in task_ids if t in prepared]
    work = Path(tempfile.mkdtemp(prefix="agentrig-vs-mini-"))
    servers = {f: start_endpoint(f, tasks) for f in ("agentrig", "mini")}
    (work / "bin").mkdir()  # `python`, as TB's images have it (the host has only python3)
    (work / "bin" / "python").symlink_to("/usr/bin/python3")
    ctx = {"path": f"{work / 'bin'}:{PLAIN_PATH}", "work": work, "tasks": tasks, "task_ids": task_ids, "modes": modes, "trials": args.trials,
           "concurrency": args.concurrency, "urls": {f: s[1] for f, s in servers.items()}, "prepared": prepared,
           "mini_python": mini_python, "agentrig": agentrig}
    rows: list[dict] = []
    try:
        if "agentrig" in sides:  # agentrig's layers for these tasks (its experiment's build check), not timed
            warm = work / "warm"
            warm.mkdir()
            exp = warm / "exp.toml"
            exp.write_text(experiment_toml(tasks, task_ids, modes[:1], 1, args.concurrency, ctx["urls"]["agentrig"],
                                           warm / "run"))
            from agentrig.run import experiment

            experiment.load(exp)  # builds what the run will use
        for rnd in range(1, args.rounds + 1):
            order = sides if rnd % 2 else sides[::-1]
            for which in order:
                m = play(which, ctx, rnd)
                m.update(side=which, round=rnd)
                rows.append(m)
                print(f"  round {rnd} {which:<9} {m['trials']:>3} trials ({m['solved']} solved) "
                      f"{m['cpu_s']:7.2f} CPU s {m['wall_s']:7.2f} s wall, load {m['load'][0]:.2f}→{m['load'][1]:.2f}; "
                      f"fixed {m['fixed']['cpu_s']:.2f} CPU s {m['fixed']['wall_s']:.2f} s", flush=True)
    finally:
        for proc, _ in servers.values():
            proc.terminate()
            proc.wait()
        shutil.rmtree(work, ignore_errors=True)
    report(rows, sides, args, facts, task_ids, modes)


def report(rows: list[dict], sides: list[str], args, facts: dict, task_ids: list[str], modes: list[str]) -> None:
    def per_side(which: str) -> dict:
        rs = [r for r in rows if r["side"] == which]
        trials = sum(r["trials"] for r in rs)
        cpu, wall = sum(r["cpu_s"] for r in rs), sum(r["wall_s"] for r in rs)
        fixed_cpu = sum(r["fixed"]["cpu_s"] for r in rs) / len(rs)
        fixed_wall = sum(r["fixed"]["wall_s"] for r in rs) / len(rs)
        return {"trials": trials, "solved": sum(r["solved"] for r in rs), "expected": sum(r["expected"] for r in rs),
                "cpu_per_trial": cpu / max(1, trials), "trials_per_s": trials / wall if wall else 0.0,
                "fixed_cpu_s": fixed_cpu, "fixed_wall_s": fixed_wall,
                "per_trial_less_fixed": (cpu - fixed_cpu * len(rs)) / max(1, trials),
                "rounds": [{"round": r["round"], "cpu_per_trial": r["cpu_s"] / max(1, r["trials"]),
                            "trials_per_s": r["trials"] / r["wall_s"], "load": r["load"],
                            "fixed_load": r["fixed"]["load"]} for r in rs]}

    summary = {s: per_side(s) for s in sides}
    base = summary["bare"]["cpu_per_trial"] if "bare" in summary else None
    print(f"\n{len(task_ids)} tasks × {args.trials} trials × {len(modes)} mode(s) = "
          f"{len(task_ids) * args.trials * len(modes)} trials per side per round, concurrency {args.concurrency}; "
          f"each side's whole command in a cpuacct cgroup of its own")
    head = (f"{'side':<10}{'solved':>9}{'CPU s/trial':>13}{'above bare':>12}{'trials/s':>10}"
            f"{'fixed CPU s':>13}{'fixed wall s':>14}{'per trial less fixed':>22}   rounds (CPU s/trial, trials/s, load start→end)")
    print(head + "\n" + "-" * len(head))
    for s in sides:
        x = summary[s]
        above = x["cpu_per_trial"] - base if base is not None else float("nan")
        x["above_bare"] = above
        rounds = "; ".join(f"r{r['round']} {r['cpu_per_trial']:.3f}, {r['trials_per_s']:.2f}, "
                           f"{r['load'][0]:.1f}→{r['load'][1]:.1f}" for r in x["rounds"])
        print(f"{s:<10}{x['solved']:>4}/{x['expected']:<4}{x['cpu_per_trial']:>13.3f}{above:>+12.3f}{x['trials_per_s']:>10.2f}"
              f"{x['fixed_cpu_s']:>13.2f}{x['fixed_wall_s']:>14.2f}{x['per_trial_less_fixed']:>22.3f}   {rounds}")
    print("\nper trial (means over the rounds; seconds of wall at this concurrency) and the trials not solved:")
    for s in sides:
        rs = [r for r in rows if r["side"] == s]
        parts = "  ".join(f"{k[:-2]} {sum(r.get(k, 0) for r in rs) / len(rs):.2f}"
                          for k in ("trial_s", "verifier_s", "commands_s", "model_s") if k in rs[0])
        slow = max(((v, t) for r in rs for t, v in r.get("task_s", {}).items()), default=None)
        print(f"  {s:<9} {parts}; slowest {slow[1]} {slow[0]:.1f} s" if slow else f"  {s:<9} {parts}",
              f"; unsolved: {sorted({u for r in rs for u in r.get('unsolved', [])}) or 'none'}")
    lines = []
    if {"agentrig", "mini", "bare"} <= set(sides):
        lines = verdicts(summary["agentrig"]["above_bare"], summary["mini"]["above_bare"],
                         summary["agentrig"]["trials_per_s"] / summary["mini"]["trials_per_s"])
        print("\nacceptance:\n  " + "\n  ".join(lines))
    if args.json_out:
        Path(args.json_out).write_text(json.dumps({"facts": facts, "task_ids": task_ids, "modes": modes,
                                                   "trials": args.trials, "concurrency": args.concurrency,
                                                   "summary": summary, "verdicts": lines, "rows": rows}, indent=2))


if __name__ == "__main__":
    main()
