"""The measuring proxy's ``hints`` (issue 35, item 4): a plug-in's transient context added to the
requests of an agent we did not write — over real HTTP, the real openai and anthropic SDKs as the
agent, a real TrialProxy and Channel, the FakeEndpoint upstream. The same agent request is sent
without hints, with them and after they are cleared: the upstream bodies differ by the hints only,
the agent's replies not at all."""

from __future__ import annotations

import copy
import json

import openai
import pytest

from agentrig.agents.transients import last_user_index, with_transients
from agentrig.run.resample import _requests
from agentrig.types import Transient

from tests.agents.proxy_clients import STEPS, TASK, openai_client
from tests.agents.test_proxy import WIRES, reply, serving, strings, upstream

REMINDER = Transient(text="<memory>The customer asked for size M earlier.</memory>", placement="system",
                     source="memory")
GUIDELINE = Transient(text="G1: confirm the booking's dates before you book.", placement="system", source="guidelines")
APPENDED = Transient(text="(note: the shop closes at 18:00)", placement="user_append", source="memory")
EMPTY = Transient(text="", placement="system", source="memory")  # a plug-in with nothing to say adds nothing


def expected(plain: dict, hints: list[Transient]) -> dict:
    """The upstream body without hints, with the hints placed as agentrig's own agents place them."""
    body = copy.deepcopy(plain)
    messages = body["messages"]
    system = [h.text for h in hints if h.placement == "system" and h.text]
    append = [h.text for h in hints if h.placement == "user_append" and h.text]
    if append:
        last = max(i for i, m in enumerate(messages) if m["role"] == "user")
        messages[last]["content"] += "\n\n" + "\n\n".join(append)
    if system:
        messages.append({"role": "system", "content": "\n\n".join(system)})
    return body


def seen(step) -> tuple:
    """What the agent read from an answer, but the tool calls' ids (the endpoint numbers them)."""
    return step.text, [(n, a) for _, n, a in step.calls], step.model, step.usage, step.finish


@pytest.mark.parametrize("stream", [False, True], ids=["json", "stream"])
@pytest.mark.parametrize("wire", WIRES)
async def test_hints_are_added_to_the_upstream_request_and_nothing_else(fake, wire, stream):
    hints = [REMINDER, APPENDED, GUIDELINE, EMPTY]
    fake.push_reply(reply("Looking.", [("bash", {"command": "ls"})]),
                    *[reply("Two files.", [("bash", {"command": "wc -l a b"})], 140, 6)] * 3)
    step, history = STEPS[wire]
    async with serving(fake) as proxy:
        first = await step(proxy, [], stream)
        later = history(first, "a\nb")  # the last user message is the task, before a tool round
        answers = [await step(proxy, later, stream)]
        proxy.hints = hints
        answers.append(await step(proxy, later, stream))
        proxy.hints = []
        answers.append(await step(proxy, later, stream))
        traj = proxy.ctx.trajectory
    assert seen(answers[0]) == seen(answers[1]) == seen(answers[2])  # the agent gets the same answer
    assert answers[1].calls[0][1:] == ("bash", {"command": "wc -l a b"})

    bodies = [r.json for r in upstream(fake)][1:]
    plain, hinted, cleared = bodies
    assert cleared == plain
    assert hinted == expected(plain, hints)  # the hints, nothing else
    assert hinted["messages"][-1] == {"role": "system", "content": REMINDER.text + "\n\n" + GUIDELINE.text}
    task = [m for m in hinted["messages"] if m["role"] == "user"][-1]
    assert task["content"] == TASK + "\n\n" + APPENDED.text
    assert hinted["messages"][-2]["role"] == "tool"  # the tool round stays where the agent put it
    assert not any(h.text in s for s in strings(plain) for h in (REMINDER, GUIDELINE, APPENDED))

    # the record: each request as sent (what `agentrig instability` re-sends), and which call had hints
    assert [r.call for r in traj.agent_requests] == [0, 1, 2, 3]
    sent = _requests(traj, {1, 2, 3})
    assert [sent[c][0] for c in (1, 2, 3)] == [b["messages"] for b in bodies]
    events = [e for e in traj.events if e.plugin == "proxy"]
    assert [(e.kind, e.data) for e in events] == [
        ("hints", {"call": 2, "sources": ["memory", "memory", "guidelines"],
                   "placements": ["system", "user_append", "system"]})]
    assert all(c.error is None for c in traj.model_calls)


