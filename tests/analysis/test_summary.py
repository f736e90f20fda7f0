"""The Analysis of constructed runs with hand-known outcomes: every figure against hand values."""

from __future__ import annotations

import json
from math import isclose
from pathlib import Path

import numpy as np
from pydantic import BaseModel
import pytest

from agentrig.analysis.build import analyze_run
from agentrig.analysis.summary import Analysis, Estimate
from agentrig.errors import ConfigError, DataError
from agentrig.store.store import Store
from agentrig.types import (Attempt, Message, ModelCall, RewardInfo, ToolCall, Trajectory, TrialKey, TrialRecord,
                            Usage, Verdict)

N = 4
PRICES = {"m-agent": {"input": 1.0, "output": 2.0, "cached_input": 0.5}}


def _calls(trial: int, retry_cause: str | None) -> list[ModelCall]:
    attempts = ([Attempt(cause=retry_cause, status=429)] if retry_cause else []) + [Attempt()]
    agent = ModelCall(role="agent", purpose="agent", model="m-agent", latency_s=0.1 * (trial + 1), attempts=attempts,
                      usage=Usage(prompt_tokens=100, completion_tokens=20, reasoning_tokens=5, cached_tokens=40))
    user = ModelCall(role="user", purpose="user", model="m-user", latency_s=0.05, attempts=[Attempt()],
                     usage=Usage(prompt_tokens=50, completion_tokens=10))
    return [agent, user]


def record(arm: str, domain: str, task: str, trial: int, *, ok: bool, valid: bool = True, attempt: int = 0,
           termination: str | None = None, chain: tuple[str, ...] = ("lookup",), retry: str | None = None,
           duration: float | None = None) -> TrialRecord:
    key = TrialKey(arm=arm, domain=domain, task_id=task, trial=trial)
    if not valid:
        failed = ModelCall(role="agent", purpose="agent", model="m-agent", latency_s=2.0,
                           attempts=[Attempt(cause="rate_limited", status=429)] * 3, error="retries_exhausted",
                           usage=Usage(reported=False))
        return TrialRecord(key=key, run_id="r", seed=1, attempt=attempt, started_at="2026-01-01T00:00:00Z",
                           duration_s=5.0, trajectory=Trajectory(model_calls=[failed]),
                           verdict=Verdict(valid=False, invalid_cause="retries_exhausted: rate_limited",
                                           termination="channel_error"))
    messages = [Message(role="assistant", content="Hi", turn=0), Message(role="user", content="help", turn=1)]
    for i, name in enumerate(chain):
        messages.append(Message(role="assistant", turn=len(messages),
                                tool_calls=[ToolCall(id=f"c{i}", name=name, arguments={"x": 1}, arguments_raw='{"x":1}')]))
        messages.append(Message(role="tool", content="{}", tool_call_id=f"c{i}", requestor="assistant",
                                turn=len(messages)))
    v = 1.0 if ok else 0.0
    info = RewardInfo(reward=v, reward_basis=["DB", "COMMUNICATE"],
                      components={"DB": v, "ENV_ASSERTION": 1.0, "ACTION": v, "COMMUNICATE": 1.0, "NL_ASSERTION": None})
    return TrialRecord(key=key, run_id="r", seed=1, attempt=attempt, started_at="2026-01-01T00:00:00Z",
                       duration_s=float(trial + 1) if duration is None else duration,
                       trajectory=Trajectory(messages=messages, model_calls=_calls(trial, retry)),
                       verdict=Verdict(reward=v, termination=termination or "user_stop", reward_info=info))


def write_run(path: Path, records: list[TrialRecord], tasks: dict[str, list[str]], *, arms=("A",), n: int = N,
              prices: dict | None = None) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    config = {"run_id": "run-1", "name": "constructed", "data_root": None, "tasks": tasks,
              "experiment": {"arms": [{"name": a} for a in arms], "run": {"trials": n}, "prices": prices or {}}}
    (path / "config.json").write_text(json.dumps(config))
    with Store.open(path / "trials.sqlite") as store:
        store.set_meta("config", config)
        for r in records:
            assert store.append(r)
    return path


