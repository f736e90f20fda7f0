"""agentrig compare: the paired figures, McNemar, flips and the gate, on hand-known outcomes."""

from __future__ import annotations

import io
import itertools
import json
from pathlib import Path

import numpy as np
import pytest
from rich.console import Console

from agentrig.analysis import compare as cmp
from agentrig.analysis.sides import split_side
from agentrig.commands.compare import compare_command
from agentrig.errors import ConfigError, DataError
from agentrig.run import experiment
from agentrig.run.session import open_run
from agentrig.types import TrialKey, TrialRecord, Trajectory, Verdict

TASKS = ["rent_city_bike", "cancel_ebike_full_refund", "cancel_late_fee_no_waiver", "refuse_ebike_minor",
         "swap_road_for_ebike", "extend_city_rental", "refuse_cancel_active_rental",
         "refuse_cancel_repair_in_progress", "repair_add_service_and_phone", "book_repair_not_on_monday",
         "extend_capped_at_14_days", "damage_report_transfer"]

EXPERIMENT = """\
name = "{name}"
[benchmark]
domains = ["bikeshop"]
task_ids = {tasks}
[run]
trials = {trials}
seed = 11
[user]
kind = "scripted"
[judge]
nl_assertions = "never"
{arms}
"""
ARM = '[[arms]]\nname = "{name}"\nagent = {{ kind = "{kind}" }}\n'


def record(arm: str, task_id: str, trial: int, reward: float, *, valid: bool = True,
           attempt: int = 0) -> TrialRecord:
    verdict = (Verdict(reward=reward, termination="user_stop") if valid else
               Verdict(reward=reward, valid=False, invalid_cause="retries_exhausted", termination="channel_error"))
    return TrialRecord(key=TrialKey(arm=arm, domain="bikeshop", task_id=task_id, trial=trial), run_id="r",
                       seed=trial, attempt=attempt, started_at="2026-01-01T00:00:00+00:00", duration_s=0.1,
                       trajectory=Trajectory(), verdict=verdict)


def make_run(tmp_path: Path, name: str, outcomes: dict[str, dict[str, list[float]]], *, trials: int = 4,
             kinds: dict[str, str] | None = None, invalid: list[tuple[str, str, int]] = ()) -> Path:
    """A run directory (config snapshots as `agentrig run` writes them) holding hand-made trials:
    ``outcomes[arm][task] = [reward of trial 0, 1, …]``."""
    kinds = kinds or {arm: "gold" for arm in outcomes}
    tasks = sorted({t for per in outcomes.values() for t in per}, key=TASKS.index)
    toml = tmp_path / f"{name}.toml"
    toml.write_text(EXPERIMENT.format(name=name, tasks=json.dumps(tasks), trials=trials,
                                      arms="".join(ARM.format(name=a, kind=kinds[a]) for a in outcomes)))
    run_dir = tmp_path / name
    run = open_run(experiment.load(toml, run_dir))
    try:
        for arm, per in outcomes.items():
            for task, rewards in per.items():
                for i, reward in enumerate(rewards):
                    assert run.store.append(record(arm, task, i, reward))
        for arm, task, i in invalid:  # an invalid attempt that "succeeded": must not count
            assert run.store.append(record(arm, task, i, 1.0, valid=False, attempt=1))
    finally:
        run.close()
    return run_dir


def run_json(a: str, b: str, **kw) -> tuple[int, dict]:
    buf = io.StringIO()
    kw.setdefault("fail_if_worse", False)
    kw.setdefault("allow_mismatch", False)
    code = compare_command(a, b, as_json=True, out=Console(file=buf, width=200), **kw)
    return code, json.loads(buf.getvalue())


def run_text(a: str, b: str, **kw) -> tuple[int, str]:
    buf = io.StringIO()
    kw.setdefault("fail_if_worse", False)
    kw.setdefault("allow_mismatch", False)
    code = compare_command(a, b, as_json=False, out=Console(file=buf, width=200), **kw)
    return code, buf.getvalue()


# ----------------------------------------------------------------------------------- McNemar


