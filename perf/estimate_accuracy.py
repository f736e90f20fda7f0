"""How close `agentrig run --estimate` comes to what the run then uses (issue 31 item 7).

For each τ² domain: examples/airline.toml with its domain swapped in (and a judge model where
tasks have NL assertions; the model `gpt-4.1` served by the gold endpoint, which plays every
task's gold conversation), then

1. `--estimate` in a fresh run directory (from a smoke play);
2. a copy of the experiment stopped by a token budget at about 5 % of that estimate
   (concurrency 1), and `--estimate` again (from the stored trials);
3. the full run; its calls, tokens and cost (the example's prices) read from the store.

Prints a markdown table: each estimate with its range, its error against the outcome and whether
the range holds it.

    AGENTRIG_TAU2_DATA=DIR .venv/bin/python perf/estimate_accuracy.py [--domains airline,retail,telecom]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
from pathlib import Path

from agentrig.bench.tau.data import load_tasks
from agentrig.bench.tau.judge import needs_nl_judge
from agentrig.testing.fake_endpoint import ThreadedFakeEndpoint
from agentrig.bench.tau.scripted.gold_endpoint import GoldEndpoint

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from tests.run.test_estimate_airline import outcome  # noqa: E402 - the test's own reading of the store

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "airline.toml"
KEY = "sk-estimate-accuracy-0011223344556677"
AGENTRIG = str(Path(sys.executable).with_name("agentrig"))


def agentrig(base_url: str, data: str, *args: str) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPENAI_")}
    env.update(OPENAI_BASE_URL=base_url, OPENAI_API_KEY=KEY, AGENTRIG_TAU2_DATA=data)
    p = subprocess.run([AGENTRIG, *args, "--json"], env=env, capture_output=True, text=True)
    if p.returncode != 0:
        raise SystemExit(f"agentrig {' '.join(args)} exited {p.returncode}:\n{p.stderr[-2000:]}")
    return json.loads(p.stdout)


def cell(fig: dict, real: float, money: bool = False) -> str:
    fmt = (lambda v: f"${v:,.2f}") if money else (lambda v: f"{v:,.0f}")
    held = "✓" if fig["low"] <= real <= fig["high"] else "✗"
    error = (fig["estimate"] - real) / real * 100 if real else 0.0
    return f"{fmt(fig['estimate'])} ({fmt(fig['low'])} … {fmt(fig['high'])}) {error:+.1f} % {held}"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", default=os.environ.get("AGENTRIG_TAU2_DATA", "../shared/tau2-data"))
    ap.add_argument("--domains", default="airline,retail,telecom")
    args = ap.parse_args()
    data = str(Path(args.data).resolve())
    print(f"machine: {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}")
    print("| domain | trials | estimate from | stored trials | tokens: estimate (range) error, held | "
          "cost | calls |")
    print("|---|---:|---|---:|---|---|---|")
    with ThreadedFakeEndpoint(endpoint=GoldEndpoint(data, models=("gpt-4.1",), api_key=KEY)) as served, \
            tempfile.TemporaryDirectory() as tmp:
        for domain in args.domains.split(","):
            exp = Path(tmp) / f"{domain}.toml"
            run_dir = Path(tmp) / f"run-{domain}"
            text = EXAMPLE.read_text().replace('domains = ["airline"]', f'domains = ["{domain}"]')
            text = text.replace('name = "airline"', f'name = "{domain}"')
            if any(needs_nl_judge(t) for t in load_tasks(data, domain)):  # the judge is asked too
                text += '\n[roles.judge]\nmodel = "gpt-4.1"\n'
            exp.write_text(text)
            smoke = agentrig(served.base_url, data, "run", str(exp), "--estimate", "--dir", str(run_dir))
            budget = int(0.05 * smoke["total"]["tokens"]["estimate"])
            part = Path(tmp) / f"{domain}_part.toml"
            part.write_text(exp.read_text().replace("\nconcurrency = ", f"\nmax_tokens = {budget}\nconcurrency = 1 # ", 1))
            agentrig(served.base_url, data, "run", str(part), "--dir", str(run_dir))
            resumed = agentrig(served.base_url, data, "run", str(exp), "--estimate", "--dir", str(run_dir))
            stored = sum(a["stored"] for a in resumed["arms"])
            done = agentrig(served.base_url, data, "run", str(exp), "--dir", str(run_dir))
            real = outcome(run_dir)
            trials = sum(a["valid"] for a in done["arms"].values())
            for source, est, n in (("smoke play", smoke, 0), ("stored trials", resumed, stored)):
                t = est["total"]
                print(f"| {domain} | {trials} | {source} | {n} | {cell(t['tokens'], real['tokens'])} | "
                      f"{cell(t['cost_usd'], real['cost_usd'], money=True)} | {cell(t['calls'], real['calls'])} |",
                      flush=True)
            print(f"| {domain} | {trials} | **outcome** | | {real['tokens']:,} | ${real['cost_usd']:,.2f} | "
                  f"{real['calls']:,} |", flush=True)


if __name__ == "__main__":
    main()
