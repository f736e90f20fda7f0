"""agentrig's bash agent next to mini-SWE-agent, on the same built-in terminal tasks and endpoint.

mini-SWE-agent is not an agentrig dependency; install it into the venv for this benchmark only:

    .venv/bin/python -m pip install mini-swe-agent      # measured with 2.4.6
    .venv/bin/python perf/terminal_vs_mini.py [--concurrency 4] [--trials 2] [--mode native|text|both]
    # real tasks (Terminal-Bench's tasks/, fetched at benchmark time, never committed):
    .venv/bin/python perf/terminal_vs_mini.py --tasks /tmp/tb-tasks --task-ids a,b,… --mode native

With ``--tasks`` the same run also measures the **bare cost** of each trial — the task's own
solution (``bash solution.sh``, or each ``solution.yaml`` entry) and its tests (the cold pytest
below), in the same per-worker mount namespaces, with no harness and no model — and agentrig once
more with ``warm_verifier = false`` (a fresh pytest per verifier, as the bare side runs the tests),
and prints each harness's CPU per trial above that bare cost (the target: agentrig's at most a
third of mini's). Tasks whose Dockerfile changes more than ``/app`` (``RUN apt-get``/``pip
install``) do not fit: mini and the bare side run commands on the host, where only ``/app`` is the
task's; choose tasks whose build leaves their tools as the host has them.

Both sides play the same built-in tasks against the same scripted local endpoint, started as its
own process (``python -m agentrig.bench.terminal.scripted.solution_endpoint``; ``--flavor mini`` for mini, which
changes only the text-mode fence label and the submit sentinel to mini's), and every trial is
checked by the task's tests (``tests/test_outputs.py``).

- agentrig: an experiment of kind terminal with a ``bash`` arm, played by the runner's executor
  exactly as ``agentrig run`` plays it: a bwrap sandbox per trial on the task's cached layer, the
  agent phase through the channel, the verifier, one store transaction per trial;
  ``concurrency = N`` in one process.
- mini-SWE-agent: its Python API as its docs show — ``DefaultAgent(LitellmModel(...),
  LocalEnvironment(...))`` with its own ``default.yaml`` templates (``LitellmTextbasedModel`` and
  ``mini_textbased.yaml`` in text mode) — in N worker processes, each playing trials one after
  the other (its batch mode runs N threads; the tasks write to ``/app``, so each worker is a
  process with its own mount namespace where the trial's copy of the task's files is
  bind-mounted at ``/app`` and the tests at ``/tests``: the one piece of isolation a local run of
  these tasks cannot do without; commands otherwise run on the host, as LocalEnvironment runs
  them). Then pytest on the task's tests as agentrig's *cold* verifier command runs it: a fresh
  ``python -s -P -m pytest -p no:cacheprovider --confcutdir=/tests -c /dev/null --rootdir=.
  /tests/test_outputs.py -rA`` from ``/app`` with ``PYTEST_DISABLE_PLUGIN_AUTOLOAD=1`` (agentrig
  itself plays plain-pytest verifiers with its warm verifier). Needs root (mount namespaces).

Reported side by side: trials per second at equal concurrency (after warm-up: layers built,
imports done), trials solved, peak memory (RSS of the driving Python processes: agentrig's one
runner, the sum of mini's workers), CPU seconds per trial, and the time per agent step at
concurrency 1 on a task of ``--steps`` trivial commands (model round trip + command +
bookkeeping). CPU is read from a cgroup of each side's own in the ``cpuacct`` hierarchy (root,
cgroup v1), which counts every process a side starts — also those its long-lived helpers fork
and reap themselves (agentrig's spawner factory and warm verifier); without it, from rusage.
"""

from __future__ import annotations

import argparse
import asyncio
import ctypes
import json
import multiprocessing as mp
import os
import platform
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TASK_IDS = ["write-marker", "word-frequency", "log-error-summary", "merge-json-config", "fix-python-bug",
            "csv-region-totals", "stale-lock", "harbor-dedupe-emails"]
