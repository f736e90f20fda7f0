"""The turn loop of one trial: routing, limits, errors, plug-in hooks, infrastructure failures.

Participants are real: the reference agents and the scripted user need no model; the LLM agent and
the LLM user talk to a real local endpoint through the real channel.
"""

from __future__ import annotations

import json

import pytest

from agentrig.agents.base import GREETING, AgentSettings
from agentrig.bench.tau.data import domain_dir, load_policy, load_tasks
from agentrig.bench.tau.domains import get_domain
from agentrig.bench.tau.user import UserSettings
from agentrig.channel.client import Channel
from agentrig.config import ChannelConfig, ChannelSettings, RoleConfig
from agentrig.errors import AuthError
from agentrig.plugins import REGISTRY, register
from agentrig.plugins.base import PluginSettings
from agentrig.bench.tau.domain import TauTrial
from agentrig.trial.context import TrialContext
from agentrig.bench.tau.episode import Limits, play_trial
from agentrig.testing.fake_endpoint import Fault
from agentrig.types import Transient, TrialKey

from tests.support import KEY_ENV, make_channel

GOLD = AgentSettings(kind="gold")
LLM = AgentSettings(kind="llm")
SCRIPTED = UserSettings(kind="scripted")
LLM_USER = UserSettings(kind="llm", guidelines="builtin")


def ctx_for(task, *, domain="bikeshop", root=None, channel=None, trial=0, seed=11) -> TrialContext:
    return TrialContext(key=TrialKey(arm="a", domain=domain, task_id=task.id, trial=trial), task=task,
                        bench=TauTrial(get_domain(domain), domain_dir(root, domain), load_policy(root, domain)),
                        seed=seed, channel=channel, run_id="r1")


def bikeshop(task_id: str):
    return next(t for t in load_tasks(None, "bikeshop") if t.id == task_id)


@pytest.fixture
async def channel(fake):
    ch = make_channel(fake.base_url, ("agent", "user"))
    yield ch
    await ch.aclose()


def role_of(body: dict) -> str:
    """The user simulator's requests carry its scenario in the system prompt."""
    system = body["messages"][0]["content"] or ""
    return "user" if "<scenario>" in system else "agent"


@pytest.mark.parametrize("task", load_tasks(None, "bikeshop"), ids=lambda t: t.id)
async def test_gold_agent_and_scripted_user_earn_every_bikeshop_task(task):
    record = await play_trial(ctx_for(task), agent=GOLD, user=SCRIPTED, plugins=[], limits=Limits(),
                              nl_judge="never")
    msgs = record.trajectory.messages
    assert msgs[0].role == "assistant" and msgs[0].content == GREETING
    assert [m.turn for m in msgs] == list(range(len(msgs)))
    assert record.verdict.valid and record.verdict.termination in ("user_stop", "agent_transfer")
    assert record.verdict.reward == 1.0, record.verdict.reward_info
    # every tool call is answered by exactly one tool message right after it
    for i, m in enumerate(msgs):
        if m.tool_calls:
            answers = msgs[i + 1:i + 1 + len(m.tool_calls)]
            assert [a.tool_call_id for a in answers] == [c.id for c in m.tool_calls]
            assert all(a.role == "tool" and a.requestor == m.role for a in answers)


async def test_transfer_ends_the_trial_after_its_result():
    record = await play_trial(ctx_for(bikeshop("damage_report_transfer")), agent=GOLD, user=SCRIPTED,
                              plugins=[], limits=Limits(), nl_judge="never")
    last = record.trajectory.messages[-1]
    assert record.verdict.termination == "agent_transfer"
    assert last.role == "tool" and not last.error
    assert record.trajectory.messages[-2].tool_calls[0].name == "transfer_to_human_agents"


async def test_max_steps_counts_every_delivery_and_scores_zero(fake, channel):
    fake.responder = lambda body: {"content": "Could you tell me more?"}
    task = bikeshop("rent_city_bike")
    record = await play_trial(ctx_for(task, channel=channel), agent=LLM, user=LLM_USER, plugins=[],
                              limits=Limits(max_steps=6), nl_judge="never")
    # greeting + 6 deliveries (user, agent, user, agent, user, agent)
    assert record.verdict.termination == "max_steps"
    assert len(record.trajectory.messages) == 7
    assert record.verdict.valid and record.verdict.reward == 0.0
    assert [c.purpose for c in record.trajectory.model_calls] == ["user", "agent"] * 3


