"""The memory A/B with an agent we did not write as the executor (issue 35, item 4): a minimal
external agent — its own conversation and system prompt, its model calls made with the real openai
SDK to the trial's measuring proxy — plays real τ² episodes of the built-in bikeshop domain, every
role through one real Channel to the scripted gold endpoint (an HTTP server), in two arms: without
plug-ins and with the memory plug-in. The episode asks the plug-in before each agent step and hands
its reminder to the agent's ``respond``; the agent's host sets it as ``proxy.hints``.

The gold agent ignores reminders, so both arms play the same conversation and earn the same reward;
what reaches the endpoint differs by the reminders only, each in the request of its own step; the
agent never sees them."""

from __future__ import annotations

import copy
import json

import pytest

from agentrig.agents.proxy import TrialProxy
from agentrig.bench.tau.data import domain_dir, load_policy, load_tasks
from agentrig.bench.tau.domain import TauTrial
from agentrig.bench.tau.domains import get_domain
from agentrig.bench.tau.episode import Episode, Limits
from agentrig.bench.tau.judge import judge_trial
from agentrig.bench.tau.scripted.gold_endpoint import GoldEndpoint
from agentrig.bench.tau.user import UserSettings, build_user
from agentrig.plugins import build_plugin
from agentrig.plugins.base import PluginSettings
from agentrig.plugins.memory.prompts import REMINDER_HEAD
from agentrig.trial.context import TrialContext
from agentrig.types import Message, ToolCall, Transient, TrialKey

from tests.agents.proxy_clients import openai_client
from tests.support import KEY, make_channel

DOMAIN = "bikeshop"
TASKS = ("rent_city_bike", "cancel_ebike_full_refund", "repair_add_service_and_phone", "damage_report_transfer")
OWN_PROMPT = "You are the bike shop's assistant. Use the tools to look things up before you answer."
ROLES = ("agent", "user", "memory", "judge")