@pytest.mark.parametrize("b,c,p", [
    (0, 0, 1.0),
    (3, 1, 2 * (1 + 4) / 16),            # 0.625
    (1, 3, 2 * (1 + 4) / 16),
    (5, 0, 2 / 32),                      # 0.0625
    (11, 0, 2 / 2048),
    (1, 6, 2 * (1 + 7) / 128),           # 0.125
    (2, 2, 1.0),                         # 2 · 11/16 > 1 → capped
    (2, 8, 2 * (1 + 10 + 45) / 1024),    # 0.109375
])
def test_mcnemar_exact_hand_values(b, c, p):
    assert cmp.mcnemar_exact(b, c) == pytest.approx(p, abs=1e-15)


def test_mcnemar_large_counts_stay_finite():
    assert 0 < cmp.mcnemar_exact(300, 200) < 1e-4
    assert cmp.mcnemar_exact(2000, 0) == 0.0  # underflows to 0, never an error


@pytest.mark.parametrize("n,c,ok", [(4, 3, True), (4, 2, False), (3, 2, True), (1, 1, True), (1, 0, False),
                                    (2, 1, False), (5, 3, True)])
def test_majority_pass_ties_fail(n, c, ok):
    assert cmp.majority_pass(n, c) is ok


# --------------------------------------------------------------------------------- bootstrap


def test_bootstrap_matches_the_enumerated_distribution():
    """Three tasks: 27 equally likely resamples; P(mean = −1) = P(mean = 0.5) = 1/27 > 2.5%, so the
    95% percentile interval is exactly [−1, 0.5]."""
    diffs = np.array([-1.0, 0.0, 0.5])
    means = sorted(np.mean(diffs[list(ix)]) for ix in itertools.product(range(3), repeat=3))
    assert means[0] == -1.0 and means[-1] == 0.5 and means.count(-1.0) == 1
    ci = cmp.paired_bootstrap(diffs, np.zeros(3, int), level=0.95, resamples=20000,
                              rng=np.random.default_rng(1))
    assert ci == (-1.0, 0.5)
    narrow = cmp.paired_bootstrap(diffs, np.zeros(3, int), level=0.5, resamples=20000,
                                  rng=np.random.default_rng(1))
    assert -1.0 < narrow[0] <= narrow[1] < 0.5  # a 50% interval excludes the 1/27 tails


def test_bootstrap_is_stratified_by_domain():
    """Domain X: both tasks −1; domain Y: both 0. Each resample keeps two tasks per domain, so every
    resampled mean is −0.5 (unstratified resampling would range over [−1, 0])."""
    diffs = np.array([-1.0, -1.0, 0.0, 0.0])
    ci = cmp.paired_bootstrap(diffs, np.array([0, 0, 1, 1]), level=0.95, resamples=2000,
                              rng=np.random.default_rng(3))
    assert ci == (-0.5, -0.5)
    loose = cmp.paired_bootstrap(diffs, np.zeros(4, int), level=0.95, resamples=2000, rng=np.random.default_rng(3))
    assert loose[0] < -0.5 < loose[1]


def test_bootstrap_of_500_tasks():
    rng = np.random.default_rng(0)
    ca = {("d", str(i)): (8, int(rng.integers(0, 9))) for i in range(500)}
    cb = {("d", str(i)): (8, int(rng.integers(0, 9))) for i in range(500)}
    stats = cmp.paired_stats(ca, cb, k=8, resamples=4000)
    assert stats.paired.tasks == 500 and stats.metrics["pass^k"].tasks == 500
    p1 = stats.metrics["pass^1"]
    assert p1.delta == pytest.approx(sum(c for _, c in cb.values()) / 4000 - sum(c for _, c in ca.values()) / 4000)
    assert p1.ci[0] <= p1.delta <= p1.ci[1]


