"""Does ``agentrig instability`` find one wrong argument of many? (issue 26; figures in docs/consistency.md)

A run of τ² airline (real data: ``AGENTRIG_TAU2_DATA`` or ``--data``) is played by the LLM agent
through the gold endpoint in noisy mode ``one``: at known (task, step) pairs, a sampled request
gets the gold call with ONE argument corrupted, the rest kept, with probability 0.5. The pairs
cover calls of 1, 2, 3, 4 and 11 arguments. k trials per task at temperature 0.5, then
``agentrig instability`` with 5 samples per step. For each noise seed it prints:

- precision and recall of the unstable steps at the default threshold, by the decision-level
  figure (what ``instability`` reports) and by the graded similarity (1 − mean pairwise
  similarity: the figure before issue 26, kept as a secondary figure);
- the mean step instability of the injected steps by argument count, both ways;
- on how many tasks ``analyze``'s divergence step and ``instability``'s fork step agree;
- the validation sentence.

    .venv/bin/python perf/instability_many_arguments.py [--seeds 0,1,2] [--trials 4] [--data DIR]
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import statistics
import sys
import tempfile
from collections import defaultdict
from pathlib import Path

from rich.console import Console

from agentrig.analysis.instability import load_unstable_steps
from agentrig.analysis.instability_report import DEFAULT_THRESHOLD
from agentrig.commands.analyze import analyze_command
from agentrig.commands.instability import instability_command
from agentrig.commands.run import run_command
from agentrig.testing._noise import Noise
from agentrig.testing.fake_endpoint import ThreadedFakeEndpoint
from agentrig.bench.tau.scripted.gold_endpoint import GoldEndpoint

KEY_ENV = "AGENTRIG_BENCH_KEY"
KEY = "sk-bench-many-args-0123456789"
# (task, gold step) → arguments of the gold call there: 12 pairs, one per task
INJECTED = {("4", 1): 1, ("3", 0): 1, ("40", 1): 2, ("17", 1): 2, ("9", 0): 3, ("33", 2): 3, ("7", 2): 4,
            ("11", 0): 4, ("15", 0): 4, ("14", 1): 11, ("20", 0): 11, ("23", 1): 11}
EXP = """
name = "many-args"
[benchmark]
data = "{data}"
domains = ["airline"]
[run]
trials = {trials}
seed = {seed}
concurrency = 16
[user]
kind = "llm"
[judge]
nl_assertions = "never"
[channel]
base_url = "{base_url}"
api_key_env = "{key_env}"
[roles.agent]
model = "gold"
temperature = 0.5
[roles.user]
model = "gold"
[[arms]]
name = "llm"
agent = {{ kind = "llm" }}
"""


def _pr(found: set, truth: set) -> tuple[float, float]:
    hits = found & truth
    return len(hits) / max(1, len(found)), len(hits) / max(1, len(truth))


def one(data: Path, seed: int, trials: int, tmp: Path) -> dict:
    noise = Noise(p=0.5, seed=seed, steps={f"airline/{t}": (s,) for t, s in INJECTED}, mode="one")
    endpoint = GoldEndpoint(data, api_key=KEY, noise=noise)
    with ThreadedFakeEndpoint(endpoint=endpoint) as served:
        exp = tmp / f"exp{seed}.toml"
        exp.write_text(EXP.format(data=data, trials=trials, seed=seed, base_url=served.base_url, key_env=KEY_ENV),
                       encoding="utf-8")
        run_dir = tmp / f"run{seed}"
        with contextlib.redirect_stdout(io.StringIO()):
            assert run_command(exp, run_dir=run_dir, as_json=True, out=Console(file=io.StringIO())) == 0
        buf = io.StringIO()
        with contextlib.redirect_stdout(buf):
            assert instability_command(run_dir, arm=None, tasks=None, samples=5, temperature=0.5, max_steps=15,
                                       concurrency=None, only_estimate=False, as_json=True,
                                       out=Console(file=io.StringIO())) == 0
    report = json.loads(buf.getvalue())["reports"][0]
    buf = io.StringIO()
    assert analyze_command(run_dir, arm=None, as_json=True, out=Console(file=buf, width=160)) == 0
    diverge = {c["task_id"]: c["diverge_step"] for c in json.loads(buf.getvalue())["arms"]["llm"]["consistency"]}
    truth = set(INJECTED)
    found = {(t["task_id"], s) for t in report["tasks"] for s in t["unstable_steps"]}
    # the graded figure, per (task, step): 1 − consistency averaged over the task's trials
    graded: dict[tuple, list[float]] = defaultdict(list)
    decided: dict[tuple, list[float]] = defaultdict(list)
    for s in load_unstable_steps(run_dir):
        graded[(s.task_id, s.step)].append(1 - s.consistency)
        decided[(s.task_id, s.step)].append(s.instability)
    found_graded = {k for k, v in graded.items() if statistics.fmean(v) >= DEFAULT_THRESHOLD}
    by_args: dict[int, dict[str, list[float]]] = defaultdict(lambda: {"decision": [], "graded": []})
    for k, n in INJECTED.items():
        by_args[n]["decision"].append(statistics.fmean(decided[k]))
        by_args[n]["graded"].append(statistics.fmean(graded[k]))
    agree = sum(1 for t in report["tasks"] if diverge.get(t["task_id"]) == t["fork_step"])
    return {"seed": seed, "tasks": len(report["tasks"]), "decision": _pr(found, truth),
            "graded": _pr(found_graded, truth), "by_args": dict(by_args), "agree": agree,
            "sentence": report["validation"]["sentence"]}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", default="0,1,2")
    ap.add_argument("--trials", type=int, default=4)
    ap.add_argument("--data", default=os.environ.get("AGENTRIG_TAU2_DATA", "../shared/tau2-data"))
    args = ap.parse_args()
    data = Path(args.data).resolve()
    if not (data / "domains" / "airline").is_dir():
        print(f"--data {data}: no τ²-bench data root there (set AGENTRIG_TAU2_DATA)", file=sys.stderr)
        return 1
    os.environ[KEY_ENV] = KEY
    print(f"τ² airline, {len(INJECTED)} injected (task, step) pairs, mode one, p 0.5, k {args.trials}, "
          f"5 samples, threshold {DEFAULT_THRESHOLD}")
    with tempfile.TemporaryDirectory() as tmp:
        for seed in (int(s) for s in args.seeds.split(",")):
            r = one(data, seed, args.trials, Path(tmp))
            d, g = r["decision"], r["graded"]
            print(f"seed {seed}: decision-level precision {d[0]:.2f} recall {d[1]:.2f} | graded precision "
                  f"{g[0]:.2f} recall {g[1]:.2f} | analyze/instability agree on {r['agree']}/{r['tasks']} tasks")
            for n in sorted(r["by_args"]):
                v = r["by_args"][n]
                print(f"  {n:>2} argument(s): step instability decision {min(v['decision']):.3f}–"
                      f"{max(v['decision']):.3f}, graded {min(v['graded']):.3f}–{max(v['graded']):.3f}")
            print(f"  {r['sentence']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
