"""AppWorld trials per second through the runner, with pooled workers.

The synthetic AppWorld tasks (built into a temporary directory, or ``--data``), played by
``agentrig run`` in-process exactly as a run plays them (the executor, a pooled worker per slot,
AppWorld's evaluation, one store transaction per trial), for:

- the ``oracle`` arm (no model: the engine alone), and
- the LLM code agent against the scripted endpoint (three model calls and three executions a trial),

each at ``workers`` = 1 and 2 (concurrency = workers). Printed per setting: trials/s, and the
engine-bound ideal — trials/s if the workers did nothing but AppWorld's own work (the open, execute
and evaluate seconds the trials' events record), ``workers / mean engine seconds per trial`` — with
the ratio. The workers' start (AppWorld's import and first, cold world: ~1–3 s each) is in the
clock: ``--trials`` per task sets how much it weighs.

    .venv/bin/python perf/appworld_throughput.py [--trials 8] [--python PY]
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import platform
import tempfile
import textwrap
import time
from pathlib import Path

from rich.console import Console

from agentrig.bench.appworld import env as aw_env
from agentrig.bench.appworld.synthetic import build
from agentrig.commands.run import run_command
from agentrig.store.store import Store
from agentrig.bench.appworld.scripted.appworld_endpoint import AppWorldEndpoint
from agentrig.testing.fake_endpoint import ThreadedFakeEndpoint

KEY_ENV = "AGENTRIG_BENCH_APPWORLD_KEY"


def one(tmp: Path, root: Path, python: Path, url: str, agent: str, workers: int, trials: int) -> tuple[float, float, int]:
    name = f"tp-{agent}-{workers}"
    exp = tmp / f"{name}.toml"
    roles = '\nroles = { agent = { model = "appworld-solution" } }' if agent == "llm" else ""
    exp.write_text(textwrap.dedent(f"""\
        name = "{name}"
        [benchmark]
        kind = "appworld"
        data = "{root}"
        python = "{python}"
        workers = {workers}
        [run]
        trials = {trials}
        concurrency = {workers}
        dir = "{tmp / name}"
        [channel]
        base_url = "{url}"
        api_key_env = "{KEY_ENV}"
        model = "appworld-solution"
        [[arms]]
        name = "{agent}"
        agent = {{ kind = "{agent}" }}{roles}
        """))
    t0 = time.perf_counter()
    with contextlib.redirect_stdout(io.StringIO()):  # run --json's document
        assert run_command(exp, as_json=True, out=Console(file=io.StringIO())) == 0
    wall = time.perf_counter() - t0
    with Store.open(tmp / name / "trials.sqlite", create=False) as store:
        recs = list(store.records(valid=True))
    assert all(r.verdict.reward == 1.0 for r in recs)
    engine = 0.0
    for r in recs:
        for e in r.trajectory.events:
            if e.plugin == "world" and e.data.get("seconds") is not None:
                engine += float(e.data["seconds"])
    return len(recs) / wall, workers / (engine / len(recs)), len(recs)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--trials", type=int, default=8, help="trials per task (5 tasks)")
    ap.add_argument("--python", help="AppWorld's python (default: agentrig appworld setup's venv)")
    args = ap.parse_args()
    python = aw_env.resolve_python(args.python)
    status = aw_env.check(python)
    if not status.ok:
        raise SystemExit(f"{status.problem}; {status.fix}")
    os.environ[KEY_ENV] = "sk-bench-appworld-0000"
    print(f"machine: {platform.machine()} {os.cpu_count()} cores, Python {platform.python_version()}, "
          f"appworld {status.appworld}, load {os.getloadavg()[0]:.1f}")
    with tempfile.TemporaryDirectory() as t:
        tmp = Path(t)
        root = build(python, tmp / "aw")
        with ThreadedFakeEndpoint(endpoint=AppWorldEndpoint(root, api_key=os.environ[KEY_ENV])) as served:
            for agent in ("oracle", "llm"):
                for workers in (1, 2):
                    rate, ideal, n = one(tmp, root, python, served.base_url, agent, workers, args.trials)
                    print(f"{agent:6s} workers={workers}: {rate:5.2f} trials/s over {n} trials; engine-bound ideal "
                          f"{ideal:5.2f} trials/s; {100 * rate / ideal:4.0f}% of it")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
