"""Decision instability (issue 13 §1, §4) on τ² tasks, through the real stack.

A run of the built-in bikeshop domain is played by the LLM agent (alone, and with the memory
plug-in appending a reminder to the last user message of every call) through the gold endpoint in
NOISY mode (known wrong actions at chosen steps of chosen tasks, when sampled at temperature > 0),
six reruns per task at temperature 0.5; then ``agentrig instability`` resamples every decision
step. The truth is known, so:

- the analyzer finds the injected unstable steps (precision and recall ≥ 0.9) and every other
  step is stable (instability exactly 0: the gold agent is deterministic there);
- the reruns fork at the injected steps; the validation finds a positive rank correlation with a
  bootstrap CI above 0;
- the rebuilt request of every step is the request the endpoint received, byte for byte;
- resume: a second command asks nothing; faults: failed calls are retried or left unstored,
  never scored (the figures after a faulty pass + a clean resume equal the clean figures).
"""

from __future__ import annotations

import io
import json
import shutil
from pathlib import Path

import pytest
from rich.console import Console
from typer.testing import CliRunner

from agentrig.analysis.instability import action_of, consistency, load_unstable_steps, similarity, steps_of
from agentrig.analysis.instability_report import fork_step, instability_report, spearman
from agentrig.cli import app
from agentrig.commands.run import run_command
from agentrig.commands.instability import instability_command
from agentrig.run.resample import _requests
from agentrig.store.store import Store
from agentrig.testing._noise import Noise
from agentrig.testing.fake_endpoint import ThreadedFakeEndpoint
from agentrig.bench.tau.scripted.gold_endpoint import GoldEndpoint

KEY_ENV = "AGENTRIG_INSTAB_KEY"
KEY = "sk-instab-test-0123456789abcdef"
# (task, gold step): write steps and closing texts, so a wrong action there can change the outcome
INJECTED = {("rent_city_bike", 3), ("cancel_ebike_full_refund", 3), ("extend_city_rental", 3),
            ("swap_road_for_ebike", 4), ("refuse_ebike_minor", 2), ("late_cancel_club_no_fee", 4),
            ("book_repair_not_on_monday", 3)}
NOISE = Noise(p=0.5, seed=3, steps={f"bikeshop/{t}": (s,) for t, s in INJECTED})
EXP = """
name = "noisy"
[benchmark]
domains = ["bikeshop"]
[run]
trials = 6
seed = 11
concurrency = 16
[user]
kind = "llm"
guidelines = "builtin"
[judge]
nl_assertions = "never"
[channel]
base_url = "{base_url}"
api_key_env = "{key_env}"
max_attempts = 4
backoff_base_s = 0.01
backoff_max_s = 0.02
[roles.agent]
model = "gold"
temperature = 0.5
[roles.user]
model = "gold"
[roles.memory]
model = "gold"
[prices.gold]
input = 1.5
output = 6.0
[[arms]]
name = "llm"
agent = {{ kind = "llm" }}
[[arms]]
name = "llm-mem"
agent = {{ kind = "llm" }}
plugins = [{{ kind = "memory", mode = "always_inject", injection = "user_append" }}]
"""
ARMS = ("llm", "llm-mem")


def _resample(run_dir: Path, **kw) -> dict:
    buf = io.StringIO()
    args = dict(arm=None, tasks=None, samples=5, temperature=0.5, max_steps=15, concurrency=None,
                only_estimate=False, as_json=True)
    args.update(kw)
    import contextlib

    with contextlib.redirect_stdout(buf):
        assert instability_command(run_dir, out=Console(file=io.StringIO()), **args) == 0
    return json.loads(buf.getvalue())


@pytest.fixture(scope="module")
def noisy(tmp_path_factory):
    import os

    tmp = tmp_path_factory.mktemp("instability")
    os.environ[KEY_ENV] = KEY
    endpoint = GoldEndpoint(None, api_key=KEY, noise=NOISE, record=True)
    with ThreadedFakeEndpoint(endpoint=endpoint) as served:
        exp = tmp / "noisy.toml"
        exp.write_text(EXP.format(base_url=served.base_url, key_env=KEY_ENV), encoding="utf-8")
        run_dir = tmp / "run"
        assert run_command(exp, run_dir=run_dir, as_json=True, out=Console(file=io.StringIO())) == 0
        played = [r for r in endpoint.requests if r.headers.get("x-agentrig-role") == "agent"]
        pristine = tmp / "pristine"
        shutil.copytree(run_dir, pristine)
        first = _resample(run_dir)
        second = _resample(run_dir)
        yield {"run_dir": run_dir, "pristine": pristine, "played": played, "first": first, "second": second,
               "served": served, "endpoint": endpoint}
    os.environ.pop(KEY_ENV, None)


