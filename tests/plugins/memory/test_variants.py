"""The five modes, and one bank per trial."""

from __future__ import annotations

from agentrig.plugins.memory import prompts

from .conftest import NO_EDIT, SILENT, agent_texts, edits, last_user_text, play, script, section, triggers, users


async def test_full_bank_shows_the_whole_bank_before_every_step_and_never_decides(fake, channel):
    fake.handlers["user"] = users(5)  # agent steps 0..3; triggers at 0 and 2
    fake.handlers["memory.edit"] = script([
        edits(("memory_save_knowledge", {"content": "Diego wants a city bike"}),
              ("memory_update_status", {"content": "private"})),
        edits(("memory_delete", {"memory_id": "K1"}),
              ("memory_save_procedural", {"content": "get_today returned Thursday"})),
    ], NO_EDIT)
    record = await play(channel, mode="full_bank", interval=2)
    assert fake.bodies("memory.decide") == []
    bodies = fake.bodies("agent")
    shown = [b["messages"][-1]["content"] if b["messages"][-1]["role"] == "system" else None for b in bodies]
    first = prompts.BANK_HEAD + "\nKnowledge:\n- K1 (step 0): Diego wants a city bike"
    second = prompts.BANK_HEAD + "\nProcedural:\n- P1 (step 2): get_today returned Thursday"
    assert shown == [first, first, second, second]
    events = record.trajectory.events
    assert [(e.kind, e.data["step"]) for e in events] == [
        ("memory.trigger", 0), ("memory.show", 1), ("memory.trigger", 2), ("memory.show", 3)]
    assert [e.data["injected"] for e in events] == shown
    assert all(e["decide"] is None and e["edit"]["error"] is None for e in triggers(record))
    assert [c.purpose for c in record.trajectory.model_calls].count("memory.edit") == 2


async def test_full_bank_with_an_empty_bank_shows_nothing(fake, channel):
    fake.handlers["user"] = users(3)
    record = await play(channel, mode="full_bank")
    assert all(b["messages"][-1]["role"] != "system" for b in fake.bodies("agent"))
    assert [e["injected"] for e in triggers(record)] == [None, None]


async def test_always_inject_demands_a_reminder_and_records_when_it_gets_none(fake, channel):
    fake.handlers["user"] = users(4)
    fake.handlers["memory.decide"] = script([
        {"content": "<context_for_action>Nothing has been booked yet.</context_for_action>"},
        SILENT, {"content": "sure"}], SILENT)
    record = await play(channel, mode="always_inject")
    decide = fake.bodies("memory.decide")
    assert decide[0]["messages"][0]["content"] == prompts.ALWAYS_SYSTEM != prompts.DECIDE_SYSTEM
    assert "must hand it a reminder at every step" in prompts.ALWAYS_SYSTEM
    assert "<no_intervention/>" not in prompts.ALWAYS_SYSTEM
    events = triggers(record)
    assert [e["decide"]["parsed"] for e in events] == ["reminder", "no_intervention", "unparseable"]
    assert [e["injected"] is not None for e in events] == [True, False, False]
    assert ["Nothing has been booked yet." in t for t in agent_texts(fake)] == [True, False, False]
    assert len(fake.bodies("memory.edit")) == 3


async def test_advisor_has_no_bank_and_decides_from_the_window_alone(fake, channel):
    fake.handlers["user"] = users(3)
    fake.handlers["memory.edit"] = lambda body: (_ for _ in ()).throw(AssertionError("no edit phase"))
    fake.handlers["memory.decide"] = script([{"content": "<context_for_action>The customer has not said which "
                                                         "bike yet.</context_for_action>"}], SILENT)
    record = await play(channel, mode="advisor")
    decide = fake.bodies("memory.decide")
    assert len(decide) == 2 and fake.bodies("memory.edit") == [] and fake.errors == []
    assert decide[0]["messages"][0]["content"] == prompts.ADVISOR_SYSTEM
    user = last_user_text(decide[0])
    assert "<window>" in user and "<requests>" in user
    assert all(f"<{tag}>" not in user for tag in ("status", "knowledge", "procedural"))
    assert "tools" not in decide[0]
    events = triggers(record)
    assert all(e["edit"] is None for e in events)
    assert events[0]["decide"]["decision"] == "inject"
    assert ["which bike yet" in t for t in agent_texts(fake)] == [True, False]