KEY = "sk-bench-terminal-vs-mini"
CLONE_NEWNS = 0x00020000
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # litellm: no download of its price table at import


def _rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


_CPUACCT: Path | None = None


def _own_cpuacct() -> None:
    """Move this process (and so all it starts) into a cpuacct cgroup of its own, when possible."""
    global _CPUACCT
    root = Path("/sys/fs/cgroup/cpuacct")
    if os.geteuid() != 0 or not (root / "cpuacct.usage").exists():
        return
    d = root / f"agentrig-vs-mini-{os.getpid()}"
    try:
        d.mkdir(exist_ok=True)
        (d / "cgroup.procs").write_text(str(os.getpid()))
        _CPUACCT = d
    except OSError:
        _CPUACCT = None


def _remove_cgroup(path: Path) -> None:
    """Remove a side's cpuacct cgroup once the side has exited (helpers such as multiprocessing's
    resource tracker leave it only then)."""
    for _ in range(50):
        try:
            path.rmdir()
            return
        except FileNotFoundError:
            return
        except OSError:
            time.sleep(0.1)


def _cpu_s(who: int | None = None) -> float:
    """CPU seconds of everything this side started (its cpuacct cgroup; else this process and its
    waited-for children), or of one rusage target."""
    if who is not None:
        u = resource.getrusage(who)
        return u.ru_utime + u.ru_stime
    if _CPUACCT is not None:
        return int((_CPUACCT / "cpuacct.usage").read_text()) / 1e9
    return _cpu_s(resource.RUSAGE_SELF) + _cpu_s(resource.RUSAGE_CHILDREN)


def start_endpoint(flavor: str, tasks: Path | None) -> tuple[subprocess.Popen, str]:
    cmd = [sys.executable, "-m", "agentrig.bench.terminal.scripted.solution_endpoint", "--no-auth", "--flavor", flavor]
    if tasks is not None:
        cmd += ["--tasks", str(tasks)]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    return proc, proc.stdout.readline().strip()


def steps_task(root: Path, n: int) -> Path:
    """A TB1 task whose solution is ``n`` trivial commands (for the time per step)."""
    d = root / "many-steps"
    (d / "tests").mkdir(parents=True, exist_ok=True)
    (d / "task.yaml").write_text("instruction: |-\n  Run the steps, then write done to /app/done.txt.\n"
                                 "parser_name: pytest\nmax_agent_timeout_sec: 300\n")
    (d / "Dockerfile").write_text("FROM ubuntu:24.04\nWORKDIR /app\n")
    entries = "".join(f"- command: echo step {i}\n" for i in range(n - 1)) + "- command: echo done > /app/done.txt\n"
    (d / "solution.yaml").write_text(entries)
    (d / "tests" / "test_outputs.py").write_text("from pathlib import Path\n\ndef test_done():\n"
                                                 "    assert Path('/app/done.txt').read_text().strip() == 'done'\n")
    return d


# ---------------------------------------------------------------- agentrig side (one process)

def _helpers_rss_mb() -> float:
    """Peak RSS of agentrig's long-lived helper processes (the spawner factory, the warm verifier)."""
    from agentrig.bench.terminal.sandbox import spawner, warm

    pids = [p.pid for p in (spawner._FACTORY[0] if spawner._FACTORY else None,
                            warm._SERVER.proc if warm._SERVER else None) if p is not None]
    total = 0.0
    for pid in pids:
        try:
            for line in Path(f"/proc/{pid}/status").read_text().splitlines():
                if line.startswith("VmHWM:"):
                    total += int(line.split()[1]) / 1024
        except OSError:
            continue
    return total


