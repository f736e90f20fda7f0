"""τ² next to tau2-bench: the 50 airline tasks, an LLM agent and an LLM user, one scripted endpoint.

What a user pays for one run of each, as a user starts it:

- agentrig: ``agentrig run EXP.toml`` (kind tau2, domain airline, split ``base``, LLM agent in
  native tool mode, LLM user, ``concurrency = 8``, ``trials = 1``), a fresh run directory each time;
- tau2-bench 1.0.1: ``tau2 run --domain airline --agent-llm openai/gold-agent --user-llm
  openai/gold-user --max-concurrency 8`` (its default task set and ``base`` split, one trial),
  its public source installed from PyPI packages into a venv of its own, a fresh ``--save-to``.

Both play the same 50 tasks (airline's ``base`` split, ids 0–49, tau2-bench v1.0.1's data) against
the same endpoint: agentrig's gold endpoint (``python -m agentrig.bench.tau.scripted.gold_endpoint``),
which plays every task's gold conversation for both roles (tau2-bench's header-less requests are
recognised by the model name and the scenario / opening they carry), so every trial should earn
1.0 on both sides; the sums of the rewards are printed as a sanity check. The endpoint is one
process shared by both and counted in neither; its CPU during each side is printed beside.

Both start from compiled bytecode, as an installed package does: tau2-bench's venv and
agentrig's dependencies have pip's; agentrig's own modules are compiled first (``compileall`` into
``__pycache__`` beside the sources; with ``PYTHONDONTWRITEBYTECODE=1`` an uncompiled source tree
would be compiled anew at every start).

Counted per side: wall from start to exit; CPU of the whole process tree — the side's command is
started inside a cpuacct cgroup of its own (cgroup v1, root), so every child counts, also those
not waited for; without root or cpuacct, the rusage of waited children (said in the output).
Rounds alternate (tau2-bench, agentrig, agentrig, tau2-bench, …); the 1-minute load average is
recorded at the start and end of each side. Figures: per round, medians, and the ratios
(tau2-bench / agentrig) against the target (≥ 40× in wall and CPU). Then, once, each side's bare
start-up (``tau2 run --help`` — it imports litellm and registers its domains — and ``agentrig run
--help``).

tau2-bench is no agentrig dependency; this script makes its venv outside the repo (never commit it):

    .venv/bin/python perf/tau2_vs_tau2bench.py setup [--tau2-git DIR] [--python python3.12]
    .venv/bin/python perf/tau2_vs_tau2bench.py [--rounds 2] [--json]

``setup`` takes the v1.0.1 source from a git directory of tau2-bench (``--tau2-git``; default: the
mirror at /work/.mirror/sierra-research+tau2-bench/repo when present, else a bare clone of
github.com/sierra-research/tau2-bench into ~/.cache/agentrig/tau2bench-git), pip-installs it into
~/.cache/agentrig/tau2bench-venv (Python ≥ 3.12), and lays the airline data out at
~/.cache/agentrig/tau2bench-data/tau2 (the data tree tau2-bench's ``TAU2_DATA_DIR`` and agentrig's
``[benchmark] data`` both read): tasks from the tag; a file the git directory lacks (a mirror may
hold the large db.json as a pointer only) comes from the local τ² data root ($AGENTRIG_TAU2_DATA,
default /work/shared/tau2-data) after its git blob hash is checked against the tag's.
"""

from __future__ import annotations

import argparse
import json
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
CACHE = Path.home() / ".cache" / "agentrig"
VENV = CACHE / "tau2bench-venv"
SRC = CACHE / "tau2bench-src"
DATA = CACHE / "tau2bench-data"  # TAU2_DATA_DIR; agentrig reads DATA / "tau2"
TAG = "v1.0.1"
MIRROR = Path("/work/.mirror/sierra-research+tau2-bench/repo")
UPSTREAM = "https://github.com/sierra-research/tau2-bench"
DATA_FILES = ["domains/airline/tasks.json", "domains/airline/split_tasks.json", "domains/airline/db.json",
              "domains/airline/policy.md", "user_simulator/simulation_guidelines.md",
              "user_simulator/simulation_guidelines_tools.md"]
CONCURRENCY = 8
TARGET = 40.0
KEY_ENV = "TAU2_VS_TAU2BENCH_KEY"  # the endpoint runs --no-auth; both sides send this dummy key
CPUACCT = Path("/sys/fs/cgroup/cpuacct")


# ---------------------------------------------------------------------------------------- setup


def _git(gitdir: Path, *args: str, text: bool = True) -> subprocess.CompletedProcess:
    return subprocess.run(["git", "--git-dir", str(gitdir), *args], capture_output=True, text=text)