def test_bootstrap_is_seeded():
    ca = {("d", str(i)): (4, i % 5) for i in range(40)}
    cb = {("d", str(i)): (4, (i * 3) % 5) for i in range(40)}
    one = cmp.paired_stats(ca, cb, k=4, seed=5).metrics["pass^1"].ci
    assert one == cmp.paired_stats(ca, cb, k=4, seed=5).metrics["pass^1"].ci
    assert one != cmp.paired_stats(ca, cb, k=4, seed=6).metrics["pass^1"].ci


# ------------------------------------------------------------------------------ paired stats


def hand_counts():
    a = {("s", "t1"): (4, 4), ("s", "t2"): (4, 2), ("s", "t3"): (4, 3), ("s", "t4"): (4, 4), ("s", "t5"): (1, 1)}
    b = {("s", "t1"): (4, 0), ("s", "t2"): (4, 4), ("s", "t3"): (4, 3), ("s", "t4"): (2, 1)}
    return a, b


def test_paired_stats_hand_values():
    a, b = hand_counts()
    s = cmp.paired_stats(a, b, k=4)
    assert s.paired == cmp.Paired(tasks=4, only_a=1, only_b=0, k=4, tasks_k=3, excluded_k=1)
    p1, pk = s.metrics["pass^1"], s.metrics["pass^k"]
    # pass^1 over t1..t4: A (1 + .5 + .75 + 1)/4, B (0 + 1 + .75 + .5)/4
    assert (p1.a, p1.b, p1.delta) == (pytest.approx(0.8125), pytest.approx(0.5625), pytest.approx(-0.25))
    # pass^4 over t1..t3 (t4 has 2 valid trials on B): A (1 + 0 + 0)/3, B (0 + 1 + 0)/3
    assert (pk.name, pk.tasks) == ("pass^4", 3)
    assert (pk.a, pk.b, pk.delta) == (pytest.approx(1 / 3), pytest.approx(1 / 3), pytest.approx(0.0))
    # per-task Δpass^1 are −1, +.5, 0, −.5: the CI lies within their range and holds Δ
    assert -1.0 <= p1.ci[0] <= -0.25 <= p1.ci[1] <= 0.5
    assert p1.significance == "none" and pk.significance == "none"
    # majority: t1 A pass/B fail, t2 A tie (fail)/B pass, t3 both pass, t4 A pass/B tie (fail)
    assert s.mcnemar == cmp.McNemar(both=1, a_only=2, b_only=1, neither=0, p=1.0)
    assert [(f.task_id, f.a, f.b) for f in s.flips.worse] == [("t1", (4, 4), (0, 4)), ("t4", (4, 4), (1, 2))]
    assert [(f.task_id, f.a, f.b) for f in s.flips.better] == [("t2", (2, 4), (4, 4))]


def test_constant_differences_give_a_degenerate_ci():
    a = {("s", str(i)): (4, 4) for i in range(10)}
    b = {("s", str(i)): (4, 3) for i in range(10)}
    s = cmp.paired_stats(a, b, k=4)
    assert s.metrics["pass^1"].ci == (-0.25, -0.25) and s.metrics["pass^1"].significance == "worse"
    assert s.metrics["pass^k"].delta == -1.0 and s.metrics["pass^k"].significance == "worse"
    flipped = cmp.paired_stats(b, a, k=4)
    assert flipped.metrics["pass^1"].significance == "better"
    assert flipped.mcnemar.a_only == flipped.mcnemar.b_only == 0  # 3/4 and 4/4 both pass by majority


def test_identical_sides_are_not_significant():
    a = {("s", str(i)): (4, i % 5) for i in range(12)}
    s = cmp.paired_stats(a, dict(a), k=4)
    assert s.metrics["pass^1"].ci == (0.0, 0.0) and s.metrics["pass^1"].significance == "none"
    assert s.mcnemar.p == 1.0 and not s.flips.worse and not s.flips.better


# -------------------------------------------------------------------------- constructed runs


