"""Decision steps of a trial (``analysis.instability.steps_of``): one per model call. A Python agent
running its own tool loop (the OpenAI Agents SDK through ``turn.call_tool``) records each call of a
reply as its own assistant message, each naming the same model call: together they are one decision,
as the reply the model gave — the action a resampled reply of that call is compared with."""

from __future__ import annotations

from types import SimpleNamespace

from agentrig.analysis.decisions import decision_key
from agentrig.analysis.instability import action_of, decisions_of, steps_of
from agentrig.types import Message, ToolCall, Trajectory


def _call(cid: str, name: str, **arguments) -> ToolCall:
    return ToolCall(id=cid, name=name, arguments=arguments)


def _record(messages: list[Message], history_len: int = 0) -> SimpleNamespace:
    return SimpleNamespace(trajectory=Trajectory(history_len=history_len, messages=messages))


def test_the_messages_of_one_model_call_are_one_decision_step():
    a, b = _call("c1", "get_customer", id="C1"), _call("c2", "get_rental", id="R9")
    messages = [
        Message(role="assistant", content="Hi!"),  # the greeting: no model call
        Message(role="user", content="cancel my rental"),
        Message(role="assistant", tool_calls=[a], call=0),  # one reply of two calls, run one by one
        Message(role="tool", tool_call_id="c1", requestor="assistant", content="{}"),
        Message(role="assistant", tool_calls=[b], call=0),
        Message(role="tool", tool_call_id="c2", requestor="assistant", content="{}"),
        Message(role="assistant", tool_calls=[_call("c3", "cancel_rental", id="R9")], call=1),
        Message(role="tool", tool_call_id="c3", requestor="assistant", content="{}"),
        Message(role="assistant", content="Done.", call=2),
    ]
    steps = steps_of(_record(messages))
    assert [(s, t, m.call) for s, t, m in steps] == [(0, 2, 0), (1, 6, 1), (2, 8, 2)]
    first = action_of(steps[0][2].tool_calls, steps[0][2].content)
    assert [c["name"] for c in first["calls"]] == ["get_customer", "get_rental"]
    # the same decision as one message holding both calls (what a resampled reply of call 0 is)
    whole = action_of([a, b], None)
    assert decision_key(first) == decision_key(whole)
    assert decisions_of(_record(messages))[0] == decision_key(whole)
    assert messages[2].tool_calls == [a]  # the record itself is not changed


def test_one_message_per_model_call_is_unchanged():
    messages = [Message(role="user", content="hi"),
                Message(role="assistant", tool_calls=[_call("c1", "find", q="x")], call=0),
                Message(role="tool", tool_call_id="c1", requestor="assistant", content="{}"),
                Message(role="assistant", tool_calls=[_call("c2", "find", q="x")], call=1),
                Message(role="assistant", content="ok", call=2)]
    steps = steps_of(_record(messages, history_len=1))
    assert [(s, t, m) for s, t, m in steps] == [(0, 1, messages[1]), (1, 3, messages[3]), (2, 4, messages[4])]