async def _agentrig(work: Path, base_url: str, mode: str, trials: int, concurrency: int, task_ids: list[str],
                    tasks: Path | None, build_network: str = "true", warm: bool = True) -> dict:
    from agentrig.run import experiment
    from agentrig.run.executor import Executor, close_channels, make_channels
    from agentrig.run.session import open_run, plan

    os.environ["BENCH_KEY"] = KEY
    tasks_line = f'tasks = "{tasks}"\n' if tasks else ""
    path = work / "exp.toml"
    path.write_text(f'name = "vs-mini"\n[benchmark]\nkind = "terminal"\n{tasks_line}task_ids = {json.dumps(task_ids)}\n'
                    f'[sandbox]\ncache_dir = "{work / "cache"}"\nbuild_network = {build_network}\nwarm_verifier = {str(warm).lower()}\n'
                    f'[run]\ntrials = {trials}\nconcurrency = {concurrency}\ndir = "{work / "run"}"\nmax_steps = 200\n'
                    f'[channel]\nbase_url = "{base_url}"\napi_key_env = "BENCH_KEY"\nmodel = "solution"\n'
                    f'[[arms]]\nname = "bash"\nagent = {{ kind = "bash", tool_mode = "{mode}", step_limit = 200 }}\n')
    r = experiment.load(path)  # selects the tasks and builds their layers (cached): not timed
    run = open_run(r)
    specs = plan(r, run.store)
    channels = make_channels(r, run.run_id)
    try:
        ex = Executor(r, run.store, run.run_id, channels)
        cpu, own, started = _cpu_s(), _cpu_s(resource.RUSAGE_SELF), time.perf_counter()
        await ex.run(specs)
        elapsed, cpu, own = time.perf_counter() - started, _cpu_s() - cpu, _cpu_s(resource.RUSAGE_SELF) - own
        recs = list(run.store.records(valid=True))
        calls = sum(len(rec.trajectory.model_calls) for rec in recs)
        n = max(1, len(recs))
        events = [e for rec in recs for e in rec.trajectory.events]
        warm_trials = sum(1 for e in events if e.plugin == "verifier" and e.data.get("warm"))
        helpers_mb = _helpers_rss_mb()
        parts = {"trial": sum(rec.duration_s for rec in recs) / n,
                 "verifier": sum(e.data.get("duration_s", 0) for e in events if e.plugin == "verifier") / n,
                 "commands": sum(e.data.get("duration_s", 0) for e in events if e.kind == "command") / n,
                 "model": sum(c.latency_s or 0 for rec in recs for c in rec.trajectory.model_calls) / n}
    finally:
        await close_channels(channels)
        run.close()
    return {"trials": ex.stats.finished, "solved": ex.stats.successes, "seconds": elapsed, "model_calls": calls,
            "unsolved": sorted(rec.key.task_id for rec in recs if rec.verdict.reward < 1),
            "rss_mb": _rss_mb() + helpers_mb, "workers": 1, "cpu_s": cpu, "own_cpu_s": own, "parts": parts,
            "warm_trials": warm_trials, "helpers_rss_mb": helpers_mb}


# ---------------------------------------------------------------- mini-SWE-agent side (N processes)

def _mount(*args: str) -> None:
    subprocess.run(["mount", *args], check=True)


