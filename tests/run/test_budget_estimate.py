"""``[run] max_cost`` / ``max_tokens`` and ``agentrig run --estimate``: real runs through the
gold-scripting endpoint (real HTTP, real SQLite, the real CLI in a subprocess)."""

from __future__ import annotations

import json
import math
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from agentrig.testing.fake_endpoint import ThreadedFakeEndpoint
from agentrig.bench.tau.scripted.gold_endpoint import GoldEndpoint

KEY = "sk-budget-test-5566778899aabbccddeeff"
KEY_ENV = "AGENTRIG_BUDGET_TEST_KEY"
AGENTRIG = str(Path(sys.executable).with_name("agentrig"))
IN, OUT = 1.5, 6.0  # USD per million tokens

EXPERIMENT = """\
name = "budget"
[benchmark]
domains = ["bikeshop"]
num_tasks = 3
[run]
trials = 2
seed = 5
concurrency = 1
{budget}
[user]
kind = "llm"
guidelines = "builtin"
[judge]
nl_assertions = "never"
[channel]
base_url = "{base_url}"
api_key_env = "{key_env}"
model = "gold"
{prices}
[[arms]]
name = "gold-llm"
agent = {{ kind = "llm" }}
"""
PRICES = f'[prices."gold"]\ninput = {IN}\noutput = {OUT}\n'


@pytest.fixture(scope="module")
def served():
    with ThreadedFakeEndpoint(endpoint=GoldEndpoint(None, api_key=KEY, record=False)) as s:
        yield s


def agentrig(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([AGENTRIG, *args], env={**os.environ, KEY_ENV: KEY, "COLUMNS": "200"},
                          capture_output=True, text=True, timeout=300)


def write(where: Path, served, budget: str = "", prices: str = PRICES) -> Path:
    exp = where / "budget.toml"
    exp.write_text(EXPERIMENT.format(base_url=served.base_url, key_env=KEY_ENV, budget=budget, prices=prices),
                   encoding="utf-8")
    return exp


def trial_costs(run_dir: Path) -> list[tuple[int, float]]:
    """(tokens, cost) of every stored attempt, in the order stored — read from the store's columns."""
    con = sqlite3.connect(run_dir / "trials.sqlite")
    try:
        rows = con.execute("SELECT prompt_tokens, completion_tokens FROM trials ORDER BY id").fetchall()
    finally:
        con.close()
    return [(p + c, (p * IN + c * OUT) / 1e6) for p, c in rows]


def test_max_cost_stops_the_run_keeps_trials_and_resumes(tmp_path, served):
    # a reference run tells what a trial costs
    (tmp_path / "ref").mkdir()
    ref = agentrig("run", str(write(tmp_path / "ref", served)), "--json", "--dir", str(tmp_path / "ref" / "run"))
    assert ref.returncode == 0, ref.stderr
    costs = trial_costs(tmp_path / "ref" / "run")
    assert len(costs) == 6
    limit = round(sum(c for _, c in costs[:2]) + costs[2][1] / 2, 8)  # reached by the third trial

    where = tmp_path / "b"
    where.mkdir()
    exp = write(where, served, budget=f"max_cost = {limit}")
    run_dir = where / "run"
    p = agentrig("run", str(exp), "--json", "--dir", str(run_dir))
    assert p.returncode == 0, p.stderr
    doc = json.loads(p.stdout)
    assert doc["status"] == "budget"
    assert doc["budget"]["reached"] == "max_cost" and doc["budget"]["at_start"] is False
    stored = trial_costs(run_dir)
    assert len(stored) == 3  # concurrency 1: the third trial reached the limit; nothing else was started
    assert doc["arms"]["gold-llm"]["valid"] == 3
    assert sum(c for _, c in stored) >= limit > sum(c for _, c in stored[:-1])
    assert doc["budget"]["cost_usd"] == pytest.approx(sum(c for _, c in stored), abs=1e-6)
    assert "run.max_cost was reached" in p.stderr

    # the same command again: the budget counts the stored trials, so it stops at once
    again = agentrig("run", str(exp), "--dir", str(run_dir))
    assert again.returncode == 0, again.stderr
    assert "already spent" in again.stderr and "nothing was played" in again.stderr
    assert "budget:" in again.stdout and "of max_cost" in again.stdout and "the budget stopped the run" in again.stdout
    assert len(trial_costs(run_dir)) == 3

    # a higher limit resumes the run and finishes it
    write(where, served, budget="max_cost = 100.0")
    done = agentrig("run", str(exp), "--json", "--dir", str(run_dir))
    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout)
    assert doc["status"] == "done" and doc["played"] == 3 and doc["budget"]["reached"] is None
    assert len(trial_costs(run_dir)) == 6


