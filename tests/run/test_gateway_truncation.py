"""Silent truncation behind a gateway (issue 31, item 5).

A gateway — one base URL in front of the servers — answers none of the routes a run asks a
server's window from (Ollama's ``/api/version``, ``/api/ps``, llama.cpp's ``/props``). Against an
Ollama behind one, cutting every prompt to 2,048 tokens and answering 200, a trial whose roles each
sent one request over the window (the agent answers once, the user stops) has nothing in it to
compare a count with, and was stored as a valid pass. The run now learns the ceiling from the
trials whose count stopped growing and judges every trial against it (``run/truncation.py``).

Real HTTP to the gold-scripting endpoint with the gateway personality, real τ²-bench airline data,
the real CLI and store."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from agentrig.channel.servers import stopped_growing
from agentrig.run.truncation import CutCeilings
from agentrig.testing.fake_endpoint import ThreadedFakeEndpoint
from agentrig.bench.tau.scripted.gold_endpoint import GoldEndpoint
from agentrig.types import ModelCall, PluginEvent, TrialKey, TrialRecord, Trajectory, Usage, Verdict

sys.path.insert(0, str(Path(__file__).parent))
from test_window_truncation import KEY, airline, records, run  # noqa: E402


def gateway_gold(data: Path, window: int) -> ThreadedFakeEndpoint:
    ep = GoldEndpoint(data, api_key=KEY, personality="ollama-behind-gateway", record=True)
    ep.personality.window = window
    return ThreadedFakeEndpoint(ep)


def with_concurrency(path: Path, n: int) -> Path:
    path.write_text(path.read_text().replace("concurrency = 8", f"concurrency = {n}"))
    return path


@pytest.mark.parametrize("concurrency", [8, 1])
def test_ten_airline_tasks_behind_a_gateway_store_no_valid_trial(tmp_path, tau2_root, concurrency):
    with gateway_gold(tau2_root, 2048) as server:
        path = with_concurrency(airline(tmp_path, server.base_url, tau2_root, name="gw", num_tasks=10, trials=1),
                                concurrency)
        code, doc = run(path)
        side = [q.path for q in server.endpoint.requests if q.path.startswith("/api/")]
    assert side, "the run asks the server's window"  # and the gateway answered none of it (404)
    assert code == 1 and doc["status"] == "fatal" and doc["error"]["code"] == "PROMPT_TRUNCATED", doc
    recs = records(doc["run_dir"])
    assert recs and not [r.key.label() for r in recs if r.verdict.valid]  # never a valid result
    if concurrency > 1:  # which trials finish before the early stop depends on timing: none is valid
        return
    # the trials with one agent request over the window are judged by the ceiling the others showed
    # (task 0, played first, is one: held until the sample is complete)
    by_ceiling = [r for r in recs if "at the ceiling where the server cut the prompt of trial" in (r.verdict.invalid_cause or "")]
    assert by_ceiling, [r.verdict.invalid_cause for r in recs]
    r = by_ceiling[0]
    assert r.verdict.invalid_cause.startswith("PROMPT_TRUNCATED: the server cut role 'agent''s prompt: it counted 2,048")
    assert sum(c.role == "agent" for c in r.trajectory.model_calls) == 1
    event = next(e for e in r.trajectory.events if e.kind == "prompt_truncated")
    assert event.data["window"] == 2048 and event.data["learned_from"] != r.key.label() and "num_ctx" in event.data["fix"]


def test_a_roomy_gateway_keeps_every_gold_trial_valid(tmp_path, tau2_root):
    with gateway_gold(tau2_root, 131072) as server:
        code, doc = run(airline(tmp_path, server.base_url, tau2_root, name="roomy", num_tasks=6, trials=1))
    assert code == 0 and doc["status"] == "done", doc
    recs = records(doc["run_dir"])
    assert len(recs) == 6 and all(r.verdict.valid and r.verdict.reward == 1.0 for r in recs)
    assert not any(e.kind == "prompt_truncated" for r in recs for e in r.trajectory.events)


# ------------------------------------------------------------------ the rules themselves
def record(task: str, counts: list[tuple[str, int]], *, cut: int | None = None, window: int | None = None) -> TrialRecord:
    calls = [ModelCall(role=role, purpose=role, turn=i, model="m", usage=Usage(prompt_tokens=n, reported=True))
             for i, (role, n) in enumerate(counts)]
    events, verdict = [], Verdict(reward=1.0, termination="user_stop")
    if cut is not None:
        events = [PluginEvent(plugin="channel", turn=1, kind="prompt_truncated",
                              data={"role": "agent", "call": 1, "prompt_tokens": cut, "window": window, "fix": "F"})]
        verdict = Verdict(valid=False, termination="channel_error", invalid_cause="PROMPT_TRUNCATED: grew")
    return TrialRecord(key=TrialKey(arm="a", domain="d", task_id=task, trial=0), run_id="r", seed=1, attempt=0,
                       started_at="2026-01-01T00:00:00+00:00", duration_s=1.0,
                       trajectory=Trajectory(model_calls=calls, events=events), verdict=verdict)


def test_held_sample_trials_are_judged_against_the_ceiling_whichever_finishes_first():
    cuts = CutCeilings(lambda arm, role: "one endpoint", sample=3)
    one_request = record("0", [("user", 500), ("agent", 2048), ("user", 560)])
    assert cuts.admit("s0", one_request) == []  # held: nothing is known yet
    small = record("1", [("user", 100), ("agent", 300)])  # nothing near any window: stored at once
    assert [r.key.task_id for _, r in cuts.admit("s1", small)] == ["1"]
    out = cuts.admit("s2", record("2", [("user", 500), ("agent", 2048), ("agent", 2048)], cut=2048))
    assert [r.key.task_id for _, r in out] == ["2", "0"]
    judged = out[1][1]
    assert not judged.verdict.valid and judged.verdict.invalid_cause.startswith("PROMPT_TRUNCATED")
    assert "trial a/d/2#0" in judged.verdict.invalid_cause and judged.trajectory.events[-1].data["fix"] == "F"
    assert one_request.verdict.valid  # the stored record is a judged copy
    # past the sample, a trial is judged when it finishes
    later = cuts.admit("s3", record("3", [("agent", 1900), ("user", 400)]))
    assert not later[0][1].verdict.valid  # 1,900 ≥ 90 % of the ceiling


def test_no_ceiling_no_judgement_and_counts_away_from_the_ceiling_are_spared():
    cuts = CutCeilings(lambda arm, role: role, sample=2)
    assert cuts.admit("s", record("0", [("agent", 5000)])) == []
    out = cuts.admit("s", record("1", [("agent", 7000)]))
    assert len(out) == 2 and all(r.verdict.valid for _, r in out)  # no trial was cut: nothing learned
    cuts.learn(record("2", [("agent", 2048), ("agent", 2048)], cut=2048))
    for n in (1500, 5000):  # under 90 % of the ceiling, or clearly past it: not at the ceiling
        assert cuts.judge(record("3", [("agent", n)])).verdict.valid
    assert cuts.judge(record("4", [("user", 2048)])).verdict.valid  # another endpoint (here: role) of its own
    # a cut against a window the server told teaches nothing: that window already judges every trial
    told = CutCeilings(lambda arm, role: role)
    told.learn(record("5", [("agent", 2048)], cut=2048, window=2048))
    assert told.ceilings == {} and told.judge(record("6", [("agent", 2048)])).verdict.valid
    assert cuts.flush() == []


def test_the_doctor_and_the_run_share_one_growth_rule():
    # the doctor: ~200 and ~4000 tokens counted 180 and 2048 — grew 1,868 of 3,800: cut
    assert stopped_growing(3800, 180, 2048, share=0.5)
    assert not stopped_growing(3800, 180, 3900, share=0.5)
    # the run: a conversation that grew 80 characters (20 tokens) and counted no more
    assert stopped_growing(20, 2048, 2048, share=0) and not stopped_growing(20, 2048, 2049, share=0)
    assert not stopped_growing(11, 2048, 2048, share=0)  # too small a growth to tell
