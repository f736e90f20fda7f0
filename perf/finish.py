"""The finish of a run: a resume with nothing to play, and the report of a 50-trial run.

Users rerun the same `agentrig run` command all the time (resume is the main way of working) and
the report is written at the end of every run, so both should feel instant. This builds two
50-trial runs the way a user would, with the real CLI, then times the real CLI again as cold
processes (a new Python each time, as a user's shell starts it):

- ``llm``: τ²-bench airline, 10 tasks × 5 trials, an LLM agent and an LLM user simulator, both
  through the channel to the gold-scripting endpoint (``python -m agentrig.bench.tau.scripted.gold_endpoint``,
  its own process): records with real conversations, model calls and usage (needs the τ²-bench
  data; skipped without it);
- ``reference``: the built-in bikeshop domain, 5 tasks × 10 trials, the gold reference agent and
  the scripted user (no endpoint, no data).

For each: ``agentrig run EXP.toml`` again (every trial stored: nothing to play; the summary is
printed and the report rewritten) and ``agentrig report RUN_DIR``, each the median of
``--repeats`` runs after one warm-up (the median CPU time, user + system, is shown too: it
moves less than the wall time when other processes share the machine). Targets (issue 10), on
the wall time: resume < 1.0 s, report < 0.5 s.

Python's own start-up depends on whether it may cache compiled modules: the figures are given as
this environment runs Python (``PYTHONDONTWRITEBYTECODE`` as set) and with a bytecode cache (a
usual install; ``PYTHONPYCACHEPREFIX`` in a temporary directory, so the tree stays clean).

    .venv/bin/python perf/finish.py [--data ROOT] [--repeats 7] [--json out.json]
    .venv/bin/python perf/finish.py --importtime      # also: the slowest imports of each command
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

KEY_ENV = "AGENTRIG_BENCH_KEY"
KEY = "sk-bench-finish-0123456789abcdef"
REPO = Path(__file__).resolve().parent.parent
TARGETS = {"resume": 1.0, "report": 0.5}
EXE = Path(sys.executable).with_name("agentrig")
CLI = [str(EXE)] if EXE.exists() else [sys.executable, "-m", "agentrig.cli"]


def start_gold(root: Path) -> tuple[subprocess.Popen, str]:
    proc = subprocess.Popen([sys.executable, "-m", "agentrig.bench.tau.scripted.gold_endpoint", "--data", str(root),
                             "--api-key-env", KEY_ENV], stdout=subprocess.PIPE, text=True,
                            env={**os.environ, KEY_ENV: KEY})
    base = proc.stdout.readline().strip()  # type: ignore[union-attr]
    if not base.startswith("http"):
        proc.kill()
        raise SystemExit(f"the gold endpoint did not start (printed {base!r})")
    return proc, base


def llm_toml(directory: Path, base: str, root: Path) -> Path:
    path = directory / "airline50.toml"
    path.write_text(f"""
name = "airline50"
[benchmark]
data = "{root}"
domains = ["airline"]
num_tasks = 10
[run]
trials = 5
concurrency = 8
[user]
kind = "llm"
[channel]
base_url = "{base}"
api_key_env = "{KEY_ENV}"
model = "gold"
timeout_s = 60
[[arms]]
name = "gold-llm"
agent = {{ kind = "llm" }}
""", encoding="utf-8")
    return path


def reference_toml(directory: Path) -> Path:
    path = directory / "bikeshop50.toml"
    path.write_text("""