def test_constructed_run_json_and_gate(tmp_path: Path):
    # A: every task 4/4. B: 8 tasks 0/4, then 3/4, 2/4, 4/4, 4/4 (+ an invalid "success" that must not count)
    a = {t: [1.0] * 4 for t in TASKS}
    b = ({t: [0.0] * 4 for t in TASKS[:8]} | {TASKS[8]: [1, 1, 0, 1], TASKS[9]: [1, 0, 1, 0]}
         | {t: [1.0] * 4 for t in TASKS[10:]})
    run = make_run(tmp_path, "ab", {"base": a, "cand": b}, kinds={"base": "gold", "cand": "noop"},
                   invalid=[("cand", TASKS[0], 0)])
    code, out = run_json(f"{run}:base", f"{run}:cand", fail_if_worse=True)
    assert code == 1 and out["exit_code"] == 1
    p1 = out["metrics"]["pass^1"]
    assert p1["a"] == 1.0 and p1["b"] == pytest.approx(3.25 / 12)
    assert p1["delta"] == pytest.approx(3.25 / 12 - 1)
    assert p1["ci"][1] < 0 and p1["significance"] == "worse" and p1["note"] is None
    pk = out["metrics"]["pass^k"]
    assert (pk["name"], pk["k"], pk["tasks"]) == ("pass^4", 4, 12)
    assert (pk["b"], pk["delta"]) == (pytest.approx(2 / 12), pytest.approx(-10 / 12))
    # majority: B passes 3/4, 4/4, 4/4; 9 tasks flipped worse (8 × 0/4 and the 2/4 tie), none better
    assert out["mcnemar"] == {"both": 3, "a_only": 9, "b_only": 0, "neither": 0, "p": 2 / 512}
    assert [f["task_id"] for f in out["flips"]["worse"]] == sorted(TASKS[:8] + [TASKS[9]])
    tie = next(f for f in out["flips"]["worse"] if f["task_id"] == TASKS[9])
    assert tie["a"] == [4, 4] and tie["b"] == [2, 4]
    assert out["b"]["valid_trials"] == 48 and out["paired"]["tasks"] == 12
    assert out["comparable"] and out["mismatch"] == [] and not out["allow_mismatch"]
    assert [d["path"] for d in out["config"]["differences"]] == ["arm.agent.kind"]
    assert out["gate"]["tripped"] and "upper end of the 95% CI" in out["gate"]["reason"]
    assert "significantly worse" in out["verdict"]

    # the other way round: B better, the gate passes
    code, out = run_json(f"{run}:cand", f"{run}:base", fail_if_worse=True)
    assert code == 0 and out["metrics"]["pass^1"]["significance"] == "better"
    assert not out["gate"]["tripped"] and out["gate"]["reason"] is None
    assert out["mcnemar"]["b_only"] == 9 and len(out["flips"]["better"]) == 9
    # without the gate: a report, exit 0 even when worse
    code, text = run_text(f"{run}:base", f"{run}:cand")
    assert code == 0 and "significantly worse" in text and "gate" not in text
    code, text = run_text(f"{run}:base", f"{run}:cand", fail_if_worse=True)
    assert code == 1 and "gate: FAIL" in text and "flipped worse (9)" in text


def test_gate_metric_pass_k_and_alpha(tmp_path: Path):
    # A: half the tasks 4/4, half 0/4. B: every task 3/4 → Δpass^1 = +0.25, Δpass^4 = −0.5
    a = {t: [1.0] * 4 if i % 2 == 0 else [0.0] * 4 for i, t in enumerate(TASKS)}
    b = {t: [1, 1, 1, 0] for t in TASKS}
    run = make_run(tmp_path, "pk", {"base": a, "cand": b})
    code, out = run_json(f"{run}:base", f"{run}:cand", fail_if_worse=True)  # pass^1: not worse
    assert code == 0 and out["metrics"]["pass^1"]["delta"] == pytest.approx(0.25)
    assert out["config"]["differences"] == [] and out["comparable"]
    code, out = run_json(f"{run}:base", f"{run}:cand", fail_if_worse=True, metric="pass^k")
    assert code == 1 and out["metrics"]["pass^k"]["delta"] == pytest.approx(-0.5)
    assert "pass^4" in out["gate"]["reason"] and out["gate"]["metric"] == "pass^k"
    code, out = run_json(f"{run}:base", f"{run}:cand", fail_if_worse=True, metric="pass^k", alpha=0.2)
    assert out["ci_level"] == pytest.approx(0.8) and "80% CI" in out["gate"]["rule"]


