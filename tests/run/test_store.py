"""The run store on real SQLite files: round trips, the one-valid-row rule, WAL readers, SIGKILL."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from agentrig.errors import DataError
from agentrig.store.store import SCHEMA_VERSION, Store
from agentrig.bench.tau.verdict import ActionCheck, TextCheck
from agentrig.types import (Attempt, Message, ModelCall, PluginEvent, RewardInfo, ToolCall, Trajectory, TrialKey,
                            TrialRecord, Usage, Verdict)

REPO = Path(__file__).resolve().parents[2]


def make_record(arm: str, domain: str, task_id: str, trial: int, *, valid: bool = True,
                attempt: int = 0, turns: int = 5, reward: float = 1.0,
                run_id: str = "run-test") -> TrialRecord:
    """A realistic trial: greeting, then per turn user text, an agent tool call, its result and
    the agent's answer (4 messages and 3 model calls a turn), plus the judge's call."""
    messages = [Message(role="assistant", content="Hi! How can I help you today?", turn=0)]
    calls: list[ModelCall] = []

    def call(role: str, purpose: str, prompt: int, retried: bool = False) -> int:
        attempts = [Attempt(cause="rate_limited", status=429, latency_s=0.01, wait_s=0.5)] if retried else []
        attempts.append(Attempt(latency_s=0.2))
        calls.append(ModelCall(role=role, purpose=purpose, turn=len(messages), model=f"{role}-model",
                               usage=Usage(prompt_tokens=prompt, completion_tokens=20,
                                           reasoning_tokens=5 if role == "agent" else None,
                                           cached_tokens=prompt // 2),
                               latency_s=0.21, attempts=attempts, finish_reason="stop"))
        return len(calls) - 1

    for n in range(turns):
        t = 1.0 + n
        messages.append(Message(role="user", content=f"I need help with reservation R{n:04d}.",
                                turn=len(messages), t=t, call=call("user", "user", 500 + n)))
        tc = ToolCall(id=f"call_{n}", name="get_reservation_details",
                      arguments={"reservation_id": f"R{n:04d}"},
                      arguments_raw=json.dumps({"reservation_id": f"R{n:04d}"}))
        messages.append(Message(role="assistant", tool_calls=[tc], turn=len(messages), t=t + 0.2,
                                reasoning="look it up", call=call("agent", "agent", 2000 + 100 * n,
                                                                  retried=n == 1)))
        messages.append(Message(role="tool", content=json.dumps({"reservation_id": f"R{n:04d}",
                                                                 "status": "ok", "flights": [1, 2]}),
                                tool_call_id=tc.id, requestor="assistant", turn=len(messages),
                                t=t + 0.3))
        messages.append(Message(role="assistant", content=f"Reservation R{n:04d} is confirmed.",
                                turn=len(messages), t=t + 0.5,
                                call=call("agent", "agent", 2100 + 100 * n)))
    messages.append(Message(role="user", content="Thanks! ###STOP###", turn=len(messages),
                            t=turns + 1.0, call=call("user", "user", 900)))
    call("judge", "judge.nl", 1200)
    traj = Trajectory(messages=messages, model_calls=calls,
                      events=[PluginEvent(plugin="memory", turn=3, kind="memory.trigger",
                                          data={"why": "test"})],
                      counters={"agent_steps": 2 * turns, "env_calls": turns, "tool_errors": 0})
    info = RewardInfo(reward=reward, reward_basis=["DB", "COMMUNICATE"],
                      components={"DB": reward, "COMMUNICATE": 1.0, "ACTION": 1.0,
                                  "ENV_ASSERTION": 1.0, "NL_ASSERTION": None},
                      db_match=reward == 1.0, agent_db_match=reward == 1.0, user_db_match=True,
                      action_checks=[ActionCheck(action_id=f"{task_id}_0", name="get_reservation_details",
                                                 arguments={"reservation_id": "R0000"}, write=False,
                                                 matched=True)],
                      communicate_checks=[TextCheck(text="confirmed", met=True)],
                      notes={"NL_ASSERTION": "no judge configured"})
    verdict = (Verdict(reward=reward, termination="user_stop", reward_info=info) if valid else
               Verdict(reward=0.0, valid=False, invalid_cause="retries_exhausted",
                       termination="channel_error"))
    return TrialRecord(key=TrialKey(arm=arm, domain=domain, task_id=task_id, trial=trial),
                       run_id=run_id, seed=1000 + trial, attempt=attempt,
                       started_at="2025-01-02T03:04:05.000006+00:00", duration_s=turns + 1.5,
                       trajectory=traj, verdict=verdict)


def test_round_trip_and_columns(tmp_path: Path):
    path = tmp_path / "store.sqlite"
    recs = [make_record("base", "airline", str(i), t, reward=float(i % 2))
            for i in range(4) for t in range(2)]
    recs.append(make_record("memory", "retail", "7", 0, valid=False))
    with Store.open(path) as store:
        assert all(store.append(r) for r in recs)
        store.set_meta("config", {"seed": 7, "arms": ["base", "memory"]})
    with Store.open(path, create=False) as store:
        assert list(store.records()) == recs
        assert list(store.records(arm="memory")) == recs[-1:]
        assert list(store.records(valid=True)) == recs[:-1]
        assert list(store.records(domain="retail", valid=False)) == recs[-1:]
        assert store.get_meta("config") == {"seed": 7, "arms": ["base", "memory"]}
        assert store.get_meta("nope") is None
        assert store.get_meta("store")["schema"] == SCHEMA_VERSION
        rows = store.verdict_rows()
        assert [r.key for r in rows] == [(r.key.arm, r.key.domain, r.key.task_id, r.key.trial)
                                         for r in recs]
        first, last = rows[0], rows[-1]
        calls = recs[0].trajectory.model_calls
        assert first.valid and first.reward == 0.0 and first.termination == "user_stop"
        assert first.prompt_tokens == sum(c.usage.prompt_tokens for c in calls)
        assert first.reasoning_tokens == sum(c.usage.reasoning_tokens or 0 for c in calls)
        assert first.retries == 1 and first.n_calls == len(calls) == 17
        assert first.n_messages == 22 and first.seed == 1000
        assert not last.valid and last.invalid_cause == "retries_exhausted"
        assert len(store.verdict_rows(arm="base", valid=True)) == 8
        counts = store.counts()
        assert counts == {"rows": 9, "valid": 8, "invalid": 1, "keys": 9,
                          "model_calls": 9 * 17,
                          "arms": {"base": {"valid": 8, "invalid": 0},
                                   "memory": {"valid": 0, "invalid": 1}}}
        mc = store.model_call_rows(arm="base")
        assert len(mc) == 8 * 17
        retried = [r for r in mc if r["retries"]]
        assert len(retried) == 8 and {r["retry_causes"] for r in retried} == {"rate_limited"}
        assert {r["purpose"] for r in mc} == {"user", "agent", "judge.nl"}
    # the blob is zlib-compressed JSON: smaller than the record's JSON
    conn = sqlite3.connect(path)
    size = conn.execute("SELECT length(record) FROM trials LIMIT 1").fetchone()[0]
    conn.close()
    assert size < len(recs[0].model_dump_json()) / 2


def test_duplicate_valid_refused_and_invalid_history(tmp_path: Path):
    with Store.open(tmp_path / "s.sqlite") as store:
        key = ("base", "airline", "3", 1)
        bad = make_record(*key, valid=False, attempt=0)
        good = make_record(*key, attempt=1)
        assert store.append(bad)
        assert store.valid_keys() == set()
        assert store.attempts(key) == 1
        assert store.append(good)
        assert store.valid_keys() == {key}
        assert store.valid_keys(arm="other") == set()
        assert store.attempts(key) == 2
        assert store.attempts(TrialKey(arm="base", domain="airline", task_id="3", trial=1)) == 2
        # a second valid row of the same key is refused, and nothing of it is stored
        again = make_record(*key, attempt=2, reward=0.0)
        assert store.append(again) is False
        assert store.attempts(key) == 2
        assert store.counts()["model_calls"] == 2 * 17
        assert [r.verdict.reward for r in store.records(valid=True)] == [1.0]
        # invalid attempts may still be added as history
        assert store.append(make_record(*key, valid=False, attempt=3))
        assert store.attempts(key) == 3 and store.valid_keys() == {key}


def test_not_a_store(tmp_path: Path):
    junk = tmp_path / "notes.txt"
    junk.write_text("hello, this is not a database at all " * 50)
    with pytest.raises(DataError, match="notes.txt.*not an agentrig store"):
        Store.open(junk)
    other = tmp_path / "other.sqlite"
    conn = sqlite3.connect(other)
    conn.execute("CREATE TABLE t (x)")
    conn.commit()
    conn.close()
    with pytest.raises(DataError, match="other.sqlite.*not an agentrig store"):
        Store.open(other)
    with pytest.raises(DataError, match="missing.sqlite.*no agentrig store"):
        Store.open(tmp_path / "missing.sqlite", create=False)
    with pytest.raises(DataError, match="is a directory"):
        Store.open(tmp_path)
    newer = tmp_path / "newer.sqlite"
    Store.open(newer).close()
    conn = sqlite3.connect(newer)
    conn.execute("PRAGMA user_version=99")
    conn.close()
    with pytest.raises(DataError, match="newer agentrig"):
        Store.open(newer)


def test_wal_mode_and_reader_in_another_process(tmp_path: Path):
    path = tmp_path / "s.sqlite"
    with Store.open(path) as store:
        assert store._conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        for i in range(5):
            store.append(make_record("a", "mock", str(i), 0))
        store.append(make_record("a", "mock", "9", 0, valid=False))
        # the writer stays open; a reader in another process sees every committed trial
        code = textwrap.dedent(f"""
            import json
            from agentrig.store.store import Store
            with Store.open({str(path)!r}, create=False) as s:
                recs = list(s.records())
                print(json.dumps({{"keys": sorted(s.valid_keys()), "counts": s.counts(),
                                   "calls": sum(len(r.trajectory.model_calls) for r in recs)}}))
        """)
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                             timeout=60, check=True).stdout
        seen = json.loads(out)
        assert [tuple(k) for k in seen["keys"]] == sorted(("a", "mock", str(i), 0) for i in range(5))
        assert seen["counts"]["rows"] == 6 and seen["counts"]["invalid"] == 1
        assert seen["calls"] == 6 * 17
        # and the writer keeps writing after the reader is done
        assert store.append(make_record("a", "mock", "5", 0))
        assert len(store.valid_keys()) == 6


_WRITER = """
import sys
from pathlib import Path
sys.path.insert(0, {repo!r})
from tests.run.test_store import make_record
from agentrig.store.store import Store
store = Store.open(Path({path!r}))
i = 0
while True:
    rec = make_record("a", "airline", str(i), 0, valid=i % 7 != 3, turns=3 + i % 5)
    store.append(rec)
    print(i, flush=True)  # printed only after the commit
    i += 1
