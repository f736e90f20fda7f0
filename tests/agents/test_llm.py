"""The native tool-calling agent against a real local endpoint."""

from __future__ import annotations

import json

import pytest

from agentrig.agents import GREETING, AgentSettings, LLMAgent, build_agent
from agentrig.agents.llm import assistant_dict, openai_tools
from agentrig.errors import AuthError, ConfigError
from agentrig.types import Message, ToolCall, Transient

from .conftest import chat_bodies, make_ctx, tool, user

CALL = {"id": "c1", "name": "find_customer_by_email", "arguments": {"email": "diego.alvarez@example.net"}}


def _greeted(agent_settings: AgentSettings, channel) -> tuple:
    ctx = make_ctx(channel=channel)
    return ctx, build_agent(agent_settings, ctx)


async def test_request_holds_policy_tools_and_grows_incrementally(fake, channel):
    ctx, agent = _greeted(AgentSettings(), channel)
    assert isinstance(agent, LLMAgent)
    await agent.start([Message(role="assistant", content=GREETING)])
    fake.push_reply({"content": None, "tool_calls": [CALL]}, {"content": "You have one rental."})

    m1 = await agent.respond([user("I want to rent a city bike.")], [])
    assert m1.tool_calls[0].name == "find_customer_by_email" and m1.call == 0
    assert m1.tool_calls[0].arguments == {"email": "diego.alvarez@example.net"}
    stored = list(agent.messages)  # the dicts themselves, to check they are kept, not rebuilt
    m2 = await agent.respond([tool("c1", '"CU-5840"')], [])
    assert m2.content == "You have one rental." and m2.call == 1

    b1, b2 = chat_bodies(fake)
    system = b1["messages"][0]
    assert system["role"] == "system"
    assert ctx.bench.policy.strip() in system["content"]
    assert "customer-service agent" in system["content"]
    assert b1["tools"] == ctx.bench.spec.agent_toolkit.openai_tools()
    assert b1["parallel_tool_calls"] is False
    assert b1["seed"] == ctx.seed
    assert [m["role"] for m in b1["messages"]] == ["system", "assistant", "user"]
    assert b1["messages"][1]["content"] == GREETING
    # request 2 = request 1 + the assistant's call (raw argument string) + the tool result
    assert b2["messages"][:3] == b1["messages"]
    assert b2["messages"][3] == {"role": "assistant", "content": "", "tool_calls": [
        {"id": "c1", "type": "function",
         "function": {"name": "find_customer_by_email", "arguments": json.dumps(CALL["arguments"])}}]}
    assert b2["messages"][4] == {"role": "tool", "tool_call_id": "c1", "content": '"CU-5840"'}
    assert all(a is b for a, b in zip(stored, agent.messages))
    assert len(agent.messages) == 6 and agent.messages[-1] == {"role": "assistant", "content": "You have one rental."}
    assert [c.purpose for c in ctx.trajectory.model_calls] == ["agent", "agent"]


async def test_tools_are_built_once_per_toolkit(channel):
    a = build_agent(AgentSettings(), make_ctx(channel=channel))
    b = build_agent(AgentSettings(), make_ctx("cancel_ebike_full_refund", channel=channel))
    assert a.tools is b.tools is openai_tools(make_ctx().bench.spec.agent_toolkit)
    assert {t["function"]["name"] for t in a.tools} >= {"find_customer_by_email", "book_rental"}


@pytest.mark.parametrize("placement", ["system", "user_append"])
async def test_transient_context_reaches_exactly_one_request(fake, channel, placement):
    ctx, agent = _greeted(AgentSettings(), channel)
    await agent.start([Message(role="assistant", content=GREETING)])
    fake.push_reply({"content": None, "tool_calls": [CALL]}, {"content": "Found you."}, {"content": "Bye."})
    note = "MEMORY: this customer prefers e-bikes"
    await agent.respond([user("Hello, I need a bike.")], [Transient(text=note, placement=placement)])
    await agent.respond([tool("c1", '"CU-5840"')], [])
    await agent.respond([user("Thanks")], [])
    bodies = chat_bodies(fake)
    assert len(bodies) == 3
    first = bodies[0]["messages"]
    if placement == "system":
        assert first[-1] == {"role": "system", "content": note}
        assert first[-2] == {"role": "user", "content": "Hello, I need a bike."}
    else:
        assert first[-1] == {"role": "user", "content": "Hello, I need a bike.\n\n" + note}
    for body in bodies[1:]:
        assert note not in json.dumps(body["messages"])
    assert note not in json.dumps(agent.messages)
    assert bodies[1]["messages"][2] == {"role": "user", "content": "Hello, I need a bike."}


async def test_user_append_goes_to_the_last_user_message_after_tool_results(fake, channel):
    ctx, agent = _greeted(AgentSettings(), channel)
    await agent.start([Message(role="assistant", content=GREETING)])
    fake.push_reply({"content": None, "tool_calls": [CALL]}, {"content": "ok"})
    await agent.respond([user("first")], [])
    await agent.respond([tool("c1", "x")], [Transient(text="NOTE", placement="user_append"),
                                            Transient(text="SYS", placement="system")])
    body = chat_bodies(fake)[1]["messages"]
    assert body[2] == {"role": "user", "content": "first\n\nNOTE"}
    assert body[-1] == {"role": "system", "content": "SYS"} and body[-2]["role"] == "tool"
    assert agent.messages[2] == {"role": "user", "content": "first"}


