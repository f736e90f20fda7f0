"""The user simulator: an LLM playing the task's ``user_scenario``, or a scripted user.

Built once per trial by ``build_user(settings, ctx)``; then, like τ²-bench's ``UserSimulator``:

- ``start(history)``: the messages the user already "said and saw" (for a task with a
  ``message_history``). Only what the user side sees is kept, by tau2-bench's
  ``is_valid_user_history_message``: the user's own messages, the agent's messages without tool
  calls, and tool results of the USER's calls. Anything else given is ignored.
- ``respond(incoming)``: the messages addressed to the user since its last reply (an agent text
  message, or the results of its own tool calls, in call order); returns one ``user`` ``Message``
  with text or tool calls (tool calls of the domain's user tools, run by the episode with
  requestor ``user``).

The LLM user sees the conversation from its own side, as tau2-bench's ``flip_roles`` shows it:
the agent's text as role ``user``, its own messages as role ``assistant`` (with its tool calls),
results of its own tool calls as role ``tool``. The agent's tool calls and their results are never
shown to it. Its request grows by appending (no rebuild per turn). A ``ChannelError`` propagates:
the episode marks the trial invalid.

User tools, as tau2-bench builds its user: the domain's user toolkit (telecom's phone), narrowed
to ``task.user_tools`` when the task names them (newer tau2-bench's ``get_user_tools(include=…)``);
no toolkit, or nothing left, means no tools, and then the guidelines without tools are used.

The scripted user (``kind = "scripted"``, no model) is for tests and the offline demo: it states
the request, then performs the task's gold user actions group by group when the agent asks (see
``ScriptedUser``), then thanks the agent and stops.
"""

from __future__ import annotations

import json
from functools import lru_cache
from typing import Any, Literal, Protocol

from agentrig.errors import DataError
from agentrig.types import Message, Strict, ToolCall

from .user_prompts import resolve_guidelines, system_prompt

STOP = "###STOP###"
TRANSFER = "###TRANSFER###"
OUT_OF_SCOPE = "###OUT-OF-SCOPE###"
STOP_TOKENS = (STOP, TRANSFER, OUT_OF_SCOPE)

DONE_TEXT = "Done."
THANKS_TEXT = "Great, that is everything I needed. Thank you! " + STOP


def stop_token(text: str | None) -> str | None:
    """The first stop token found in ``text`` (checked in STOP_TOKENS order), or None."""
    if not text:
        return None
    for token in STOP_TOKENS:
        if token in text:
            return token
    return None


def is_stop(text: str | None) -> bool:
    """True when the text contains one of the stop tokens (tau2-bench's ``UserSimulator.is_stop``)."""
    return stop_token(text) is not None


def is_stop_message(message: Message) -> bool:
    """tau2-bench's check on a whole user message: a message with tool calls never stops."""
    return not message.tool_calls and is_stop(message.content)


class UserSettings(Strict):
    """The ``user`` part of an experiment: how the user simulator is played."""

    kind: Literal["llm", "scripted"] = "llm"
    # auto: tau2-bench's user_simulator/ guidelines when the data root has them, else ours;
    # tau2: tau2-bench's or a ConfigError; builtin: ours
    guidelines: Literal["auto", "tau2", "builtin"] = "auto"


class UserSim(Protocol):
    async def start(self, history: list[Message]) -> None: ...

    async def respond(self, incoming: list[Message]) -> Message: ...


def build_user(settings: UserSettings, ctx: Any) -> UserSim:
    """The user simulator for one trial (``ctx``: ``agentrig.trial.context.TrialContext``)."""
    if settings.kind == "scripted":
        return ScriptedUser(ctx.task)
    tools = user_tool_schemas(ctx.bench.spec, ctx.task)
    guidelines, source = resolve_guidelines(settings.guidelines, ctx.data_root, tools is not None)
    prompt = system_prompt(guidelines, ctx.task.user_scenario.render())
    return LLMUser(ctx, prompt, tools, guidelines_source=source)


# ------------------------------------------------------------------------------------ tools


def user_tool_schemas(spec: Any, task: Any) -> list[dict] | None:
    """The OpenAI schemas of the user tools this task offers, or None when there are none."""
    toolkit = getattr(spec, "user_toolkit", None)
    if toolkit is None:
        return None
    names = getattr(task, "user_tools", None)
    schemas = _schemas(toolkit, None if names is None else tuple(names))
    if isinstance(schemas, str):
        raise DataError(
            f"task {getattr(task, 'id', '?')!r}, field user_tools: {schemas}.\n"
            "  fix: name only tools of the domain's user toolkit, or leave user_tools out for all of them"
        )
    return list(schemas) or None


@lru_cache(maxsize=256)
def _schemas(toolkit: type, names: tuple[str, ...] | None) -> tuple[dict, ...] | str:
    specs = toolkit.tool_specs()
    if names is not None:
        known = {s.name for s in specs}
        unknown = sorted(set(names) - known)
        if unknown:
            return f"unknown user tool(s) {', '.join(unknown)} (the user tools are: {', '.join(sorted(known))})"
        wanted = set(names)
        specs = [s for s in specs if s.name in wanted]  # the toolkit's order, as tau2 keeps it
    return tuple(s.openai_schema() for s in specs)


