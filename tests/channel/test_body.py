"""``channel.body.dumps`` is ``json.dumps(..., ensure_ascii=False, separators=(",", ":"))``, character
for character, whatever the payload and whatever happened to a tools list since it was encoded."""

from __future__ import annotations

import json

from agentrig.channel import body


def plain(payload: object) -> str:
    return json.dumps(payload, ensure_ascii=False, separators=(",", ":"))


def tools_list(extra: str = "") -> list[dict]:
    return [{"type": "function", "function": {"name": f"tool_{i}", "description": "d" * 1500 + extra,
                                               "parameters": {"type": "object", "properties": {
                                                   "n": {"type": "integer", "minimum": 0}}, "required": ["n"]}}}
            for i in range(3)]


def test_a_conversation_is_encoded_as_json_dumps_does_turn_after_turn() -> None:
    system = "Policy — règles, 規則 \"quoted\" \\ \n" * 200  # long, non-ASCII, escapes
    tools = tools_list()
    messages: list = [{"role": "system", "content": system}]
    for turn in range(6):
        messages.append({"role": "user", "content": f"turn {turn} ✓"})
        payload = {"model": "m", "messages": messages, "tools": tools, "tool_choice": "auto",
                   "temperature": 0.0, "seed": 7, "parallel_tool_calls": False}
        assert body.dumps(payload) == plain(payload)
        messages.append({"role": "assistant", "content": None, "tool_calls": [
            {"id": f"c{turn}", "type": "function", "function": {"name": "tool_0", "arguments": '{"n":1}'}}]})
        messages.append({"role": "tool", "tool_call_id": f"c{turn}", "content": "x" * 2000 + str(turn)})


def test_a_tools_list_changed_in_place_is_encoded_again() -> None:
    tools = tools_list()
    payload = {"model": "m", "messages": [], "tools": tools}
    first = body.dumps(payload)
    assert first == plain(payload)
    tools[1]["function"]["description"] = "changed"
    tools.append({"type": "function", "function": {"name": "new", "parameters": {}}})
    assert body.dumps(payload) == plain(payload) != first
    tools[0]["function"]["parameters"]["properties"]["n"]["minimum"] = 5
    assert body.dumps(payload) == plain(payload)


def test_an_equal_tools_list_of_another_agent_gives_its_own_bytes() -> None:
    a, b = tools_list(), tools_list()
    b[0]["function"]["parameters"]["properties"]["n"]["minimum"] = 0.0  # equal to 0, encoded "0.0"
    for tools in (a, b, a, b):
        payload = {"messages": [{"role": "user", "content": "hi"}], "tools": tools}
        assert body.dumps(payload) == plain(payload)


def test_odd_payloads_are_json_dumps_own() -> None:
    odd = [
        {"messages": [{1: "int key"}, ["a", "list"], "text", None, {"content": "é" * 2000, 2.5: True}]},
        {3: "not a str key", "messages": []},
        {"tools": ("a", "tuple"), "input": [{"role": "user", "content": [{"type": "input_text", "text": "y" * 3000}]}]},
        {"tools": [], "messages": [{"role": "user", "content": "z" * 1024}], "x": float("nan"), "y": 1e300},
        ["not", "a", "dict"],
        {"messages": "not a list", "extra": {"nested": [1, 2.0, None, False]}},
    ]
    for payload in odd + odd:  # the second pass answers from what the first kept
        assert body.dumps(payload) == plain(payload)