def _mini_worker(jobs, results, ready, go, base_url: str, mode: str, kind: str = "mini") -> None:
    libc = ctypes.CDLL(None, use_errno=True)  # first, while the process has one thread
    if libc.unshare(CLONE_NEWNS) != 0:
        raise OSError(ctypes.get_errno(), "unshare(CLONE_NEWNS) failed: run as root")
    _mount("--make-rprivate", "/")
    import logging

    import yaml
    from minisweagent.agents.default import DefaultAgent
    from minisweagent.environments.local import LocalEnvironment
    from minisweagent.models.litellm_model import LitellmModel
    from minisweagent.models.litellm_textbased_model import LitellmTextbasedModel

    import litellm

    logging.disable(logging.WARNING)
    litellm.suppress_debug_info = True  # else a "Provider List" banner per call (no price for model "solution")
    cfg_name = "default.yaml" if mode == "native" else "mini_textbased.yaml"
    import minisweagent

    cfg = yaml.safe_load((Path(minisweagent.__file__).parent / "config" / cfg_name).read_text())
    agent_cfg = {**cfg["agent"], "step_limit": 200, "cost_limit": 0}
    agent_cfg.pop("mode", None)  # the interactive agent's setting
    model_cls = LitellmModel if mode == "native" else LitellmTextbasedModel
    ready.put(os.getpid())
    go.wait()
    cpu, own = _cpu_s(), _cpu_s(resource.RUSAGE_SELF)
    while True:
        job = jobs.get()
        if job is None:
            break
        task_id, instruction, app_src, tests_dir, scratch, solution = job
        started = time.perf_counter()
        trial = Path(tempfile.mkdtemp(dir=scratch))
        shutil.copytree(app_src, trial / "app", symlinks=True)
        _mount("--bind", str(trial / "app"), "/app")
        _mount("--bind", "-o", "ro", tests_dir, "/tests")
        try:
            if kind == "bare":  # the task's own commands, as a shell would run them, then the same tests
                for argv in solution:
                    subprocess.run(argv, cwd="/app", stdin=subprocess.DEVNULL, capture_output=True, timeout=300,
                                   env={**cfg["environment"]["env"], "PATH": os.environ["PATH"], "HOME": "/root"})
                agent_s = time.perf_counter() - started
                results.put({"task": task_id, "status": "bare", "solved": _tests_pass(), "calls": 0,
                             "seconds": time.perf_counter() - started, "agent_s": agent_s})
                continue
            model = model_cls(model_name="openai/solution", cost_tracking="ignore_errors",
                              model_kwargs={**cfg["model"].get("model_kwargs", {}), "api_base": base_url, "api_key": KEY,
                                            "extra_headers": {"X-Agentrig-Task": task_id, "X-Agentrig-Role": "agent"}},
                              **{k: v for k, v in cfg["model"].items() if k != "model_kwargs"})
            env = LocalEnvironment(cwd="/app", timeout=60, env=cfg["environment"]["env"])
            agent = DefaultAgent(model, env, **agent_cfg)
            info = agent.run(instruction)
            agent_s = time.perf_counter() - started
            results.put({"task": task_id, "status": info.get("exit_status"), "solved": _tests_pass(),
                         "calls": agent.n_calls, "seconds": time.perf_counter() - started, "agent_s": agent_s})
        finally:
            subprocess.run(["umount", "/tests"], check=False)
            subprocess.run(["umount", "/app"], check=False)
            shutil.rmtree(trial, ignore_errors=True)
    results.put({"rss_mb": _rss_mb(), "cpu_s": _cpu_s() - cpu, "own_cpu_s": _cpu_s(resource.RUSAGE_SELF) - own})


def _tests_pass() -> bool:
    """The task's tests as agentrig's cold verifier command runs them (a fresh pytest from /app)."""
    verdict = subprocess.run([sys.executable, "-s", "-P", "-m", "pytest", "-p", "no:cacheprovider",
                              "--confcutdir=/tests", "-c", "/dev/null", "--rootdir=.", "/tests/test_outputs.py",
                              "-rA"], cwd="/app", capture_output=True, text=True, timeout=120,
                             env={**os.environ, "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"})
    return verdict.returncode == 0


def _solution_argvs(task) -> list[list[str]]:
    """The task's own solution as commands: its script run by bash, or each solution.yaml entry."""
    if task.solution_script is not None:
        return [["bash", str(task.solution_script)]]
    return [["bash", "-c", step.command] for step in task.solution or []]