def _python(choice: str | None) -> str:
    for cand in [choice] if choice else ["python3.12", "python3.13", *sorted(
            str(p) for p in Path("/root/.pyenv/versions").glob("3.1[23]*/bin/python"))]:
        exe = shutil.which(cand) or (cand if Path(cand).is_file() else None)
        if exe and subprocess.run([exe, "-c", "import sys; assert sys.version_info >= (3, 12)"],
                                  capture_output=True).returncode == 0:
            return exe
    raise SystemExit("setup: tau2-bench needs Python >= 3.12 and none was found; give one with --python")


def setup(args) -> None:
    gitdir = Path(args.tau2_git) if args.tau2_git else MIRROR if MIRROR.is_dir() else CACHE / "tau2bench-git"
    if not gitdir.is_dir():
        print(f"cloning {UPSTREAM} into {gitdir}")
        subprocess.run(["git", "clone", "--bare", "--filter=blob:limit=5m", UPSTREAM, str(gitdir)], check=True)
    if _git(gitdir, "rev-parse", "--verify", f"{TAG}^{{commit}}").returncode != 0:
        raise SystemExit(f"setup: {gitdir} has no tag {TAG}; give a git directory of tau2-bench with --tau2-git")
    # the source (the package only: pyproject, README, licence, src/)
    shutil.rmtree(SRC, ignore_errors=True)
    SRC.mkdir(parents=True)
    archive = subprocess.Popen(["git", "--git-dir", str(gitdir), "archive", TAG, "pyproject.toml", "README.md",
                                "LICENSE", "src"], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    subprocess.run(["tar", "-x", "-C", str(SRC)], stdin=archive.stdout, check=True)
    if archive.wait() != 0 or not (SRC / "src" / "tau2").is_dir():
        raise SystemExit(f"setup: git archive {TAG} failed in {gitdir}: {archive.stderr.read().decode()[-2000:]}")
    # the venv, packages from PyPI
    if not (VENV / "bin" / "tau2").exists():
        py = _python(args.python)
        print(f"making {VENV} with {py}")
        subprocess.run([py, "-m", "venv", str(VENV)], check=True)
        subprocess.run([str(VENV / "bin" / "python"), "-m", "pip", "install", "-q", str(SRC)], check=True, cwd="/")
    # the data: every file from the tag, or (absent there) from the local data root, hash-checked
    local = Path(os.environ.get("AGENTRIG_TAU2_DATA") or "/work/shared/tau2-data")
    tree = DATA / "tau2"  # made afresh, real files only: nothing is written through a link
    if tree.is_symlink():
        tree.unlink()
    elif tree.exists():
        shutil.rmtree(tree)
    for rel in DATA_FILES:
        dest = DATA / "tau2" / rel
        dest.parent.mkdir(parents=True, exist_ok=True)
        path = f"data/tau2/{rel}"
        listed = _git(gitdir, "ls-tree", TAG, path).stdout.split()
        if len(listed) < 3:
            raise SystemExit(f"setup: {TAG} has no {path}")
        blob = listed[2]
        shown = _git(gitdir, "cat-file", "blob", blob, text=False)
        if shown.returncode == 0:
            dest.write_bytes(shown.stdout)
            continue
        there = local / rel
        if not there.is_file() or subprocess.run(["git", "hash-object", str(there)], capture_output=True,
                                                 text=True).stdout.strip() != blob:
            raise SystemExit(f"setup: {gitdir} lacks the content of {path} and {there} is not that file "
                             f"(blob {blob}); set AGENTRIG_TAU2_DATA to a tau2-bench {TAG} data root")
        shutil.copyfile(there, dest)
    tasks = json.loads((DATA / "tau2" / "domains/airline/tasks.json").read_text())
    split = json.loads((DATA / "tau2" / "domains/airline/split_tasks.json").read_text())
    print(f"ready: {VENV} (tau2 {_version('tau2')}, litellm {_version('litellm')}); data {DATA / 'tau2'}: "
          f"{len(tasks)} airline tasks, split base = {len(split.get('base', []))}")


def _version(package: str) -> str:
    out = subprocess.run([str(VENV / "bin" / "python"), "-c",
                          f"import importlib.metadata as m; print(m.version({package!r}))"],
                         capture_output=True, text=True)
    return out.stdout.strip() or "?"


# ---------------------------------------------------------------------------------------- measuring


def _proc_cpu(pid: int) -> float:
    """CPU seconds of one live process (all its threads)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _cgroup(name: str) -> Path | None:
    if os.geteuid() != 0 or not (CPUACCT / "cpuacct.usage").exists():
        return None
    d = CPUACCT / name
    try:
        d.mkdir()
        return d
    except OSError:
        return None


def _remove_cgroup(d: Path) -> int:
    """Remove a side's cgroup; returns how many processes were still in it (ended, by pid: they are
    the side's, started by us)."""
    left = [int(p) for p in (d / "cgroup.procs").read_text().split()]
    for pid in left:
        try:
            os.kill(pid, 9)
        except ProcessLookupError:
            pass
    for _ in range(50):
        try:
            d.rmdir()
            break
        except OSError:
            time.sleep(0.1)
    return len(left)


def run_side(name: str, cmd: list[str], env: dict, cwd: Path, endpoint_pid: int, tag: str) -> dict:
    """Run one side's command to its exit; its wall, its process tree's CPU, the load around it."""
    group = _cgroup(f"tau2-vs-tau2bench-{os.getpid()}-{tag}")

    def join() -> None:  # in the child, before exec: it and all it starts are in the group
        if group is not None:
            (group / "cgroup.procs").write_text(str(os.getpid()))

    out, err = cwd / f"{tag}.out", cwd / f"{tag}.err"
    load0 = os.getloadavg()[0]
    ep0 = _proc_cpu(endpoint_pid)
    ru0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    left = 0
    try:
        with out.open("w") as fo, err.open("w") as fe:
            proc = subprocess.Popen(cmd, env=env, cwd=cwd, stdout=fo, stderr=fe, preexec_fn=join)
            try:
                rc = proc.wait(timeout=3600)
            except subprocess.TimeoutExpired:
                proc.kill()
                raise SystemExit(f"{name} did not end within an hour; its output: {out} {err}") from None
        wall = time.perf_counter() - t0
        ru1 = resource.getrusage(resource.RUSAGE_CHILDREN)
        rusage_cpu = (ru1.ru_utime - ru0.ru_utime) + (ru1.ru_stime - ru0.ru_stime)
        cpu = int((group / "cpuacct.usage").read_text()) / 1e9 if group is not None else rusage_cpu
    finally:  # the group goes also when the side failed
        if group is not None:
            left = _remove_cgroup(group)
    result = {"side": name, "wall_s": round(wall, 3), "cpu_s": round(cpu, 3), "cpu_waited_children_s": round(rusage_cpu, 3),
              "cpu_method": "cpuacct cgroup" if group is not None else "rusage of waited children",
              "load_start": round(load0, 2), "load_end": round(os.getloadavg()[0], 2),
              "endpoint_cpu_s": round(_proc_cpu(endpoint_pid) - ep0, 3), "exit_code": rc, "left_running": left}
    if rc != 0:
        raise SystemExit(f"{name} exited {rc}; its output: {out} {err}\n{err.read_text()[-3000:]}")
    return result


def _tau2_env(base_env: dict) -> dict:
    env = dict(base_env, TAU2_DATA_DIR=str(DATA))
    env.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # no download of litellm's price table at start-up
    env.pop("PYTHONPATH", None)  # agentrig's src is not tau2-bench's business
    return env


def tau2_cmd(base_url: str, save_to: str) -> list[str]:
    llm_args = json.dumps({"temperature": 0.0, "api_base": base_url, "api_key": "dummy-key"})
    return [str(VENV / "bin" / "tau2"), "run", "--domain", "airline", "--agent-llm", "openai/gold-agent",
            "--user-llm", "openai/gold-user", "--agent-llm-args", llm_args, "--user-llm-args", llm_args,
            "--max-concurrency", str(CONCURRENCY), "--num-trials", "1", "--save-to", save_to]


def tau2_rewards(save_to: str) -> tuple[float, int]:
    d = DATA / "simulations" / save_to
    data = json.loads((d / "results.json").read_text())
    sims = data.get("simulations") or []
    total = sum(float((s.get("reward_info") or {}).get("reward") or 0.0) for s in sims)
    shutil.rmtree(d, ignore_errors=True)
    return total, len(sims)


def experiment_toml(path: Path, base_url: str) -> None:
    path.write_text(f'''name = "airline-vs-tau2bench"

[benchmark]
kind = "tau2"
data = "{DATA / 'tau2'}"
domains = ["airline"]
split = "base"

[run]
trials = 1
seed = 300
concurrency = {CONCURRENCY}
max_steps = 200
max_errors = 10

[user]
kind = "llm"
guidelines = "auto"

[judge]
nl_assertions = "auto"

[channel]
base_url = "{base_url}"
api_key_env = "{KEY_ENV}"

[roles.agent]
model = "gold-agent"
temperature = 0.0

[roles.user]
model = "gold-user"
temperature = 0.0

[[arms]]
name = "gold"
agent = {{ kind = "llm", tool_mode = "native" }}
''')


def agentrig_cmd() -> list[str]:
    script = Path(sys.executable).parent / "agentrig"
    return [str(script)] if script.exists() else [sys.executable, "-c", "from agentrig.cli import main; main()"]


def agentrig_rewards(out: Path) -> tuple[float, int]:
    data = json.loads(out.read_text())
    arm = data["arms"]["gold"]
    return float(arm["mean_reward"] or 0.0) * arm["valid"], int(arm["valid"])


def start_endpoint(scratch: Path) -> tuple[subprocess.Popen, str]:
    cmd = [sys.executable, "-m", "agentrig.bench.tau.scripted.gold_endpoint", "--data", str(DATA / "tau2"),
           "--no-auth", "--models", "gold,gold-agent,gold-user,gold-judge"]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=(scratch / "endpoint.err").open("w"), text=True)
    line = proc.stdout.readline().strip()
    if not line.startswith("http"):
        proc.kill()
        raise SystemExit(f"the gold endpoint did not start: {(scratch / 'endpoint.err').read_text()[-2000:]}")
    return proc, line