def test_max_tokens_and_a_missing_price(tmp_path, served):
    exp = write(tmp_path, served, budget="max_tokens = 1", prices="")
    p = agentrig("run", str(exp), "--json", "--dir", str(tmp_path / "run"))
    assert p.returncode == 0, p.stderr
    doc = json.loads(p.stdout)
    assert doc["status"] == "budget" and doc["budget"]["reached"] == "max_tokens"
    assert len(trial_costs(tmp_path / "run")) == 1

    bad = write(tmp_path, served, budget="max_cost = 1.0", prices="")
    p = agentrig("run", str(bad), "--dir", str(tmp_path / "run2"))
    assert p.returncode == 1
    assert "run.max_cost" in p.stderr and "[prices.\"gold\"]" in p.stderr and "Traceback" not in p.stderr
    assert not (tmp_path / "run2" / "trials.sqlite").exists()


def test_estimate_from_stored_trials_brackets_the_real_run(tmp_path, served):
    exp = write(tmp_path, served)
    run_dir = tmp_path / "run"
    # a partial run: trial 0 of every task (the same experiment with trials = 1: comparable)
    part = tmp_path / "part.toml"
    part.write_text(exp.read_text().replace("trials = 2", "trials = 1"), encoding="utf-8")
    assert agentrig("run", str(part), "--dir", str(run_dir)).returncode == 0
    before = trial_costs(run_dir)
    assert len(before) == 3

    p = agentrig("run", str(exp), "--estimate", "--json", "--dir", str(run_dir))
    assert p.returncode == 0, p.stderr
    est = json.loads(p.stdout)
    assert est["source"] == "run"
    assert trial_costs(run_dir) == before  # the estimate stored nothing
    arm = est["arms"][0]
    assert arm["stored"] == 3 and arm["planned"] == 6
    assert {r["role"] for r in arm["roles"]} >= {"agent", "user"}

    text = agentrig("run", str(exp), "--estimate", "--dir", str(run_dir))
    assert text.returncode == 0 and "model calls" in text.stdout and "tokens" in text.stdout

    full = agentrig("run", str(exp), "--json", "--dir", str(run_dir))
    assert full.returncode == 0, full.stderr
    real = trial_costs(run_dir)
    tokens = sum(t for t, _ in real)
    cost = sum(c for _, c in real)
    total = est["total"]
    assert total["tokens"]["low"] <= tokens <= total["tokens"]["high"]
    assert total["cost_usd"]["low"] <= cost <= total["cost_usd"]["high"]
    # a deterministic endpoint: the stratified point estimate is within 5 % of the real figures
    assert abs(total["tokens"]["estimate"] - tokens) <= 0.05 * tokens
    con = sqlite3.connect(run_dir / "trials.sqlite")
    calls = con.execute("SELECT count(*) FROM model_calls").fetchone()[0]
    con.close()
    assert total["calls"]["low"] <= calls <= total["calls"]["high"]


def test_estimate_from_a_smoke_play_stores_no_trial_and_says_tokens_only_without_prices(tmp_path, served):
    exp = write(tmp_path, served, prices="")
    run_dir = tmp_path / "run"
    p = agentrig("run", str(exp), "--estimate", "--json", "--dir", str(run_dir))
    assert p.returncode == 0, p.stderr
    est = json.loads(p.stdout)
    assert est["source"] == "smoke" and est["unpriced_models"] == ["gold"]
    assert est["total"]["cost_usd"] is None and est["total"]["tokens"]["estimate"] > 0
    assert not (run_dir / "trials.sqlite").exists()  # only the smoke play's own directory
    assert (run_dir / "smoke" / "trials.sqlite").exists()
    write(tmp_path, served, prices="", budget="max_tokens = 1000")
    text = agentrig("run", str(exp), "--estimate", "--dir", str(run_dir))
    assert "tokens only" in text.stdout and "unknown (no price)" in text.stdout
    assert "run.max_tokens = 1000: the budget will stop the run" in text.stdout
    write(tmp_path, served, prices="")
    full = agentrig("run", str(exp), "--json", "--dir", str(run_dir))
    assert full.returncode == 0, full.stderr
    tokens = sum(t for t, _ in trial_costs(run_dir))
    assert est["total"]["tokens"]["low"] <= tokens <= est["total"]["tokens"]["high"]


