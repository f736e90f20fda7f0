"""A test agent on the `anthropic` SDK (agent.client = "anthropic"): one Messages call per step, the
conversation agentrig hands over (Chat Completions messages) turned into Anthropic's blocks."""

from __future__ import annotations

import json

from agentrig_agent import Reply, ToolCall


def _blocks(messages):
    out = []
    for m in messages:
        if m["role"] == "tool":
            role, content = "user", [{"type": "tool_result", "tool_use_id": m["tool_call_id"], "content": m["content"]}]
        elif m["role"] == "assistant":
            role, content = "assistant", [{"type": "text", "text": m["content"]}] if m.get("content") else []
            for call in m.get("tool_calls") or []:
                content.append({"type": "tool_use", "id": call["id"], "name": call["function"]["name"],
                                "input": json.loads(call["function"]["arguments"] or "{}")})
        else:
            role, content = "user", [{"type": "text", "text": m["content"]}]
        if out and out[-1]["role"] == role:  # Anthropic's roles alternate: merge a run of one role
            out[-1]["content"].extend(content)
        else:
            out.append({"role": role, "content": content})
    return out


class MessagesAgent:
    def __init__(self, client):
        self.client = client

    def respond(self, turn):
        tools = [{"name": t["function"]["name"], "description": t["function"].get("description") or "",
                  "input_schema": t["function"]["parameters"]} for t in turn.tools]
        reply = self.client.messages.create(model=turn.model, max_tokens=1024, tools=tools,
                                            system="Help the customer within this policy.\n\n" + turn.policy,
                                            messages=_blocks(turn.messages))
        text = "".join(b.text for b in reply.content if b.type == "text") or None
        calls = [ToolCall(name=b.name, arguments=b.input, id=b.id) for b in reply.content if b.type == "tool_use"]
        return Reply(content=text, tool_calls=calls)


def make(settings, client, model):
    assert type(client).__module__.startswith("anthropic"), type(client)
    return MessagesAgent(client)