def startup(env_agentrig: dict, env_tau2: dict, cwd: Path, endpoint_pid: int) -> dict:
    """Each side's bare start: its CLI's help for ``run`` (imports, registries), nothing played."""
    t = run_side("tau2-bench start-up", [str(VENV / "bin" / "tau2"), "run", "--help"], env_tau2, cwd, endpoint_pid,
                 "startup-tau2")
    a = run_side("agentrig start-up", agentrig_cmd() + ["run", "--help"], env_agentrig, cwd, endpoint_pid,
                 "startup-agentrig")
    return {"tau2bench": t, "agentrig": a}


def compile_agentrig() -> None:
    """Bytecode for agentrig's modules, as a pip install leaves it (tau2-bench's venv and agentrig's
    dependencies have pip's): ``compileall`` into ``__pycache__`` beside the sources (git ignores
    it). With PYTHONDONTWRITEBYTECODE=1 an uncompiled source tree is compiled anew at every start;
    a PYTHONPYCACHEPREFIX would not do, as it hides the dependencies' own bytecode."""
    import agentrig

    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPYCACHEPREFIX", "PYTHONDONTWRITEBYTECODE")}
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(Path(agentrig.__file__).parent)], env=env,
                   check=True, stdout=subprocess.DEVNULL)


def _cpu_model() -> str:
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return platform.processor() or "unknown CPU"


