"""The Ray executor against the local one, on a real local cluster (a head and one worker node,
`ray start`ed here and ended at the end).

(a) per-trial overhead: the built-in bikeshop domain with the gold agent (no model calls, so a
    trial is pure agentrig work) played one at a time (concurrency 1) by the local executor, by
    the Ray executor's long-lived worker actors, and by one Ray *task* per trial (each task fetches
    the experiment and builds its channels, as a stateless design would): (wall - local wall) / n.
    The clock covers playing only, not joining the cluster or starting the actors (reported apart).
(b) 200 ms added to every reply of the gold endpoint, 64 trials in flight: requests/s through the
    Ray executor against the ideal 64 / 0.2 s (target ≥ 90%), next to the local executor's.

    .venv/bin/python perf/ray_executor.py [--data ROOT] [--trials 4] [--json out.json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(REPO), str(REPO / "perf")]

from throughput import KEY, KEY_ENV, start_gold, stop, write_toml  # noqa: E402

from tests.run.ray_cluster import LocalCluster  # noqa: E402

BIKESHOP = """
name = "{name}"
[benchmark]
domains = ["bikeshop"]
[run]
trials = {trials}
concurrency = 1
executor = "{executor}"
ray_address = "{address}"
[user]
kind = "scripted"
[judge]
nl_assertions = "never"
[[arms]]
name = "gold"
agent = {{ kind = "gold" }}
"""


def _ray_task_executor():
    """The Ray executor with one Ray task per trial instead of long-lived worker actors."""
    import ray

    from agentrig.run.ray.executor import RayExecutor
    from agentrig.run.ray.worker import TrialWorker

    @ray.remote(num_cpus=1)
    def play_once(data: str, run_id: str, names: dict, pads: dict, args: tuple):
        async def go():
            w = TrialWorker(data, run_id, names, pads)
            try:
                return await w.play(*args)
            finally:
                await w.aclose()

        return asyncio.run(go())

    class TaskExecutor(RayExecutor):
        def worker_count(self, planned: int) -> int:
            return 0  # no actors: every CPU is the tasks'

        async def play(self, spec):
            prefix = f"agentrig-{self.run_id}-{os.getpid()}"
            names = {eid: f"{prefix}-slots-{eid}" for eid in self.slots}
            status, value = await play_once.remote(f"{prefix}-data", self.run_id, names, self._pads,
                                                   (spec.key.arm, spec.key.domain, spec.key.task_id, spec.key.trial,
                                                    spec.seed, spec.attempt))
            assert status == "ok", value
            return value

    return TaskExecutor


async def play(toml: Path, kind: str, stats_url: str | None = None, full: int = 0) -> dict:
    """One run; with ``stats_url`` (the fake endpoint's ``/_fake/stats``) the requests it has
    received are sampled every 0.1 s, for the rate while ``full`` trials are in flight."""
    import httpx

    from agentrig.run import executor, experiment, session
    from agentrig.run.executor import Executor

    r = experiment.load(toml)
    run = session.open_run(r)
    try:
        specs = session.plan(r, run.store)
        marks: dict[str, float] = {}
        plays: list[float] = []  # the wall time of each trial's play (driver side)
        if kind == "local":
            base: type = Executor
            channels = executor.make_channels(r, run.run_id)
        else:
            from agentrig.run.ray.executor import RayExecutor

            base = RayExecutor if kind == "actors" else _ray_task_executor()
            channels = {}

        class Timed(base):  # type: ignore[misc, valid-type]
            async def _start(self, planned: int) -> None:
                await super()._start(planned)
                marks["started"] = time.perf_counter()

            async def play(self, spec):
                t = time.perf_counter()
                try:
                    return await super().play(spec)
                finally:
                    plays.append(time.perf_counter() - t)

        ex = Timed(r, run.store, run.run_id, channels)
        samples: list[tuple[float, int, int]] = []  # (time, requests received so far, trials in flight)

        async def sample() -> None:
            async with httpx.AsyncClient() as http:
                while True:
                    got = (await http.get(stats_url)).json()["chat_count"]
                    samples.append((time.perf_counter(), got, ex.stats.in_flight))
                    await asyncio.sleep(0.1)

        t0 = time.perf_counter()
        sampler = asyncio.create_task(sample()) if stats_url else None
        outcome = await ex.run(specs)
        wall = time.perf_counter() - t0
        if sampler is not None:
            sampler.cancel()
        if channels:
            await executor.close_channels(channels)
        calls = run.store.model_call_rows()
        valid = sum(1 for x in run.store.verdict_rows() if x.valid)
    finally:
        run.close()
    if outcome.status != "done":
        raise SystemExit(f"{toml.name}: the run ended {outcome.status}")
    setup = marks["started"] - t0 if marks else 0.0
    requests = sum(c["attempts"] for c in calls)
    busy = [x for x in samples if full and x[2] >= full]
    steady = None
    if len(busy) >= 2 and busy[-1][0] > busy[0][0]:  # while every trial slot is busy, as perf/throughput.py
        steady = (busy[-1][1] - busy[0][1]) / (busy[-1][0] - busy[0][0])
    warm = sorted(plays[len(plays) // 4:])  # the first quarter warms the workers (imports, domain data)
    return {"trials": valid, "wall_s": wall, "setup_s": setup, "play_s": wall - setup,
            "play_median_ms": 1000 * warm[len(warm) // 2] if warm else None,
            "requests": requests, "requests_per_s": requests / (wall - setup),
            "steady_requests_per_s": steady, "steady_window_s": busy[-1][0] - busy[0][0] if len(busy) >= 2 else 0.0}


def part_a(cluster: LocalCluster, tmp: Path, trials: int) -> dict:
    out = {}
    for kind in ("local", "local", "actors", "tasks"):  # the first local run warms this process's caches
        d = Path(tempfile.mkdtemp(prefix=f"a-{kind}-", dir=tmp))
        toml = d / "a.toml"
        toml.write_text(BIKESHOP.format(name=f"a-{kind}", trials=trials, address=cluster.address,
                                        executor="local" if kind == "local" else "ray"))
        out[kind] = asyncio.run(play(toml, kind))
    n = out["local"]["trials"]
    for kind in ("actors", "tasks"):
        out[kind]["overhead_ms_per_trial"] = out[kind]["play_median_ms"] - out["local"]["play_median_ms"]
        out[kind]["overhead_ms_per_trial_cold"] = 1000 * (out[kind]["play_s"] - out["local"]["play_s"]) / n
    return out


def part_b(cluster: LocalCluster, root: Path, tmp: Path, trials: int, delay_ms: float = 200,
           concurrency: int = 64) -> dict:
    proc, base = start_gold(root, delay_ms)
    out = {}
    try:
        for kind in ("local", "actors"):
            d = Path(tempfile.mkdtemp(prefix=f"b-{kind}-", dir=tmp))
            toml = write_toml(d, f"b-{kind}", base, root, ["airline", "retail"], trials, concurrency)
            text = toml.read_text().replace(
                "[run]\n", f'[run]\nexecutor = "{"local" if kind == "local" else "ray"}"\nray_address = "{cluster.address}"\n')
            toml.write_text(text)
            res = asyncio.run(play(toml, kind, f"{base.rstrip('/').removesuffix('/v1')}/_fake/stats", concurrency))
            res["ideal_requests_per_s"] = ideal = concurrency / (delay_ms / 1000)
            res["share_of_ideal"] = res["requests_per_s"] / ideal
            res["steady_share_of_ideal"] = (res["steady_requests_per_s"] or 0.0) / ideal
            out[kind] = res
    finally:
        stop(proc)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", default=os.environ.get("AGENTRIG_TAU2_DATA", str(REPO.parent / "shared" / "tau2-data")))
    ap.add_argument("--trials", type=int, default=4, help="trials per bikeshop task in (a)")
    ap.add_argument("--b-trials", type=int, default=3, help="trials per airline/retail task in (b)")
    ap.add_argument("--only", choices=("a", "b"), help="one part only")
    ap.add_argument("--json", help="write the figures here")
    args = ap.parse_args()
    os.environ[KEY_ENV] = KEY
    cluster = LocalCluster({k: v for k, v in os.environ.items() if k != KEY_ENV})
    try:
        with tempfile.TemporaryDirectory(prefix="ray-bench-") as tmp:
            a = part_a(cluster, Path(tmp), args.trials) if args.only != "b" else None
            b = part_b(cluster, Path(args.data), Path(tmp), args.b_trials) if args.only != "a" else None
    finally:
        left = cluster.stop()
    if a:
        print(f"(a) {a['local']['trials']} bikeshop gold trials, concurrency 1:")
        print(f"    local   {a['local']['play_s']:.2f} s; a warm trial's play: median {a['local']['play_median_ms']:.1f} ms")
    for kind in ("actors", "tasks") if a else ():
        x = a[kind]
        print(f"    {kind:<7} {x['play_s']:.2f} s; a warm trial's play: median {x['play_median_ms']:.1f} ms = "
              f"+{x['overhead_ms_per_trial']:.1f} ms over local (+{x['overhead_ms_per_trial_cold']:.1f} ms/trial "
              f"with the workers' warm-up; joining the cluster and starting the workers: {x['setup_s']:.1f} s)")
    for kind in ("local", "actors") if b else ():
        x = b[kind]
        print(f"(b) {kind:<7} {x['trials']} trials, 64 in flight, 200 ms replies: {x['requests_per_s']:.0f} requests/s "
              f"of an ideal {x['ideal_requests_per_s']:.0f} = {x['share_of_ideal']:.0%} over the whole run; "
              f"{x['steady_requests_per_s'] or 0:.0f} = {x['steady_share_of_ideal']:.0%} while all 64 are in flight "
              f"({x['steady_window_s']:.1f} s)")
    if left:
        print(f"warning: Ray processes left running: {left}")
    if args.json:
        Path(args.json).write_text(json.dumps({"a": a, "b": b}, indent=2))


if __name__ == "__main__":
    main()
