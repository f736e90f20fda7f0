"""Consistency across repeated trials: hand-computed figures on constructed records, the
vectorised edit distance against the plain one, ranking, streaming, and many tasks of 50 trials."""

from __future__ import annotations

import random

import pytest

from agentrig.analysis.consistency import (
    ConsistencyCollector, TaskConsistency, chain_of, edit_distance, rank, similarity,
    task_consistency, task_consistency_from_chains,
)
from agentrig.types import Message, ToolCall, TrialKey, TrialRecord, Trajectory, Verdict


def call(name: str, args: dict | None, idx: int = 0, raw: str = "") -> ToolCall:
    return ToolCall(id=f"c{idx}-{name}", name=name, arguments=args, arguments_raw=raw,
                    arguments_error=None if args is not None else "not an object")


def record(trial: int, calls: list[ToolCall], *, ok: bool, valid: bool = True, task: str = "t1",
           arm: str = "a", history: list[Message] | None = None) -> TrialRecord:
    history = history or []
    msgs = list(history) + [Message(role="user", content="hi")]
    for i, c in enumerate(calls):
        msgs.append(Message(role="assistant", tool_calls=[c]))
        msgs.append(Message(role="tool", tool_call_id=c.id, requestor="assistant", content="{}"))
    msgs.append(Message(role="assistant", content="done"))
    verdict = Verdict(reward=1.0 if ok else 0.0, valid=valid, termination="user_stop" if valid else "channel_error",
                      invalid_cause=None if valid else "channel")
    return TrialRecord(key=TrialKey(arm=arm, domain="d", task_id=task, trial=trial), run_id="r", seed=trial,
                       started_at="2025-01-01T00:00:00Z", duration_s=0.1,
                       trajectory=Trajectory(history_len=len(history), messages=msgs), verdict=verdict)


A1 = call("A", {"x": 1})
B2 = call("B", {"y": 2})
B3 = call("B", {"y": 3})
C0 = call("C", {})


def test_chain_of_tokens():
    hist = [Message(role="assistant", tool_calls=[call("H", {"z": 0})]),
            Message(role="tool", tool_call_id="c0-H", content="{}")]
    r = record(0, [call("A", {"b": 2, "a": [1, "é"]}), call("A", None, raw="{oops")], ok=True, history=hist)
    # a user-side tool call in the trial
    r.trajectory.messages.insert(5, Message(role="user", tool_calls=[call("toggle", {"on": True})]))
    chain = chain_of(r)
    assert chain == (
        ("A", '{"a":[1,"é"],"b":2}'),   # canonical: sorted keys, no spaces, unicode kept
        ("user:toggle", '{"on":true}'),
        ("A", "!{oops"),                  # arguments that were not an object: the raw text
    )  # the history's call H is not part of the trial's chain


def test_hand_computed_task():
    recs = [
        record(0, [A1, B2, C0], ok=True),
        record(1, [A1, B3, C0], ok=False),
        record(2, [A1, B2, C0], ok=True),
        record(3, [C0], ok=True, valid=False),  # invalid: skipped
        record(4, [A1, B2], ok=False),
    ]
    tc = task_consistency(list(reversed(recs)))  # order of the input does not matter
    assert (tc.arm, tc.domain, tc.task_id) == ("a", "d", "t1")
    assert tc.pattern == "✓✗✓✗" and tc.trials == [0, 1, 2, 4]
    assert (tc.n, tc.c, tc.mixed) == (4, 2, True)
    assert tc.distinct_chains == 3          # (A1,B2,C) ×2, (A1,B3,C), (A1,B2)
    assert tc.distinct_name_chains == 2     # (A,B,C) ×3, (A,B)
    assert tc.diverge_at == 1               # B{y:2} vs B{y:3}
    assert tc.diverge_at_name == 2          # C vs the end of trial 4's chain
    # pairs: (0,1) 2/3, (0,2) 1, (0,4) 2/3, (1,2) 2/3, (1,4) 1/3, (2,4) 2/3 → 4/6
    assert tc.similarity == pytest.approx(2 / 3)
    assert tc.pairs == 6
    assert tc.mean_calls == pytest.approx(11 / 4)
    assert tc.modal_share == pytest.approx(0.5)
    assert [(f.call, f.trials, f.successes) for f in tc.fork] == [
        ('B({"y":2})', [0, 2, 4], 2), ('B({"y":3})', [1], 0)]
    assert tc.fork[0].name == "B"


def test_identical_and_single_and_ended_fork():
    same = task_consistency([record(i, [A1, B2], ok=True) for i in range(3)])
    assert (same.pattern, same.mixed, same.distinct_chains, same.diverge_at, same.diverge_at_name,
            same.similarity, same.fork) == ("✓✓✓", False, 1, None, None, 1.0, [])
    one = task_consistency([record(0, [A1], ok=False)])
    assert (one.n, one.similarity, one.pairs, one.diverge_at) == (1, None, 0, None)
    empty = task_consistency([record(0, [], ok=False), record(1, [], ok=False)])
    assert (empty.similarity, empty.distinct_chains, empty.mean_calls) == (1.0, 1, 0.0)
    # one chain empty, the other not: similarity 0, diverge at 0, the fork shows the end
    tc = task_consistency([record(0, [], ok=False), record(1, [A1], ok=True)])
    assert tc.similarity == 0.0 and tc.diverge_at == 0
    assert [(f.call, f.trials) for f in tc.fork] == [(None, [0]), ('A({"x":1})', [1])]


