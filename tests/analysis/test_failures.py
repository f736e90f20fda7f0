"""Failure taxonomy: every class on constructed trials with hand-known answers, the counting,
and a real run of the reference agents on the built-in bikeshop domain."""

from __future__ import annotations

from pathlib import Path

import pytest

from agentrig.analysis.consistency import ConsistencyCollector
from agentrig.bench.tau.failures import CLASSES, classify, taxonomy, taxonomy_groups
from agentrig.bench.tau.data import load_tasks
from agentrig.bench.tau.domains import get_domain
from agentrig.bench.tau.taskmodel import Task
from agentrig.commands.run import run_command
from agentrig.store.rundir import open_run_dir
from agentrig.bench.tau.verdict import COMPONENTS, TextCheck
from agentrig.types import Message, RewardInfo, ToolCall, TrialKey, TrialRecord, Trajectory, Verdict

BIKES = get_domain("bikeshop")
TELECOM = get_domain("telecom")

GOLD = [
    {"action_id": "g0", "name": "find_customer_by_email", "arguments": {"email": "a@b.c"}},
    {"action_id": "g1", "name": "book_rental", "arguments": {"bike_id": "BK1", "customer_id": "CU1"}},
    {"action_id": "g2", "name": "update_customer_phone", "arguments": {"customer_id": "CU1", "phone": "555"}},
]
FIND = ("find_customer_by_email", {"email": "a@b.c"})
BOOK = ("book_rental", {"bike_id": "BK1", "customer_id": "CU1"})
PHONE = ("update_customer_phone", {"customer_id": "CU1", "phone": "555"})


def make_task(actions=GOLD, basis=("DB", "COMMUNICATE"), info=("42",), nl=None, tid="t") -> Task:
    ec = {"actions": list(actions), "communicate_info": list(info), "reward_basis": list(basis)}
    if nl:
        ec["nl_assertions"] = list(nl)
    return Task.model_validate({"id": tid, "user_scenario": {"instructions": "do it"}, "evaluation_criteria": ec})


TASK = make_task()


def trial(calls, *, termination="user_stop", reward=0.0, comps=None, basis=("DB", "COMMUNICATE"),
          valid=True, last_user="Thanks! ###STOP###", history=(), comm=(), nl=(), key_trial=0) -> TrialRecord:
    """calls: (name, args) or (name, args, {"error": True, "side": "user"})."""
    msgs: list[Message] = []
    for name, args in history:
        msgs.append(Message(role="assistant", tool_calls=[ToolCall(id=f"h-{name}", name=name, arguments=args)]))
        msgs.append(Message(role="tool", tool_call_id=f"h-{name}", requestor="assistant", content="{}"))
    history_len = len(msgs)
    msgs.append(Message(role="user", content="I need help"))
    for i, c in enumerate(calls):
        name, args = c[0], c[1]
        opts = c[2] if len(c) > 2 else {}
        side = opts.get("side", "assistant")
        cid = f"c{i}"
        msgs.append(Message(role=side, tool_calls=[ToolCall(id=cid, name=name, arguments=args)]))
        msgs.append(Message(role="tool", tool_call_id=cid, requestor=side, error=opts.get("error", False),
                            content="Error: no" if opts.get("error") else "{}"))
    msgs.append(Message(role="assistant", content="Anything else?"))
    if last_user is not None:
        msgs.append(Message(role="user", content=last_user))
    components = {c: 1.0 for c in COMPONENTS}
    components.update(comps or {})
    info = RewardInfo(reward=reward, reward_basis=list(basis), components=components,
                      communicate_checks=[TextCheck(text=t, met=m) for t, m in comm],
                      nl_assertions=[TextCheck(text=t, met=m) for t, m in nl])
    verdict = Verdict(reward=reward, valid=valid, termination=termination, reward_info=info,
                      invalid_cause=None if valid else "channel")
    return TrialRecord(key=TrialKey(arm="a", domain="bikeshop", task_id="t", trial=key_trial), run_id="r", seed=0,
                       started_at="2025-01-01T00:00:00Z", duration_s=0.1,
                       trajectory=Trajectory(history_len=history_len, messages=msgs), verdict=verdict)