def facts() -> dict:
    commit = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True,
                            text=True).stdout.strip()
    import agentrig

    return {"date_utc": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "cores": os.cpu_count(),
            "cpu": _cpu_model(), "kernel": f"{platform.system()} {platform.release()}",
            "python_agentrig": platform.python_version(), "agentrig_commit": commit,
            "agentrig_src": str(Path(agentrig.__file__).parent),
            "tau2bench": _version("tau2"), "litellm": _version("litellm"),
            "python_tau2bench": subprocess.run([str(VENV / "bin" / "python"), "-c", "import platform; "
                                                "print(platform.python_version())"],
                                               capture_output=True, text=True).stdout.strip()}


def measure(args) -> None:
    if not (VENV / "bin" / "tau2").exists() or not (DATA / "tau2" / "domains" / "airline" / "tasks.json").exists():
        raise SystemExit(f"tau2-bench is not set up ({VENV}, {DATA}); run: {sys.executable} {__file__} setup")
    say = (lambda *a: None) if args.json else print
    info = facts()
    say(f"machine: {info['cores']} cores ({info['cpu']}), {info['kernel']}; agentrig {info['agentrig_commit']} "
        f"(Python {info['python_agentrig']}, {info['agentrig_src']}); tau2-bench {info['tau2bench']} "
        f"(Python {info['python_tau2bench']}, litellm {info['litellm']}); load {os.getloadavg()[0]:.2f}")
    scratch = Path(tempfile.mkdtemp(prefix="tau2-vs-tau2bench-"))
    base_env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "ANTHROPIC_"))}
    base_env[KEY_ENV] = "dummy-key"
    compile_agentrig()
    env_tau2 = _tau2_env(base_env)
    endpoint, url = start_endpoint(scratch)
    rows: list[dict] = []
    try:
        say(f"endpoint {url} (pid {endpoint.pid}, counted in neither side); {CONCURRENCY} trials in flight, "
            f"50 airline tasks (base split), k=1; scratch {scratch}")
        exp = scratch / "airline.toml"
        experiment_toml(exp, url)
        for r in range(args.rounds):
            order = ["tau2bench", "agentrig"] if r % 2 == 0 else ["agentrig", "tau2bench"]
            for which in order:
                tag = f"r{r + 1}-{which}"
                if which == "tau2bench":
                    save_to = f"tau2-vs-tau2bench-{os.getpid()}-{tag}"
                    row = run_side(which, tau2_cmd(url, save_to), env_tau2, scratch, endpoint.pid, tag)
                    row["reward_sum"], row["trials"] = tau2_rewards(save_to)
                else:
                    d = scratch / f"run-{tag}"
                    row = run_side(which, agentrig_cmd() + ["run", str(exp), "--dir", str(d), "--json"], base_env,
                                   scratch, endpoint.pid, tag)
                    row["reward_sum"], row["trials"] = agentrig_rewards(scratch / f"{tag}.out")
                    shutil.rmtree(d, ignore_errors=True)
                row["round"] = r + 1
                rows.append(row)
                say(f"round {r + 1} {which:9s}: wall {row['wall_s']:7.2f} s  CPU {row['cpu_s']:7.2f} s  "
                    f"rewards {row['reward_sum']:.1f}/{row['trials']}  load {row['load_start']:.2f}→"
                    f"{row['load_end']:.2f}  endpoint CPU {row['endpoint_cpu_s']:.2f} s"
                    + (f"  ({row['left_running']} left running, ended)" if row["left_running"] else ""))
        start = startup(base_env, env_tau2, scratch, endpoint.pid) if not args.no_startup else None
    finally:
        endpoint.terminate()
        try:
            endpoint.wait(timeout=10)
        except subprocess.TimeoutExpired:
            endpoint.kill()
        if not args.keep:
            shutil.rmtree(scratch, ignore_errors=True)

    def med(which: str, key: str) -> float:
        return statistics.median(row[key] for row in rows if row["side"] == which)

    summary = {w: {k: med(w, k) for k in ("wall_s", "cpu_s", "endpoint_cpu_s")} for w in ("tau2bench", "agentrig")}
    ratio = {k: summary["tau2bench"][k] / summary["agentrig"][k] for k in ("wall_s", "cpu_s")}
    sane = all(row["trials"] == 50 and abs(row["reward_sum"] - 50.0) < 1e-6 for row in rows)
    met = ratio["wall_s"] >= TARGET and ratio["cpu_s"] >= TARGET
    verdict = (f"agentrig is {ratio['wall_s']:.1f}x faster in wall and {ratio['cpu_s']:.1f}x in CPU than tau2-bench: "
               f"{'MEETS' if met else 'BELOW'} the {TARGET:.0f}x target")
    if not sane:  # a side that did not play the gold did other work: no comparison
        verdict = "NO VERDICT: not every trial of both sides earned 1.0 (see the rounds); " + verdict
    result = {"facts": info, "rounds": rows, "median": summary, "ratio": ratio, "target": TARGET, "met": met,
              "rewards_all_gold": sane, "startup": start, "verdict": verdict}
    if args.json:
        print(json.dumps(result, indent=2))
        return
    for w in ("tau2bench", "agentrig"):
        s = summary[w]
        print(f"median {w:9s}: wall {s['wall_s']:7.2f} s  CPU {s['cpu_s']:7.2f} s  (endpoint CPU {s['endpoint_cpu_s']:.2f} s)")
    if start:
        for w, row in start.items():
            print(f"start-up {w:9s} (`run --help`): wall {row['wall_s']:.2f} s  CPU {row['cpu_s']:.2f} s")
    print(f"rewards: {'every trial of both sides 1.0' if sane else 'NOT all 1.0 — see the rounds'}")
    print(verdict)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("command", nargs="?", choices=["measure", "setup"], default="measure")
    ap.add_argument("--rounds", type=int, default=2, help="rounds; each plays both sides, the order alternating")
    ap.add_argument("--json", action="store_true", help="print one JSON object and nothing else")
    ap.add_argument("--no-startup", action="store_true", help="skip the bare start-up figures")
    ap.add_argument("--keep", action="store_true", help="keep the scratch directory (runs, outputs)")
    ap.add_argument("--tau2-git", help="setup: a git directory of tau2-bench (default: the mirror, else a clone)")
    ap.add_argument("--python", help="setup: the Python (>= 3.12) for tau2-bench's venv")
    args = ap.parse_args()
    if args.rounds < 1:
        raise SystemExit("--rounds must be at least 1")
    setup(args) if args.command == "setup" else measure(args)


if __name__ == "__main__":
    main()
