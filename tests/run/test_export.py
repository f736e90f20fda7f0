"""Exports from a real store: JSONL of records, and tau2-bench's results.json checked against the
sample tau2-bench v1.0.1 wrote (key sets, JSON types, tasks as tau2 dumps them)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from agentrig.bench.tau.data import load_policy, load_tasks
from agentrig.bench.tau.domains import get_domain
from agentrig.bench.tau.environment import Environment
from agentrig.bench.tau.judge import judge_trial
from agentrig.errors import ConfigError
from agentrig.bench.tau.domain import TauTrial
from agentrig.trial.context import TrialContext
from agentrig.bench.tau.export import export_tau2, tau2_info
from agentrig.store.export import export_jsonl
from agentrig.store.store import Store
from agentrig.types import (Attempt, Message, ModelCall, ToolCall, Trajectory, TrialKey,
                            TrialRecord, Usage, Verdict)

from .test_store import make_record

SAMPLE_TASKS = ("0", "1", "4")  # the three tasks of the sample results.json


@pytest.fixture(scope="module")
def sample(tau2_root: Path) -> dict:
    return json.loads((tau2_root / "examples" / "results_airline_sample.json").read_text())


def play_gold(task, ddir: Path, trial: int, *, batch: bool = False, termination: str = "user_stop",
              valid: bool = True, arm: str = "base", secret: str | None = None) -> TrialRecord:
    """A trial that plays the task's gold actions against the real airline environment (tool
    results are the environment's own), judged by the real judge, as an episode records one."""
    env = Environment.fresh(get_domain("airline"), ddir)
    env.set_state(task)
    messages = [Message(role="assistant", content="Hi! How can I help you today?", turn=0)]
    calls: list[ModelCall] = []

    def call(role: str, prompt: int, *, reported: bool = True) -> int:
        calls.append(ModelCall(role=role, purpose=role, turn=len(messages), model="gold-1",
                               usage=Usage(prompt_tokens=prompt, completion_tokens=30,
                                           reported=reported),
                               latency_s=0.125, attempts=[Attempt(latency_s=0.125)]))
        return len(calls) - 1

    def say(role: str, text: str, prompt: int) -> None:
        messages.append(Message(role=role, content=text, turn=len(messages), t=0.1 * len(messages),
                                call=call("user" if role == "user" else "agent", prompt)))

    say("user", f"Hi, I need help with my request. {secret or ''}".strip(), 500)
    gold = task.gold_actions
    groups = [gold[i:i + 2] for i in range(0, len(gold), 2)] if batch else [[a] for a in gold]
    for group in groups:
        tcs = [ToolCall(id=f"call_{a.action_id}", name=a.name, arguments=a.arguments,
                        arguments_raw=json.dumps(a.arguments)) for a in group]
        messages.append(Message(role="assistant", tool_calls=tcs, turn=len(messages),
                                t=0.1 * len(messages), call=call("agent", 2000)))
        for tc in tcs:  # one tool message per result of the batch
            out = env.call("assistant", tc.name, tc.arguments)
            messages.append(Message(role="tool", content=out.text, error=out.error,
                                    tool_call_id=tc.id, requestor="assistant", turn=len(messages),
                                    t=0.1 * len(messages)))
    say("assistant", "Thank you for your patience.  Is there anything else I can help with?", 2100)
    say("user", "No, that's all. ###STOP###", 600)
    key = TrialKey(arm=arm, domain="airline", task_id=task.id, trial=trial)
    traj = Trajectory(messages=messages, model_calls=calls)
    ctx = TrialContext(key=key, task=task, bench=TauTrial(get_domain("airline"), ddir, ""),
                       seed=300 + trial, trajectory=traj)
    info = asyncio.run(judge_trial(ctx, termination, nl="never"))  # the real judge
    assert info.reward == 1.0
    verdict = (Verdict(reward=1.0, termination=termination, reward_info=info) if valid else
               Verdict(reward=0.0, valid=False, invalid_cause="retries_exhausted",
                       termination="channel_error"))
    return TrialRecord(key=key, run_id="run-x", seed=300 + trial,
                       started_at="2025-03-04T10:11:12.500000+00:00", duration_s=1.75,
                       trajectory=traj, verdict=verdict)


@pytest.fixture(scope="module")
def played(tau2_root: Path):
    """The trials of the airline store (played and judged once for the module)."""
    ddir = tau2_root / "domains" / "airline"
    tasks = {t.id: t for t in load_tasks(tau2_root, "airline")}
    records = [
        play_gold(tasks["0"], ddir, 0),
        play_gold(tasks["1"], ddir, 0, valid=False),  # a spoiled first attempt
        play_gold(tasks["1"], ddir, 0),
        play_gold(tasks["4"], ddir, 0, batch=True, termination="agent_transfer"),
        play_gold(tasks["4"], ddir, 1),
        play_gold(tasks["0"], ddir, 0, arm="other"),
    ]
    return records, [tasks[i] for i in SAMPLE_TASKS], load_policy(tau2_root, "airline")