def test_similarity_weights_and_consistency():
    call = {"kind": "tool", "name": "book", "arguments": {"a": 1, "b": "x"}}
    assert similarity(call, call) == 1.0
    assert similarity(call, {**call, "arguments": {"a": 1, "b": "y"}}) == pytest.approx(0.75)
    assert similarity(call, {**call, "name": "cancel"}) == 0.0
    assert similarity(call, {"kind": "text", "text": "book"}) == 0.0
    assert similarity({"kind": "text", "text": "the bike is booked"}, {"kind": "text", "text": "booked, the bike is"}) == 1.0
    assert similarity({"kind": "text", "text": "the bike is booked"}, {"kind": "text", "text": "no idea"}) < 0.5
    two = {**call, "calls": [{"name": "book", "arguments": {"a": 1, "b": "x"}}, {"name": "pay", "arguments": {}}]}
    assert similarity(two, call) == pytest.approx(0.5)  # the second call is missing on one side
    assert consistency(call, [call, call]) == 1.0
    # taken + 3 samples, one of them wrong tool: 3 of 6 pairs score 0
    assert consistency(call, [call, call, {**call, "name": "x"}]) == pytest.approx(0.5)
    assert spearman([1, 2, 3, 4], [10, 20, 30, 40]) == pytest.approx(1.0)
    assert spearman([1, 2, 3], [5, 5, 5]) is None
    assert spearman([1, 1, 2, 3], [1, 2, 2, 3]) == pytest.approx(5 / 6)  # ties take their average rank
    assert spearman([3, 2, 1, 0], [0, 1, 2, 3]) == pytest.approx(-1.0)
    a, b = {"kind": "text", "text": "hi"}, {"kind": "text", "text": "completely different words"}
    assert fork_step([[a, a], [a, b]]) == 1 and fork_step([[a, a], [a, a]]) is None and fork_step([[a], [a, a]]) == 1


def test_rebuilt_requests_are_the_requests_the_endpoint_received(noisy):
    by_trial: dict[tuple, list] = {}
    for r in noisy["played"]:
        key = (r.headers["x-agentrig-arm"], r.headers["x-agentrig-task"], int(r.headers["x-agentrig-trial"]))
        by_trial.setdefault(key, []).append(r.json)
    with Store.open(noisy["pristine"] / "trials.sqlite", create=False) as store:
        records = list(store.records(valid=True))
    checked = reminded = 0
    for record in records:
        steps = steps_of(record)
        rebuilt = _requests(record.trajectory, {m.call for _s, _t, m in steps})
        bodies = by_trial[(record.key.arm, record.key.task_id, record.key.trial)]
        assert len(bodies) == len(steps) == len(rebuilt)
        for (step, _turn, m), body in zip(steps, bodies):
            messages, tools, params = rebuilt[m.call]
            assert messages == body["messages"] and tools == body["tools"]
            assert params == {"parallel_tool_calls": False} == {"parallel_tool_calls": body["parallel_tool_calls"]}
            checked += 1
            reminded += "its first step is" in json.dumps(messages)
    assert checked > 600
    assert reminded > 100  # the memory arm's reminders (appended to a user message) were rebuilt too


def _report(result: dict, arm: str) -> dict:
    return next(r for r in result["reports"] if r["arm"] == arm)


@pytest.mark.parametrize("arm", ARMS)
def test_the_analyzer_finds_the_injected_unstable_steps(noisy, arm):
    steps = load_unstable_steps(noisy["run_dir"], arm)
    steps = [s for s in steps if len(s.samples) == 5]  # (a later test adds a sixth sample to one task)
    assert steps and {s.temperature for s in steps} == {0.5} and {s.arm for s in steps} == {arm}
    report = _report(noisy["first"], arm)
    found = {(t["task_id"], s) for t in report["tasks"] for s in t["unstable_steps"]}
    true_positive = found & INJECTED
    precision, recall = len(true_positive) / len(found), len(true_positive) / len(INJECTED)
    assert precision >= 0.9 and recall >= 0.9, (found, INJECTED)
    # every step that was not injected is stable: the scripted agent is deterministic there
    stable = [s for s in steps if (s.task_id, s.step) not in INJECTED]
    assert stable and all(s.instability == 0.0 for s in stable)
    noisy_steps = [s for s in steps if (s.task_id, s.step) in INJECTED]
    assert sum(s.instability > 0 for s in noisy_steps) / len(noisy_steps) > 0.8
    # the per-trajectory figures name the injected step as the worst
    for tj in report["trajectories"]:
        if tj["max"] > 0:
            assert (tj["task_id"], tj["max_step"]) in INJECTED


