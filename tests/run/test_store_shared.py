"""The agent requests' large parts (system prompt, tool schemas) are stored once per run and put
back on reading (store/shared.py): records come back equal, the trial blobs stay small, a
rolled-back append leaves nothing behind, and an old record without requests is untouched."""

from __future__ import annotations

import zlib
from pathlib import Path

from agentrig.store.store import Store
from agentrig.types import AgentRequest, TrialRecord

from tests.run.test_store import make_record

POLICY = "You are an agent. " + " ".join(f"rule {i} applies." for i in range(300))
TOOLS = [{"type": "function", "function": {"name": f"tool_{i}", "description": "d" * 60,
                                           "parameters": {"type": "object", "properties": {}}}} for i in range(20)]


def with_requests(record: TrialRecord) -> TrialRecord:
    reqs = [AgentRequest(call=0, keep=0, tail=[{"role": "system", "content": POLICY},
                                               {"role": "user", "content": "hi"}], tools=TOOLS),
            AgentRequest(call=1, keep=2, tail=[{"role": "assistant", "content": "ok"},
                                               {"role": "system", "content": "short reminder"}], same_tools=True)]
    traj = record.trajectory.model_copy(update={"agent_requests": reqs})
    return record.model_copy(update={"trajectory": traj})


def test_shared_parts_are_stored_once_and_records_come_back_whole(tmp_path: Path):
    recs = [with_requests(make_record("a", "airline", str(i), t)) for i in range(5) for t in range(2)]
    plain = make_record("a", "airline", "old", 0)  # a record without requests (an older trial)
    with Store.open(tmp_path / "s.sqlite") as store:
        assert all(store.append(r) for r in recs) and store.append(plain)
        assert store.append(recs[0]) is False  # a second valid row of a key: rolled back, shared rows too
        assert store.query("SELECT count(*) FROM shared") == [(2,)]  # the policy and the tools, once
        blobs = [zlib.decompress(b).decode() for (b,) in store.query("SELECT record FROM trials")]
        assert all(POLICY not in b and '"tool_7"' not in b for b in blobs)
        assert all(b.count('"$shared"') == 2 for b in blobs[:-1]) and '"$shared"' not in blobs[-1]
        assert "short reminder" in blobs[0]  # small system messages stay in the record
        assert recs[0].trajectory.agent_requests[0].tail[0]["content"] == POLICY  # the caller's record unchanged
    with Store.open(tmp_path / "s.sqlite", create=False) as store:
        back = list(store.records())
        assert back == [*recs, plain]
        raw = store.raw_records("a", "airline", "3", 1)[0]
        assert raw["trajectory"]["agent_requests"][0]["tail"][0]["content"] == POLICY
        assert raw["trajectory"]["agent_requests"][0]["tools"] == TOOLS