"""


def test_sigkill_keeps_every_committed_trial(tmp_path: Path):
    path = tmp_path / "s.sqlite"
    proc = subprocess.Popen([sys.executable, "-c", _WRITER.format(repo=str(REPO), path=str(path))],
                            stdout=subprocess.PIPE, text=True)
    committed = []
    try:
        deadline = time.monotonic() + 120  # generous: a loaded machine starts Python slowly
        while len(committed) < 60 and time.monotonic() < deadline:
            line = proc.stdout.readline()
            if not line:
                break
            committed.append(int(line))
    finally:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)
        # a busy reader falls behind: lines the writer printed before the kill are commits too
        committed += [int(line) for line in proc.stdout.read().split()]
        proc.stdout.close()
    assert proc.returncode == -signal.SIGKILL
    assert len(committed) >= 60, "the writer did not get going"
    conn = sqlite3.connect(path)
    assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    conn.close()
    with Store.open(path) as store:
        recs = list(store.records())
        ids = [int(r.key.task_id) for r in recs]
        # every trial reported as committed is there, in order, and nothing else but perhaps
        # the one whose commit landed just before the kill
        assert ids[:len(committed)] == committed and len(ids) <= len(committed) + 1
        assert ids == list(range(len(ids)))
        for rec in recs:
            assert rec.verdict.valid == (int(rec.key.task_id) % 7 != 3)
            assert len(rec.trajectory.messages) == 4 * (3 + int(rec.key.task_id) % 5) + 2
        # no partial rows: every trial row has all its model-call rows, and none is orphaned
        assert store.counts()["model_calls"] == sum(len(r.trajectory.model_calls) for r in recs)
        per_trial = {}
        for row in store.model_call_rows():
            per_trial[row["task_id"]] = per_trial.get(row["task_id"], 0) + 1
        assert per_trial == {r.key.task_id: len(r.trajectory.model_calls) for r in recs}
        # and the store takes new trials after the crash
        assert store.append(make_record("a", "airline", "x", 0))


def thousand_records() -> list[TrialRecord]:
    """1,000 trials of 22 messages (``perf/suite_timings.py`` times storing and reading them)."""
    base = make_record("a", "airline", "0", 0)
    return [base.model_copy(update={"key": TrialKey(arm="a", domain="airline", task_id=str(i), trial=0)})
            for i in range(1000)]


def test_a_thousand_trials_round_trip(tmp_path: Path):
    recs = thousand_records()
    with Store.open(tmp_path / "s.sqlite") as store:
        for r in recs:
            store.append(r)
        back = list(store.records())
        rows = store.verdict_rows()
    assert len(back) == len(rows) == 1000
    assert sorted(int(r.key.task_id) for r in back) == list(range(1000))
    assert back[-1].trajectory == recs[-1].trajectory and len(back[-1].trajectory.messages) == 22
