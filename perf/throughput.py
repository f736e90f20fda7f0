"""Trials per second through the whole runner, against the gold-scripting endpoint.

The endpoint (``python -m agentrig.bench.tau.scripted.gold_endpoint``) runs in ANOTHER process and plays
every role: the LLM agent, the LLM user and the NL judge all go through the channel to it, and
the trials are played, judged and stored exactly as ``agentrig run`` does (experiment TOML →
``experiment.load`` → ``open_run`` → ``plan`` → ``Executor.run``; a fresh run directory each
time). Three figures:

(a) trials/s on all airline and all retail tasks of the data at concurrency 8, the endpoint
    answering instantly — next to τ²-bench's own harness on the same endpoint (about 0.5
    trials/s on airline and 0.9 on retail on this machine at concurrency 8; target ≥ 20×);
(b) 200 ms added to every reply, concurrency 64: achieved requests/s against the ideal
    concurrency ÷ latency (target ≥ 90%);
(c) the peak RSS (high-water mark) of an ``agentrig run`` process at concurrency 64.

    .venv/bin/python perf/throughput.py [--data ROOT] [--trials 3] [--json out.json]
    .venv/bin/python perf/throughput.py --profile airline     # cProfile of (a), top functions
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import io
import json
import os
import platform
import pstats
import subprocess
import sys
import tempfile
import time
from pathlib import Path

KEY_ENV = "AGENTRIG_BENCH_KEY"
KEY = "sk-bench-gold-0123456789abcdef"
TAU2_HARNESS = {"airline": 0.5, "retail": 0.9}  # trials/s, τ²-bench's own harness, concurrency 8 (issue 4)
REPO = Path(__file__).resolve().parent.parent


def start_gold(root: Path, delay_ms: float = 0.0) -> tuple[subprocess.Popen, str]:
    proc = subprocess.Popen(
        [sys.executable, "-m", "agentrig.bench.tau.scripted.gold_endpoint", "--data", str(root), "--api-key-env", KEY_ENV,
         "--delay-ms", str(delay_ms)],
        stdout=subprocess.PIPE, text=True, env={**os.environ, KEY_ENV: KEY})
    base = proc.stdout.readline().strip()
    if not base.startswith("http"):
        proc.kill()
        raise SystemExit(f"the gold endpoint did not start (printed {base!r})")
    return proc, base


def cpu_seconds(pid: int) -> float | None:
    """User + system CPU time of a process so far (Linux /proc), or None."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return None


def stop(proc: subprocess.Popen) -> None:
    proc.terminate()
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()


def write_toml(directory: Path, name: str, base: str, root: Path, domains: list[str], trials: int,
               concurrency: int) -> Path:
    path = directory / f"{name}.toml"
    path.write_text(f"""
name = "{name}"
[benchmark]
data = "{root}"
domains = {json.dumps(domains)}
split = "all"
[run]
trials = {trials}
concurrency = {concurrency}
[channel]
base_url = "{base}"
api_key_env = "{KEY_ENV}"
model = "gold"
timeout_s = 60
max_concurrency = {max(concurrency, 16)}
[[arms]]
name = "gold-llm"
agent = {{ kind = "llm" }}
""", encoding="utf-8")
    return path


async def play(toml: Path) -> dict:
    """One run through the runner; the clock covers the executor only (not loading the data)."""
    from agentrig.run import executor, experiment, session

    r = experiment.load(toml)
    run = session.open_run(r)
    try:
        specs = session.plan(r, run.store)
        channels = executor.make_channels(r, run.run_id)
        ex = executor.Executor(r, run.store, run.run_id, channels)
        samples: list[tuple[float, int, int]] = []  # (time, requests answered so far, trials in flight)

        async def sample() -> None:
            while True:
                done = sum(acc["attempts"] for ch in channels.values() for acc in ch.usage._roles.values())
                samples.append((time.perf_counter(), done, ex.stats.in_flight))
                await asyncio.sleep(0.1)

        t0 = time.perf_counter()
        sampler = asyncio.create_task(sample())
        outcome = await ex.run(specs)
        wall = time.perf_counter() - t0
        sampler.cancel()
        await executor.close_channels(channels)
        rows = run.store.verdict_rows()
        calls = run.store.model_call_rows()
    finally:
        run.close()
    if outcome.status != "done":
        raise SystemExit(f"{toml.name}: the run ended {outcome.status}: {outcome.fatal}")
    valid = [x for x in rows if x.valid]
    # steady state: while every trial slot is busy (before the last trials drain the queue)
    full = [x for x in samples if x[2] >= r.exp.run.concurrency]
    steady = None
    if len(full) >= 2 and full[-1][0] > full[0][0]:
        steady = (full[-1][1] - full[0][1]) / (full[-1][0] - full[0][0])
    return {"trials": len(valid), "wall_s": wall, "trials_per_s": len(valid) / wall,
            "steady_requests_per_s": steady,
            "steady_window_s": (full[-1][0] - full[0][0]) if len(full) >= 2 else 0.0,
            "requests": sum(c["attempts"] for c in calls), "requests_per_s": sum(c["attempts"] for c in calls) / wall,
            "mean_reward": sum(x.reward for x in valid) / max(1, len(valid)),
            "invalid": sum(1 for x in rows if not x.valid)}