async def test_retrieval_shows_the_top_k_entries_similar_to_the_window_every_step(fake, channel):
    fake.handlers["user"] = script([{"content": "I pay with a Discover card."}, {"content": "And I want size M."}],
                                   {"content": "bye ###STOP###"})
    fake.handlers["memory.edit"] = script([edits(
        ("memory_save_knowledge", {"content": "the payment card is Discover"}),
        ("memory_save_knowledge", {"content": "the rental is for a visiting friend"}),
        ("memory_save_procedural", {"content": "zeppelin quux"}),
    )], NO_EDIT)
    record = await play(channel, mode="retrieval", retrieval_k=1, window=1)
    assert fake.bodies("memory.decide") == []
    events = triggers(record)
    assert all(e["decide"] is None for e in events)
    # step 0: the window holds "I pay with a Discover card." -> K1 only (k = 1)
    assert events[0]["retrieved"] == ["K1"]
    assert events[0]["injected"] == prompts.RETRIEVED_HEAD + "\n- K1 (step 0): the payment card is Discover"
    # step 1: a window of one step: the agent's last text and "And I want size M." share no term with the
    # bank (the window's labels such as "user" or "turn" are not part of the query)
    assert len(events) == 2
    assert events[1]["retrieved"] == [] and events[1]["injected"] is None
    texts = agent_texts(fake)
    assert ["payment card is Discover" in t for t in texts] == [e["injected"] is not None for e in events]
    assert all("zeppelin" not in t for t in texts)


async def test_retrieval_every_step_between_triggers(fake, channel):
    fake.handlers["memory.edit"] = script([edits(("memory_save_knowledge", {"content": "card: Discover"}))], NO_EDIT)
    fake.handlers["user"] = script([{"content": "My card is a Discover card."}, {"content": "Discover, yes."}],
                                   {"content": "bye ###STOP###"})
    record = await play(channel, mode="retrieval", interval=5)
    kinds = [(e.kind, e.data["step"], e.data.get("retrieved")) for e in record.trajectory.events]
    assert kinds == [("memory.trigger", 0, ["K1"]), ("memory.show", 1, ["K1"])]
    assert len(fake.bodies("memory.edit")) == 1


async def test_each_trial_starts_with_an_empty_bank(fake, channel):
    fake.handlers["user"] = lambda body: ({"content": "bye ###STOP###"}
                                          if sum(m["role"] == "assistant" for m in body["messages"]) >= 2
                                          else {"content": "hello"})
    fake.handlers["memory.edit"] = lambda body: edits(("memory_save_knowledge", {"content": "remember the bike"}),
                                                      ("memory_update_status", {"content": "busy"}))
    first = await play(channel, trial=0)
    n_first = len(fake.bodies("memory.edit"))
    second = await play(channel, trial=1)
    assert [e["edit"]["tool_calls"][0]["result"] for e in triggers(first)] == ["saved as K1", "saved as K2"]
    assert [e["edit"]["tool_calls"][0]["result"] for e in triggers(second)] == ["saved as K1", "saved as K2"]
    opening = last_user_text(fake.bodies("memory.edit")[n_first])
    assert section(opening, "knowledge") == "(none)" and section(opening, "status") == "(empty)"
    assert "<previous_edits>" not in opening and "remember the bike" not in opening
    assert triggers(second)[0]["edit"]["bank_size"] == {"knowledge": 1, "procedural": 0, "status_chars": 4}