TASKS = {"d1": ["t1", "t2", "t3"], "d2": ["u1", "u2"]}


def hand_run(path: Path) -> Path:
    """d1/t1 ✓✓✓✓; d1/t2 ✓✗✓ + trial 3 invalid; d1/t3 ✗✗✗✗ (max_steps, varying chains);
    d2/u1 ✓✓✗✓ (trial 1 valid after an invalid attempt; trials 0 and 2 retried); d2/u2 ✓✓ (2, 3 missing)."""
    recs = []
    recs += [record("A", "d1", "t1", i, ok=True) for i in range(4)]
    recs += [record("A", "d1", "t2", i, ok=o) for i, o in enumerate([True, False, True])]
    recs.append(record("A", "d1", "t2", 3, ok=False, valid=False))
    recs += [record("A", "d1", "t3", i, ok=False, termination="max_steps", chain=("lookup",) * (i + 1))
             for i in range(4)]
    recs.append(record("A", "d2", "u1", 1, ok=False, valid=False))
    recs += [record("A", "d2", "u1", i, ok=o, attempt=1 if i == 1 else 0,
                    retry={0: "rate_limited", 2: "timeout"}.get(i), chain=("lookup", "write") if o else ("lookup",))
             for i, o in enumerate([True, True, False, True])]
    recs += [record("A", "d2", "u2", i, ok=True) for i in range(2)]
    return write_run(path, recs, TASKS, prices=PRICES)


@pytest.fixture(scope="module")
def hand(tmp_path_factory) -> Analysis:
    run = hand_run(tmp_path_factory.mktemp("hand") / "run")
    with Store.open(run / "trials.sqlite", create=False) as store:
        return analyze_run(store, json.loads((run / "config.json").read_text()), run_dir=str(run))


def test_counts_and_pass_hat_k_by_hand(hand):
    o = hand.arms["A"].overall
    assert (o.tasks_planned, o.tasks, o.trials_planned) == (5, 5, 20)
    assert (o.valid, o.invalid, o.missing, o.invalid_attempts) == (17, 1, 2, 2)
    assert o.invalid_causes == {"retries_exhausted: rate_limited": 2}
    assert isclose(o.mean_reward, 11 / 17)
    p1 = (1 + 2 / 3 + 0 + 3 / 4 + 1) / 5
    p2 = (1 + 1 / 3 + 0 + 3 / 6 + 1) / 5
    p3 = (1 + 0 + 0 + 1 / 4) / 4  # u2 has 2 valid trials: left out of k = 3 and counted
    p4 = (1 + 0 + 0) / 3  # t2 (3 valid) and u2 (2 valid) left out
    got = [(c.k, c.pass_hat.value, c.tasks, c.excluded) for c in o.curve]
    for (k, v, used, excl), (ek, ev, eu, ee) in zip(got, [(1, p1, 5, 0), (2, p2, 5, 0), (3, p3, 4, 1), (4, p4, 3, 2)]):
        assert (k, used, excl) == (ek, eu, ee) and isclose(v, ev)
    assert isclose(o.curve[1].pass_at, (1 + 1 + 0 + 1 + 1) / 5)
    assert isclose(o.pass_1.value, p1) and isclose(o.pass_n.value, p4)
    # Mean@4 over the tasks with 4 valid trials (t1, t3, u1) and the gap on the same tasks
    assert isclose(o.mean_at_n, (1 + 0 + 0.75) / 3)
    assert isclose(o.gap_pp.value, 100 * ((1 + 0 + 0.75) / 3 - 1 / 3))
    assert (o.pass_n_tasks, o.pass_n_excluded) == (3, 2)
    assert (o.mixed_tasks, o.mixed_fraction) == (2, 0.4)  # t2 (2 of 3) and u1 (3 of 4)