async def test_tool_errors_unknown_tools_and_bad_json_are_answered_and_counted(fake, channel):
    script = iter([
        {"content": None, "tool_calls": [{"name": "no_such_tool", "arguments": {}}]},
        {"content": None, "tool_calls": [{"name": "get_customer_details", "arguments": "{not json"}]},
        {"content": None, "tool_calls": [{"name": "get_customer_details", "arguments": {"customer_id": "nobody"}}]},
    ])

    def respond(body):
        if role_of(body) == "user":
            return {"content": "I want to rent a bike."}
        return next(script)

    fake.responder = respond
    record = await play_trial(ctx_for(bikeshop("rent_city_bike"), channel=channel), agent=LLM, user=LLM_USER,
                              plugins=[], limits=Limits(max_errors=3), nl_judge="never")
    traj = record.trajectory
    tools = [m for m in traj.messages if m.role == "tool"]
    assert record.verdict.termination == "too_many_errors"
    assert len(tools) == 3 and all(m.error and m.content.startswith("Error:") for m in tools)
    assert "not found" in tools[0].content
    assert "not a valid JSON object" in tools[1].content
    assert traj.counters["tool_errors"] == 3
    assert traj.counters["unknown_tools"] == 1 and traj.counters["invalid_tool_args"] == 1
    # the model saw the error results: the last agent request ends with them
    agent_bodies = [r.json for r in fake.requests if r.path.endswith("/chat/completions") and role_of(r.json) == "agent"]
    assert agent_bodies[-1]["messages"][-1]["role"] == "tool"
    assert agent_bodies[-1]["messages"][-1]["content"].startswith("Error:")


class Reminder:
    name = "reminder"

    def __init__(self, settings, ctx):
        self.ctx = ctx
        self.text = settings.options().get("text", "remember")

    async def before_agent_step(self, step):
        self.ctx.event(self.name, "inject", step=step)
        return [Transient(text=f"{self.text} #{step}", source=self.name)] if step == 1 else []


async def test_plugin_context_reaches_one_agent_call_and_its_events_are_recorded(fake, channel):
    register("test-reminder", Reminder)
    replies = iter(["Hello", "Which bike?", "Thanks ###STOP###"])

    def respond(body):
        return {"content": next(replies) if role_of(body) == "user" else "Sure, tell me more."}

    fake.responder = respond
    try:
        record = await play_trial(ctx_for(bikeshop("rent_city_bike"), channel=channel), agent=LLM, user=LLM_USER,
                                  plugins=[PluginSettings(kind="test-reminder", text="check the age rule")],
                                  limits=Limits(), nl_judge="never")
    finally:
        REGISTRY.pop("test-reminder", None)
    assert record.verdict.termination == "user_stop"
    agent_bodies = [r.json for r in fake.requests if r.path.endswith("/chat/completions") and role_of(r.json) == "agent"]
    texts = [json.dumps(b["messages"]) for b in agent_bodies]
    assert len(agent_bodies) == 2
    assert "check the age rule #1" not in texts[0]
    assert "check the age rule #1" in texts[1]
    assert [e.data["step"] for e in record.trajectory.events] == [0, 1]
    assert all("check the age rule" not in (m.content or "") for m in record.trajectory.messages)


async def test_channel_failure_makes_the_trial_invalid_not_failed(fake, channel):
    fake.responder = lambda body: Fault("server_error", status=503)
    record = await play_trial(ctx_for(bikeshop("rent_city_bike"), channel=channel), agent=LLM, user=LLM_USER,
                              plugins=[], limits=Limits(), nl_judge="never")
    assert not record.verdict.valid
    assert record.verdict.termination == "channel_error"
    assert record.verdict.invalid_cause.startswith("SERVER_ERROR") or "503" in record.verdict.invalid_cause
    failed = record.trajectory.model_calls[-1]
    assert failed.error and len(failed.attempts) == 2


async def test_a_fatal_channel_error_propagates(fake):
    cfg = ChannelConfig(channel=ChannelSettings(base_url=fake.base_url, api_key_env=KEY_ENV, model="fake-model"),
                        roles={"agent": RoleConfig(), "user": RoleConfig()})
    async with Channel(cfg, env={KEY_ENV: "sk-wrong-key-000000000000"}) as ch:
        with pytest.raises(AuthError):
            await play_trial(ctx_for(bikeshop("rent_city_bike"), channel=ch), agent=LLM, user=LLM_USER,
                             plugins=[], limits=Limits(), nl_judge="never")


async def test_wall_clock_limit_ends_the_trial_as_timeout(fake, channel):
    fake.responder = lambda body: {"content": "Tell me more."}
    fake.delay_s = 0.05
    record = await play_trial(ctx_for(bikeshop("rent_city_bike"), channel=channel), agent=LLM, user=LLM_USER,
                              plugins=[], limits=Limits(trial_timeout_s=0.3), nl_judge="never")
    assert record.verdict.valid and record.verdict.termination == "timeout" and record.verdict.reward == 0.0
    assert 0.3 <= record.duration_s  # lower bound only, not a time bound: the limit did not fire early


def test_message_history_task_continues_from_its_history(tau2_root):
    import asyncio

    task = next(t for t in load_tasks(tau2_root, "mock") if (t.initial_state and t.initial_state.message_history))
    record = asyncio.run(play_trial(ctx_for(task, domain="mock", root=tau2_root), agent=GOLD, user=SCRIPTED,
                                    plugins=[], limits=Limits(), nl_judge="never"))
    traj = record.trajectory
    n = len(task.initial_state.message_history)
    assert traj.history_len == n
    assert traj.messages[0].content == task.initial_state.message_history[0]["content"]
    assert GREETING not in [m.content for m in traj.messages]
    # the history's last message was the agent's text, so the user speaks next
    assert traj.messages[n].role == "user"
    assert record.verdict.termination == "user_stop"