def _fresh_dir(tmp: Path, name: str) -> Path:
    return Path(tempfile.mkdtemp(prefix=name + "-", dir=tmp))


def warm_up(root: Path, tmp: Path, base: str) -> None:
    """One small run first, so that one-time costs (lazy imports, first parse of the data files,
    the SDK's client set-up) are not counted in the figures."""
    toml = write_toml(_fresh_dir(tmp, "warm-up"), "warm-up", base, root, ["airline", "retail"], 1, 8)
    toml.write_text(toml.read_text().replace('split = "all"', 'split = "all"\nnum_tasks = 3'))
    asyncio.run(play(toml))


def part_a(root: Path, tmp: Path, trials: int, rounds: int) -> dict:
    proc, base = start_gold(root)
    out = {}
    try:
        warm_up(root, tmp, base)
        for domain in ("airline", "retail"):
            best = None
            for i in range(rounds):
                toml = write_toml(_fresh_dir(tmp, f"a-{domain}-{i}"), f"a-{domain}", base, root, [domain], trials, 8)
                cpu0 = cpu_seconds(proc.pid)
                res = asyncio.run(play(toml))
                cpu1 = cpu_seconds(proc.pid)
                if cpu0 is not None and cpu1 is not None:  # the endpoint's share: is it the bottleneck?
                    res["endpoint_cpu_share"] = (cpu1 - cpu0) / res["wall_s"]
                if best is None or res["trials_per_s"] > best["trials_per_s"]:
                    best = res
            best["vs_tau2"] = best["trials_per_s"] / TAU2_HARNESS[domain]
            out[domain] = best
    finally:
        stop(proc)
    return out


def part_b(root: Path, tmp: Path, trials: int, delay_ms: float, concurrency: int,
           domains: list[str] | None = None) -> dict:
    proc, base = start_gold(root, delay_ms)
    try:
        warm_up(root, tmp, base)
        toml = write_toml(_fresh_dir(tmp, "b"), "b", base, root, domains or ["airline", "retail"], trials, concurrency)
        res = asyncio.run(play(toml))
    finally:
        stop(proc)
    res["ideal_requests_per_s"] = concurrency / (delay_ms / 1000)
    res["share_of_ideal"] = res["requests_per_s"] / res["ideal_requests_per_s"]
    if res["steady_requests_per_s"] is not None:
        res["steady_share_of_ideal"] = res["steady_requests_per_s"] / res["ideal_requests_per_s"]
    return res