def label(rec, task=TASK, spec=BIKES):
    lab = classify(rec, task, spec)
    assert lab is not None
    assert lab.classes == [lab.primary, *lab.secondary]
    assert list(CLASSES).index(lab.primary) <= min(list(CLASSES).index(s) for s in lab.secondary or [lab.primary])
    return lab


def test_success_and_invalid_are_not_failures():
    assert classify(trial([FIND, BOOK, PHONE], reward=1.0), TASK, BIKES) is None
    assert classify(trial([], valid=False, termination="channel_error"), TASK, BIKES) is None


def test_ran_out_outranks_missing_and_is_not_an_early_stop():
    for term in ("max_steps", "too_many_errors", "timeout"):
        lab = label(trial([FIND], termination=term, comps={"DB": 0.0}, last_user=None))
        assert lab.primary == "ran_out" and lab.secondary == ["missing_action"]
        assert lab.evidence["ran_out"] == [term] and lab.termination == term
        assert lab.components == ["DB"]


def test_format_errors_have_their_own_class_not_ran_out():
    rec = trial([FIND], termination="too_many_format_errors", comps={"DB": 0.0}, last_user=None)
    rec.trajectory.counters["format_errors"] = 3
    lab = label(rec)
    assert lab.primary == "format_errors" and lab.secondary == ["missing_action"]
    assert "ran_out" not in lab.classes and "early_stop" not in lab.classes
    assert lab.evidence["format_errors"] == ["too_many_format_errors (3 unusable replies)"]
    assert CLASSES["format_errors"] == "Format errors"
    counted = taxonomy([(rec.key, lab)])
    by_id = {c.id: c for c in counted.classes}
    assert by_id["format_errors"].primary == 1 and by_id["ran_out"].any == 0


def test_missing_action():
    lab = label(trial([FIND], comps={"DB": 0.0}))
    assert (lab.primary, lab.secondary) == ("missing_action", [])
    assert lab.evidence["missing_action"] == ['book_rental(bike_id="BK1", customer_id="CU1")',
                                              'update_customer_phone(customer_id="CU1", phone="555")']


def test_partial_compound():
    lab = label(trial([FIND, BOOK], comps={"DB": 0.0}))
    assert (lab.primary, lab.secondary) == ("partial_compound", ["missing_action"])
    assert lab.evidence["partial_compound"] == ["1 of 2 gold writes done"]
    # a single-write task can never be partial
    one = make_task(GOLD[:2])
    assert label(trial([FIND], comps={"DB": 0.0}), one).classes == ["missing_action"]


def test_wrong_arguments_is_not_an_extra_write():
    wrong = ("book_rental", {"bike_id": "BK9", "customer_id": "CU1"})
    lab = label(trial([FIND, wrong, PHONE], comps={"DB": 0.0}))
    assert lab.classes == ["wrong_arguments", "partial_compound"]
    assert lab.evidence["wrong_arguments"] == ['book_rental(bike_id="BK1", customer_id="CU1")']
    # the same wrong call made twice: the second one is an extra write
    lab = label(trial([FIND, wrong, wrong, PHONE], comps={"DB": 0.0}))
    assert lab.classes == ["extra_write", "wrong_arguments", "partial_compound"]
    assert lab.evidence["extra_write"] == ['book_rental(bike_id="BK9", customer_id="CU1")']


def test_extra_write_and_errored_writes():
    cancel = ("cancel_rental", {"rental_id": "RN1"})
    lab = label(trial([FIND, BOOK, PHONE, cancel], comps={"DB": 0.0}))
    assert (lab.primary, lab.secondary) == ("extra_write", [])
    assert lab.evidence["extra_write"] == ['cancel_rental(rental_id="RN1")']
    # a write that failed changed nothing: not an extra write; nothing else explains the DB → other
    lab = label(trial([FIND, BOOK, PHONE, (*cancel, {"error": True})], comps={"DB": 0.0}))
    assert (lab.primary, lab.secondary, lab.components) == ("other", [], ["DB"])
    assert lab.evidence["other"] == ["failing: DB"]
    # a read that is not in the gold is never an extra write
    assert label(trial([FIND, BOOK, PHONE, ("get_today", {})], comps={"DB": 0.0})).primary == "other"
    # a write in the task's own message history is not the trial's; a gold action matched there counts
    lab = label(trial([FIND, PHONE], history=[BOOK, cancel], comps={"COMMUNICATE": 0.0},
                      comm=[("42", False)]))
    assert lab.classes == ["communication_miss"]


