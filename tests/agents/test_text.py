"""Text mode: tools in the prompt, one JSON action per reply, format errors and their cap."""

from __future__ import annotations

import json

import pytest

from agentrig.agents import GREETING, AgentSettings, AgentStop, TextAgent, build_agent
from agentrig.agents.text import parse_action
from agentrig.types import Message, Transient

from .conftest import chat_bodies, make_ctx, tool, user

TEXT = AgentSettings(tool_mode="text")


async def _agent(channel, settings: AgentSettings = TEXT):
    ctx = make_ctx(channel=channel)
    agent = build_agent(settings, ctx)
    await agent.start([Message(role="assistant", content=GREETING)])
    return ctx, agent


async def test_good_replies_become_calls_and_messages(fake, channel):
    ctx, agent = await _agent(channel)
    assert isinstance(agent, TextAgent)
    fake.push_reply(
        {"content": 'Let me look you up.\n```json\n{"action": "find_customer_by_email", '
                    '"arguments": {"email": "diego.alvarez@example.net"}}\n```'},
        {"content": '{"action": "respond", "content": "Hello Diego, what dates {roughly} do you need?"}'},
    )
    m1 = await agent.respond([user("I want a city bike.")], [])
    assert m1.content is None and len(m1.tool_calls) == 1
    call = m1.tool_calls[0]
    assert call.name == "find_customer_by_email" and call.arguments == {"email": "diego.alvarez@example.net"}
    assert call.id == "text-1" and json.loads(call.arguments_raw) == call.arguments and m1.call == 0
    m2 = await agent.respond([tool(call.id, '"CU-5840"')], [])
    assert m2.content == "Hello Diego, what dates {roughly} do you need?" and not m2.tool_calls

    b1, b2 = chat_bodies(fake)
    assert "tools" not in b1 and "parallel_tool_calls" not in b1
    system = b1["messages"][0]["content"]
    assert ctx.bench.policy.strip() in system
    for spec in ctx.bench.spec.agent_toolkit.tool_specs():
        head = f"## {spec.name}\n{spec.description}\nArguments: "
        assert head in system
        shown = system.split(head, 1)[1].split("\n", 1)[0]
        assert "title" not in shown or "title" in json.dumps(spec.parameters.get("properties", {}))
        assert json.loads(shown) == _without_titles(spec.parameters)  # τ²'s schema, less pydantic's titles
    assert '{"action": "respond", "content": "<your message>"}' in system
    assert b1["messages"][1] == {"role": "assistant",
                                 "content": json.dumps({"action": "respond", "content": GREETING})}
    assert b2["messages"][-1] == {"role": "user", "content": 'Result of find_customer_by_email: "CU-5840"'}
    assert b2["messages"][-2]["content"].startswith("Let me look you up.")
    assert ctx.trajectory.counters.get("format_errors", 0) == 0


async def test_bad_reply_gets_a_format_error_then_recovers(fake, channel):
    ctx, agent = await _agent(channel)
    fake.push_reply({"content": "Sure, I can help with that!"},
                    {"content": '{"action": "respond", "content": "Your email, please?"}'})
    m = await agent.respond([user("hi")], [])
    assert m.content == "Your email, please?" and m.call == 1
    b1, b2 = chat_bodies(fake)
    assert b2["messages"][:len(b1["messages"])] == b1["messages"]
    assert b2["messages"][-2] == {"role": "assistant", "content": "Sure, I can help with that!"}
    note = b2["messages"][-1]
    assert note["role"] == "user" and note["content"].startswith("Format error: the reply holds no JSON object")
    assert '{"action": "respond", "content": ' in note["content"]
    assert ctx.trajectory.counters["format_errors"] == 1
    ev = [e for e in ctx.trajectory.events if e.kind == "format_error"]
    assert len(ev) == 1 and ev[0].plugin == "agent" and ev[0].data["reply"] == "Sure, I can help with that!"
    assert "no JSON object" in ev[0].data["problem"]