def test_domains_and_macro_by_hand(hand):
    a = hand.arms["A"]
    d1, d2 = a.domains["d1"], a.domains["d2"]
    assert isclose(d1.pass_1.value, (1 + 2 / 3 + 0) / 3) and isclose(d1.pass_n.value, 0.5)
    assert isclose(d1.gap_pp.value, 0.0) and isclose(d1.mixed_fraction, 1 / 3)
    assert (d1.valid, d1.invalid, d1.missing) == (11, 1, 0)
    assert isclose(d2.pass_1.value, (0.75 + 1) / 2) and isclose(d2.pass_n.value, 0.0)
    assert isclose(d2.gap_pp.value, 75.0) and (d2.valid, d2.invalid, d2.missing) == (6, 0, 2)
    assert d2.invalid_attempts == 1 and d2.curve[2].excluded == 1
    m = a.macro
    assert m.domains == 2
    assert isclose(m.pass_1.value, ((1 + 2 / 3) / 3 + 0.875) / 2)
    assert isclose(m.pass_n.value, 0.25) and isclose(m.gap_pp.value, 37.5)


def _estimates(obj):
    if isinstance(obj, Estimate):
        yield obj
    elif isinstance(obj, BaseModel):
        for name in type(obj).model_fields:
            yield from _estimates(getattr(obj, name))
    elif isinstance(obj, (list, tuple)):
        for x in obj:
            yield from _estimates(x)
    elif isinstance(obj, dict):
        for x in obj.values():
            yield from _estimates(x)


def test_every_interval_contains_its_point_estimate(hand):
    found = list(_estimates(hand))
    assert len(found) > 20
    for e in found:
        if e.value is not None and e.low is not None:
            assert e.low - 1e-9 <= e.value <= e.high + 1e-9, e
    o = hand.arms["A"].overall
    assert o.pass_1.low < o.pass_1.value < o.pass_1.high  # the outcomes vary: a real interval
    assert hand.bootstrap.resamples >= 2000


def test_components_terminations_and_spread(hand):
    o = hand.arms["A"].overall
    c = o.components
    assert (c["DB"].trials, c["DB"].passed, c["DB"].in_basis) == (17, 11, 17)
    assert isclose(c["ACTION"].rate, 11 / 17) and c["ACTION"].in_basis == 0
    assert (c["ENV_ASSERTION"].passed, c["COMMUNICATE"].passed, c["COMMUNICATE"].in_basis) == (17, 17, 17)
    assert c["NL_ASSERTION"].trials == 0 and c["NL_ASSERTION"].rate is None
    assert o.terminations == {"user_stop": 13, "max_steps": 4}
    assert hand.arms["A"].domains["d2"].components["DB"].passed == 5
    s = o.resources
    assert s.trials == 17 and s.tokens_mean == 180 and s.tokens_cv == 0.0
    durations = np.array([1] * 5 + [2] * 5 + [3] * 4 + [4] * 3, float)  # duration = trial + 1
    assert isclose(s.duration_mean_s, 39 / 17) and isclose(s.duration_cv, durations.std() / durations.mean())


def test_usage_per_role(hand):
    u = hand.arms["A"].figures["usage"]
    agent, user = {r.role: r for r in u.roles}["agent"], {r.role: r for r in u.roles}["user"]
    assert (agent.requests, agent.succeeded, agent.failed) == (19, 17, 2)
    assert agent.attempts == 15 + 2 * 2 + 2 * 3
    # a failed call's last attempt is no retry: 2 + 2 from the invalid trials, 1 + 1 retried calls
    assert agent.retries_by_cause == {"rate_limited": 5, "timeout": 1} and agent.retries == 6
    assert (agent.prompt_tokens, agent.completion_tokens, agent.reasoning_tokens, agent.cached_tokens) == \
        (1700, 340, 85, 680)
    # latencies 0.1 × (trial + 1) over the 17 answered calls: 5×0.1, 5×0.2, 4×0.3, 3×0.4
    assert isclose(agent.latency_p50_s, 0.2) and isclose(agent.latency_p90_s, 0.4)
    assert isclose(agent.cost_usd, 17 * (60 * 1.0 + 40 * 0.5 + 20 * 2.0) / 1e6)
    assert user.cost_usd is None and u.cost_usd is None and u.unpriced_models == ["m-user"] and u.priced
    assert user.requests == 17 and user.retries == 0


