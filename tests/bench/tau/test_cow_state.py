"""The episode's copy-on-write state: the same behaviour as a full copy, and the shared pristine
state never changed by a trial."""

from __future__ import annotations

import hashlib
import json
import marshal

import pytest

from agentrig.agents.base import AgentSettings
from agentrig.bench.tau.data import domain_dir, load_policy, load_tasks
from agentrig.bench.tau.domains import get_domain
from agentrig.bench.tau.environment import Environment
from agentrig.bench.tau.state import CowTable, cow_state, equal_to_diff, record_diff, shared_db
from agentrig.bench.tau.user import UserSettings
from agentrig.bench.tau.domain import TauTrial
from agentrig.trial.context import TrialContext
from agentrig.bench.tau.episode import Limits, play_trial
from agentrig.types import TrialKey


def _digest(obj) -> str:
    # canonical JSON: marshal's bytes depend on reference counts, not only on the content
    return hashlib.sha256(json.dumps(obj, sort_keys=True, default=str).encode()).hexdigest()


def test_cow_table_copies_on_keyed_read_and_tracks_changes():
    base = {"a": {"n": 1, "xs": [1]}, "b": {"n": 2, "xs": []}}
    t = CowTable(base)
    assert dict.__getitem__(t, "a") is base["a"]  # shared until read by key
    rec = t["a"]
    rec["xs"].append(2)
    t.get("b")["n"] = 3
    t["c"] = {"n": 4}
    del t["b"]
    assert base == {"a": {"n": 1, "xs": [1]}, "b": {"n": 2, "xs": []}}  # pristine untouched
    assert dict(t) == {"a": {"n": 1, "xs": [1, 2]}, "c": {"n": 4}}
    assert t.get("missing") is None and "b" not in t and len(t) == 2
    assert t.materialize() == dict(t) and not isinstance(t.materialize(), CowTable)


def test_cow_equality_agrees_with_plain_equality():
    base = {"t": {str(i): {"v": i} for i in range(50)}, "u": {"x": {"v": 0}}}
    gold = {"t": {**{str(i): {"v": i} for i in range(50)}, "3": {"v": 99}}, "u": {"x": {"v": 0}}}
    diff = record_diff(base, gold)
    cases = [
        lambda s: s["t"].__setitem__("3", {"v": 99}),  # the same change as the gold
        lambda s: s["t"]["3"].__setitem__("v", 98),  # a different value
        lambda s: None,  # nothing done
        lambda s: (s["t"]["3"].__setitem__("v", 99), s["t"].__setitem__("new", {"v": 1})),  # an extra record
        lambda s: (s["t"]["3"].__setitem__("v", 99), s["t"].pop("7")),  # a deleted record
        lambda s: (s["t"]["3"].__setitem__("v", 99), s["u"]["x"]),  # read only elsewhere
    ]
    for change in cases:
        cow, plain = cow_state(base), marshal.loads(marshal.dumps(base))
        change(cow)
        change(plain)
        assert equal_to_diff(cow, base, diff) == equal_to_diff(plain, base, diff) == (plain == gold)


@pytest.mark.parametrize("domain", ["bikeshop", "airline", "retail", "mock"])
def test_every_task_leaves_the_pristine_state_untouched(domain, request):
    import asyncio

    root = None if domain == "bikeshop" else request.getfixturevalue("tau2_root")
    spec, ddir = get_domain(domain), domain_dir(root, domain)
    db_path, _ = Environment.db_paths(spec, ddir)
    pristine = shared_db(db_path, spec.normalize_db)
    before = _digest(pristine)
    policy = load_policy(root, domain)

    async def play_all():
        for task in load_tasks(root, domain):
            for kind, p in (("gold", 0.0), ("flaky-gold", 1.0), ("noop", 0.0)):
                ctx = TrialContext(key=TrialKey(arm=kind, domain=domain, task_id=task.id, trial=0), task=task,
                                   bench=TauTrial(spec, ddir, policy), seed=3)
                record = await play_trial(ctx, agent=AgentSettings(kind=kind, drop_p=p),
                                          user=UserSettings(kind="scripted"), plugins=[], limits=Limits(),
                                          nl_judge="never")
                assert record.verdict.valid

    asyncio.run(play_all())
    assert _digest(pristine) == before


def test_record_diff_of_a_cow_state_equals_the_plain_diff():
    base = {"t": {str(i): {"v": i} for i in range(20)}, "u": {"x": {"v": 0}}}
    cow, plain = cow_state(base), marshal.loads(marshal.dumps(base))
    for s in (cow, plain):
        s["t"]["3"]["v"] = 30
        s["t"]["4"]  # read, unchanged
        s["t"]["new"] = {"v": 1}
        del s["t"]["7"]
    a, b = record_diff(base, cow), record_diff(base, plain)
    assert a.records == b.records and a.whole == b.whole
    assert a.records["t"] == ({"3": {"v": 30}, "new": {"v": 1}}, {"7"})
    assert record_diff(base, cow_state(base)).empty