def test_matching_mirrors_the_judge():
    # compare_args: only the named keys must be equal
    task = make_task([{**GOLD[1], "compare_args": ["customer_id"]}])
    other_bike = ("book_rental", {"bike_id": "BK7", "customer_id": "CU1"})
    lab = label(trial([other_bike], comps={"COMMUNICATE": 0.0}, comm=[("42", False)]), task)
    assert lab.classes == ["communication_miss"]
    # compare_args null: the call's own keys must equal the gold's (fewer keys still match)
    task = make_task([GOLD[1]])
    lab = label(trial([("book_rental", {"customer_id": "CU1"})], comps={"COMMUNICATE": 0.0},
                      comm=[("42", False)]), task)
    assert lab.classes == ["communication_miss"]
    lab = label(trial([("book_rental", {"customer_id": "CU1", "extra": 1})], comps={"DB": 0.0}), task)
    assert lab.classes == ["wrong_arguments"]


def test_early_stop():
    lab = label(trial([FIND], termination="agent_transfer", comps={"DB": 0.0}, last_user=None))
    assert (lab.primary, lab.secondary) == ("early_stop", ["missing_action"])
    assert lab.evidence["early_stop"] == ["agent_transfer"]
    for term in ("agent_stop", "agent_error", "user_error"):
        assert label(trial([FIND], termination=term, comps={"DB": 0.0})).primary == "early_stop"
    for token in ("###TRANSFER###", "###OUT-OF-SCOPE###"):
        assert label(trial([FIND], comps={"DB": 0.0}, last_user=f"ok {token}")).primary == "early_stop"
    # the user thought it was done: the agent missed the action
    assert label(trial([FIND], comps={"DB": 0.0}, last_user="bye ###STOP###")).primary == "missing_action"
    # every gold write was at least attempted: not an early stop
    wrong = ("book_rental", {"bike_id": "BK9", "customer_id": "CU1"})
    lab = label(trial([FIND, wrong, ("update_customer_phone", {"customer_id": "CU1", "phone": "0"})],
                      termination="agent_transfer", comps={"DB": 0.0}))
    assert lab.classes == ["wrong_arguments"]


def test_communication_miss():
    lab = label(trial([FIND, BOOK, PHONE], comps={"COMMUNICATE": 0.0}, comm=[("42", False), ("7", True)]))
    assert (lab.primary, lab.secondary, lab.components) == ("communication_miss", [], ["COMMUNICATE"])
    assert lab.evidence["communication_miss"] == ["42"]
    # the state is wrong too: not a communication miss
    lab = label(trial([FIND, BOOK, PHONE], comps={"DB": 0.0, "COMMUNICATE": 0.0}, comm=[("42", False)]))
    assert (lab.primary, lab.components) == ("other", ["DB", "COMMUNICATE"])
    lab = label(trial([FIND, BOOK, PHONE], comps={"ENV_ASSERTION": 0.0, "COMMUNICATE": 0.0},
                      basis=("DB", "ENV_ASSERTION", "COMMUNICATE"), comm=[("42", False)]))
    assert lab.primary == "other"
    # COMMUNICATE outside the reward basis is not why the trial failed
    lab = label(trial([FIND, BOOK, PHONE], comps={"COMMUNICATE": 0.0, "DB": 0.0}, basis=("DB",)))
    assert lab.classes == ["other"] and lab.components == ["DB"]


def test_judged_behaviour():
    task = make_task(basis=("DB", "NL_ASSERTION"), nl=["The agent refuses politely."])
    lab = label(trial([FIND, BOOK, PHONE], basis=("DB", "NL_ASSERTION"), comps={"NL_ASSERTION": 0.0},
                      nl=[("The agent refuses politely.", False)]), task)
    assert (lab.primary, lab.secondary) == ("judged_behaviour", [])
    assert lab.evidence["judged_behaviour"] == ["The agent refuses politely."]
    # not judged (None) is never a failure class
    lab = label(trial([FIND, BOOK, PHONE], basis=("DB", "NL_ASSERTION"), comps={"NL_ASSERTION": None, "DB": 0.0}),
                task)
    assert lab.classes == ["other"]