async def test_reasoning_is_kept_and_sent_back(fake, channel):
    ctx, agent = _greeted(AgentSettings(), channel)
    await agent.start([Message(role="assistant", content=GREETING)])
    fake.push_reply({"content": None, "tool_calls": [CALL], "reasoning_content": "look the customer up first"},
                    {"content": "done"})
    m = await agent.respond([user("hi")], [])
    assert m.reasoning == "look the customer up first"
    await agent.respond([tool("c1", "x")], [])
    sent = chat_bodies(fake)[1]["messages"][3]
    assert sent["reasoning_content"] == "look the customer up first" and sent["tool_calls"][0]["id"] == "c1"


async def test_reasoning_not_sent_when_disabled(fake, channel):
    ctx, agent = _greeted(AgentSettings(send_reasoning=False), channel)
    await agent.start([])
    fake.push_reply({"content": "a", "reasoning_content": "secret thoughts"}, {"content": "b"})
    m = await agent.respond([user("hi")], [])
    assert m.reasoning == "secret thoughts"
    await agent.respond([user("again")], [])
    assert "secret thoughts" not in json.dumps(chat_bodies(fake)[1])


def test_provider_fields_go_back_as_they_came():
    details = [{"type": "reasoning.encrypted", "data": "abc"}]
    m = Message(role="assistant", content="x", reasoning="r", extra={"reasoning_details": details})
    assert assistant_dict(m, True) == {"role": "assistant", "content": "x", "reasoning_details": details,
                                       "reasoning_content": "r"}
    m2 = Message(role="assistant", content="x", reasoning="r", extra={"reasoning": "r"})
    assert assistant_dict(m2, True) == {"role": "assistant", "content": "x", "reasoning": "r"}
    assert assistant_dict(m, False) == {"role": "assistant", "content": "x"}


async def test_parallel_tool_calls_setting_is_passed(fake, channel):
    ctx, agent = _greeted(AgentSettings(parallel_tool_calls=True), channel)
    await agent.start([])
    two = [CALL, {"id": "c2", "name": "get_today", "arguments": {}}]
    fake.push_reply({"content": None, "tool_calls": two})
    m = await agent.respond([user("hi")], [])
    body = chat_bodies(fake)[0]
    assert body["parallel_tool_calls"] is True
    assert "several tool calls" in body["messages"][0]["content"]
    assert [c.id for c in m.tool_calls] == ["c1", "c2"]


async def test_bad_json_arguments_and_their_error_result(fake, channel):
    ctx, agent = _greeted(AgentSettings(), channel)
    await agent.start([])
    fake.push_reply({"content": None, "tool_calls": [{"id": "c9", "name": "get_today", "arguments": "{oops"}]},
                    {"content": "sorry"})
    m = await agent.respond([user("hi")], [])
    assert m.tool_calls[0].arguments is None and m.tool_calls[0].arguments_error
    await agent.respond([tool("c9", "Error: the arguments of this call are not a valid JSON object", error=True)], [])
    msgs = chat_bodies(fake)[1]["messages"]
    assert msgs[-2]["tool_calls"][0]["function"]["arguments"] == "{oops"
    assert msgs[-1]["role"] == "tool" and msgs[-1]["tool_call_id"] == "c9"


async def test_history_seeding_skips_user_side_messages(fake, channel):
    ctx, agent = _greeted(AgentSettings(), channel)
    history = [
        Message(role="user", content="Create a task please."),
        Message(role="assistant", tool_calls=[ToolCall(id="h1", name="get_today", arguments={})]),
        Message(role="tool", content="2025-06-18", tool_call_id="h1", requestor="assistant"),
        Message(role="user", tool_calls=[ToolCall(id="u1", name="check_status_bar", arguments={})]),
        Message(role="tool", content="bars", tool_call_id="u1", requestor="user"),
        Message(role="assistant", content="Done."),
    ]
    await agent.start(history)
    assert [m["role"] for m in agent.messages] == ["system", "user", "assistant", "tool", "assistant"]
    assert agent.messages[2]["tool_calls"][0]["function"]["arguments"] == "{}"


async def test_channel_error_propagates_and_is_recorded(fake, channel):
    ctx, agent = _greeted(AgentSettings(), channel)
    await agent.start([])
    fake.push("unauthorized")
    with pytest.raises(AuthError):
        await agent.respond([user("hi")], [])
    assert ctx.trajectory.model_calls[-1].error is not None


async def test_prompt_file_replaces_the_preamble(fake, channel, tmp_path):
    path = tmp_path / "preamble.txt"
    path.write_text("You are Zed, the bike shop's assistant.\n")
    ctx, agent = _greeted(AgentSettings(prompt=str(path)), channel)
    system = agent.messages[0]["content"]
    assert system.startswith("You are Zed, the bike shop's assistant.")
    assert "customer-service agent" not in system and ctx.bench.policy.strip() in system


def test_missing_prompt_file_is_a_config_error(tmp_path):
    missing = tmp_path / "nope.txt"
    with pytest.raises(ConfigError) as err:
        build_agent(AgentSettings(prompt=str(missing)), make_ctx(channel=object()))
    assert "`prompt`" in str(err.value) and str(missing) in str(err.value)


def test_llm_agent_without_channel_is_a_config_error():
    with pytest.raises(ConfigError, match="needs a model"):
        build_agent(AgentSettings(), make_ctx())
