"""An AppWorld agent on the plain `openai` SDK, for `agent = { kind = "python", entry = "appworld_agent:make" }`
on an AppWorld arm.

One Chat Completions call per step: our own system prompt (how to reply, then agentrig's guide to
the world: the `apis` object, the API docs, how to finish, the limits), the conversation agentrig
hands over (the task, then each of our replies and what its code printed). The reply's ```python
block is the step's code; agentrig runs it in the task's world and the output comes back in the
next turn. A reply without a block gets one more call with a note (`format_retries` times), then
the agent stops. The client agentrig gives already points at the trial's proxy with the trial's
token: nothing here knows a real key.

Settings (the arm's `agent.settings`): `temperature` (default: the endpoint's), `instructions`
(replaces the first paragraph of the system prompt), `format_retries` (default 2).
"""

from __future__ import annotations

import re
from typing import Any, Optional

from agentrig_agent import AppWorldTurn, Reply

INSTRUCTIONS = (
    "You do errands for the person named in the task by writing Python against the apps of their "
    "phone and computer. Work in small steps: run a little code, read its output, then decide what "
    "to run next."
)
HOW_TO_REPLY = (
    "Each reply: at most two sentences of reasoning, then exactly one fenced block of Python, "
    "opened with ```python and closed with ```. It is run as is and you see what it prints."
)
NOTE = "That reply had no ```python block, so nothing ran. Reply again with exactly one block."
BLOCK = re.compile(r"```(?:python|py)[ \t]*\n(.*?)```", re.DOTALL)


def code_of(text: Optional[str]) -> Optional[str]:
    """The first ```python block's code (None: there is none, or it is empty)."""
    found = BLOCK.search(text or "")
    code = found.group(1).strip("\n") if found else ""
    return code if code.strip() else None


class ChatCompletionsCoder:
    def __init__(self, client: Any, model: str, settings: dict):
        self.client = client
        self.model = model
        self.instructions = settings.get("instructions") or INSTRUCTIONS
        self.retries = int(settings.get("format_retries", 2))
        self.options = {"temperature": settings["temperature"]} if "temperature" in settings else {}

    def respond(self, turn: AppWorldTurn) -> Reply:
        system = {"role": "system", "content": f"{self.instructions}\n\n{HOW_TO_REPLY}\n\n{turn.guide}"}
        messages = [system, *turn.messages]
        text = None
        for _ in range(1 + self.retries):
            completion = self.client.chat.completions.create(model=turn.model, messages=messages, **self.options)
            text = completion.choices[0].message.content or ""
            code = code_of(text)
            if code is not None:
                return Reply(content=text, code=code)
            messages = [*messages, {"role": "assistant", "content": text}, {"role": "user", "content": NOTE}]
        return Reply(content=text)  # no code: the agent stops


def make(settings: dict, client: Any, model: str) -> ChatCompletionsCoder:
    if client is None or not hasattr(client, "chat"):
        raise RuntimeError("appworld_agent needs the `openai` package in its interpreter (agent.python)")
    return ChatCompletionsCoder(client, model, settings)