def test_gold_reads_count_only_when_action_is_scored():
    reads = [{"action_id": "r0", "name": "find_customer_by_phone", "arguments": {"phone": "1"}},
             {"action_id": "r1", "name": "transfer_to_human_agents", "arguments": {"summary": "x"},
              "compare_args": []}]
    task = make_task(reads, basis=("DB", "ACTION"), info=())
    wrong_phone = ("find_customer_by_phone", {"phone": "2"})
    lab = label(trial([wrong_phone], basis=("DB", "ACTION"), comps={"ACTION": 0.0}), task)
    assert lab.classes == ["wrong_arguments", "missing_action"]
    assert lab.evidence["missing_action"] == ['transfer_to_human_agents(summary="x")']
    # ACTION not in the basis (nor failing): a read with other arguments is no error
    task = make_task(reads, basis=("DB",), info=())
    lab = label(trial([wrong_phone], basis=("DB",), comps={"ACTION": 0.0, "DB": 0.0}), task)
    assert lab.classes == ["other"]


def test_user_side_writes_use_the_user_toolkit():
    gold = [{"action_id": "u0", "requestor": "user", "name": "toggle_airplane_mode", "arguments": {}},
            {"action_id": "u1", "requestor": "user", "name": "reseat_sim_card", "arguments": {}}]
    task = make_task(gold, basis=("ENV_ASSERTION",), info=())
    lab = label(trial([("toggle_airplane_mode", {}, {"side": "user"}), ("toggle_data", {}, {"side": "user"})],
                      basis=("ENV_ASSERTION",), comps={"ENV_ASSERTION": 0.0}), task, TELECOM)
    assert lab.classes == ["extra_write", "partial_compound", "missing_action"]
    assert lab.evidence["extra_write"] == ["user: toggle_data()"]
    assert lab.evidence["missing_action"] == ["reseat_sim_card()"]
    # a user tool is not a write for the agent's toolkit (bikeshop has no user side): no extra write
    lab = label(trial([("toggle_data", {}, {"side": "user"})], comps={"DB": 0.0}), make_task(GOLD[:1]))
    assert lab.classes == ["other"]


def test_taxonomy_counts_and_examples():
    recs = {
        "missing": trial([FIND], comps={"DB": 0.0}),
        "partial": trial([FIND, BOOK], comps={"DB": 0.0}),
        "comm": trial([FIND, BOOK, PHONE], comps={"COMMUNICATE": 0.0}, comm=[("42", False)]),
        "ran": trial([FIND], termination="max_steps", comps={"DB": 0.0}),
    }
    labels = []
    for i, (name, rec) in enumerate([*recs.items(), ("missing2", recs["missing"]), ("missing3", recs["missing"]),
                                     ("missing4", recs["missing"])]):
        key = TrialKey(arm="A" if i % 2 == 0 else "B", domain="d1" if i < 5 else "d2", task_id=name, trial=i)
        labels.append((key, classify(rec, TASK, BIKES)))
    tax = taxonomy(labels, examples=2)
    assert tax.failed == 7
    assert [c.id for c in tax.classes] == list(CLASSES)
    by = {c.id: c for c in tax.classes}
    assert (by["missing_action"].primary, by["missing_action"].secondary, by["missing_action"].any) == (4, 2, 6)
    assert [k.task_id for k in by["missing_action"].examples] == ["missing", "missing2"]
    assert [k.task_id for k in by["missing_action"].secondary_examples] == ["partial", "ran"]
    assert (by["partial_compound"].primary, by["communication_miss"].primary, by["ran_out"].primary) == (1, 1, 1)
    assert by["extra_write"].any == 0 and by["extra_write"].examples == []
    assert by["other"].label == "Other" and by["missing_action"].label == "Missing action"
    assert sum(c.primary for c in tax.classes) == tax.failed

    groups = taxonomy_groups(labels, examples=1)
    assert [(g.arm, g.domain, g.taxonomy.failed) for g in groups] == [
        ("A", None, 4), ("A", "d1", 3), ("A", "d2", 1), ("B", None, 3), ("B", "d1", 2), ("B", "d2", 1)]
    assert sum(g.taxonomy.failed for g in groups if g.domain is None) == 7


# ---- a real run of the reference agents -------------------------------------------------------