def test_records_of_two_tasks_rejected():
    with pytest.raises(ValueError, match="several tasks"):
        task_consistency([record(0, [], ok=True, task="t1"), record(1, [], ok=True, task="t2")])


def test_edit_distance_known_values():
    assert edit_distance("kitten", "sitting") == 3
    assert edit_distance("", "abc") == 3 and edit_distance("abc", "") == 3
    assert edit_distance("flaw", "lawn") == 2
    assert similarity("", "") == 1.0
    assert similarity("ab", "ab") == 1.0
    assert similarity("abcd", "abxd") == pytest.approx(0.75)


def test_vectorised_matches_plain_dp():
    rng = random.Random(5)
    alphabet = [("A", "1"), ("A", "2"), ("B", "1"), ("C", "{}")]
    for _ in range(30):
        chains = [tuple(rng.choice(alphabet) for _ in range(rng.randrange(0, 9))) for _ in range(rng.randrange(2, 12))]
        tc = task_consistency_from_chains("a", "d", "t", [(i, True, ch) for i, ch in enumerate(chains)])
        sims = [similarity(chains[i], chains[j]) for i in range(len(chains)) for j in range(i + 1, len(chains))]
        assert tc.similarity == pytest.approx(sum(sims) / len(sims), abs=1e-12)
        assert tc.distinct_chains == len(set(chains))


def _tc(task: str, *, n: int, c: int, sim: float | None, chains: int, names: int = 1) -> TaskConsistency:
    return TaskConsistency(arm="a", domain="d", task_id=task, n=n, c=c, pattern="", trials=[], mixed=0 < c < n,
                           distinct_chains=chains, distinct_name_chains=names, diverge_at=None, diverge_at_name=None,
                           similarity=sim, pairs=0, mean_calls=0.0, modal_share=0.0)


def test_rank_order():
    items = [
        _tc("steady", n=4, c=4, sim=1.0, chains=1),
        _tc("fail-forky", n=4, c=0, sim=0.2, chains=4),
        _tc("mixed-similar", n=4, c=2, sim=0.9, chains=2),
        _tc("mixed-forky", n=4, c=3, sim=0.5, chains=3),
        _tc("mixed-forky-more", n=4, c=1, sim=0.5, chains=4),
        _tc("mixed-tie-balanced", n=4, c=2, sim=0.5, chains=4),
        _tc("single", n=1, c=1, sim=None, chains=1),
        _tc("fail-forky-names", n=4, c=0, sim=0.2, chains=4, names=3),
    ]
    order = [t.task_id for t in rank(items)]
    assert order == ["mixed-tie-balanced", "mixed-forky-more", "mixed-forky", "mixed-similar",
                     "fail-forky-names", "fail-forky", "single", "steady"]


def test_collector_streams_like_task_consistency():
    recs = [record(i, [A1, B2 if i % 2 else B3], ok=bool(i % 2), task=t) for t in ("t1", "t2") for i in range(4)]
    recs.append(record(9, [A1], ok=True, valid=False))
    col = ConsistencyCollector()
    for r in recs:
        col.add(r)
    got = col.results()
    assert [t.task_id for t in got] == ["t1", "t2"]
    assert got[0] == task_consistency([r for r in recs if r.key.task_id == "t1"])
    assert got[0].pattern == "✗✓✗✓" and got[0].n == 4  # the invalid one is not counted
    col2 = ConsistencyCollector()
    for r in recs:
        if r.verdict.valid:
            col2.add_chain(r.key.arm, r.key.domain, r.key.task_id, r.key.trial, r.verdict.reward == 1.0, chain_of(r))
    assert col2.results() == got


def random_chains(n_tasks: int, seed: int = 11) -> list[list[tuple[int, bool, tuple]]]:
    """``n_tasks`` tasks × 50 trials of tool-call chains: one base chain per task, each trial's a few
    random edits away from it (``perf/suite_timings.py`` times 500 of them)."""
    rng = random.Random(seed)
    tools = [f"tool_{i}" for i in range(12)]

    def tok() -> tuple[str, str]:
        return (rng.choice(tools), '{"id":%d}' % rng.randrange(6))

    def perturb(base: list) -> tuple:
        ch = list(base)
        for _ in range(rng.randrange(4)):
            pos = rng.randrange(len(ch) + 1)
            op = rng.randrange(3)
            if op == 0:
                ch.insert(pos, tok())
            elif ch:
                j = min(pos, len(ch) - 1)
                if op == 1:
                    ch.pop(j)
                else:
                    ch[j] = tok()
        return tuple(ch)

    tasks = []
    for _ in range(n_tasks):
        base = [tok() for _ in range(rng.randrange(4, 20))]
        tasks.append([(i, rng.random() < 0.6, perturb(base)) for i in range(50)])
    return tasks


def test_many_tasks_of_50_trials():
    tasks = random_chains(500)
    out = [task_consistency_from_chains("a", "d", f"t{k}", trials) for k, trials in enumerate(tasks)]
    ranked = rank(out)
    assert sorted(t.task_id for t in ranked) == sorted(f"t{k}" for k in range(500))
    assert all(t.pairs == 1225 and t.n == 50 for t in out)
    for t, trials in zip(out, tasks):
        assert t.distinct_chains == len({chain for _, _, chain in trials})
        assert t.c == sum(ok for _, ok, _ in trials)