name = "bikeshop50"
[benchmark]
domains = ["bikeshop"]
num_tasks = 5
[run]
trials = 10
[user]
kind = "scripted"
[judge]
nl_assertions = "never"
[[arms]]
name = "gold"
agent = { kind = "gold" }
""", encoding="utf-8")
    return path


def _children_cpu() -> float:
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime


def cli(args: list[str], env: dict[str, str]) -> tuple[float, float, subprocess.CompletedProcess]:
    """One cold `agentrig ARGS` process: its wall time, its CPU time (user + system) and its output."""
    cmd = [*CLI, *args]
    cpu0, t0 = _children_cpu(), time.perf_counter()
    done = subprocess.run(cmd, env=env, capture_output=True, text=True)
    wall, cpu = time.perf_counter() - t0, _children_cpu() - cpu0
    if done.returncode != 0:
        raise SystemExit(f"`agentrig {' '.join(args)}` failed ({done.returncode}):\n{done.stderr[-2000:]}")
    return wall, cpu, done


def median_wall(args: list[str], env: dict[str, str], repeats: int) -> tuple[float, list[float], float, str]:
    """Median wall time of ``repeats`` runs after a warm-up, every wall time, the median CPU time."""
    cli(args, env)  # warm-up: the disk cache, and the bytecode cache when there is one
    walls, cpus, last = [], [], ""
    for _ in range(repeats):
        wall, cpu, done = cli(args, env)
        walls.append(wall)
        cpus.append(cpu)
        last = done.stdout + done.stderr
    return statistics.median(walls), walls, statistics.median(cpus), last


def slowest_imports(args: list[str], env: dict[str, str], n: int = 12) -> list[tuple[float, str]]:
    """The modules with the largest cumulative import time (-X importtime) of one command."""
    _, _, done = cli(args, {**env, "PYTHONPROFILEIMPORTTIME": "1"})
    rows = []
    for line in done.stderr.splitlines():
        if line.startswith("import time:") and "cumulative" not in line:
            _, cum, name = line.split("|")
            if name.startswith(" ") and not name.startswith("  "):  # imported at the top level
                rows.append((int(cum) / 1e6, name.strip()))
    return sorted(rows, reverse=True)[:n]


def envs(tmp: Path) -> dict[str, dict[str, str]]:
    base = {**os.environ, KEY_ENV: KEY}
    cached = {k: v for k, v in base.items() if k != "PYTHONDONTWRITEBYTECODE"}
    cached["PYTHONPYCACHEPREFIX"] = str(tmp / "pycache")
    as_set = "no bytecode cache" if os.environ.get("PYTHONDONTWRITEBYTECODE") else "bytecode cache as usual"
    return {f"this environment ({as_set})": base, "with a bytecode cache": cached}


def machine() -> str:
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return (f"{cpu}, {os.cpu_count()} cores, Python {platform.python_version()}, "
            f"load average {os.getloadavg()[0]:.2f}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", default=os.environ.get("AGENTRIG_TAU2_DATA") or str(REPO.parent / "shared" / "tau2-data"),
                    help="τ²-bench data root (for the llm run; default $AGENTRIG_TAU2_DATA)")
    ap.add_argument("--repeats", type=int, default=7, help="timed runs per figure (the median is reported)")
    ap.add_argument("--importtime", action="store_true", help="also print the slowest top-level imports")
    ap.add_argument("--json", dest="json_out", help="also write the figures to this JSON file")
    args = ap.parse_args(argv)
    root = Path(args.data).expanduser().resolve()
    print(f"machine: {machine()}")
    results: dict[str, dict] = {}
    with tempfile.TemporaryDirectory(prefix="agentrig-finish-") as tmp_s:
        tmp = Path(tmp_s)
        gold = None
        runs: list[tuple[str, Path]] = [("reference", reference_toml(tmp))]
        if (root / "domains" / "airline").is_dir():
            gold, base = start_gold(root)
            runs.insert(0, ("llm", llm_toml(tmp, base, root)))
        else:
            print(f"note: no τ²-bench data at {root}: the llm run (airline via the gold endpoint) is skipped")
        try:
            base_env = {**os.environ, KEY_ENV: KEY}
            for name, toml in runs:
                _, _, done = cli(["run", str(toml), "--json"], base_env)
                doc = json.loads(done.stdout)
                stored = sum(a["valid"] for a in doc["arms"].values())
                if doc["status"] != "done" or stored != 50:
                    raise SystemExit(f"{name}: the first run ended {doc['status']} with {stored} valid trials")
                results[name] = {"run_dir": doc["run_dir"], "first_run_played": doc["played"]}
            for label, env in envs(tmp).items():
                print(f"\n{label}")
                print(f"  {'run':<10} {'step':<24} {'wall s':>7} {'target':>7} {'CPU s':>6}  all runs (wall s)")
                for name, toml in runs:
                    run_dir = results[name]["run_dir"]
                    resume, r_all, r_cpu, text = median_wall(["run", str(toml)], env, args.repeats)
                    if "50 already stored, 0 to play" not in text:
                        raise SystemExit(f"{name}: the resume did not find every trial stored:\n{text}")
                    report, p_all, p_cpu, _ = median_wall(["report", run_dir], env, args.repeats)
                    size = (Path(run_dir) / "report.html").stat().st_size
                    for step, med, walls, cpu in (("resume, nothing to play", resume, r_all, r_cpu),
                                                  ("report of 50 trials", report, p_all, p_cpu)):
                        target = TARGETS["resume" if step.startswith("resume") else "report"]
                        mark = "ok" if med < target else "MISSED"
                        print(f"  {name:<10} {step:<24} {med:7.3f} {'< ' + str(target):>7} {cpu:6.3f}  "
                              f"{' '.join(f'{w:.2f}' for w in walls)}  {mark}")
                    results[name].setdefault("figures", {})[label] = {
                        "resume_s": resume, "resume_all_s": r_all, "resume_cpu_s": r_cpu, "report_s": report,
                        "report_all_s": p_all, "report_cpu_s": p_cpu, "report_bytes": size}
                if args.importtime:
                    for name, toml in runs:
                        for what, cmd in (("resume", ["run", str(toml)]), ("report", ["report", results[name]["run_dir"]])):
                            print(f"  slowest imports, {name} {what}: " + ", ".join(
                                f"{mod} {s:.3f}" for s, mod in slowest_imports(cmd, env)))
        finally:
            if gold is not None:
                gold.terminate()
                gold.wait(timeout=10)
    print(f"\nload average at the end: {os.getloadavg()[0]:.2f} (figures from a busy machine are slower)")
    if args.json_out:
        Path(args.json_out).write_text(json.dumps({"machine": machine(), "targets": TARGETS, "runs": results},
                                                  indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