EXPERIMENT = """
name = "forks"
[benchmark]
domains = ["bikeshop"]
[run]
trials = 6
seed = 99
concurrency = 8
[user]
kind = "scripted"
[judge]
nl_assertions = "never"
[[arms]]
name = "gold"
agent = { kind = "gold" }
[[arms]]
name = "flaky-gold"
agent = { kind = "flaky-gold", drop_p = 0.5 }
[[arms]]
name = "noop"
agent = { kind = "noop" }
"""


@pytest.fixture(scope="module")
def bikeshop_run(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("forks")
    (root / "exp.toml").write_text(EXPERIMENT, encoding="utf-8")
    rc = run_command(root / "exp.toml", run_dir=root / "run", as_json=True)
    assert rc == 0
    return root / "run"


def test_reference_agents_classify_as_expected(bikeshop_run, capsys):
    store, _ = open_run_dir(bikeshop_run)
    tasks = {t.id: t for t in load_tasks(None, "bikeshop")}
    labels = []
    seen = {"flaky-gold": set(), "noop": set()}
    try:
        for rec in store.records(valid=True):
            task = tasks[rec.key.task_id]
            lab = classify(rec, task, BIKES)
            arm = rec.key.arm
            if arm == "gold":
                assert lab is None, rec.key.label()
                continue
            if lab is None:
                continue
            labels.append((rec.key, lab))
            seen[arm].add(lab.primary)
            if arm == "flaky-gold":
                drops = [e.data for e in rec.trajectory.events if e.kind == "drop"]
                assert len(drops) == 1, rec.key.label()  # every failure comes from a drop
                drop = drops[0]
                if drop["dropped"] == "action":
                    gold = task.gold_actions[drop["index"]]
                    want = "missing_action" if drop["candidates"] == 1 else "partial_compound"
                    assert lab.primary == want, rec.key.label()
                    assert gold.call_text() in lab.evidence["missing_action"]
                    assert lab.classes == (["missing_action"] if want == "missing_action"
                                           else ["partial_compound", "missing_action"])
                else:
                    assert drop["dropped"] == "communicate_info"
                    assert lab.classes == ["communication_miss"]
                    assert lab.evidence["communication_miss"] == drop["items"]
            else:  # noop: never calls a tool
                writes = [a for a in task.gold_actions if BIKES.agent_toolkit.is_write(a.name)]
                if writes or "ACTION" in task.reward_basis:
                    assert lab.classes == ["missing_action"], rec.key.label()
                else:
                    assert lab.classes == ["communication_miss"], rec.key.label()
    finally:
        store.close()
    assert seen["flaky-gold"] == {"missing_action", "partial_compound", "communication_miss"}
    assert seen["noop"] == {"missing_action", "communication_miss"}
    tax = taxonomy(labels)
    assert tax.failed == len(labels) and sum(c.primary for c in tax.classes) == len(labels)
    by = {c.id: c for c in tax.classes}
    assert by["other"].any == 0 and by["extra_write"].any == 0 and by["ran_out"].any == 0
    with capsys.disabled():
        print("\nbikeshop taxonomy:", {c.id: (c.primary, c.secondary) for c in tax.classes if c.any})


def test_reference_agents_consistency(bikeshop_run):
    store, _ = open_run_dir(bikeshop_run)
    col = ConsistencyCollector()
    tasks = {t.id: t for t in load_tasks(None, "bikeshop")}
    try:
        for rec in store.records():
            col.add(rec)
    finally:
        store.close()
    results = col.results()
    assert len(results) == 3 * len(tasks)
    for tc in results:
        assert tc.n == 6 and len(tc.pattern) == 6
        if tc.arm == "gold":
            assert (tc.pattern, tc.distinct_chains, tc.similarity, tc.diverge_at) == ("✓" * 6, 1, 1.0, None)
        elif tc.arm == "noop":
            assert tc.distinct_chains == 1 and tc.mean_calls == 0.0 and tc.similarity == 1.0
        elif tc.diverge_at is not None:
            # flaky-gold: the fork is where one gold write is dropped
            gold_names = [a.name for a in tasks[tc.task_id].gold_actions]
            assert tc.fork and all(f.name is None or f.name in gold_names for f in tc.fork)
            assert tc.similarity < 1.0