def _mini(work: Path, base_url: str, mode: str, trials: int, concurrency: int, task_ids: list[str],
          tasks: Path | None, kind: str = "mini", build_network: str = "true") -> dict:
    from agentrig.bench.terminal.sandbox import SandboxSettings, build_plan
    from agentrig.bench.terminal.sandbox.build import ensure_layer
    from agentrig.bench.terminal.tasks.taskfile import builtin_tasks_dir, load_tasks

    loaded, _ = load_tasks(tasks or builtin_tasks_dir(), task_ids=task_ids)
    settings = SandboxSettings(cache_dir=work / "cache", build_network=json.loads(build_network))
    templates = {}
    for t in loaded:  # the task's /app as its Dockerfile builds it (agentrig's build layer): not timed
        layer = asyncio.run(ensure_layer(t, build_plan(t), settings))
        templates[t.id] = (str(layer.path / "top" / "app"), str(t.tests_dir))
    ctx = mp.get_context("spawn")
    jobs, results, ready, go = ctx.Queue(), ctx.Queue(), ctx.Queue(), ctx.Event()
    workers = [ctx.Process(target=_mini_worker, args=(jobs, results, ready, go, base_url, mode, kind))
               for _ in range(concurrency)]
    for w in workers:
        w.start()
    for _ in workers:
        ready.get(timeout=120)  # imports (litellm) done in every worker
    scratch = work / "mini"
    scratch.mkdir(exist_ok=True)
    for _k in range(trials):
        for t in loaded:
            jobs.put((t.id, t.instruction, templates[t.id][0], templates[t.id][1], str(scratch), _solution_argvs(t)))
    for _ in workers:
        jobs.put(None)
    cpu_all = _cpu_s()
    started = time.perf_counter()
    go.set()
    done: list[dict] = []
    ends: list[dict] = []
    while len(done) < trials * len(loaded):  # a worker's last message (peak RSS, CPU) may come first
        msg = results.get()
        (ends.append(msg) if "rss_mb" in msg else done.append(msg))
    elapsed = time.perf_counter() - started
    cpu_all = _cpu_s() - cpu_all
    ends += [results.get() for _ in range(len(workers) - len(ends))]
    rss = [e["rss_mb"] for e in ends]
    n = max(1, len(done))
    parts = {"trial": sum(d["seconds"] for d in done) / n, "agent": sum(d["agent_s"] for d in done) / n,
             "verifier": sum(d["seconds"] - d["agent_s"] for d in done) / n}
    for w in workers:
        w.join()
    return {"trials": len(done), "solved": sum(d["solved"] for d in done), "seconds": elapsed,
            "unsolved": sorted(d["task"] for d in done if not d["solved"]),
            "model_calls": sum(d["calls"] for d in done), "rss_mb": sum(rss) + _rss_mb(), "workers": concurrency,
            "statuses": sorted({str(d["status"]) for d in done}),
            "cpu_s": cpu_all if _CPUACCT is not None else sum(e["cpu_s"] for e in ends),
            "own_cpu_s": sum(e["own_cpu_s"] for e in ends),
            "parts": parts}


# ---------------------------------------------------------------- driver

def side(args) -> None:
    work = Path(tempfile.mkdtemp(prefix=f"agentrig-vs-mini-{args.side}-"))
    _own_cpuacct()
    try:
        task_ids = args.task_ids.split(",")
        tasks = Path(args.tasks) if args.tasks else None
        if args.side in ("agentrig", "agentrig-cold"):
            out = asyncio.run(_agentrig(work, args.base_url, args.mode, args.trials, args.concurrency, task_ids, tasks,
                                        args.build_network, warm=args.side == "agentrig"))
        else:
            out = _mini(work, args.base_url, args.mode, args.trials, args.concurrency, task_ids, tasks, args.side,
                        args.build_network)
        out["cpu_method"] = "cpuacct cgroup" if _CPUACCT is not None else "rusage"
        out["cgroup"] = str(_CPUACCT) if _CPUACCT is not None else None
        print(json.dumps(out))
    finally:
        shutil.rmtree(work, ignore_errors=True)


def measure(which: str, url: str, mode: str, trials: int, concurrency: int, task_ids: list[str],
            tasks: Path | None = None, build_network: str = "true") -> dict:
    cmd = [sys.executable, __file__, "--side", which, "--base-url", url, "--mode", mode, "--trials", str(trials),
           "--concurrency", str(concurrency), "--task-ids", ",".join(task_ids), "--build-network", build_network]
    if tasks is not None:
        cmd += ["--tasks", str(tasks)]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        stdout, stderr = proc.communicate(timeout=1800)
    finally:  # the side's cpuacct cgroup (named by its pid) goes also when the side failed
        _remove_cgroup(Path("/sys/fs/cgroup/cpuacct") / f"agentrig-vs-mini-{proc.pid}")
    if proc.returncode != 0:
        raise SystemExit(f"{which} side failed:\n{stderr[-3000:]}")
    return json.loads(stdout.strip().splitlines()[-1])