@pytest.mark.parametrize("arm", ARMS)
def test_reruns_fork_at_the_injected_steps_and_the_validation_sees_it(noisy, arm):
    report = _report(noisy["first"], arm)
    injected_step = dict(INJECTED)
    forked = [t for t in report["tasks"] if t["fork_step"] is not None]
    assert forked and all(t["fork_step"] == injected_step[t["task_id"]] for t in forked)
    mixed = {t["task_id"] for t in report["tasks"] if 0 < t["c"] < t["n"]}
    assert mixed and mixed <= set(injected_step)  # only noisy tasks have mixed outcomes
    v = report["validation"]
    # ρ over all tasks (the untouched ones sit at (0, 0)) is positive, and it is labelled as such;
    # the headline ρ is over the injected tasks only — the ones with any instability or mixed outcome
    assert v["rho_all"] > 0 and v["ci_all"][0] > 0, v
    assert v["tasks"] == len(INJECTED) and v["tasks_all"] == len(report["tasks"]) > v["tasks"]
    assert f"over {len(INJECTED)} tasks with any instability or mixed outcome" in v["sentence"]
    assert "over all: ρ = " in v["sentence"] and f"over {v['tasks_all']} tasks)" in v["sentence"]
    assert v["at_or_before_fork"] == v["forked_tasks"] == len(forked)


def test_costs_are_estimated_before_and_counted_after_and_a_rerun_resumes(noisy):
    first, second = noisy["first"], noisy["second"]
    for i, arm in enumerate(ARMS):
        est = first["estimate"][i]
        n_steps = _report(first, arm)["steps"]
        assert est["arm"] == arm and est["calls"] == 5 * n_steps and est["stored_samples"] == 0
        usage = first["totals"][i]["usage"]
        assert first["totals"][i]["stored"] == 5 * n_steps == usage["requests"] and first["totals"][i]["failed"] == 0
        assert usage["prompt_tokens"] == est["prompt_tokens"] > 0  # the same requests: the same prompt sizes
        assert est["cost_usd"] == pytest.approx((est["prompt_tokens"] * 1.5 + est["completion_tokens"] * 6.0) / 1e6)
        assert usage["cost_usd"] == pytest.approx((usage["prompt_tokens"] * 1.5 + usage["completion_tokens"] * 6.0) / 1e6)
        assert second["estimate"][i]["calls"] == 0 and second["estimate"][i]["stored_samples"] == 5 * n_steps
        assert second["totals"][i]["usage"] is None  # nothing asked
    assert second["reports"] == first["reports"]
    more = _resample(noisy["run_dir"], arm="llm", samples=6, tasks="rent_city_bike")  # one more per step, one task
    assert more["estimate"][0]["calls"] == more["estimate"][0]["steps"] == more["totals"][0]["stored"] > 0


NOISY_TASKS = ",".join(sorted({t for t, _ in INJECTED}))  # the tasks whose figures can differ


def test_failed_calls_are_retried_or_left_out_never_scored(noisy, tmp_path):
    run_dir = tmp_path / "faulty"
    shutil.copytree(noisy["pristine"], run_dir)
    endpoint = noisy["endpoint"]
    endpoint.fault_rate, endpoint.fault_kinds = 0.5, ("server_error", "malformed", "rate_limit")
    try:
        faulty = _resample(run_dir, arm="llm", samples=3, tasks=NOISY_TASKS)
    finally:
        endpoint.fault_rate = 0.0
    totals = faulty["totals"][0]
    assert totals["usage"]["retries"] > 0 and totals["failed"] > 0  # 4 attempts at 50% faults: some give up
    assert totals["stored"] + totals["failed"] == faulty["estimate"][0]["calls"]
    resumed = _resample(run_dir, arm="llm", samples=3, tasks=NOISY_TASKS)
    assert resumed["estimate"][0]["calls"] == totals["failed"]
    clean_dir = tmp_path / "clean"
    shutil.copytree(noisy["pristine"], clean_dir)
    clean = _resample(clean_dir, arm="llm", samples=3, tasks=NOISY_TASKS)
    assert resumed["reports"] == clean["reports"]  # the faults changed nothing that was scored