@pytest.mark.parametrize("up", ["responses", "anthropic"])
async def test_hints_reach_an_upstream_of_another_wire(fake, up):
    """The hints are added in the channel's own terms: the role's wire carries them as it carries
    any system message (not only a chat endpoint)."""
    step, _ = STEPS["chat"]
    fake.push_reply(reply("Sure."), reply("Sure."))
    async with serving(fake, up) as proxy:
        plain = await step(proxy, [], False)
        proxy.hints = [REMINDER]
        hinted = await step(proxy, [], False)
    assert seen(plain) == seen(hinted)
    without, with_hint = [r.json for r in upstream(fake)]
    assert REMINDER.text not in set(strings(without))
    assert any(REMINDER.text in s for s in strings(with_hint))


async def test_hints_stay_for_every_call_while_set_and_only_the_agent_s_messages_are_kept(fake):
    """An agent that makes several calls in one step gets the hints in each; its own messages are
    the same objects it sent (nothing in them changed), and a user message given as content parts
    gets an appended hint as one more text part."""
    client_messages = [{"role": "system", "content": "You are a shop agent."},
                       {"role": "user", "content": [{"type": "text", "text": "Rent me a bike."}]}]
    step_hints = [Transient(text="Remember: size M.", placement="user_append", source="memory")]
    async with serving(fake) as proxy:
        client = openai_client(proxy)
        proxy.hints = step_hints
        for _ in range(2):
            await client.chat.completions.create(model="m", messages=client_messages)
        proxy.hints = []
        await client.chat.completions.create(model="m", messages=client_messages)
        events = [e.data["call"] for e in proxy.ctx.trajectory.events if e.kind == "hints"]
    bodies = [r.json for r in upstream(fake)]
    parts = [{"type": "text", "text": "Rent me a bike."}, {"type": "text", "text": "Remember: size M."}]
    assert [b["messages"][1]["content"] for b in bodies] == [parts, parts, client_messages[1]["content"]]
    assert client_messages[1]["content"] == [{"type": "text", "text": "Rent me a bike."}]
    assert events == [0, 1]


def test_the_shared_helper_leaves_its_input_alone():
    messages = [{"role": "system", "content": "s"}, {"role": "user", "content": "u"},
                {"role": "assistant", "content": "a"}, {"role": "tool", "tool_call_id": "c", "content": "t"}]
    before = json.dumps(messages)
    assert with_transients(messages, last_user_index(messages), []) is messages
    assert with_transients(messages, last_user_index(messages), [EMPTY]) is messages
    out = with_transients(messages, last_user_index(messages), [APPENDED, REMINDER])
    assert json.dumps(messages) == before
    assert out[1] == {"role": "user", "content": "u\n\n" + APPENDED.text}
    assert out[-1] == {"role": "system", "content": REMINDER.text} and len(out) == 5
    # no user message yet: an appended hint still reaches the model, in the system message
    assert with_transients(messages[:1], last_user_index(messages[:1]), [APPENDED])[-1] == \
        {"role": "system", "content": APPENDED.text}


# ------------------------------------------------------------------ before_call: asked per call