def test_reruns_and_retry_check(hand):
    r = hand.arms["A"].figures["reruns"]
    rates = [s.success_rate for s in r.reruns]
    assert [(s.trials, s.successes) for s in r.reruns] == [(5, 4), (5, 3), (4, 2), (3, 2)]
    assert isclose(rates[3], 2 / 3)
    assert (r.best, r.worst) == (0, 2) and isclose(r.spread_pp, 30.0)
    assert [s.tokens for s in r.reruns] == [900, 900, 720, 540]
    assert [s.retries for s in r.reruns] == [1, 0, 1, 0] and [s.retried_trials for s in r.reruns] == [1, 0, 1, 0]
    e = hand.arms["A"].figures["retries"]
    assert (e.retried, e.retried_failed, e.clean, e.clean_failed) == (2, 1, 15, 5)
    assert not e.enough_data and e.p_value is None and e.note.startswith("not enough data")


def test_consistency_and_failure_sections(hand):
    a = hand.arms["A"]
    consistency = a.figures["consistency"].tasks
    assert len(consistency) == 5
    first = consistency[0]
    assert first.mixed and first.task_id in ("t2", "u1")
    t3 = next(c for c in consistency if c.task_id == "t3")
    assert t3.pattern == "✗✗✗✗" and t3.distinct_chains == 4 and t3.diverge_at == 1
    # d1 / d2 have no task files: the taxonomy says it is unavailable rather than guessing
    assert hand.sections["consistency"] == "ok" and hand.sections["failures"].startswith("unavailable")
    assert a.figures.get("failures") is None


def test_seeded_reproducible_and_seed_matters(tmp_path):
    run = hand_run(tmp_path / "run")
    config = json.loads((run / "config.json").read_text())
    with Store.open(run / "trials.sqlite", create=False) as store:
        one = analyze_run(store, config, resamples=2000, seed=7).model_dump_json()
        two = analyze_run(store, config, resamples=2000, seed=7).model_dump_json()
        other = analyze_run(store, config, resamples=2000, seed=8)
    assert one == two
    assert Analysis.model_validate_json(one).arms["A"].overall.pass_1 != other.arms["A"].overall.pass_1


def test_clustered_overall_keeps_domain_sizes(tmp_path):
    # d1: 3 tasks always pass, d2: 1 task always fails → every stratified replicate has 3 of 4 passing
    recs = [record("A", "d1", t, i, ok=True) for t in ("a", "b", "c") for i in range(2)]
    recs += [record("A", "d2", "z", i, ok=False) for i in range(2)]
    run = write_run(tmp_path / "run", recs, {"d1": ["a", "b", "c"], "d2": ["z"]}, n=2)
    with Store.open(run / "trials.sqlite", create=False) as store:
        a = analyze_run(store, json.loads((run / "config.json").read_text())).arms["A"]
    assert a.overall.pass_1 == Estimate(value=0.75, low=0.75, high=0.75)
    assert a.macro.pass_1 == Estimate(value=0.5, low=0.5, high=0.5)
    assert a.overall.gap_pp == Estimate(value=0.0, low=0.0, high=0.0)


def test_two_arms_and_arm_filter(tmp_path):
    recs = [record("A", "d1", "t", i, ok=True) for i in range(2)] + [record("B", "d1", "t", i, ok=i == 0)
                                                                    for i in range(2)]
    run = write_run(tmp_path / "run", recs, {"d1": ["t"]}, arms=("A", "B"), n=2)
    config = json.loads((run / "config.json").read_text())
    with Store.open(run / "trials.sqlite", create=False) as store:
        both = analyze_run(store, config)
        only_b = analyze_run(store, config, arm="B")
        with pytest.raises(ConfigError, match="no arm 'C'"):
            analyze_run(store, config, arm="C")
    assert list(both.arms) == ["A", "B"] and list(only_b.arms) == ["B"] and only_b.arms_planned == ["A", "B"]
    assert both.arms["B"] == only_b.arms["B"]  # CIs seeded per arm: the same with or without --arm
    assert both.arms["B"].overall.pass_n.value == 0.0 and both.arms["A"].overall.pass_n.value == 1.0