def verdict(ours: float, mini: float) -> str:
    """agentrig's CPU above the bare cost against the target (at most a third of mini's)."""
    if ours <= 0:
        return "below the bare cost: within the one-third target whatever mini's overhead"
    if mini <= 0:
        return (f"+{ours:.3f} s above the bare cost while mini's is not above it ({mini:.3f}, within noise): "
                "ABOVE the one-third target")
    ratio = ours / mini
    return f"{ratio:.2f} of mini's ({'within' if ratio <= 1 / 3 else 'ABOVE'} the one-third target)"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--concurrency", type=int, default=4)
    ap.add_argument("--trials", type=int, default=2, help="trials per task")
    ap.add_argument("--mode", choices=["native", "text", "both"], default="both")
    ap.add_argument("--steps", type=int, default=30, help="commands in the per-step task (concurrency 1)")
    ap.add_argument("--side", choices=["agentrig", "agentrig-cold", "mini", "bare"], help=argparse.SUPPRESS)
    ap.add_argument("--base-url", help=argparse.SUPPRESS)
    ap.add_argument("--tasks", help="a directory of real tasks (e.g. Terminal-Bench's tasks/, fetched; default: the "
                                    "built-in tasks); then the bare cost is measured too, and no per-step figure")
    ap.add_argument("--task-ids", help="comma-separated task ids (default: 8 built-in tasks; with --tasks: all)")
    ap.add_argument("--build-network", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.build_network is None:  # real tasks' RUN pip/apt steps reach the registries with the host's settings
        args.build_network = '"host-settings"' if args.tasks else "true"
    if args.task_ids is None and not args.side:
        args.task_ids = ",".join(TASK_IDS) if not args.tasks else ",".join(sorted(
            p.name for p in Path(args.tasks).iterdir() if (p / "task.yaml").is_file() or (p / "task.toml").is_file()))
    if args.side:
        return side(args)
    try:
        import minisweagent
    except ImportError:
        raise SystemExit("mini-SWE-agent is not installed: .venv/bin/python -m pip install mini-swe-agent") from None
    if os.geteuid() != 0:
        raise SystemExit("needs root: agentrig's bwrap sandbox and mini's per-worker mount namespaces")
    print(f"machine: {platform.machine()} {os.cpu_count()} cores ({_cpu()}), Python {platform.python_version()}, "
          f"{platform.system()} {platform.release()}; load average {os.getloadavg()[0]:.2f}; "
          f"mini-swe-agent {minisweagent.__version__}")
    scratch = Path(tempfile.mkdtemp(prefix="agentrig-vs-mini-"))
    tasks = Path(args.tasks).resolve() if args.tasks else None
    task_ids = args.task_ids.split(",")
    servers = {f: start_endpoint(f, tasks) for f in ("agentrig", "mini")}
    step_servers = {f: start_endpoint(f, scratch) for f in ("agentrig", "mini")} if tasks is None else {}
    steps_task(scratch, args.steps)
    try:
        modes = ["native", "text"] if args.mode == "both" else [args.mode]
        rows = []
        for mode in modes:
            for which in ("agentrig", "mini"):
                r = measure(which, servers[which][1], mode, args.trials, args.concurrency, task_ids, tasks,
                            args.build_network)
                if tasks is None:
                    steps = [measure(which, step_servers[which][1], mode, 1, 1, ["many-steps"], scratch) for _ in range(3)]
                    per_step = statistics.median(x["seconds"] / max(1, x["model_calls"]) * 1000 for x in steps)
                else:
                    per_step = float("nan")
                rows.append((mode, which, r, per_step))
        bare = cold = None
        if tasks is not None:  # the bare cost, and agentrig with a fresh pytest per verifier as the bare side runs it
            bare = measure("bare", "-", "native", args.trials, args.concurrency, task_ids, tasks, args.build_network)
            cold = {m: measure("agentrig-cold", servers["agentrig"][1], m, args.trials, args.concurrency, task_ids, tasks,
                               args.build_network) for m in modes}
        what = f"{len(task_ids)} tasks of {tasks}" if tasks else f"{len(task_ids)} built-in tasks"
        print(f"\n{what} × {args.trials} trials, concurrency {args.concurrency}; "
              + (f"per step: one trial of {args.steps} commands at concurrency 1 (median of 3)" if tasks is None else
                 "bare: the task's own solution and tests, no harness, in the same run"))
        head = f"{'mode':<7}{'harness':<10}{'trials':>7}{'solved':>7}{'seconds':>9}{'trials/s':>10}{'CPU s/trial':>12}" \
               f"{'peak RSS MB':>13}{'ms/step':>9}{'ratio':>7}"
        print(head + "\n" + "-" * len(head))
        for mode in modes:
            pair = {w: (r, s) for m, w, r, s in rows if m == mode}
            base_rate = pair["mini"][0]["trials"] / pair["mini"][0]["seconds"]
            for which in ("agentrig", "mini"):
                r, per_step = pair[which]
                rate = r["trials"] / r["seconds"]
                print(f"{mode:<7}{which:<10}{r['trials']:>7}{r['solved']:>7}{r['seconds']:>9.2f}{rate:>10.2f}"
                      f"{r['cpu_s'] / r['trials']:>12.2f}{r['rss_mb']:>13.0f}{per_step:>9.1f}{rate / base_rate:>6.2f}×")
        print("\nwhere a trial's wall time goes (mean seconds per trial at this concurrency):")
        for mode, which, r, _ in rows:
            print(f"  {mode:<7}{which:<10}" + "  ".join(f"{k} {v:.3f}" for k, v in r["parts"].items())
                  + f"  | CPU s/trial: harness process(es) {r['own_cpu_s'] / r['trials']:.3f}, "
                    f"subprocesses {(r['cpu_s'] - r['own_cpu_s']) / r['trials']:.3f}")
        if bare is not None:
            base = bare["cpu_s"] / max(1, bare["trials"])
            print(f"\nbare cost (the task's solution and tests, no harness): {base:.2f} CPU s/trial, "
                  f"{bare['solved']}/{bare['trials']} solved")
            print(f"  unsolved: bare {bare['unsolved']}, " + ", ".join(
                f"{w} ({m}) {r['unsolved']}" for m, w, r, _ in rows) + ", " + ", ".join(
                f"agentrig-cold ({m}) {r['unsolved']}" for m, r in cold.items()))
            for mode in modes:
                over = {w: r["cpu_s"] / max(1, r["trials"]) - base for m, w, r, _ in rows if m == mode}
                over["agentrig-cold"] = cold[mode]["cpu_s"] / max(1, cold[mode]["trials"]) - base
                print(f"  {mode}: CPU s per trial above the bare cost — mini {over['mini']:.3f}; agentrig "
                      f"{over['agentrig']:.3f} (warm verifier), {over['agentrig-cold']:.3f} (a fresh pytest per "
                      f"verifier, as the bare side runs the tests)")
                for which in ("agentrig", "agentrig-cold"):
                    print(f"    {which}: {verdict(over[which], over['mini'])}")
        print(f"\nCPU measured with: {rows[0][2].get('cpu_method', 'rusage')}")
        print("agentrig: bwrap sandbox per trial (own mount/pid/net namespaces, overlay layer); verifier: the warm "
              "verifier (pytest forked into the sandbox) for plain-pytest tasks, else a fresh process; peak RSS includes "
              "its long-lived helpers (spawner factory, warm verifier); mini: LocalEnvironment (commands on the host; "
              "/app and /tests bind-mounted per trial), cold pytest")
        for mode, which, r, _ in rows:
            if which == "agentrig":
                print(f"  {mode}: {r.get('warm_trials', 0)} of {r['trials']} trials verified warm")
    finally:
        for proc, _ in [*servers.values(), *step_servers.values()]:
            proc.terminate()
            proc.wait()
        shutil.rmtree(scratch, ignore_errors=True)


def _cpu() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


if __name__ == "__main__":
    main()