class ProxiedAgent:
    """An agent we did not write, reduced to its seam: it keeps its own chat messages and reaches
    its model only through the trial's proxy, with the openai SDK. Its host (here: itself) sets the
    step's plug-in context as ``proxy.hints`` around the step's model call."""

    def __init__(self, ctx: TrialContext, proxy: TrialProxy):
        self.proxy = proxy
        self.client = openai_client(proxy)
        self.tools = ctx.bench.spec.agent_toolkit.openai_tools()
        # its own prompt, with the domain's policy the task hands every agent
        self.messages: list[dict] = [{"role": "system", "content": f"{OWN_PROMPT}\n\n{ctx.bench.policy}"}]
        self.sent: list[str] = []  # every request it sent, as JSON text
        self.hints: list[list[Transient]] = []  # what its host was given per step

    def _add(self, m: Message) -> None:
        if m.role == "assistant":
            calls = [{"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments_raw}}
                     for c in m.tool_calls]
            self.messages.append({"role": "assistant", "content": m.content, **({"tool_calls": calls} if calls else {})})
        elif m.role == "user" and not m.tool_calls:
            self.messages.append({"role": "user", "content": m.content or ""})
        elif m.role == "tool" and m.requestor == "assistant":
            self.messages.append({"role": "tool", "tool_call_id": m.tool_call_id, "content": m.content or ""})

    async def start(self, history: list[Message]) -> None:
        for m in history:
            self._add(m)

    async def respond(self, incoming: list[Message], transient: list[Transient]) -> Message:
        for m in incoming:
            self._add(m)
        self.hints.append(list(transient))
        self.proxy.hints = transient
        self.sent.append(json.dumps(self.messages))
        try:
            r = await self.client.chat.completions.create(model="any", messages=self.messages, tools=self.tools)
        finally:
            self.proxy.hints = []
        if self.proxy.failure is not None:
            raise self.proxy.failure
        m = r.choices[0].message
        calls = [ToolCall(id=c.id, name=c.function.name, arguments=json.loads(c.function.arguments),
                          arguments_raw=c.function.arguments) for c in m.tool_calls or ()]
        message = Message(role="assistant", content=m.content, tool_calls=calls, call=self.proxy.replies[-1].call)
        self._add(message)
        return message


def _task(task_id: str):
    return next(t for t in load_tasks(None, DOMAIN) if t.id == task_id)


async def play(channel, arm: str, task_id: str, plugins: list[PluginSettings]):
    task = _task(task_id)
    ctx = TrialContext(key=TrialKey(arm=arm, domain=DOMAIN, task_id=task_id, trial=0), task=task, seed=11,
                       channel=channel, bench=TauTrial(get_domain(DOMAIN), domain_dir(None, DOMAIN),
                                                       load_policy(None, DOMAIN)))
    async with TrialProxy(ctx) as proxy:
        agent = ProxiedAgent(ctx, proxy)
        user = build_user(UserSettings(kind="llm", guidelines="builtin"), ctx)
        episode = Episode(ctx, agent, user, [build_plugin(p, ctx) for p in plugins], Limits())
        termination = await episode.play()
        await agent.client.close()
    info = await judge_trial(ctx, termination)
    return ctx, agent, termination, info.reward


def agent_bodies(gold, arm: str, task_id: str) -> list[dict]:
    return [r.json for r in gold.requests if r.method == "POST" and r.headers.get("x-agentrig-arm") == arm
            and r.headers.get("x-agentrig-task") == task_id and r.headers.get("x-agentrig-role") == "agent"]


def with_hints(body: dict, hints: list[Transient]) -> dict:
    """A request with a step's hints added as agentrig's own LLM agent adds them."""
    out = copy.deepcopy(body)
    system = [h.text for h in hints if h.placement == "system" and h.text]
    append = [h.text for h in hints if h.placement == "user_append" and h.text]
    if append:
        last = max(i for i, m in enumerate(out["messages"]) if m["role"] == "user")
        out["messages"][last]["content"] += "\n\n" + "\n\n".join(append)
    if system:
        out["messages"].append({"role": "system", "content": "\n\n".join(system)})
    return out


@pytest.fixture
async def gold():
    ep = GoldEndpoint(None, api_key=KEY, record=True)
    await ep.start()
    yield ep
    await ep.stop()


@pytest.mark.parametrize("memory", [{"mode": "selective"}, {"mode": "always_inject", "injection": "user_append"}],
                         ids=["selective", "always_inject-user_append"])
async def test_the_memory_ab_with_an_external_agent_differs_only_by_the_reminders(gold, memory):
    channel = make_channel(gold.base_url, ROLES, model="gold")
    arms = {"baseline": [], "memory": [PluginSettings(kind="memory", **memory)]}
    reminded = 0
    try:
        for task_id in TASKS:
            played = {arm: await play(channel, arm, task_id, plugins) for arm, plugins in arms.items()}
            (b_ctx, b_agent, b_end, b_reward), (m_ctx, m_agent, m_end, m_reward) = played.values()
            # the gold agent ignores reminders: the same conversation, the gold's reward in both arms
            assert b_end == m_end and b_reward == m_reward == 1.0, (task_id, b_end, m_end, b_reward, m_reward)
            assert [(m.role, m.content, [(c.name, c.arguments) for c in m.tool_calls]) for m in b_ctx.trajectory.messages] == \
                [(m.role, m.content, [(c.name, c.arguments) for c in m.tool_calls]) for m in m_ctx.trajectory.messages]
            assert b_agent.sent == m_agent.sent  # the agent itself sent the same requests in both arms

            # the plug-in ran before every agent step of the memory arm, and its context reached the host
            triggers = [e.data for e in m_ctx.trajectory.events if e.kind == "memory.trigger"]
            steps = m_ctx.trajectory.counters["agent_steps"]
            assert [t["step"] for t in triggers] == list(range(steps)) and len(m_agent.hints) == steps
            assert [[h.text for h in hints] for hints in m_agent.hints] == \
                [[t["injected"]] if t["injected"] else [] for t in triggers]
            assert b_agent.hints == [[]] * steps and not b_ctx.trajectory.events

            # upstream: the memory arm's request of each step is the baseline's plus that step's reminder
            base, mem = agent_bodies(gold, "baseline", task_id), agent_bodies(gold, "memory", task_id)
            assert len(base) == len(mem) == steps
            for step, (b, m, hints) in enumerate(zip(base, mem, m_agent.hints)):
                assert m == with_hints(b, hints), (task_id, step)
                assert REMINDER_HEAD not in json.dumps(b)
                reminded += bool(hints)
            # the agent never saw a reminder: not in what it sent, not in the conversation
            assert all(REMINDER_HEAD not in s for s in m_agent.sent)
            assert all(REMINDER_HEAD not in (m.content or "") for m in m_ctx.trajectory.messages)

            # the record: the requests as sent (what `agentrig instability` re-sends), and which had hints
            hinted = {e.data["call"] for e in m_ctx.trajectory.events if (e.plugin, e.kind) == ("proxy", "hints")}
            agent_calls = [r.call for r in m_ctx.trajectory.agent_requests]
            assert hinted == {call for call, hints in zip(agent_calls, m_agent.hints) if hints}
            assert all(e.data["sources"] == ["memory"] for e in m_ctx.trajectory.events if e.kind == "hints")
            memory_calls = [c for c in m_ctx.trajectory.model_calls if c.role == "memory"]
            assert memory_calls and not any(c.role == "memory" for c in b_ctx.trajectory.model_calls)
    finally:
        await channel.aclose()
    if memory["mode"] == "always_inject":
        assert reminded == sum(len(agent_bodies(gold, "memory", t)) for t in TASKS)
    assert reminded > 0