@pytest.mark.parametrize("wire", WIRES)
async def test_before_call_gives_each_call_its_own_hints_after_the_set_ones(fake, wire):
    """The hook is awaited before each call with the calls sent so far and the request as
    translated (the tool result of the last answer in it); what it returns is that call's hints,
    after ``proxy.hints``; an empty answer adds nothing."""
    asked: list[tuple[int, list[dict]]] = []
    per_call = {0: [GUIDELINE], 1: [], 2: [APPENDED]}

    async def before_call(n: int, messages: list[dict]) -> list[Transient]:
        asked.append((n, copy.deepcopy(messages)))
        return per_call[n]

    fake.push_reply(reply("Looking.", [("bash", {"command": "ls"})]),
                    *[reply("Two files.", [("bash", {"command": "wc -l a b"})], 140, 6)] * 2)
    step, history = STEPS[wire]
    async with serving(fake, before_call=before_call) as proxy:
        proxy.hints = [REMINDER]
        first = await step(proxy, [], False)
        proxy.hints = []
        later = history(first, "a\nb")
        answers = [await step(proxy, later, False) for _ in range(2)]
        traj = proxy.ctx.trajectory
    assert seen(answers[0]) == seen(answers[1])  # the agent gets the same answer, whatever the hints
    assert [n for n, _ in asked] == [0, 1, 2]
    # the request the hook was shown: the agent's, translated, without hints; the tool result in it
    assert [m["role"] for m in asked[0][1]] == ["system", "user"]
    (result,) = [m for m in asked[1][1] if m["role"] == "tool"]
    assert result["tool_call_id"] == first.calls[0][0] and any("a\nb" in s for s in strings(result["content"]))
    assert not any(h.text in s for _, msgs in asked for s in strings(msgs) for h in (REMINDER, GUIDELINE, APPENDED))

    first_body, plain, hinted = [r.json for r in upstream(fake)]
    assert first_body["messages"][-1] == {"role": "system", "content": REMINDER.text + "\n\n" + GUIDELINE.text}
    assert hinted == expected(plain, [APPENDED])  # the second and third requests are the same agent request
    assert not any(h.text in s for s in strings(plain) for h in (REMINDER, GUIDELINE, APPENDED))
    events = [(e.kind, e.data) for e in traj.events if e.plugin == "proxy"]
    assert events == [("hints", {"call": 0, "sources": ["memory", "guidelines"], "placements": ["system", "system"]}),
                      ("hints", {"call": 2, "sources": ["memory"], "placements": ["user_append"]})]


async def test_a_failing_before_call_ends_the_trial_without_a_model_call(fake):
    """A hook that raises (a plug-in's fatal channel error, or a bug) ends the trial as a channel
    fault does: the agent gets a 502, the proxy keeps the error, nothing goes upstream. A call
    refused at a limit does not ask the hook."""
    asked: list[int] = []

    async def before_call(n: int, messages: list[dict]) -> list[Transient]:
        asked.append(n)
        if n == 1:
            raise RuntimeError("the plug-in broke")
        return []

    fake.push_reply(reply("Sure."), reply("Sure."))
    async with serving(fake, before_call=before_call) as proxy:
        client = openai_client(proxy)
        messages = [{"role": "user", "content": "Hello."}]
        await client.chat.completions.create(model="m", messages=messages)
        with pytest.raises(openai.InternalServerError) as failed:
            await client.chat.completions.create(model="m", messages=messages)
        assert failed.value.status_code == 502 and "RuntimeError" in str(failed.value)
        with pytest.raises(openai.InternalServerError):  # every later request: the same answer
            await client.chat.completions.create(model="m", messages=messages)
        assert isinstance(proxy.failure, RuntimeError) and proxy.ended.is_set()
        events = [(e.kind, e.data) for e in proxy.ctx.trajectory.events if e.plugin == "proxy"]
    assert asked == [0, 1] and len(upstream(fake)) == 1
    assert events == [("before_call_failed", {"error": "RuntimeError"})]

    asked.clear()
    fake.push_reply(reply("Sure."))
    async with serving(fake, before_call=before_call, step_limit=1) as proxy:
        client = openai_client(proxy)
        await client.chat.completions.create(model="m", messages=[{"role": "user", "content": "Hi."}])
        with pytest.raises(openai.RateLimitError):
            await client.chat.completions.create(model="m", messages=[{"role": "user", "content": "Hi."}])
    assert asked == [0]