def part_c(root: Path, tmp: Path, trials: int, delay_ms: float, concurrency: int) -> dict:
    """Peak RSS of a separate ``agentrig run`` process (its own high-water mark, from wait4)."""
    proc, base = start_gold(root, delay_ms)
    try:
        toml = write_toml(_fresh_dir(tmp, "c"), "c", base, root, ["airline", "retail"], trials, concurrency)
        exe = Path(sys.executable).with_name("agentrig")
        cmd = [str(exe)] if exe.exists() else [sys.executable, "-c", "from agentrig.cli import main; main()"]
        t0 = time.perf_counter()
        child = subprocess.Popen([*cmd, "run", str(toml), "--json"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                 env={**os.environ, KEY_ENV: KEY})
        _, status, usage = os.wait4(child.pid, 0)
        wall = time.perf_counter() - t0
        stdout = child.stdout.read()
        child.returncode = os.waitstatus_to_exitcode(status)
    finally:
        stop(proc)
    if child.returncode != 0:
        raise SystemExit(f"(c) agentrig run failed: {child.stderr.read()[-2000:]!r}")
    summary = json.loads(stdout)
    return {"trials": summary["arms"]["gold-llm"]["valid"], "wall_s": wall,
            "peak_rss_mib": usage.ru_maxrss / 1024}  # ru_maxrss is KiB on Linux


def machine() -> dict:
    cpu = platform.processor() or ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return {"nproc": os.cpu_count(), "cpu": cpu, "python": platform.python_version(),
            "platform": platform.platform(), "load_avg": os.getloadavg()[0]}


def profile(root: Path, tmp: Path, domain: str, trials: int, top: int) -> None:
    proc, base = start_gold(root)
    try:
        warm_up(root, tmp, base)
        toml = write_toml(_fresh_dir(tmp, "p"), "p", base, root, [domain], trials, 8)
        prof = cProfile.Profile()
        prof.enable()
        res = asyncio.run(play(toml))
        prof.disable()
    finally:
        stop(proc)
    print(f"{domain}: {res['trials']} trials, {res['trials_per_s']:.1f} trials/s under cProfile")
    buf = io.StringIO()
    stats = pstats.Stats(prof, stream=buf)
    stats.sort_stats("cumulative").print_stats(top)
    stats.sort_stats("tottime").print_stats(top)
    print(buf.getvalue())


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", default=os.environ.get("AGENTRIG_TAU2_DATA") or str(REPO.parent / "shared" / "tau2-data"))
    ap.add_argument("--trials", type=int, default=3, help="trials per task in (a)")
    ap.add_argument("--rounds", type=int, default=2, help="(a): best of this many runs per domain")
    ap.add_argument("--trials-b", type=int, default=2, help="trials per task in (b) and (c)")
    ap.add_argument("--delay-ms", type=float, default=200.0)
    ap.add_argument("--concurrency-b", type=int, default=64)
    ap.add_argument("--domains-b", default="airline,retail",
                    help="(b): the domains played (telecom's small state isolates the harness's request path)")
    ap.add_argument("--only", choices=("a", "b", "c"), action="append")
    ap.add_argument("--json", dest="json_out", help="also write the figures to this JSON file")
    ap.add_argument("--profile", metavar="DOMAIN", help="profile (a) on this domain and print the top functions")
    ap.add_argument("--top", type=int, default=30)
    args = ap.parse_args(argv)
    root = Path(args.data).resolve()
    if not (root / "domains").is_dir():
        print(f"error: --data {root}: no domains/ directory (a tau2-bench data root)", file=sys.stderr)
        return 2
    parts = set(args.only or ("a", "b", "c"))
    os.environ[KEY_ENV] = KEY  # the in-process runner reads the key from the environment
    with tempfile.TemporaryDirectory(prefix="agentrig-throughput-") as tmpname:
        tmp = Path(tmpname)
        if args.profile:
            profile(root, tmp, args.profile, args.trials, args.top)
            return 0
        report = {"machine": machine(), "date": time.strftime("%Y-%m-%d")}
        if "a" in parts:
            report["a"] = part_a(root, tmp, args.trials, args.rounds)
        if "b" in parts:
            report["b"] = part_b(root, tmp, args.trials_b, args.delay_ms, args.concurrency_b,
                                 args.domains_b.split(","))
        if "c" in parts:
            report["c"] = part_c(root, tmp, args.trials_b, args.delay_ms, args.concurrency_b)
    m = report["machine"]
    print(f"machine: {m['nproc']} cores, {m['cpu']}, Python {m['python']}, load {m['load_avg']:.2f}")
    if "a" in report:
        print("\n(a) instant endpoint, concurrency 8")
        print(f"{'domain':<8} {'trials':>6} {'trials/s':>9} {'req/s':>7} {'tau2 trials/s':>13} {'ratio':>6} {'target':>6}")
        for d, x in report["a"].items():
            print(f"{d:<8} {x['trials']:>6} {x['trials_per_s']:>9.1f} {x['requests_per_s']:>7.0f} "
                  f"{TAU2_HARNESS[d]:>13.1f} {x['vs_tau2']:>5.1f}x {'20x':>6}  mean reward {x['mean_reward']:.3f}"
                  + (f", endpoint process busy {x['endpoint_cpu_share']:.0%}" if "endpoint_cpu_share" in x else ""))
    if "b" in report:
        x = report["b"]
        print(f"\n(b) {args.domains_b}, {args.delay_ms:g} ms per reply, concurrency {args.concurrency_b}: {x['trials']} trials in "
              f"{x['wall_s']:.1f} s; {x['requests_per_s']:.0f} requests/s of an ideal {x['ideal_requests_per_s']:.0f} "
              f"= {x['share_of_ideal']:.0%} over the whole run (ramp-down included)")
        if x.get("steady_requests_per_s") is not None:
            print(f"    with all {args.concurrency_b} trial slots busy ({x['steady_window_s']:.1f} s): "
                  f"{x['steady_requests_per_s']:.0f} requests/s = {x['steady_share_of_ideal']:.0%} of ideal (target 90%)")
    if "c" in report:
        x = report["c"]
        print(f"\n(c) peak RSS of `agentrig run` at concurrency {args.concurrency_b}: {x['peak_rss_mib']:.0f} MiB "
              f"({x['trials']} trials, {x['wall_s']:.1f} s including start-up)")
    if args.json_out:
        Path(args.json_out).write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
