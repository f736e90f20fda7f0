"""Where a reminder goes, and what never reaches the agent."""

from __future__ import annotations

import json

import pytest

from agentrig.plugins.memory import prompts

from .conftest import SILENT, agent_texts, edits, last_user_text, play, script, section, triggers, users

REMINDER = "The customer asked for size M earlier, and the bike about to be booked is size L."


def reminder_at(step: int):
    """A decision phase that speaks at the ``step``-th trigger only."""
    return script([SILENT] * step + [{"content": f"<context_for_action>{REMINDER}</context_for_action>"}], SILENT)


async def test_a_reminder_reaches_exactly_one_agent_call_as_a_system_message(fake, channel):
    fake.handlers["user"] = users(4)
    fake.handlers["memory.decide"] = reminder_at(1)
    record = await play(channel)
    injected = prompts.reminder_text(REMINDER)
    bodies = fake.bodies("agent")
    assert len(bodies) == 3
    assert bodies[1]["messages"][-1] == {"role": "system", "content": injected}
    assert [REMINDER in t for t in agent_texts(fake)] == [False, True, False]
    # not kept in the agent's history: the next call is the previous one minus the reminder, plus the new turns
    assert bodies[2]["messages"][:len(bodies[1]["messages"]) - 1] == bodies[1]["messages"][:-1]
    assert all(REMINDER not in json.dumps(m.model_dump()) for m in record.trajectory.messages)
    events = triggers(record)
    assert [e["decide"]["decision"] for e in events] == ["silent", "inject", "silent"]
    assert events[1]["decide"]["text"] == REMINDER and events[1]["injected"] == injected
    assert events[1]["decide"]["parsed"] == "reminder" and REMINDER in events[1]["decide"]["raw"]
    assert [e["injected"] for e in events] == [None, injected, None]
    assert record.verdict.valid


async def test_user_append_adds_the_reminder_to_the_last_user_turn_of_that_call_only(fake, channel):
    fake.handlers["user"] = users(4)
    fake.handlers["memory.decide"] = reminder_at(1)
    await play(channel, injection="user_append")
    injected = prompts.reminder_text(REMINDER)
    bodies = fake.bodies("agent")
    last_user = max(i for i, m in enumerate(bodies[1]["messages"]) if m["role"] == "user")
    assert bodies[1]["messages"][last_user]["content"] == "user message 2\n\n" + injected
    assert bodies[1]["messages"][-1]["role"] == "user"  # no extra system message
    assert bodies[2]["messages"][last_user] == {"role": "user", "content": "user message 2"}
    assert [REMINDER in t for t in agent_texts(fake)] == [False, True, False]


@pytest.mark.parametrize("mode", ["selective", "full_bank", "always_inject", "retrieval"])
async def test_the_status_never_reaches_the_agent(fake, channel, mode):
    fake.handlers["user"] = users(4)
    fake.handlers["memory.edit"] = lambda body: edits(
        ("memory_update_status", {"content": "STATUS-SECRET-42: greeted, next ask the dates"}),
        ("memory_save_knowledge", {"content": "the user message says size M"}))
    fake.handlers["memory.decide"] = lambda body: {
        "content": "<context_for_action>The user message said size M.</context_for_action>"}
    record = await play(channel, mode=mode)
    texts = agent_texts(fake)
    assert len(texts) == 3
    assert all("STATUS-SECRET" not in t for t in texts)
    assert all("STATUS-SECRET" not in t for t in map(json.dumps, fake.bodies("user")))
    # ... while the memory model does see it, and the agent got what the mode shows
    assert "STATUS-SECRET-42" in section(last_user_text(fake.bodies("memory.edit")[1]), "status")
    if mode in ("selective", "always_inject"):
        assert "STATUS-SECRET-42" in section(last_user_text(fake.bodies("memory.decide")[0]), "status")
    assert all("size M" in t for t in texts)
    assert all("STATUS-SECRET" not in (e["injected"] or "") for e in triggers(record))


async def test_garbled_decisions_are_silence(fake, channel):
    garbled = "I think the agent should <context_for_action>check the size " + "x" * 800
    fake.handlers["user"] = users(4)
    fake.handlers["memory.decide"] = script([{"content": garbled}, {"content": "<no_intervention>"},
                                             {"content": "<context_for_action></context_for_action>"}], SILENT)
    record = await play(channel)
    for body in fake.bodies("agent"):
        assert [m["role"] for m in body["messages"]].count("system") == 1  # the agent's own prompt only
    assert all("check the size" not in t for t in agent_texts(fake))
    events = triggers(record)
    assert [e["decide"]["parsed"] for e in events] == ["unparseable", "no_intervention", "empty"]
    assert all(e["decide"]["decision"] == "silent" and e["injected"] is None for e in events)
    assert events[0]["decide"]["raw"] == garbled[:500]
    assert record.verdict.valid and record.verdict.termination == "user_stop"


async def test_long_reminders_are_cut_before_they_are_injected(fake, channel):
    fake.handlers["user"] = users(2)
    fake.handlers["memory.decide"] = lambda body: {"content": f"<context_for_action>{'r' * 300}</context_for_action>"}
    record = await play(channel, max_reminder_chars=100)
    event = triggers(record)[0]
    assert event["decide"]["text"] == "r" * 100 + " …[200 more characters cut]"
    assert event["injected"] == prompts.reminder_text(event["decide"]["text"])
    assert fake.bodies("agent")[0]["messages"][-1]["content"] == event["injected"]
