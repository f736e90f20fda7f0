"""Text mode: the LLM agent for endpoints without function calling.

No ``tools`` parameter is sent. The system prompt lists the tools (name, description, JSON schema
of the arguments) and asks for exactly one JSON object per reply:

    {"action": "<tool name>", "arguments": {...}}
    {"action": "respond", "content": "..."}

``json`` code fences and text around the object are tolerated; a reply with no usable object,
several objects, or another shape is a format error: the model gets a note saying what was wrong
and the exact format (a user-role message in its own history), the error is counted
(``format_errors``) and recorded as an event, and the model is asked again; after
``max_format_errors`` consecutive errors the agent raises ``AgentStop("too_many_format_errors")``.
A tool action becomes a ``Message`` with one ``ToolCall`` (id ``text-<n>``), so the episode and
the judge see it as they see a native call; its result comes back as ``Result of <tool>: ...``.
A tool name the domain does not have is not a format error: the environment answers it.

Transient context applies to every call of the step (the format-error retries too); a
``user_append`` goes to the last user message the step started with.
"""

from __future__ import annotations

import json
import re
from typing import Any

from agentrig.types import Message, ToolCall, Transient

from . import prompts
from .base import AgentSettings, AgentStop
from .llm import completion_message, provider_fields
from .transients import with_transients

_TOOLS_TEXT: dict[type, str] = {}
_THINK = re.compile(r"<think>.*?</think>", re.DOTALL)
_DECODER = json.JSONDecoder()
REPLY_CLIP = 500


def tools_text(toolkit: type) -> str:
    text = _TOOLS_TEXT.get(toolkit)
    if text is None:
        text = _TOOLS_TEXT[toolkit] = prompts.tools_section(toolkit.tool_specs())
    return text


def _objects(text: str) -> tuple[list[Any], str | None]:
    """Top-level JSON objects in ``text`` (left to right), and the first decoding problem met."""
    found: list[Any] = []
    problem: str | None = None
    i = text.find("{")
    while i != -1:
        try:
            value, end = _DECODER.raw_decode(text, i)
        except ValueError as exc:
            if problem is None:
                problem = f"{getattr(exc, 'msg', str(exc))} at position {getattr(exc, 'pos', i)}"
            i = text.find("{", i + 1)
            continue
        found.append(value)
        i = text.find("{", end)
    return found, problem


def parse_action(reply: str) -> tuple[dict | None, str | None]:
    """(action, None) for a usable reply, else (None, what is wrong)."""
    text = _THINK.sub("", reply or "").strip()
    if not text:
        return None, "the reply was empty"
    found, bad_json = _objects(text)
    if not found:
        if bad_json:
            return None, f"the reply holds no valid JSON object ({bad_json})"
        return None, "the reply holds no JSON object"
    if len(found) > 1:
        return None, f"the reply holds {len(found)} JSON objects, but exactly one action per reply is allowed"
    obj = found[0]
    action = obj.get("action")
    if not isinstance(action, str) or not action.strip():
        if bad_json:
            return None, f"the reply is not one valid JSON object ({bad_json})"
        return None, 'the JSON object has no "action" string'
    action = action.strip()
    if action == "respond":
        content = obj.get("content")
        if not isinstance(content, str) or not content.strip():
            return None, 'a "respond" action needs a non-empty "content" string'
        return {"action": "respond", "content": content}, None
    arguments = obj.get("arguments")
    if arguments is None:
        arguments = {}
    if not isinstance(arguments, dict):
        return None, f'the "arguments" of a tool action must be a JSON object, got {type(arguments).__name__}'
    return {"action": action, "arguments": arguments}, None


def _as_reply(m: Message) -> str:
    """How a past assistant message (greeting, task history) reads in this format."""
    if m.tool_calls:
        return "\n".join(json.dumps({"action": c.name, "arguments": c.arguments or {}}, ensure_ascii=False)
                         for c in m.tool_calls)
    return json.dumps({"action": "respond", "content": m.content or ""}, ensure_ascii=False)


class TextAgent:
    """``kind="llm"``, ``tool_mode="text"``."""

    def __init__(self, settings: AgentSettings, ctx: Any):
        self.settings = settings
        self.ctx = ctx
        text = prompts.preamble(settings.prompt, text_mode=True, parallel_tool_calls=False)
        system = prompts.text_system_prompt(text, tools_text(ctx.bench.spec.agent_toolkit), ctx.bench.policy)
        self.messages: list[dict] = [{"role": "system", "content": system}]
        self.last_user: int | None = None
        self.names: dict[str, str] = {}  # tool call id -> tool name
        self.n_calls = 0

    def _user(self, content: str) -> None:
        self.messages.append({"role": "user", "content": content})
        self.last_user = len(self.messages) - 1

    def _assistant(self, content: str, m: Message) -> None:
        d = {"role": "assistant", "content": content}
        if m.extra or m.reasoning:
            d.update(provider_fields(m, self.settings.send_reasoning))
        self.messages.append(d)

    def _add(self, m: Message) -> None:
        if m.role == "assistant":
            for c in m.tool_calls:
                self.names[c.id] = c.name
            self._assistant(_as_reply(m), m)
        elif m.role == "user":
            if m.tool_calls and not m.content:
                return
            self._user(m.content or "")
        elif m.role == "tool" and m.requestor != "user":
            name = self.names.get(m.tool_call_id or "", "the tool")
            self._user(prompts.tool_result(name, m.content or ""))

    async def start(self, history: list[Message]) -> None:
        for m in history:
            self._add(m)

    async def respond(self, incoming: list[Message], transient: list[Transient]) -> Message:
        for m in incoming:
            self._add(m)
        anchor = self.last_user
        errors = 0
        while True:
            request = with_transients(self.messages, anchor, transient)
            done, call = await self.ctx.complete("agent", request, None, purpose="agent")
            reply = done.message.content or ""
            message = completion_message(done, call, content=None, tool_calls=[])
            self._assistant(reply, message)
            action, problem = parse_action(reply)
            if problem is None:
                break
            errors += 1
            self.ctx.trajectory.bump("format_errors")
            self.ctx.event("agent", "format_error", reply=reply[:REPLY_CLIP], problem=problem, call=call)
            if errors >= self.settings.max_format_errors:
                raise AgentStop("too_many_format_errors",
                                f"{errors} consecutive replies were not one JSON action; last: {problem}")
            self._user(prompts.format_error(problem))
        if action["action"] == "respond":
            message.content = action["content"]
            return message
        self.n_calls += 1
        call_id = f"text-{self.n_calls}"
        arguments = action["arguments"]
        self.names[call_id] = action["action"]
        message.tool_calls = [ToolCall(id=call_id, name=action["action"], arguments=arguments,
                                       arguments_raw=json.dumps(arguments, ensure_ascii=False))]
        return message
