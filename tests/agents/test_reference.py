"""gold, noop and flaky-gold, played against the real environment and judged on state."""

from __future__ import annotations

import pytest

from agentrig.agents import GREETING, AgentSettings, build_agent
from agentrig.agents import prompts
from agentrig.bench.tau.data import load_tasks
from agentrig.bench.tau.environment import Environment
from agentrig.bench.tau.replay import judge_state
from agentrig.types import Message

from .conftest import make_ctx, tool, user


async def play(agent, ctx, *, max_steps: int = 60) -> tuple[list[Message], list[tuple]]:
    """The agent's side of a conversation with a user who states a request, performs what the
    agent asks, and stops after the agent's first text that is not a request to act."""
    env = Environment.fresh(ctx.bench.spec, ctx.bench.domain_dir)
    env.set_state(ctx.task)
    await agent.start([Message(role="assistant", content=GREETING)])
    said: list[Message] = []
    calls: list[tuple] = []
    incoming = [user("Here is my request.")]
    for _ in range(max_steps):
        m = await agent.respond(incoming, [])
        said.append(m)
        if m.tool_calls:
            incoming = []
            for c in m.tool_calls:
                out = env.call("assistant", c.name, c.arguments)
                calls.append(("assistant", c.name, c.arguments))
                incoming.append(tool(c.id, out.text, out.error))
            if any(c.name == "transfer_to_human_agents" for c in m.tool_calls):
                return said, calls
            continue
        if m.content.startswith(prompts.GOLD_ASK_USER):
            for a in _asked(ctx, m.content):
                env.call("user", a.name, a.arguments)
                calls.append(("user", a.name, a.arguments))
            incoming = [user("Done, I did all of that.")]
            continue
        return said, calls
    raise AssertionError("the agent never finished")


def _asked(ctx, text: str):
    return [a for a in ctx.task.gold_actions if a.requestor == "user" and a.call_text() in text]


@pytest.mark.parametrize("task_id", [t.id for t in load_tasks(None, "bikeshop")])
async def test_gold_plays_every_bikeshop_task_to_the_gold_state(task_id):
    ctx = make_ctx(task_id)
    agent = build_agent(AgentSettings(kind="gold"), ctx)
    said, calls = await play(agent, ctx)
    gold = [a for a in ctx.task.gold_actions if a.requestor == "assistant"]
    made = [c for m in said for c in m.tool_calls]
    assert [(c.name, c.arguments) for c in made] == [(a.name, a.arguments) for a in gold]
    assert [c.id for c in made] == [f"gold-{i}" for i in range(len(gold))]
    assert all(len(m.tool_calls) <= 1 and (m.tool_calls or m.content) for m in said)
    judged = judge_state(ctx.bench.spec, ctx.bench.domain_dir, ctx.task, calls)
    assert judged.db_match and judged.env_reward == 1.0
    texts = [m.content for m in said if not m.tool_calls]
    info = ctx.task.evaluation_criteria.communicate_info or []
    if gold and gold[-1].name == "transfer_to_human_agents" and not info:
        assert texts == []  # the transfer ends the conversation, nothing left to say
    else:
        assert len(texts) == 1 and all(s in texts[0] for s in info)
        assert (await agent.respond([user("ok")], [])).content == prompts.GOLD_CLOSING


async def test_gold_says_the_info_before_a_transfer():
    task = make_ctx("damage_report_transfer").task.model_copy(deep=True)
    task.evaluation_criteria.communicate_info = ["BK-RD-01"]
    ctx = make_ctx(task=task)
    agent = build_agent(AgentSettings(kind="gold"), ctx)
    await agent.start([])
    seq = [await agent.respond([], []) for _ in range(4)]
    assert [m.tool_calls[0].name if m.tool_calls else "text" for m in seq] == [
        "find_customer_by_phone", "get_customer_details", "text", "transfer_to_human_agents"]
    assert "BK-RD-01" in seq[2].content