# ------------------------------------------------------------------------------------ view


def _call_dict(call: ToolCall) -> dict:
    if call.arguments_raw:
        raw = call.arguments_raw
    else:
        raw = json.dumps(call.arguments if call.arguments is not None else {}, ensure_ascii=False)
    return {"id": call.id, "type": "function", "function": {"name": call.name, "arguments": raw}}


def user_view(message: Message) -> dict | None:
    """One message as the user model sees it (roles flipped), or None when it does not see it."""
    role = message.role
    if role == "user":  # its own message
        out: dict[str, Any] = {"role": "assistant", "content": message.content or ""}  # never null (agents/llm.py)
        if message.tool_calls:
            out["tool_calls"] = [_call_dict(c) for c in message.tool_calls]
        if message.extra:
            out.update(message.extra)
        return out
    if role == "assistant":
        if message.tool_calls or not message.content:
            return None  # the agent's tool calls go to the environment, not to the user
        return {"role": "user", "content": message.content}
    if role == "tool":
        if message.requestor != "user":
            return None
        return {"role": "tool", "tool_call_id": message.tool_call_id, "content": message.content or ""}
    return None


# ------------------------------------------------------------------------------------ LLM user


class LLMUser:
    def __init__(self, ctx: Any, prompt: str, tools: list[dict] | None, *, guidelines_source: str = "builtin"):
        self.ctx = ctx
        self.system_prompt = prompt
        self.tools = tools
        self.guidelines_source = guidelines_source
        self.messages: list[dict] = [{"role": "system", "content": prompt}]

    def _see(self, messages: list[Message]) -> None:
        for m in messages:
            view = user_view(m)
            if view is not None:
                self.messages.append(view)

    async def start(self, history: list[Message]) -> None:
        self._see(history)

    async def respond(self, incoming: list[Message]) -> Message:
        self._see(incoming)
        done, index = await self.ctx.complete("user", self.messages, self.tools, purpose="user")
        reply = done.message
        message = Message(
            role="user",
            content=reply.content,
            tool_calls=list(reply.tool_calls),
            reasoning=reply.reasoning,
            extra=dict(reply.extra),
            call=index,
        )
        self._see([message])
        return message


# ------------------------------------------------------------------------------------ scripted


def request_text(task: Any) -> str:
    """What the scripted user says first: the reason for the call and the known info (a plain
    string scenario: that string)."""
    ins = task.user_scenario.instructions
    if isinstance(ins, str):
        return ins.strip()
    parts = [ins.reason_for_call.strip()]
    if ins.known_info:
        parts.append(ins.known_info.strip())
    return "\n".join(p for p in parts if p)


def user_action_groups(task: Any) -> list[list[Any]]:
    """The task's gold user actions, in order, grouped into runs of consecutive user actions
    (the agent's actions separate the groups)."""
    groups: list[list[Any]] = []
    current: list[Any] = []
    for action in task.gold_actions:
        if action.requestor == "user":
            current.append(action)
        elif current:
            groups.append(current)
            current = []
    if current:
        groups.append(current)
    return groups


class ScriptedUser:
    """A user without a model, for tests and the offline demo. It pairs with the gold reference
    agent, which writes to the user only to ask for the next group of user actions or to close.

    - first reply: the request (``request_text``);
    - on an agent text message: if a group of gold user actions is left, start the next one; else
      thank the agent and stop (``###STOP###``);
    - while a group runs: one tool call per reply (the gold name and arguments, ids
      ``user-gold-<n>``); once the result of the group's last call is in, reply ``Done.``.
    """

    def __init__(self, task: Any):
        self.request = request_text(task)
        self.groups = user_action_groups(task)
        self._next_group = 0
        self._pending: list[Any] = []  # calls of the running group not made yet
        self._in_group = False
        self._requested = False
        self._calls = 0

    async def start(self, history: list[Message]) -> None:
        return None  # the script does not depend on what came before

    async def respond(self, incoming: list[Message]) -> Message:
        if not self._requested:
            self._requested = True
            return Message(role="user", content=self.request)
        if self._in_group:
            if self._pending:
                return self._call(self._pending.pop(0))
            self._in_group = False
            return Message(role="user", content=DONE_TEXT)
        if self._next_group < len(self.groups):
            self._pending = list(self.groups[self._next_group])
            self._next_group += 1
            self._in_group = True
            return self._call(self._pending.pop(0))
        return Message(role="user", content=THANKS_TEXT)

    def _call(self, action: Any) -> Message:
        arguments = dict(action.arguments or {})
        call = ToolCall(id=f"user-gold-{self._calls}", name=action.name, arguments=arguments,
                        arguments_raw=json.dumps(arguments, ensure_ascii=False))
        self._calls += 1
        return Message(role="user", tool_calls=[call])

    @property
    def finished_groups(self) -> int:
        """How many groups of gold user actions have been completed or started."""
        return self._next_group
