"""The LLM agent under test, with native (OpenAI function-calling) tools.

The agent keeps its conversation as OpenAI-format message dicts, system prompt first, appended as
the trial goes (never rebuilt). A request is that list as is, or — when plug-ins add transient
context — a shallow variant of it (``transients.with_transients``: one extra system message at the
end, and/or a copy of the last user message with the text appended). The stored history is never
changed by a transient.

Reasoning content that an endpoint returns stays in the returned ``Message`` (``reasoning``,
provider fields in ``extra``) and, with ``send_reasoning``, goes back with its assistant message:
the ``extra`` fields as they came, and the reasoning text as ``reasoning_content`` unless ``extra``
already carries it under ``reasoning_content`` or ``reasoning``.
"""

from __future__ import annotations

import json
from typing import Any

from agentrig.types import Message, Transient

from . import prompts
from .base import AgentSettings
from .transients import with_transients

_TOOLS: dict[type, list[dict]] = {}  # toolkit class -> its OpenAI tool schemas
_RESERVED = frozenset(("role", "content", "tool_calls", "tool_call_id", "name"))


def openai_tools(toolkit: type) -> list[dict]:
    """The toolkit's tools as OpenAI function schemas, built once per toolkit class."""
    tools = _TOOLS.get(toolkit)
    if tools is None:
        tools = _TOOLS[toolkit] = toolkit.openai_tools()
    return tools


def raw_arguments(call: Any) -> str:
    raw = call.arguments_raw
    if raw and raw.strip():
        return raw
    return json.dumps(call.arguments or {})


def provider_fields(message: Message, send_reasoning: bool) -> dict[str, Any]:
    """The fields to send back with an assistant message besides role/content/tool_calls."""
    out: dict[str, Any] = {}
    for key, value in message.extra.items():
        if key in _RESERVED or (not send_reasoning and key.startswith("reasoning")):
            continue
        out[key] = value
    if send_reasoning and message.reasoning and "reasoning_content" not in out and "reasoning" not in out:
        out["reasoning_content"] = message.reasoning
    return out


def assistant_dict(message: Message, send_reasoning: bool) -> dict:
    # "" rather than null beside tool calls: OpenAI takes both, llama-cpp-python's server answers
    # a null content with a 500 validation error (docs/real-servers.md)
    d: dict[str, Any] = {"role": "assistant", "content": message.content or ""}
    if message.tool_calls:
        d["tool_calls"] = [
            {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": raw_arguments(c)}}
            for c in message.tool_calls
        ]
    if message.extra or message.reasoning:
        d.update(provider_fields(message, send_reasoning))
    return d


def completion_message(done: Any, call: int, **fields: Any) -> Message:
    am = done.message
    values = dict(content=am.content, tool_calls=list(am.tool_calls), reasoning=am.reasoning,
                  extra=dict(am.extra), call=call)
    values.update(fields)
    return Message(role="assistant", **values)


class LLMAgent:
    """``kind="llm"``, ``tool_mode="native"``."""

    def __init__(self, settings: AgentSettings, ctx: Any):
        self.settings = settings
        self.ctx = ctx
        self.tools = openai_tools(ctx.bench.spec.agent_toolkit)
        text = prompts.preamble(settings.prompt, text_mode=False, parallel_tool_calls=settings.parallel_tool_calls)
        self.messages: list[dict] = [{"role": "system", "content": prompts.system_prompt(text, ctx.bench.policy)}]
        self.last_user: int | None = None

    def _add(self, m: Message) -> None:
        if m.role == "assistant":
            self.messages.append(assistant_dict(m, self.settings.send_reasoning))
        elif m.role == "user":
            if m.tool_calls and not m.content:  # the user's own tool calls are not the agent's to see
                return
            self.messages.append({"role": "user", "content": m.content or ""})
            self.last_user = len(self.messages) - 1
        elif m.role == "tool":
            if m.requestor == "user":
                return
            self.messages.append({"role": "tool", "tool_call_id": m.tool_call_id or "", "content": m.content or ""})

    async def start(self, history: list[Message]) -> None:
        for m in history:
            self._add(m)

    async def respond(self, incoming: list[Message], transient: list[Transient]) -> Message:
        for m in incoming:
            self._add(m)
        request = with_transients(self.messages, self.last_user, transient)
        done, call = await self.ctx.complete("agent", request, self.tools, purpose="agent",
                                             parallel_tool_calls=self.settings.parallel_tool_calls)
        message = completion_message(done, call)
        self.messages.append(assistant_dict(message, self.settings.send_reasoning))
        return message
