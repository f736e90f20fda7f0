"""Tool calls an agent makes in the middle of its step (``Episode.agent_tool_call``, reached as
``ctx.bench.call_tool``): the path of agents that run their own tool loop — a Python agent's
``call_tool``, an MCP agent's ``tools/call``. Recorded, applied, counted and ended exactly as the
turn loop records, applies, counts and ends a call."""

from __future__ import annotations

from agentrig.benchmark import Limits
from agentrig.bench.tau.episode import TRANSFER_TOOL, Episode
from agentrig.types import Message

from tests.agents.conftest import make_ctx

CALLS = [("find_customer_by_email", {"email": "diego.alvarez@example.net"}),
         ("get_customer_details", {"customer_id": "CU-5840"})]


class LoopAgent:
    """Per step: the given calls through ctx.bench.call_tool, then a text reply."""

    def __init__(self, ctx, steps: list[list[tuple[str, object]]]):
        self.ctx, self.steps, self.results = ctx, list(steps), []

    async def start(self, history):
        pass

    async def respond(self, incoming, transient):
        for name, args in (self.steps.pop(0) if self.steps else []):
            self.results.append(self.ctx.bench.call_tool(name, args))
        return Message(role="assistant", content="Here is what I found.")


class User:
    """Asks, answers the agent's first reply, stops on its second."""

    def __init__(self):
        self.n = 0

    async def start(self, history):
        pass

    async def respond(self, incoming):
        self.n += 1
        text = {1: "I want to rent a city bike.", 2: "My e-mail is diego.alvarez@example.net."}.get(self.n, "Thanks ###STOP###")
        return Message(role="user", content=text)


async def _play(steps, limits=Limits()):
    ctx = make_ctx()
    agent = LoopAgent(ctx, steps)
    episode = Episode(ctx, agent, User(), [], limits)
    termination = await episode.play()
    return ctx, agent, episode, termination


async def test_calls_are_recorded_applied_and_answered_in_order():
    ctx, agent, episode, termination = await _play([[], CALLS])
    assert termination == "user_stop"
    msgs = ctx.trajectory.messages
    roles = [(m.role, bool(m.tool_calls)) for m in msgs]
    # greeting, user, agent text, user, call 1, result 1, call 2, result 2, agent text, user stop
    assert roles == [("assistant", False), ("user", False), ("assistant", False), ("user", False),
                     ("assistant", True), ("tool", False), ("assistant", True), ("tool", False),
                     ("assistant", False), ("user", False)]
    assert [m.tool_calls[0].name for m in msgs if m.tool_calls] == [n for n, _ in CALLS]
    assert "CU-5840" in msgs[5].content and not msgs[5].error
    assert msgs[5].tool_call_id == msgs[4].tool_calls[0].id and msgs[5].requestor == "assistant"
    assert [r.content for r in agent.results] == [msgs[5].content, msgs[7].content]
    assert [m.turn for m in msgs] == list(range(len(msgs)))
    assert ctx.trajectory.counters["env_calls"] == 2
    # the turn loop's count: 4 deliveries of text, 2 per call, the stop
    assert episode.steps == 4 + 4 + 1


async def test_errors_count_and_end_the_trial_at_max_errors_dropping_the_reply():
    bad = [("no_such_tool", {}), ("get_customer_details", "not an object"), ("no_such_tool", {})]
    ctx, agent, episode, termination = await _play([bad], Limits(max_errors=2))
    assert termination == "too_many_errors"
    assert [r.error for r in agent.results] == [True, True, True]
    # the third call came after the end: answered, never applied nor recorded
    assert "ended" in agent.results[2].content
    assert ctx.trajectory.counters["unknown_tools"] == 1 and ctx.trajectory.counters["invalid_tool_args"] == 1
    assert ctx.trajectory.messages[-1].role == "tool"  # the step's text reply was dropped


async def test_a_transfer_ends_the_trial_and_max_steps_counts_calls():
    ctx, _, _, termination = await _play([[(TRANSFER_TOOL, {"summary": "wants a human"})]])
    assert ctx.trajectory.messages[-1].role == "tool"
    assert termination == "agent_transfer"
    ctx, agent, _, termination = await _play([[], CALLS * 3], Limits(max_steps=7))
    # greeting→user 1, user→agent 2, text→user 3, user→agent 4, call 1: 6, call 2: 8 ≥ 7
    assert termination == "max_steps"
    assert sum(1 for r in agent.results if not r.error) == 2