@pytest.fixture()
def airline(played, tmp_path: Path):
    records, picked, policy = played
    store = Store.open(tmp_path / "store.sqlite")
    for record in records:
        assert store.append(record)
    info = tau2_info(domain="airline", policy=policy, max_steps=200, max_errors=10, seed=300,
                     agent_model="openai/gold-1", agent_args={"temperature": 0.0},
                     user_model="openai/gold-1", user_args={"temperature": 0.0},
                     user_guidelines="# User Simulation Guidelines\n...")
    yield store, picked, info
    store.close()


def json_type(value) -> str:
    return {dict: "object", list: "array", str: "string", bool: "bool", int: "number",
            float: "number", type(None): "null"}[type(value)]


def type_map(value, path: str = "", out: dict | None = None) -> dict[str, set[str]]:
    """Every path (list items as [], messages split by role) with the JSON types seen there."""
    out = {} if out is None else out
    out.setdefault(path, set()).add(json_type(value))
    if isinstance(value, dict):
        for k, v in value.items():
            if path.endswith("reward_breakdown") or path.endswith("arguments"):
                k = "*"  # data keys, not schema keys
            type_map(v, f"{path}.{k}", out)
    elif isinstance(value, list):
        for item in value:
            tag = f"[{item['role']}]" if path.endswith(".messages") and isinstance(item, dict) else "[]"
            type_map(item, path + tag, out)
    return out


def sim_types(doc: dict) -> dict[str, set[str]]:
    types: dict[str, set[str]] = {}
    for sim in doc["simulations"]:
        type_map(sim, "sim", types)
    return types


def test_tau2_export_matches_the_sample(airline, sample, tmp_path: Path):
    store, tasks, info = airline
    out = tmp_path / "export" / "results.json"
    assert export_tau2(store, out, "base", tasks, info) == 4
    doc = json.loads(out.read_text())
    assert json.loads(json.dumps(doc)) == doc  # plain JSON all the way

    # top level, info and its parts: the same keys as tau2-bench writes
    assert set(doc) == set(sample)
    assert set(doc["info"]) == set(sample["info"])
    for part in ("user_info", "agent_info", "environment_info"):
        assert set(doc["info"][part]) == set(sample["info"][part])
    assert doc["info"]["num_trials"] == 2 and doc["info"]["seed"] == 300
    assert doc["info"]["environment_info"]["policy"] == sample["info"]["environment_info"]["policy"]

    # tasks exactly as tau2-bench dumps them (defaults filled, extras such as annotations dropped)
    sample_tasks = {t["id"]: t for t in sample["tasks"]}
    assert [t["id"] for t in doc["tasks"]] == list(SAMPLE_TASKS)
    for task in doc["tasks"]:
        assert task == sample_tasks[task["id"]]

    # simulations: one per valid trial of the arm, key sets and JSON types as in the sample
    sims = doc["simulations"]
    assert [(s["task_id"], s["trial"]) for s in sims] == [("0", 0), ("1", 0), ("4", 0), ("4", 1)]
    ours, theirs = sim_types(doc), sim_types(sample)
    for sim in sims:
        assert set(sim) == set(sample["simulations"][0])
        assert set(sim["reward_info"]) == set(sample["simulations"][1]["reward_info"])
    for path, types in ours.items():
        assert path in theirs, f"{path} is not in tau2-bench's results.json"
        allowed = set(theirs[path])
        if path.endswith(".raw_data"):
            allowed.add("null")  # Optional in tau2; we keep no raw API responses
        assert types <= allowed, f"{path}: {types} vs tau2-bench's {theirs[path]}"
    # and every message field tau2 writes is there, for each role
    for role in ("assistant", "user", "tool"):
        want = {p for p in theirs if p.startswith(f"sim.messages[{role}].")}
        got = {p for p in ours if p.startswith(f"sim.messages[{role}].")}
        assert want - got <= {p for p in want if "raw_data." in p}, role
    action_check = sims[1]["reward_info"]["action_checks"][0]
    assert action_check == sample["simulations"][1]["reward_info"]["action_checks"][0]