async def test_stops_after_the_cap_of_consecutive_format_errors(fake, channel):
    ctx, agent = await _agent(channel, AgentSettings(tool_mode="text", max_format_errors=2))
    fake.push_reply({"content": '{"action": "respond", "content": "a"} {"action": "respond", "content": "b"}'},
                    {"content": "```json\n{\"action\": \"get_today\", \"arguments\": [1]}\n```"},
                    {"content": "never requested"})
    with pytest.raises(AgentStop) as stop:
        await agent.respond([user("hi")], [])
    assert stop.value.termination == "too_many_format_errors"
    assert "arguments" in stop.value.detail
    assert len(chat_bodies(fake)) == 2
    assert ctx.trajectory.counters["format_errors"] == 2
    problems = [e.data["problem"] for e in ctx.trajectory.events if e.kind == "format_error"]
    assert "2 JSON objects" in problems[0] and "must be a JSON object" in problems[1]


async def test_transient_applies_to_the_step_and_not_after(fake, channel):
    ctx, agent = await _agent(channel)
    fake.push_reply({"content": "oops"}, {"content": '{"action": "respond", "content": "ok"}'},
                    {"content": '{"action": "respond", "content": "bye"}'})
    await agent.respond([user("hi")], [Transient(text="NOTE", placement="user_append")])
    await agent.respond([user("thanks")], [])
    b1, b2, b3 = chat_bodies(fake)
    assert b1["messages"][-1] == {"role": "user", "content": "hi\n\nNOTE"}
    assert b2["messages"][2] == {"role": "user", "content": "hi\n\nNOTE"}  # the retry of the same step
    assert "NOTE" not in json.dumps(b3) and "NOTE" not in json.dumps(agent.messages)


async def test_unknown_tool_is_not_a_format_error(fake, channel):
    ctx, agent = await _agent(channel)
    fake.push_reply({"content": '{"action": "teleport", "arguments": {}}'})
    m = await agent.respond([user("hi")], [])
    assert m.tool_calls[0].name == "teleport"
    assert ctx.trajectory.counters.get("format_errors", 0) == 0


@pytest.mark.parametrize("reply, expected", [
    ('{"action": "get_today"}', {"action": "get_today", "arguments": {}}),
    ('<think>maybe {this}</think>\n{"action": "respond", "content": "hi"}', {"action": "respond", "content": "hi"}),
    ('Here: {"action": "x", "arguments": {"a": {"b": [1, 2]}}} hope it helps',
     {"action": "x", "arguments": {"a": {"b": [1, 2]}}}),
])
def test_parse_action_accepts(reply, expected):
    assert parse_action(reply) == (expected, None)


@pytest.mark.parametrize("reply, problem", [
    ("", "empty"),
    ("just words", "no JSON object"),
    ('{"action": "respond", "content": "unterminated}', "no valid JSON object"),
    ('{"content": "hi"}', 'no "action"'),
    ('{"action": "respond"}', '"content"'),
    ('{"action": "respond", "content": "a"}\n{"action": "respond", "content": "b"}', "2 JSON objects"),
    ('{"action": "get_today", "arguments": "none"}', "must be a JSON object"),
])
def test_parse_action_rejects(reply, problem):
    action, why = parse_action(reply)
    assert action is None and problem in why


def _without_titles(schema):
    """The schema with every ``title`` keyword removed (property names are kept)."""
    if isinstance(schema, list):
        return [_without_titles(x) for x in schema]
    if not isinstance(schema, dict):
        return schema
    out = {}
    for key, value in schema.items():
        if key == "properties":
            out[key] = {name: _without_titles(sub) for name, sub in value.items()}
        elif key != "title":
            out[key] = _without_titles(value)
    return out


def test_the_tool_list_drops_title_keywords_but_not_a_property_called_title():
    from types import SimpleNamespace

    from agentrig.agents.prompts import tools_section

    schema = {"title": "parameters", "type": "object", "required": ["title"],
              "properties": {"title": {"title": "Title", "type": "string", "description": "The book's title."},
                             "tags": {"title": "Tags", "type": "array", "items": {"type": "string", "title": "Tag"}}}}
    text = tools_section([SimpleNamespace(name="add_book", description="Add a book.", parameters=schema)])
    shown = json.loads(text.split("Arguments: ", 1)[1])
    assert shown == {"type": "object", "required": ["title"],
                     "properties": {"title": {"type": "string", "description": "The book's title."},
                                    "tags": {"type": "array", "items": {"type": "string"}}}}
    assert text.startswith("# Tools\n\n## add_book\nAdd a book.\nArguments: ")