def test_trials_outside_the_plan_are_left_out(tmp_path):
    recs = [record("A", "d1", "t", i, ok=True) for i in range(3)] + [record("A", "d1", "gone", 0, ok=False)]
    run = write_run(tmp_path / "run", recs, {"d1": ["t"]}, n=2)  # trial 2 and task "gone" are not planned
    with Store.open(run / "trials.sqlite", create=False) as store:
        a = analyze_run(store, json.loads((run / "config.json").read_text())).arms["A"]
    assert (a.overall.valid, a.overall.tasks, a.overall.pass_1.value) == (2, 1, 1.0)
    assert len(a.figures["reruns"].reruns) == 2 and a.figures["usage"].roles[0].requests == 2


def test_bad_snapshot_is_a_data_error(tmp_path):
    with Store.open(tmp_path / "s.sqlite") as store:
        with pytest.raises(DataError, match="config.json"):
            analyze_run(store, {"tasks": {}})


def test_fisher_exact_against_known_values_and_brute_force():
    from fractions import Fraction
    from math import comb

    from agentrig.analysis.usage import fisher_exact

    two, greater = fisher_exact(3, 1, 1, 3)  # the lady tasting tea
    assert isclose(two, 34 / 70) and isclose(greater, 17 / 70)
    for a, b, c, d in [(1, 9, 11, 3), (0, 5, 5, 0), (7, 2, 3, 8), (2, 0, 0, 40), (4, 4, 4, 4)]:
        r1, r2, c1 = a + b, c + d, a + c
        probs = {x: Fraction(comb(r1, x) * comb(r2, c1 - x), comb(r1 + r2, c1))
                 for x in range(max(0, c1 - r2), min(r1, c1) + 1)}
        exact_two = float(sum(p for p in probs.values() if p <= probs[a]))
        exact_greater = float(sum(p for x, p in probs.items() if x >= a))
        got_two, got_greater = fisher_exact(a, b, c, d)
        assert isclose(got_two, exact_two, rel_tol=1e-9) and isclose(got_greater, exact_greater, rel_tol=1e-9)


def test_retry_effect_with_enough_data():
    from types import SimpleNamespace

    from agentrig.analysis.usage import retry_effect

    def rows(k, failed, retries):
        return [SimpleNamespace(reward=0.0 if i < failed else 1.0, retries=retries) for i in range(k)]

    e = retry_effect(rows(10, 8, 2) + rows(20, 2, 0))  # retried trials fail 80%, clean ones 10%
    assert (e.retried, e.retried_failed, e.clean, e.clean_failed) == (10, 8, 20, 2)
    assert e.enough_data and isclose(e.rate_retried, 0.8) and isclose(e.rate_clean, 0.1)
    assert e.p_greater < 0.001 and e.p_value < 0.001 and "fail more often" in e.note
    same = retry_effect(rows(10, 2, 1) + rows(20, 4, 0))
    assert same.p_greater > 0.3 and "no sign" in same.note
    assert retry_effect(rows(10, 0, 1) + rows(20, 0, 0)).note == "not enough data: every trial succeeded"


def test_an_arm_with_nothing_valid_yet(tmp_path):
    recs = [record("A", "d1", "t", 0, ok=True), record("B", "d1", "t", 0, ok=False, valid=False)]
    run = write_run(tmp_path / "run", recs, {"d1": ["t", "s"]}, arms=("A", "B", "C"), n=2)
    with Store.open(run / "trials.sqlite", create=False) as store:
        an = analyze_run(store, json.loads((run / "config.json").read_text()))
    assert (an.tasks_planned, an.trials_planned) == (2, 12)
    b, c = an.arms["B"].overall, an.arms["C"].overall
    assert (b.valid, b.invalid, b.missing, b.invalid_attempts) == (0, 1, 3, 1)
    assert b.pass_1 == Estimate() and b.gap_pp == Estimate() and b.curve[1].excluded == 2
    assert (c.valid, c.missing, c.mixed_fraction) == (0, 4, None) and an.arms["C"].figures["reruns"].best is None
    a = an.arms["A"].overall
    assert a.pass_1.value == 1.0 and a.pass_n.value is None and a.pass_n_excluded == 2