def test_tau2_messages_follow_the_trajectory(airline, tmp_path: Path):
    store, tasks, info = airline
    out = tmp_path / "results.json"
    export_tau2(store, out, "base", tasks, info)
    sims = json.loads(out.read_text())["simulations"]
    by_key = {(s["task_id"], s["trial"]): s for s in sims}
    batched = by_key[("4", 0)]
    assert batched["termination_reason"] == "agent_stop"  # agent_transfer has no tau2 name
    assert by_key[("4", 1)]["termination_reason"] == "user_stop"
    msgs = batched["messages"]
    assert [m["turn_idx"] for m in msgs] == list(range(len(msgs)))
    # the batch of two calls: one assistant message, then one tool message per result
    first_call = next(i for i, m in enumerate(msgs) if m.get("tool_calls"))
    calls = msgs[first_call]["tool_calls"]
    assert [c["name"] for c in calls] == ["get_user_details", "get_reservation_details"]
    assert {c["requestor"] for c in calls} == {"assistant"}
    results = msgs[first_call + 1:first_call + 3]
    assert [m["role"] for m in results] == ["tool", "tool"]
    assert [m["id"] for m in results] == [c["id"] for c in calls]
    assert json.loads(results[0]["content"])["user_id"] == "sophia_silva_7557"
    assert msgs[0]["usage"] is None and msgs[0]["generation_time_seconds"] is None
    assert msgs[1]["usage"] == {"completion_tokens": 30, "prompt_tokens": 500}
    assert msgs[1]["generation_time_seconds"] is None  # the user's, as tau2 leaves it
    assert msgs[first_call]["generation_time_seconds"] == 0.125
    assert msgs[1]["timestamp"] == "2025-03-04T10:11:12.600000+00:00"
    assert batched["start_time"] == "2025-03-04T10:11:12.500000+00:00"
    assert batched["end_time"] == "2025-03-04T10:11:14.250000+00:00"
    assert batched["reward_info"]["reward_breakdown"] == {"DB": 1.0, "COMMUNICATE": 1.0}
    assert batched["reward_info"]["db_check"] == {"db_match": True, "db_reward": 1.0}
    # simulation ids are unique and stable from one export to the next
    again = tmp_path / "again.json"
    export_tau2(store, again, "base", tasks, info)
    assert [s["id"] for s in json.loads(again.read_text())["simulations"]] == [s["id"] for s in sims]
    assert len({s["id"] for s in sims}) == len(sims)
    # another arm is its own results file
    assert export_tau2(store, tmp_path / "other.json", "other", tasks, info) == 1


def test_tau2_export_needs_the_run_facts(airline, tmp_path: Path):
    store, tasks, info = airline
    broken = {k: v for k, v in info.items() if k != "max_steps"}
    with pytest.raises(ConfigError, match="max_steps"):
        export_tau2(store, tmp_path / "r.json", "base", tasks, broken)
    with pytest.raises(ConfigError, match="domain_name"):
        export_tau2(store, tmp_path / "r.json", "base", tasks, info, domain="retail")
    assert not (tmp_path / "r.json").exists()


def test_jsonl_has_every_attempt(tmp_path: Path):
    recs = [make_record("a", "mock", "1", 0, valid=False), make_record("a", "mock", "1", 0, attempt=1),
            make_record("b", "mock", "2", 0)]
    with Store.open(tmp_path / "s.sqlite") as store:
        for r in recs:
            store.append(r)
        assert export_jsonl(store, tmp_path / "all.jsonl") == 3
        assert export_jsonl(store, tmp_path / "a.jsonl", arm="a") == 2
    lines = (tmp_path / "all.jsonl").read_text().splitlines()
    assert [TrialRecord.model_validate_json(line) for line in lines] == recs
    assert [json.loads(line)["verdict"]["valid"] for line in lines] == [False, True, True]
    assert len((tmp_path / "a.jsonl").read_text().splitlines()) == 2


def test_exports_add_no_config_or_environment(airline, tau2_root: Path, tmp_path: Path, monkeypatch):
    store, tasks, info = airline
    # secrets the exports could only get by reading them from elsewhere
    monkeypatch.setenv("AGENTRIG_TEST_API_KEY", "sk-env-0000111122223333")
    store.set_meta("config", {"roles": {"agent": {"api_key_env": "AGENTRIG_TEST_API_KEY",
                                                   "api_key": "sk-meta-4444555566667777"}}})
    # a record whose own text carries a key-like header value: exported as the record has it
    marker = "X-Api-Key: sk-record-88889999"
    rec = play_gold(tasks[1], tau2_root / "domains" / "airline", 5, secret=marker)
    assert store.append(rec)
    jsonl, tau2 = tmp_path / "r.jsonl", tmp_path / "results.json"
    export_jsonl(store, jsonl)
    export_tau2(store, tau2, "base", tasks, info)
    for path in (jsonl, tau2):
        text = path.read_text()
        assert "sk-env-0000111122223333" not in text and "sk-meta-4444555566667777" not in text
        assert "api_key" not in text and "AGENTRIG_TEST_API_KEY" not in text
        assert text.count("sk-record-88889999") == 1  # only where the record has it
    doc = json.loads(tau2.read_text())
    # info is what was passed in, completed with tau2-bench's own defaults only
    assert info["num_trials"] is None and doc["info"]["num_trials"] == 6  # derived: trials 0..5
    for name, value in info.items():
        if name == "num_trials":
            continue
        if isinstance(value, dict):
            assert {k: doc["info"][name][k] for k in value} == value
        else:
            assert doc["info"][name] == value
    extra = {k: v for k, v in doc["info"].items() if k not in info}
    assert extra == {"text_streaming_config": {"chunk_by": "words", "chunk_size": 1},
                     "speech_complexity": None, "audio_native_config": None,
                     "retrieval_config": None, "retrieval_config_kwargs": None}
