"""τ²'s domain tools over MCP (bench/tau/mcp.py), reached with the real ``mcp`` client SDK.

- the tools listed are, for every domain (the built-in bikeshop and the shared τ²-bench data's
  airline, retail and telecom), exactly what the LLM agent sends its model (read from its request
  to a real local endpoint), and ``initialize`` gives the domain's policy;
- a call is the episode's own: applied to the trial's environment, recorded in the trajectory as
  the agent's tool call, errors flagged and counted;
- end to end: a scripted "agent" (plain Python, the task's gold plan) plays τ² tasks over MCP inside
  a real ``Episode`` with the scripted user, over HTTP and over the stdio bridge, and the judge
  gives reward 1.
"""

from __future__ import annotations

import asyncio
import json
from contextlib import asynccontextmanager

import httpx2
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp.client.streamable_http import streamable_http_client

from agentrig.agents import AgentSettings, build_agent
from agentrig.agents.reference import _criteria, gold_plan, step_message
from agentrig.bench.tau.data import load_tasks
from agentrig.bench.tau.episode import Episode
from agentrig.bench.tau.judge import judge_trial
from agentrig.bench.tau.mcp import tau_tool_server
from agentrig.bench.tau.user import UserSettings, build_user
from agentrig.benchmark import Limits
from agentrig.types import Message

from tests.agents.conftest import chat_bodies, make_ctx
from tests.support import make_channel

HANG_GUARD_S = 120
REAL_DOMAINS = ("airline", "retail", "telecom")


def ctx_for(domain: str, root=None, task_id: str | None = None, channel=None):
    tasks = load_tasks(root, domain)
    task = next(t for t in tasks if t.id == task_id) if task_id else tasks[0]
    return make_ctx(domain=domain, root=root, task=task, channel=channel)


@asynccontextmanager
async def connected(server, transport: str = "http"):
    """A real MCP client session to the started ``server``, over HTTP or the stdio bridge."""
    if transport == "http":
        async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {server.token}"}) as hc:
            async with Client(streamable_http_client(server.url, http_client=hc), mode="legacy") as client:
                yield client
    else:
        cmd, env = server.stdio_command()
        params = StdioServerParameters(command=cmd[0], args=cmd[1:], env=env)
        async with Client(params, mode="legacy") as client:
            yield client


@pytest.mark.parametrize("domain", ("bikeshop",) + REAL_DOMAINS)
async def test_listed_tools_are_the_llm_agents_and_the_instructions_its_policy(domain, fake, tau2_root):
    root = None if domain == "bikeshop" else tau2_root
    channel = make_channel(fake.base_url)
    try:
        ctx = ctx_for(domain, root, channel=channel)
        agent = build_agent(AgentSettings(), ctx)
        await agent.start([])
        fake.push_reply({"content": "Hello."})
        await agent.respond([Message(role="user", content="Hi.")], [])
    finally:
        await channel.aclose()
    sent = chat_bodies(fake)[0]["tools"]  # what the LLM agent offers its model, as sent on the wire
    server = tau_tool_server(ctx)
    await server.start()
    try:
        async with asyncio.timeout(HANG_GUARD_S), connected(server) as client:
            listed = (await client.list_tools()).tools
            assert client.instructions == ctx.bench.policy and ctx.bench.policy.strip()
    finally:
        await server.close()
    assert len(listed) == len(sent) > 3
    # compared as JSON text, as both reach an agent
    assert [json.dumps({"name": t.name, "description": t.description, "parameters": t.input_schema}, sort_keys=True)
            for t in listed] == [json.dumps(s["function"], sort_keys=True) for s in sent]


class _NoUser:
    """Asks once, then stops."""

    def __init__(self):
        self.asked = False

    async def start(self, history):
        pass

    async def respond(self, incoming):
        if not self.asked:
            self.asked = True
            return Message(role="user", content="Please update my phone number.")
        return Message(role="user", content="Thanks ###STOP###")


class _CallingAgent:
    """Per step: the given (name, arguments) calls over MCP, then a text reply."""

    def __init__(self, client, calls):
        self.client, self.calls, self.results = client, calls, []

    async def start(self, history):
        pass

    async def respond(self, incoming, transient):
        for name, arguments in self.calls:
            self.results.append(await self.client.call_tool(name, arguments))
        self.calls = []
        return Message(role="assistant", content="Done.")


async def test_a_call_is_applied_recorded_and_counted_by_the_episode():
    ctx = make_ctx("rent_city_bike")
    server = tau_tool_server(ctx)  # built before the episode, as an agent's server is
    await server.start()
    try:
        async with asyncio.timeout(HANG_GUARD_S), connected(server) as client:
            calls = [("find_customer_by_email", {"email": "diego.alvarez@example.net"}),
                     ("update_customer_phone", {"customer_id": "CU-5840", "phone": "415-555-0177"}),
                     ("no_such_tool", {}),
                     ("get_customer_details", {"customer_id": 12})]
            agent = _CallingAgent(client, calls)
            episode = Episode(ctx, agent, _NoUser(), [], Limits())
            assert await episode.play() == "user_stop"
    finally:
        await server.close()
    found, phone, unknown, bad = agent.results
    assert not found.is_error and "CU-5840" in found.content[0].text
    assert not phone.is_error and "415-555-0177" in phone.content[0].text
    assert unknown.is_error and "no_such_tool" in unknown.content[0].text
    assert bad.is_error and "customer_id" in bad.content[0].text
    # the environment the judge reads (the episode's) changed as the call said
    assert ctx.bench.env is episode.env
    assert "415-555-0177" in ctx.bench.env.call("assistant", "get_customer_details", {"customer_id": "CU-5840"}).text
    msgs = ctx.trajectory.messages
    made = [m.tool_calls[0] for m in msgs if m.role == "assistant" and m.tool_calls]
    assert [(c.name, c.arguments) for c in made] == calls
    assert [c.id for c in made] == [c.call_id for c in server.calls] == ["mcp_1", "mcp_2", "mcp_3", "mcp_4"]
    answers = [m for m in msgs if m.role == "tool"]
    assert [a.tool_call_id for a in answers] == [c.id for c in made]
    assert [a.error for a in answers] == [r.is_error for r in agent.results] == [False, False, True, True]
    assert [a.content for a in answers] == [r.content[0].text for r in agent.results]
    assert ctx.trajectory.counters["unknown_tools"] == 1 and ctx.trajectory.counters["env_calls"] == 4


