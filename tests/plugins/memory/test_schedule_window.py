"""When the memory agent runs, and exactly what it sees of the conversation."""

from __future__ import annotations

import pytest

from agentrig.plugins.memory.window import Conversation
from agentrig.types import Message, ToolCall

from .conftest import NO_EDIT, edits, last_user_text, play, script, section, tool_reply, triggers, users


@pytest.mark.parametrize("interval", [1, 2, 3])
async def test_trigger_before_step_0_then_every_interval_steps(fake, channel, interval):
    fake.handlers["user"] = users(8)  # 7 agent steps: 0..6
    record = await play(channel, interval=interval)
    assert record.verdict.valid and record.verdict.termination == "user_stop"
    assert record.trajectory.counters["agent_steps"] == 7
    due = [s for s in range(7) if s % interval == 0]
    assert [e["step"] for e in triggers(record)] == due == {1: list(range(7)), 2: [0, 2, 4, 6], 3: [0, 3, 6]}[interval]
    # both phases run right before the agent call of a due step, nothing before the others
    expected = []
    for s in range(7):
        expected += ["user"] + (["memory.edit", "memory.decide"] if s in due else []) + ["agent"]
    expected.append("user")
    assert [c.purpose for c in record.trajectory.model_calls] == expected
    assert all(c.role == "memory" for c in record.trajectory.model_calls if c.purpose.startswith("memory"))
    edit_bodies = fake.bodies("memory.edit")
    assert [b["messages"][-1]["content"].rsplit("step ", 1)[1] for b in edit_bodies] == [f"{s}." for s in due]
    # the event's call indices point at the two calls
    for e in triggers(record):
        assert record.trajectory.model_calls[e["edit"]["call"]].purpose == "memory.edit"
        assert record.trajectory.model_calls[e["decide"]["call"]].purpose == "memory.decide"
        assert e["decide"]["decision"] == "silent" and e["injected"] is None


async def test_the_window_holds_the_last_k_steps_with_their_results_cut_at_the_limit(fake, channel):
    fake.handlers["user"] = users(3)
    fake.handlers["agent"] = script([tool_reply("get_today", {}), tool_reply("search_available_bikes", {}),
                                     {"content": "Which dates would you like?"}], {"content": "One moment."})
    record = await play(channel, window=2, max_output_chars=50)
    msgs = record.trajectory.messages
    assert [(m.role, bool(m.tool_calls)) for m in msgs] == [
        ("assistant", False), ("user", False), ("assistant", True), ("tool", False), ("assistant", True),
        ("tool", False), ("assistant", False), ("user", False), ("assistant", False), ("user", False)]
    assert msgs[5].error and len(msgs[5].content) > 50
    cut = f"{msgs[5].content[:50]} …[{len(msgs[5].content) - 50} more characters cut]"
    today = msgs[3].content
    assert len(today) <= 50
    bodies = [last_user_text(b) for b in fake.bodies("memory.edit")]
    assert [e["step"] for e in triggers(record)] == [0, 1, 2, 3]

    # step 0: only the greeting is a step so far; the first request is inside the window
    assert section(bodies[0], "window") == (
        "The conversation from the agent's last 1 message(s) on, oldest first:\n"
        "[turn 0] agent: Hi! How can I help you today?\n"
        "[turn 1] user: user message 1")
    assert section(bodies[0], "requests").endswith("\n(none)")
    # step 2: two steps (tool calls with their results); the first request has left the window
    assert section(bodies[2], "window") == (
        "The conversation from the agent's last 2 message(s) on, oldest first:\n"
        "[turn 2] agent calls get_today({})\n"
        f"[turn 3] result of get_today: {today}\n"
        "[turn 4] agent calls search_available_bikes({})\n"
        f"[turn 5] error from search_available_bikes: {cut}")
    assert section(bodies[2], "requests").endswith("\n[turn 1] user message 1")
    # step 3: the window slid by one step; a user message inside it is shown in place
    assert section(bodies[3], "window") == (
        "The conversation from the agent's last 2 message(s) on, oldest first:\n"
        "[turn 4] agent calls search_available_bikes({})\n"
        f"[turn 5] error from search_available_bikes: {cut}\n"
        "[turn 6] agent: Which dates would you like?\n"
        "[turn 7] user: user message 2")
    assert section(bodies[3], "requests").endswith("\n[turn 1] user message 1")
    assert bodies[3].endswith("The agent is about to take its step 3.")
    # the decision phase sees the same window
    decide = [last_user_text(b) for b in fake.bodies("memory.decide")]
    assert section(decide[3], "window") == section(bodies[3], "window")


