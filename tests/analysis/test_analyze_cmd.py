"""``agentrig analyze``: people's tables, --json, a real flaky-gold run against its true success
rates, and the figures of a synthetic 10,000-trial store."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from rich.console import Console

from agentrig.agents.reference import _criteria, gold_plan, step_message
from agentrig.commands.analyze import analyze_command, print_analysis
from agentrig.analysis.build import analyze_run
from agentrig.analysis.summary import Analysis
from agentrig.bench.tau import data as tau_data
from agentrig.bench.tau.domains import get_domain
from agentrig.bench.tau.judge import check_actions, check_communicate, trial_tool_calls
from agentrig.bench.tau.replay import judge_state
from agentrig.errors import DataError
from agentrig.commands.run import run_command
from agentrig.store.store import Store
from agentrig.types import (Attempt, Message, ModelCall, RewardInfo, ToolCall, Trajectory, TrialKey, TrialRecord,
                            Usage, Verdict)

from .test_summary import hand_run


def _console() -> tuple[Console, io.StringIO]:
    buf = io.StringIO()
    return Console(file=buf, width=220, highlight=False, soft_wrap=True), buf


def test_people_get_every_section(tmp_path):
    run = hand_run(tmp_path / "run")
    out, buf = _console()
    assert analyze_command(run, arm=None, as_json=False, out=out) == 0
    text = buf.getvalue()
    for title in ("summary", "pass^k curve", "reward components", "terminations", "usage per role", "reruns",
                  "retries and failures", "most inconsistent tasks", "failure classes: unavailable"):
        assert title in text, title
    assert "0.683 [" in text  # pass^1 = 41/60 with its interval
    assert "25.0 [" in text  # the gap in percentage points
    assert "retries_exhausted: rate_limited ×2" in text
    assert "rate_limited 5, timeout 1" in text and "unknown" in text  # m-user has no price


def test_json_is_one_object_on_stdout(tmp_path, capsys):
    run = hand_run(tmp_path / "run")
    assert analyze_command(run, arm="A", as_json=True, out=Console()) == 0
    captured = capsys.readouterr()
    analysis = Analysis.model_validate(json.loads(captured.out))
    assert captured.err == ""
    assert list(analysis.arms) == ["A"] and analysis.arms["A"].overall.valid == 17
    assert analysis.arms["A"].figures["consistency"].tasks[0].mixed


def test_not_a_run_directory(tmp_path):
    with pytest.raises(DataError, match="not a run directory"):
        analyze_command(tmp_path, arm=None, as_json=True, out=Console())


# --------------------------------------------------------------------- flaky-gold against truth

DROP_P = 0.3
TRIALS = 10
FLAKY_TOML = f"""
name = "flaky"
[benchmark]
domains = ["bikeshop"]
[run]
trials = {TRIALS}
seed = 77
concurrency = 8
[user]
kind = "scripted"
[judge]
nl_assertions = "never"
[[arms]]
name = "flaky-gold"
agent = {{ kind = "flaky-gold", drop_p = {DROP_P} }}
"""


def _gold_fails(task, spec, ddir, *, drop_index=None, drop_info=False) -> bool:
    """Whether the gold play with this drop fails, judged as the judge does (nl never)."""
    actions, info = _criteria(task)
    steps = gold_plan(actions, info, drop_index=drop_index, drop_info=drop_info)
    assert all(s.kind != "ask" for s in steps)  # bikeshop has no user tools
    messages = [step_message(s) for s in steps]
    state = judge_state(spec, ddir, task, trial_tool_calls(messages))
    ec = task.evaluation_criteria
    comps = {"DB": state.db_reward, "ENV_ASSERTION": state.env_reward,
             "ACTION": float(all(c.matched for c in check_actions(spec, actions, messages))),
             "COMMUNICATE": float(all(c.met for c in check_communicate(info, messages))),
             "NL_ASSERTION": None if ec.nl_assertions else 1.0}
    basis = [str(b) for b in ec.reward_basis]
    reward = 1.0
    for b in basis:
        if comps[b] is not None:
            reward *= comps[b]
    return reward < 1 - 1e-6


def true_success_rates() -> dict[str, tuple[float, dict]]:
    """Per task: its true success rate under flaky-gold, and the outcome of each drop option."""
    spec, ddir = get_domain("bikeshop"), tau_data.domain_dir(None, "bikeshop")
    out = {}
    for task in tau_data.load_tasks(None, "bikeshop"):
        actions, info = _criteria(task)
        writes = [i for i, a in enumerate(actions) if a.requestor == "assistant" and spec.agent_toolkit.is_write(a.name)]
        assert not _gold_fails(task, spec, ddir)
        if writes:
            options = {i: _gold_fails(task, spec, ddir, drop_index=i) for i in writes}
        elif info:
            options = {"info": _gold_fails(task, spec, ddir, drop_info=True)}
        else:
            options = {}
        failing = sum(options.values()) / len(options) if options else 0.0
        out[task.id] = (1.0 - DROP_P * failing, options)
    return out


def test_flaky_gold_pass_hat_k_matches_the_true_rates(tmp_path, capsys):
    toml = tmp_path / "flaky.toml"
    toml.write_text(FLAKY_TOML)
    run = tmp_path / "run"
    assert run_command(toml, run_dir=run, as_json=True) == 0
    capsys.readouterr()
    truth = true_success_rates()
    # the emulated judge agrees with every stored trial (so the true rates are the agent's)
    with Store.open(run / "trials.sqlite", create=False) as store:
        for rec in store.records(valid=True):
            _, options = truth[rec.key.task_id]
            drops = [e for e in rec.trajectory.events if e.plugin == "flaky-gold"]
            index = drops[0].data.get("index", "info") if drops and drops[0].data.get("dropped") else None
            expected_fail = options[index] if index is not None else False
            assert (rec.verdict.reward < 1) == expected_fail, rec.key.label()
        analysis = analyze_run(store, json.loads((run / "config.json").read_text()), run_dir=str(run))
    assert any(q < 1 for q, _ in truth.values()) and any(q == 1 for q, _ in truth.values())
    o = analysis.arms["flaky-gold"].overall
    assert o.valid == len(truth) * TRIALS and o.pass_n_excluded == 0
    lines = []
    for p in o.curve:
        true_k = sum(q ** p.k for q, _ in truth.values()) / len(truth)
        lines.append(f"k={p.k:2d} true {true_k:.3f} est {p.pass_hat.value:.3f} "
                     f"[{p.pass_hat.low:.3f}, {p.pass_hat.high:.3f}]")
        assert p.pass_hat.low <= true_k <= p.pass_hat.high, lines[-1]
    true_gap = 100 * sum(q - q ** TRIALS for q, _ in truth.values()) / len(truth)
    assert o.gap_pp.low <= true_gap <= o.gap_pp.high
    print("\nflaky-gold (p = 0.3) on bikeshop, 10 trials:\n  " + "\n  ".join(lines)
          + f"\n  gap true {true_gap:.1f} pp, est {o.gap_pp.value:.1f} [{o.gap_pp.low:.1f}, {o.gap_pp.high:.1f}]")
    tax = analysis.arms["flaky-gold"].figures["failures"].overall
    assert tax is not None and tax.failed == o.valid - round(o.pass_1.value * o.valid)


# --------------------------------------------------------------------------------- scale

def _synthetic(arm: str, domain: str, task: str, trial: int, ok: bool) -> TrialRecord:
    messages = [Message(role="assistant", content="Hi! How can I help?", turn=0),
                Message(role="user", content="I need to change my booking.", turn=1)]
    calls = []
    for i, name in enumerate(("find", "get", "change" if ok or trial % 2 else "cancel")):
        messages.append(Message(role="assistant", turn=len(messages), call=len(calls),
                                tool_calls=[ToolCall(id=f"c{i}", name=name, arguments={"id": f"X{i}"},
                                                     arguments_raw=f'{{"id": "X{i}"}}')]))
        calls.append(ModelCall(role="agent", purpose="agent", model="m", latency_s=0.3 + 0.01 * i,
                               usage=Usage(prompt_tokens=1000 + 50 * i, completion_tokens=40), attempts=[Attempt()]))
        messages.append(Message(role="tool", content='{"status": "ok", "items": [1, 2, 3]}', tool_call_id=f"c{i}",
                                requestor="assistant", turn=len(messages)))
        messages.append(Message(role="user", content="OK, thanks.", turn=len(messages)))
        calls.append(ModelCall(role="user", purpose="user", model="m", latency_s=0.2,
                               usage=Usage(prompt_tokens=600, completion_tokens=15), attempts=[Attempt()]))
    v = 1.0 if ok else 0.0
    info = RewardInfo(reward=v, reward_basis=["DB"], components={"DB": v, "ENV_ASSERTION": 1.0, "ACTION": v,
                                                                 "COMMUNICATE": 1.0, "NL_ASSERTION": None})
    return TrialRecord(key=TrialKey(arm=arm, domain=domain, task_id=task, trial=trial), run_id="s", seed=trial,
                       started_at="2026-01-01T00:00:00Z", duration_s=2.0 + (trial % 7) * 0.1,
                       trajectory=Trajectory(messages=messages, model_calls=calls),
                       verdict=Verdict(reward=v, termination="user_stop", reward_info=info))


def synthetic_10000(run: Path) -> dict[tuple[str, str], int]:
    """A run directory of 10,000 stored trials (2 arms × 2 domains × 50 tasks × 50 trials), each task
    with its own success rate; returns the successes per (arm, task). ``perf/suite_timings.py``
    times the analysis of it."""
    import random

    rnd = random.Random(5)
    arms, domains, tasks_per, trials = ("a", "b"), ("d1", "d2"), 50, 50  # 2 × 100 tasks × 50 = 10,000
    tasks = {d: [f"{d}-t{i}" for i in range(tasks_per)] for d in domains}
    rate = {t: rnd.random() for d in domains for t in tasks[d]}
    run.mkdir()
    config = {"run_id": "s", "name": "synthetic", "data_root": None, "tasks": tasks,
              "experiment": {"arms": [{"name": a} for a in arms], "run": {"trials": trials},
                             "prices": {"m": {"input": 1.0, "output": 4.0}}}}
    (run / "config.json").write_text(json.dumps(config))
    successes: dict[tuple[str, str], int] = {}
    with Store.open(run / "trials.sqlite") as store:
        store.set_meta("config", config)
        for a in arms:
            for d in domains:
                for t in tasks[d]:
                    for i in range(trials):
                        ok = rnd.random() < rate[t]
                        successes[(a, t)] = successes.get((a, t), 0) + ok
                        store.append(_synthetic(a, d, t, i, ok))
    return successes


def test_analysis_of_10000_trials(tmp_path):
    """The figures of a 10,000-trial store are right (its timing is in perf/suite_timings.py)."""
    successes = synthetic_10000(tmp_path / "run")
    out, buf = _console()
    analyze_command(tmp_path / "run", arm=None, as_json=True, out=out)
    analysis = Analysis.model_validate_json(buf.getvalue())
    for arm in ("a", "b"):
        mine = {t: c for (a, t), c in successes.items() if a == arm}
        overall = analysis.arms[arm].overall
        assert (overall.tasks, overall.valid, overall.invalid, overall.missing) == (100, 5000, 0, 0)
        assert overall.mean_reward == pytest.approx(sum(mine.values()) / 5000)
        assert [p.k for p in overall.curve] == list(range(1, 51))
        assert overall.pass_1.value == pytest.approx(sum(mine.values()) / 5000)
        assert overall.pass_n.value == pytest.approx(sum(c == 50 for c in mine.values()) / 100)
        assert overall.pass_1.low <= overall.pass_1.value <= overall.pass_1.high
    out, buf = _console()
    print_analysis(out, analysis)
    assert "pass^50" in buf.getvalue() and "synthetic" in buf.getvalue()


def test_people_output_when_nothing_is_valid_yet(tmp_path):
    from .test_summary import record, write_run

    run = write_run(tmp_path / "run", [record("B", "d1", "t", 0, ok=False, valid=False)], {"d1": ["t"]},
                    arms=("A", "B"), n=3)
    out, buf = _console()
    assert analyze_command(run, arm=None, as_json=False, out=out) == 0
    text = buf.getvalue()
    assert "2 arm(s) × 1 task(s) × 3 trial(s) = 6 planned" in text
    assert "0/3" in text and "not enough data" in text
