"""``agentrig run examples/airline.toml --estimate`` against the outcome of the run itself (issue 31
item 7: the estimate said 383,640 tokens, 191,820 … 767,280; the run used 1,334,988).

The example is run as written (its model ``gpt-4.1`` served by the gold endpoint, which plays every
task's gold conversation; real HTTP, the real CLI in a subprocess, the real store): the estimate
from a smoke play, and the estimate part way through the run (a copy of the example stopped by a
token budget, which is not part of comparability), must both hold the outcome — calls, tokens and
cost read from the store — inside their range, and the range must stay a useful one."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from agentrig.testing.fake_endpoint import ThreadedFakeEndpoint
from agentrig.bench.tau.scripted.gold_endpoint import GoldEndpoint

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "airline.toml"
KEY = "sk-estimate-airline-7788990011aabbcc"
AGENTRIG = str(Path(sys.executable).with_name("agentrig"))


@pytest.fixture(scope="module")
def served(tau2_root):
    with ThreadedFakeEndpoint(endpoint=GoldEndpoint(tau2_root, models=("gpt-4.1",), api_key=KEY)) as s:
        yield s


def agentrig(served, tau2_root, *args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPENAI_")}
    env.update(OPENAI_BASE_URL=served.base_url, OPENAI_API_KEY=KEY, AGENTRIG_TAU2_DATA=str(tau2_root), COLUMNS="200")
    return subprocess.run([AGENTRIG, *args], env=env, capture_output=True, text=True, timeout=600)


def estimate(served, tau2_root, exp: Path, run_dir: Path) -> dict:
    p = agentrig(served, tau2_root, "run", str(exp), "--estimate", "--json", "--dir", str(run_dir))
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout)["total"]


def outcome(run_dir: Path) -> dict[str, float]:
    """Calls, tokens and cost of every stored model call (the example's prices)."""
    price = tomllib.loads(EXAMPLE.read_text())["prices"]["gpt-4.1"]
    con = sqlite3.connect(run_dir / "trials.sqlite")
    try:
        calls, prompt, completion = con.execute(
            "SELECT count(*), sum(prompt_tokens), sum(completion_tokens) FROM model_calls").fetchone()
    finally:
        con.close()
    return {"calls": calls, "tokens": prompt + completion,
            "cost_usd": (prompt * price["input"] + completion * price["output"]) / 1e6}


def test_the_estimate_holds_the_outcome_of_the_airline_example_on_the_gold_endpoint(tmp_path, served, tau2_root):
    run_dir = tmp_path / "airline"
    # before anything is played: from a smoke play (its own directory; nothing in the run's store)
    smoke = estimate(served, tau2_root, EXAMPLE, run_dir)
    assert not (run_dir / "trials.sqlite").exists()

    # part way through: the same experiment stopped by a token budget after a few trials
    part = tmp_path / "airline_part.toml"
    text = EXAMPLE.read_text()
    assert "\nconcurrency = " in text and '# dir = "runs/airline"' in text
    part.write_text(text.replace("\nconcurrency = ", "\nmax_tokens = 60000\nconcurrency = 1 # ", 1)
                    .replace('# dir = "runs/airline"', f'dir = "{run_dir}"'), encoding="utf-8")
    p = agentrig(served, tau2_root, "run", str(part), "--json")
    assert p.returncode == 0 and json.loads(p.stdout)["status"] == "budget", p.stderr
    played = outcome(run_dir)
    resumed = estimate(served, tau2_root, EXAMPLE, run_dir)

    full = agentrig(served, tau2_root, "run", str(EXAMPLE), "--json", "--dir", str(run_dir))
    assert full.returncode == 0, full.stderr
    doc = json.loads(full.stdout)
    assert doc["status"] == "done" and doc["arms"]["gpt-4.1"]["valid"] == 30 * 4
    real = outcome(run_dir)
    assert played["tokens"] < 0.1 * real["tokens"]  # the resumed estimate saw a small part of the run

    for name, est in (("smoke", smoke), ("resumed", resumed)):
        for metric in ("calls", "tokens", "cost_usd"):
            fig = est[metric]
            assert fig["low"] <= real[metric] <= fig["high"], (name, metric, fig, real[metric])
            # a useful range: the smoke play's is ×0.5 … ×2, a few stored trials give a narrower one
            assert fig["high"] <= (4.0 if name == "smoke" else 1.5) * fig["low"], (name, metric, fig)
        # the point estimate: within 10 % of what the run used
        assert abs(est["tokens"]["estimate"] - real["tokens"]) <= 0.1 * real["tokens"], (name, est["tokens"], real)