def test_extrapolate_uses_each_tasks_own_samples_and_widens_with_fewer():
    from agentrig.run.estimate import extrapolate

    samples = {"a": [10.0, 12.0], "b": [20.0]}
    fig = extrapolate(samples, {"a": 2, "b": 1, "c": 1}, known=100.0)
    # a: 2 × 11, b: 1 × 20, c (no sample): 1 × the mean of every sample (14)
    assert fig.estimate == pytest.approx(100 + 22 + 20 + 14)
    assert fig.low < fig.estimate < fig.high and fig.low >= 100
    wider = extrapolate({"a": [10.0, 12.0]}, {"a": 20}, known=0.0)
    narrower = extrapolate({"a": [10.0, 12.0, 10.0, 12.0, 10.0, 12.0]}, {"a": 20}, known=0.0)
    assert wider.high - wider.low > narrower.high - narrower.low
    single = extrapolate({"a": [10.0]}, {"a": 4}, known=0.0, factor=2.0)
    assert (single.low, single.estimate, single.high) == (20.0, 40.0, 80.0)
    assert extrapolate({}, {"a": 3}, known=7.0).estimate == 7.0


def test_the_usage_model_grows_with_the_square_of_the_turns_and_scales_the_predicted_calls():
    from agentrig.run.estimate_model import fit

    # a sampled trial of task a: predicted 2 calls, it made 4, each prompt 100 tokens longer
    calls = [(1000.0 + 100 * j, 10.0) for j in range(4)]
    shape = fit({("d", "a"): 2.0, ("d", "b"): 5.0}, {("arm", "d", "a", 0): (("d", "a"), calls)})
    assert shape.k == pytest.approx(2.0) and shape.p0 == pytest.approx(1000) and shape.g == pytest.approx(100)
    assert shape.size(("d", "a"), 0) == pytest.approx(4)
    assert shape.size(("d", "a"), 1) == pytest.approx(sum(p + c for p, c in calls))
    # task b: 10 calls, prompts 1000 … 1900: not 2.5 × task a's tokens, the history makes it more
    assert shape.size(("d", "b"), 1) == pytest.approx(10 * 1000 + 100 * 45 + 10 * 10)
    # no prediction for the role, or one the samples contradict: every task's size is 1
    assert fit(None, {("arm", "d", "a", 0): (("d", "a"), calls)}).size(("d", "b"), 1) == 1.0
    assert fit({("d", "a"): 0.0}, {("arm", "d", "a", 0): (("d", "a"), calls)}).k is None


def test_tasks_without_samples_share_the_error_of_one_ratio():
    from agentrig.run.estimate import extrapolate

    # 8 sampled tasks of size 1 … 8 whose usage is 10 × size ± 5 %; 40 unsampled tasks of size 4
    sizes = {f"s{i}": float(i) for i in range(1, 9)} | {f"u{i}": 4.0 for i in range(40)}
    samples = {f"s{i}": [10.0 * i * (1.05 if i % 2 else 0.95)] for i in range(1, 9)}
    fig = extrapolate(samples, {f"u{i}": 4 for i in range(40)}, known=0.0, size=sizes.__getitem__)
    ratio = sum(v for vs in samples.values() for v in vs) / 36  # the samples' usage over their sizes
    assert fig.estimate == pytest.approx(40 * 4 * 4.0 * ratio)
    # the ratio's spread is taken as at least 25 % of it, and its error is common to the 160 trials:
    # ±2 × 25 % / √8 of the whole, not that divided by √40 as independent errors would be
    assert (fig.high - fig.low) / 2 >= 2 * 0.25 / math.sqrt(8) * fig.estimate
    assert fig.high - fig.low < 0.5 * fig.estimate
