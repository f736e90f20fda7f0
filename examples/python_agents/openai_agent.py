"""A τ² agent on the plain `openai` SDK, for `agent = { kind = "python", entry = "openai_agent:make" }`.

One Chat Completions call per step: the system prompt (ours, with the domain's policy), the
conversation agentrig hands over, the domain's tools. The model's tool calls go back in the reply
and the episode runs them; their results arrive with the next turn. The client agentrig gives
already points at the trial's proxy with the trial's token: nothing here knows a real key.

Settings (the arm's `agent.settings`): `temperature` (default: the endpoint's), `instructions`
(replaces the first paragraph of the system prompt).
"""

from __future__ import annotations

from typing import Any

from agentrig_agent import Reply, ToolCall, Turn

INSTRUCTIONS = (
    "You work the help desk of the business described in the policy below, talking with one customer. "
    "Look things up and act through the tools; write to the customer in short, plain messages. "
    "Ask for what you need before acting, get an explicit yes before any change, and never promise "
    "what the policy does not allow."
)


class ChatCompletionsAgent:
    def __init__(self, client: Any, model: str, settings: dict):
        self.client = client
        self.model = model
        self.instructions = settings.get("instructions") or INSTRUCTIONS
        self.options = {"temperature": settings["temperature"]} if "temperature" in settings else {}

    def respond(self, turn: Turn) -> Reply:
        system = {"role": "system", "content": f"{self.instructions}\n\n## Policy\n\n{turn.policy}"}
        completion = self.client.chat.completions.create(
            model=turn.model, messages=[system, *turn.messages], tools=turn.tools, **self.options)
        message = completion.choices[0].message
        calls = [ToolCall(name=c.function.name, arguments=c.function.arguments, id=c.id)
                 for c in message.tool_calls or []]
        return Reply(content=message.content, tool_calls=calls)


def make(settings: dict, client: Any, model: str) -> ChatCompletionsAgent:
    if client is None or not hasattr(client, "chat"):
        raise RuntimeError("openai_agent needs the `openai` package in its interpreter (agent.python)")
    return ChatCompletionsAgent(client, model, settings)