async def test_arguments_that_are_not_an_object_are_counted_as_invalid_by_the_episode():
    ctx = make_ctx("rent_city_bike")
    server = tau_tool_server(ctx)
    await server.start()
    try:
        Episode(ctx, _CallingAgent(None, []), _NoUser(), [], Limits())  # the episode hooks ctx.bench.call_tool
        cmd, env = server.stdio_command()
        proc = await asyncio.create_subprocess_exec(*cmd, env=env, stdin=asyncio.subprocess.PIPE,
                                                    stdout=asyncio.subprocess.PIPE)
        lines = [{"jsonrpc": "2.0", "id": 0, "method": "initialize",
                  "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                             "clientInfo": {"name": "raw", "version": "1"}}},
                 {"jsonrpc": "2.0", "method": "notifications/initialized"},
                 {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                  "params": {"name": "find_customer_by_email", "arguments": ["diego.alvarez@example.net"]}}]
        async with asyncio.timeout(HANG_GUARD_S):
            proc.stdin.write(b"".join(json.dumps(m).encode() + b"\n" for m in lines))
            proc.stdin.close()
            answers = [json.loads(line) for line in (await proc.stdout.read()).splitlines()]
            assert await proc.wait() == 0
    finally:
        await server.close()
    result = answers[-1]["result"]
    assert answers[-1]["id"] == 1 and result["isError"] is True
    assert "not a valid JSON object" in result["content"][0]["text"]
    assert ctx.trajectory.counters["invalid_tool_args"] == 1
    call = ctx.trajectory.messages[0].tool_calls[0]
    assert call.name == "find_customer_by_email" and call.arguments is None and "list" in call.arguments_error


class McpGoldAgent:
    """A scripted MCP agent: the task's gold plan (agents/reference.py), its tool calls made over
    MCP in the middle of the step, its text steps as the step's reply."""

    def __init__(self, ctx, client):
        actions, info = _criteria(ctx.task)
        self.steps = gold_plan(actions, info)
        self.client = client
        self.errors: list[str] = []

    async def start(self, history):
        pass

    async def respond(self, incoming, transient):
        while self.steps:
            step = self.steps.pop(0)
            if step.kind != "call":
                return step_message(step)
            result = await self.client.call_tool(step.action.name, dict(step.action.arguments))
            if result.is_error:
                self.errors.append(result.content[0].text)
        return Message(role="assistant", content="Is there anything else?")


async def _play_over_mcp(ctx, transport: str):
    server = tau_tool_server(ctx)
    await server.start()
    try:
        async with asyncio.timeout(HANG_GUARD_S), connected(server, transport) as client:
            agent = McpGoldAgent(ctx, client)
            episode = Episode(ctx, agent, build_user(UserSettings(kind="scripted"), ctx), [], Limits())
            termination = await episode.play()
    finally:
        await server.close()
    info = await judge_trial(ctx, termination, nl="never")
    return termination, info, server


def _check_earned(ctx, termination, info, server):
    assert termination in ("user_stop", "agent_transfer")
    assert info.reward == 1.0, info
    gold = [a for a in _criteria(ctx.task)[0] if a.requestor == "assistant"]
    made = [c for m in ctx.trajectory.messages if m.role == "assistant" for c in m.tool_calls]
    assert [(c.name, c.arguments) for c in made] == [(a.name, dict(a.arguments)) for a in gold]
    assert [c.name for c in server.calls] == [a.name for a in gold]


@pytest.mark.parametrize("task_id", [t.id for t in load_tasks(None, "bikeshop")])
async def test_gold_over_mcp_earns_every_bikeshop_task(task_id):
    ctx = make_ctx(task_id)
    _check_earned(ctx, *await _play_over_mcp(ctx, "http"))


@pytest.mark.parametrize("domain", REAL_DOMAINS)
async def test_gold_over_mcp_earns_tau2_tasks(domain, tau2_root):
    tasks = [t for t in load_tasks(tau2_root, domain) if _criteria(t)[0]][:3]
    for task in tasks:
        ctx = make_ctx(domain=domain, root=tau2_root, task=task)
        _check_earned(ctx, *await _play_over_mcp(ctx, "http"))


async def test_gold_over_the_stdio_bridge_earns_a_telecom_task_with_user_actions(tau2_root):
    task = next(t for t in load_tasks(tau2_root, "telecom")
                if any(a.requestor == "user" for a in _criteria(t)[0])
                and any(a.requestor == "assistant" for a in _criteria(t)[0]))
    ctx = make_ctx(domain="telecom", root=tau2_root, task=task)
    _check_earned(ctx, *await _play_over_mcp(ctx, "stdio"))