def test_uneven_trials_set_k_and_exclusions(tmp_path: Path):
    run_a = make_run(tmp_path, "four", {"x": {t: [1.0, 1.0, 1.0, 0.0] for t in TASKS[:3]}}, trials=4)
    # B planned 3 trials; one task has only 2 valid, one task only on B
    run_b = make_run(tmp_path, "three", {"y": {TASKS[0]: [1.0, 1.0, 1.0], TASKS[1]: [1.0, 0.0],
                                              TASKS[3]: [1.0, 1.0, 1.0]}}, trials=3)
    code, out = run_json(str(run_a), str(run_b), allow_mismatch=True)
    assert out["paired"] == {"tasks": 2, "only_a": 1, "only_b": 1, "k": 3, "tasks_k": 1, "excluded_k": 1}
    pk = out["metrics"]["pass^k"]
    # TASKS[0]: A C(3,3)/C(4,3) = 1/4, B 1 → Δ 0.75
    assert (pk["name"], pk["a"], pk["b"], pk["delta"]) == ("pass^3", 0.25, 1.0, 0.75)
    # one task: its CI collapses onto [0.75, 0.75]; too few tasks to call that significant
    assert pk["ci"] == [0.75, 0.75] and pk["significance"] == "none" and "only 1 paired task" in pk["note"]
    # the planned trials differ: a mismatch, allowed here and flagged
    assert "run.trials: 4 → 3" in out["mismatch"] and out["allow_mismatch"]


def test_pass_k_gate_without_tasks_trips(tmp_path: Path):
    run = make_run(tmp_path, "short", {"a": {t: [1.0] for t in TASKS[:2]}, "b": {t: [1.0] for t in TASKS[:2]}})
    code, out = run_json(f"{run}:a", f"{run}:b", fail_if_worse=True, metric="pass^k")
    assert code == 1 and out["metrics"]["pass^k"]["tasks"] == 0
    assert "no task has 4 valid trials" in out["gate"]["reason"]
    code, out = run_json(f"{run}:a", f"{run}:b", fail_if_worse=True)  # pass^1 works
    assert code == 0 and out["metrics"]["pass^1"]["significance"] == "none"


# ------------------------------------------------------------------------------------- sides


def test_sides_and_their_errors(tmp_path: Path):
    two = make_run(tmp_path, "two", {"a": {TASKS[0]: [1.0]}, "b": {TASKS[0]: [0.0]}})
    one = make_run(tmp_path, "one", {"solo": {TASKS[0]: [1.0]}})
    assert split_side(f"{two}:a") == (two, "a") and split_side(str(two)) == (two, None)
    with pytest.raises(ConfigError, match=r"2 arms \(a, b\).*two:a, .*two:b"):
        run_json(str(two), f"{two}:b")
    with pytest.raises(ConfigError, match=r"no arm 'zz'.*its arms: a, b"):
        run_json(f"{two}:zz", f"{two}:b")
    with pytest.raises(ConfigError, match="both sides are"):
        run_json(f"{two}:a", f"{two}:a")
    with pytest.raises(DataError, match="not a run directory"):
        run_json(str(tmp_path / "nowhere"), f"{two}:a")
    with pytest.raises(ConfigError, match="--metric"):
        run_json(f"{two}:a", f"{two}:b", metric="pass@1")
    with pytest.raises(ConfigError, match="--alpha"):
        run_json(f"{two}:a", f"{two}:b", alpha=1.5)
    code, out = run_json(str(one), f"{two}:b")  # a one-arm run needs no ARM
    assert out["a"]["arm"] == "solo" and out["paired"]["tasks"] == 1
    empty = make_run(tmp_path, "empty", {"e": {}})
    with pytest.raises(ConfigError, match="no task with a valid trial on both sides"):
        run_json(str(empty), f"{two}:a")