async def test_gold_asks_the_user_for_telecom_user_actions(tau2_root):
    tasks = load_tasks(tau2_root, "telecom")
    task = next(t for t in tasks if [a.requestor for a in t.gold_actions] == ["user", "assistant"])
    ctx = make_ctx(task=task, domain="telecom", root=tau2_root)
    agent = build_agent(AgentSettings(kind="gold"), ctx)
    said, calls = await play(agent, ctx)
    ua, aa = task.gold_actions
    assert said[0].content.startswith(prompts.GOLD_ASK_USER) and ua.call_text() in said[0].content
    assert said[1].tool_calls[0].name == aa.name and said[1].tool_calls[0].arguments == aa.arguments
    assert said[1].tool_calls[0].id == "gold-1"
    assert len(said) == 3 and not said[2].tool_calls
    judged = judge_state(ctx.bench.spec, ctx.bench.domain_dir, ctx.task, calls)
    assert task.reward_basis[0] == "ENV_ASSERTION" and judged.env_reward == 1.0


async def test_noop_never_acts():
    ctx = make_ctx()
    agent = build_agent(AgentSettings(kind="noop"), ctx)
    await agent.start([Message(role="assistant", content=GREETING)])
    out = [await agent.respond([user("please book a bike")], []) for _ in range(3)]
    assert all(not m.tool_calls and m.content == prompts.NOOP_TEXT for m in out)
    assert ctx.trajectory.model_calls == []


def _drops(events):
    return [e for e in events if e.plugin == "flaky-gold" and e.kind == "drop"]


async def test_flaky_gold_drops_one_write_action_at_rate_p():
    p, n = 0.3, 1500
    task = make_ctx("swap_road_for_ebike").task  # writes: cancel_rental (4), book_rental (5)
    dropped = {4: 0, 5: 0}
    for seed in range(n):
        ctx = make_ctx(task=task, seed=seed)
        agent = build_agent(AgentSettings(kind="flaky-gold", drop_p=p), ctx)
        await agent.start([])
        ev = _drops(ctx.trajectory.events)
        calls = [s.index for s in agent.steps if s.kind == "call"]
        if ev:
            assert len(ev) == 1 and ev[0].data["dropped"] == "action"
            k = ev[0].data["index"]
            dropped[k] += 1
            assert calls == [i for i in range(6) if i != k]
        else:
            assert calls == list(range(6))
    rate = sum(dropped.values()) / n
    assert abs(rate - p) < 0.05, rate
    assert min(dropped.values()) > 0.4 * sum(dropped.values())  # uniform between the two writes


async def test_flaky_gold_with_a_dropped_write_misses_the_gold_state():
    ctx = make_ctx("cancel_ebike_full_refund")
    agent = build_agent(AgentSettings(kind="flaky-gold", drop_p=1.0), ctx)
    said, calls = await play(agent, ctx)
    assert "cancel_rental" not in [c[1] for c in calls]
    assert not judge_state(ctx.bench.spec, ctx.bench.domain_dir, ctx.task, calls).db_match
    assert _drops(ctx.trajectory.events)[0].data["name"] == "cancel_rental"


async def test_flaky_gold_drops_the_info_when_there_is_no_write():
    task = make_ctx("refuse_cancel_active_rental").task.model_copy(deep=True)
    task.evaluation_criteria.communicate_info = ["RN-20955"]
    ctx = make_ctx(task=task)
    agent = build_agent(AgentSettings(kind="flaky-gold", drop_p=1.0), ctx)
    said, _ = await play(agent, ctx)
    assert len([m for m in said if m.tool_calls]) == 3
    assert "RN-20955" not in said[-1].content
    assert _drops(ctx.trajectory.events)[0].data["dropped"] == "communicate_info"


async def test_flaky_gold_records_when_nothing_can_be_dropped():
    ctx = make_ctx("refuse_ebike_minor")
    agent = build_agent(AgentSettings(kind="flaky-gold", drop_p=1.0), ctx)
    said, _ = await play(agent, ctx)
    assert len([m for m in said if m.tool_calls]) == 2
    ev = _drops(ctx.trajectory.events)
    assert len(ev) == 1 and ev[0].data["dropped"] is None


async def test_flaky_gold_draws_the_same_number_of_times_whatever_p():
    states = []
    for p in (0.0, 1.0):
        ctx = make_ctx("refuse_ebike_minor", seed=3)
        agent = build_agent(AgentSettings(kind="flaky-gold", drop_p=p), ctx)
        await agent.start([])
        states.append(ctx.rng.getstate())
    assert states[0] == states[1]