def test_cli_estimate_stores_nothing_and_bad_input_is_one_message(noisy, tmp_path):
    run_dir = tmp_path / "est"
    shutil.copytree(noisy["pristine"], run_dir)
    res = CliRunner().invoke(app, ["instability", str(run_dir), "--estimate", "--samples", "2"])
    assert res.exit_code == 0 and "calls to make" in res.output and "tokens" in res.output and "$" in res.output
    assert load_unstable_steps(run_dir) == []
    res = CliRunner().invoke(app, ["instability", str(run_dir), "--temperature", "0"])
    assert res.exit_code == 1 and "--temperature 0" in res.output and "Traceback" not in res.output
    res = CliRunner().invoke(app, ["instability", str(run_dir), "--arm", "nope"])
    assert res.exit_code == 1 and "no such arm" in res.output


def test_actions_of_stored_messages():
    from agentrig.types import ToolCall

    bad = ToolCall(id="1", name="f", arguments=None, arguments_raw="{oops", arguments_error="x")
    assert action_of([bad], None) == {"kind": "tool", "name": "f", "arguments": "!{oops"}
    assert action_of([], None) == {"kind": "text", "text": ""}


def test_analyze_and_the_report_show_the_unstable_steps_next_to_the_forks(noisy):
    from agentrig.commands.analyze import analyze_command
    from agentrig.analysis.summary import Analysis
    from agentrig.report.write import write_report

    run_dir = noisy["run_dir"]
    buf = io.StringIO()
    assert analyze_command(run_dir, arm=None, as_json=True, out=Console(file=buf, width=160)) == 0
    data = json.loads(buf.getvalue())
    Analysis.model_validate(data)  # the JSON stays one documented model, instability included
    sentence = data["instability"][0]["validation"]["sentence"]
    assert sentence.startswith("instability ") and "with any instability or mixed outcome; over all: ρ = " in sentence
    # one definition of where reruns part: analyze's divergence step is instability's fork step, task by task
    for report in data["instability"]:
        arm = data["arms"][report["arm"]]
        diverge = {(c["domain"], c["task_id"]): c["diverge_step"] for c in arm["consistency"]}
        assert report["tasks"] and all(diverge[(t["domain"], t["task_id"])] == t["fork_step"] for t in report["tasks"])
        assert any(t["fork_step"] is not None for t in report["tasks"])
    buf = io.StringIO()
    assert analyze_command(run_dir, arm=None, as_json=False, out=Console(file=buf, width=160)) == 0
    text = buf.getvalue()
    assert "decision instability: llm (temperature 0.5" in text and "decision instability: llm-mem" in text and sentence in " ".join(text.split())
    assert "unstable steps next to the fork of the reruns" in text
    tail = text.split("unstable steps next to the fork of the reruns")[1]
    row = next(line for line in tail.splitlines() if line.startswith("cancel_ebike_full_refund"))
    assert "3 (0." in row and row.rstrip().endswith("3")  # unstable step 3, fork step 3
    html = write_report([run_dir], tmp := run_dir / "r.html").read_text(encoding="utf-8")
    assert "Decision instability of" in html and sentence in html and tmp.exists()


def test_trials_stored_before_requests_were_recorded_are_named_not_guessed(noisy, tmp_path):
    import sqlite3
    import zlib

    run_dir = tmp_path / "old"
    shutil.copytree(noisy["pristine"], run_dir)
    db = sqlite3.connect(run_dir / "trials.sqlite")
    rows = db.execute("SELECT id, record FROM trials").fetchall()
    for i, (row_id, blob) in enumerate(rows):
        if i % 2 == 0:  # half the trials as an older agentrig stored them: no agent_requests
            data = json.loads(zlib.decompress(blob))
            data["trajectory"].pop("agent_requests", None)
            db.execute("UPDATE trials SET record = ? WHERE id = ?", (zlib.compress(json.dumps(data).encode()), row_id))
    db.commit()
    db.close()
    res = CliRunner().invoke(app, ["instability", str(run_dir), "--arm", "llm", "--estimate"], env={"COLUMNS": "200"})
    assert res.exit_code == 0 and "trials cannot be resampled: they were stored before agentrig recorded" in res.output
    out = _resample(run_dir, arm="llm", samples=2, only_estimate=True)
    assert out["estimate"][0]["unrecorded_trials"] > 0 and out["estimate"][0]["calls"] > 0
    db = sqlite3.connect(run_dir / "trials.sqlite")
    for row_id, blob in db.execute("SELECT id, record FROM trials").fetchall():
        data = json.loads(zlib.decompress(blob))
        data["trajectory"].pop("agent_requests", None)
        db.execute("UPDATE trials SET record = ? WHERE id = ?", (zlib.compress(json.dumps(data).encode()), row_id))
    db.commit()
    db.close()
    res = CliRunner().invoke(app, ["instability", str(run_dir)])
    assert res.exit_code == 1 and "no trial of the run records its agent requests" in res.output
