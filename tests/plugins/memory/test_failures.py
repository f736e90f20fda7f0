"""A memory call that fails after the channel's retries is recorded and the trial goes on; a fatal
channel error on the memory role stops the run."""

from __future__ import annotations

import pytest

from agentrig.errors import AuthError
from agentrig.testing.fake_endpoint import Fault

from .conftest import agent_texts, play, triggers, users


async def test_a_failing_edit_call_is_recorded_and_the_trial_stays_valid(fake, channel):
    fake.handlers["user"] = users(3)
    fake.handlers["memory.edit"] = lambda body: Fault("server_error", status=500)
    record = await play(channel)
    assert record.verdict.valid and record.verdict.termination == "user_stop"
    assert len(fake.bodies("memory.edit")) == 2 * 2  # two triggers, max_attempts = 2 each
    assert fake.bodies("memory.decide") == []  # skipped after a failed edit
    calls = record.trajectory.model_calls
    for e in triggers(record):
        edit = e["edit"]
        assert edit["error"].startswith("SERVER_ERROR: ") and "max_attempts=2" in edit["error"]
        assert edit["tool_calls"] == [] and edit["bank_size"] == {"knowledge": 0, "procedural": 0, "status_chars": 0}
        failed = calls[edit["call"]]
        assert failed.purpose == "memory.edit" and failed.error and len(failed.attempts) == 2
        assert e["decide"]["error"].startswith("skipped") and e["decide"]["call"] is None
        assert e["injected"] is None
    assert [c.purpose for c in calls if c.error is None] == ["user", "agent", "user", "agent", "user"]
    assert len(agent_texts(fake)) == 2


async def test_a_failing_decision_call_is_recorded_and_nothing_is_injected(fake, channel):
    fake.handlers["user"] = users(3)
    fake.handlers["memory.decide"] = lambda body: Fault("server_error", status=503)
    record = await play(channel)
    assert record.verdict.valid and record.verdict.termination == "user_stop"
    for e in triggers(record):
        assert e["edit"]["error"] is None
        decide = e["decide"]
        assert decide["decision"] == "silent" and decide["text"] is None
        assert decide["error"].startswith("SERVER_ERROR: ")
        failed = record.trajectory.model_calls[decide["call"]]
        assert failed.purpose == "memory.decide" and failed.error and len(failed.attempts) == 2
        assert e["injected"] is None
    for body in fake.bodies("agent"):
        assert [m["role"] for m in body["messages"]].count("system") == 1


async def test_a_401_on_the_memory_role_stops_the_run(fake, channel):
    fake.handlers["user"] = users(3)
    fake.handlers["memory.edit"] = lambda body: Fault("unauthorized")
    with pytest.raises(AuthError):
        await play(channel)
    assert fake.bodies("agent") == []  # it failed before the agent's first call