def test_the_window_shows_only_what_the_agent_sees_and_cuts_agent_text():
    msgs = [
        Message(role="assistant", content="Hello"),
        Message(role="user", content="My phone has no signal"),
        Message(role="assistant", content="A" * 80),
        Message(role="user", content=None, tool_calls=[ToolCall(id="u1", name="toggle_airplane_mode", arguments={})]),
        Message(role="tool", content="airplane mode off", tool_call_id="u1", requestor="user"),
        Message(role="user", content="Done, still nothing"),
        Message(role="assistant", tool_calls=[ToolCall(id="a1", name="get_line", arguments={"id": "L1"},
                                                       arguments_raw='{"id": "L1"}'),
                                              ToolCall(id="a2", name="get_plan", arguments={})]),
        Message(role="tool", content="line L1 active", tool_call_id="a1", requestor="assistant"),
        Message(role="tool", content="Error: no plan", tool_call_id="a2", requestor="assistant", error=True),
    ]
    conv = Conversation(msgs, max_output_chars=60)
    view = conv.view(2)
    assert view.start == 2 and view.steps == 2
    assert view.requests == [(1, "My phone has no signal")]
    assert view.window == "\n".join([
        f"[turn 2] agent: {'A' * 60} …[20 more characters cut]",
        "[turn 5] user: Done, still nothing",
        '[turn 6] agent calls get_line({"id": "L1"})',
        "[turn 6] agent calls get_plan({})",
        "[turn 7] result of get_line: line L1 active",
        "[turn 8] error from get_plan: Error: no plan",
    ])
    # retrieval matches the window's own words, not its labels
    assert view.query.split("\n") == ["A" * 60 + " …[20 more characters cut]", "Done, still nothing", "get_line",
                                      '{"id": "L1"}', "get_plan", "{}", "line L1 active", "Error: no plan"]
    everything = conv.view(10)
    assert everything.start == 0 and everything.steps == 3 and everything.requests == []
    # the conversation is read as it grows
    msgs.append(Message(role="user", content="Any news?"))
    msgs.append(Message(role="assistant", content="Yes"))
    assert conv.view(1).requests == [(1, "My phone has no signal"), (5, "Done, still nothing"), (9, "Any news?")]


async def test_edit_results_reach_the_model_at_the_next_trigger(fake, channel):
    fake.handlers["user"] = users(4)
    fake.handlers["memory.edit"] = script([edits(("memory_save_knowledge", {"content": "Wants a city bike"}),
                                                 ("memory_delete", {"memory_id": "K7"}),
                                                 ("memory_update_status", {"content": "Greeted; waiting."}))],
                                          NO_EDIT)
    record = await play(channel)
    first = triggers(record)[0]["edit"]
    assert [(c["name"], c["ok"]) for c in first["tool_calls"]] == [
        ("memory_save_knowledge", True), ("memory_delete", False), ("memory_update_status", True)]
    assert first["tool_calls"][1]["result"].startswith("error: no entry 'K7'")
    assert first["tool_calls"][0]["arguments"] == {"content": "Wants a city bike"}
    assert first["bank_size"] == {"knowledge": 1, "procedural": 0, "status_chars": len("Greeted; waiting.")}
    bodies = [last_user_text(b) for b in fake.bodies("memory.edit")]
    assert "<previous_edits>" not in bodies[0]
    previous = section(bodies[1], "previous_edits")
    assert "memory_save_knowledge" in previous and "-> saved as K1" in previous
    assert "error: no entry 'K7'" in previous
    assert "<previous_edits>" not in bodies[2]  # the second trigger made no calls
    assert section(bodies[1], "knowledge") == "K1 (step 0): Wants a city bike"
    assert section(bodies[1], "status") == "Greeted; waiting."


async def test_above_50_entries_the_prompts_show_the_20_per_kind_most_similar_to_the_window(fake, channel):
    fake.handlers["user"] = script([{"content": "I need a tandem for two riders."}],
                                   script([{"content": "ok"}], {"content": "bye ###STOP###"}))
    saves = [("memory_save_knowledge", {"content": f"unrelated fact q{i}x"}) for i in range(26)]
    saves[2] = ("memory_save_knowledge", {"content": "the customer asked about a tandem"})
    saves += [("memory_save_procedural", {"content": f"unrelated lesson z{i}w"}) for i in range(26)]
    fake.handlers["memory.edit"] = script([edits(*saves)], NO_EDIT)
    record = await play(channel)
    assert triggers(record)[0]["edit"]["bank_size"]["knowledge"] == 26
    for text in (last_user_text(fake.bodies("memory.decide")[0]), last_user_text(fake.bodies("memory.edit")[1])):
        knowledge = section(text, "knowledge").split("\n")
        procedural = section(text, "procedural").split("\n")
        assert knowledge[0] == "(the bank holds 26 knowledge entries; shown: the 20 most similar to the window)"
        assert procedural[0].startswith("(the bank holds 26 procedural entries; shown: the 20")
        ids = [line.split(" ", 1)[0] for line in knowledge[1:]]
        assert len(ids) == 20 and "K3" in ids  # the one entry sharing a term with the window
        # the rest are ties: the newest win; listed in the order they were saved
        assert ids == ["K3"] + [f"K{i}" for i in range(8, 27)]
        assert [line.split(" ", 1)[0] for line in procedural[1:]] == [f"P{i}" for i in range(7, 27)]
