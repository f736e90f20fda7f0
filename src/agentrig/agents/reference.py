"""Reference agents that need no model: ``gold``, ``noop`` and ``flaky-gold``.

``gold`` plays the task's gold actions one per step, in order, with their exact names and
arguments (tool call ids ``gold-<index of the action>``). A consecutive group of USER actions
(telecom) becomes one text message asking the user to perform them, named with their arguments.
After the actions it sends one text message holding every ``communicate_info`` string verbatim;
a ``transfer_to_human_agents`` action is played last, after that message (the transfer ends the
conversation), and when there is nothing to communicate the message is left out before a
transfer. Any further step answers a short closing line. So the agent sends text only to ask for
a user group and for the final message, which is what the scripted user expects.

``flaky-gold`` is ``gold`` that, at ``start``, with probability ``drop_p`` drops one gold action,
chosen uniformly among the assistant-requestor write actions, or, when there is none, the
communicated information. It always draws once from ``ctx.rng`` for the decision, and once more
for the choice when it drops an action; the drop is recorded as a ``flaky-gold``/``drop`` event.

``noop`` never calls a tool; every step is the same polite line.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from agentrig.types import Message, ToolCall, Transient

from . import prompts
from .base import AgentSettings

TRANSFER_TOOL = "transfer_to_human_agents"


@dataclass(frozen=True)
class Step:
    kind: str  # "call" | "ask" | "info"
    index: int = -1  # "call": the action's index in the gold list
    action: Any = None
    group: tuple = ()  # "ask": the user actions
    info: tuple[str, ...] = ()


def gold_plan(actions: list, info: list[str], *, drop_index: int | None = None,
              drop_info: bool = False) -> list[Step]:
    """The gold agent's steps for a task's gold actions and communicate_info."""
    steps: list[Step] = []
    transfers: list[Step] = []
    group: list = []
    for i, a in enumerate(actions):
        if i == drop_index:
            continue
        if a.requestor == "user":
            group.append(a)
            continue
        if group:
            steps.append(Step("ask", group=tuple(group)))
            group = []
        target = transfers if a.name == TRANSFER_TOOL else steps
        target.append(Step("call", index=i, action=a))
    if group:
        steps.append(Step("ask", group=tuple(group)))
    items = () if drop_info else tuple(info)
    if items or not transfers:
        steps.append(Step("info", info=items))
    return steps + transfers


def _text(content: str) -> Message:
    return Message(role="assistant", content=content)


def step_message(step: Step) -> Message:
    if step.kind == "call":
        a = step.action
        args = dict(a.arguments)
        call = ToolCall(id=f"gold-{step.index}", name=a.name, arguments=args,
                        arguments_raw=json.dumps(args, ensure_ascii=False))
        return Message(role="assistant", tool_calls=[call])
    if step.kind == "ask":
        lines = "\n".join(f"- {a.call_text()}" for a in step.group)
        return _text(f"{prompts.GOLD_ASK_USER}\n{lines}")
    if step.info:
        lines = "\n".join(f"- {s}" for s in step.info)
        return _text(f"{prompts.GOLD_INFO}\n{lines}\n{prompts.GOLD_ANYTHING_ELSE}")
    return _text(f"{prompts.GOLD_DONE} {prompts.GOLD_ANYTHING_ELSE}")


def _criteria(task: Any) -> tuple[list, list[str]]:
    ec = task.evaluation_criteria
    if ec is None:
        return [], []
    return list(ec.actions or []), list(ec.communicate_info or [])


class GoldAgent:
    """``kind="gold"`` (and, with ``flaky=True``, ``kind="flaky-gold"``)."""

    def __init__(self, settings: AgentSettings, ctx: Any, *, flaky: bool = False):
        self.settings = settings
        self.ctx = ctx
        self.flaky = flaky
        self.actions, self.info = _criteria(ctx.task)
        self.steps: list[Step] = gold_plan(self.actions, self.info)
        self.next = 0

    async def start(self, history: list[Message]) -> None:
        if self.flaky:
            self._maybe_drop()

    def _maybe_drop(self) -> None:
        rng = self.ctx.rng
        if not rng.random() < self.settings.drop_p:
            return
        toolkit = self.ctx.bench.spec.agent_toolkit
        writes = [i for i, a in enumerate(self.actions) if a.requestor == "assistant" and toolkit.is_write(a.name)]
        if writes:
            k = writes[rng.randrange(len(writes))]
            a = self.actions[k]
            self.steps = gold_plan(self.actions, self.info, drop_index=k)
            self.ctx.event("flaky-gold", "drop", dropped="action", index=k, action_id=a.action_id,
                           name=a.name, candidates=len(writes))
        elif self.info:
            self.steps = gold_plan(self.actions, self.info, drop_info=True)
            self.ctx.event("flaky-gold", "drop", dropped="communicate_info", items=list(self.info))
        else:
            self.ctx.event("flaky-gold", "drop", dropped=None,
                           reason="the task has no gold write action and no information to communicate")

    async def respond(self, incoming: list[Message], transient: list[Transient]) -> Message:
        if self.next < len(self.steps):
            step = self.steps[self.next]
            self.next += 1
            return step_message(step)
        return _text(prompts.GOLD_CLOSING)


class NoopAgent:
    """``kind="noop"``: never acts."""

    def __init__(self, settings: AgentSettings, ctx: Any):
        self.settings = settings
        self.ctx = ctx

    async def start(self, history: list[Message]) -> None:
        return None

    async def respond(self, incoming: list[Message], transient: list[Transient]) -> Message:
        return _text(prompts.NOOP_TEXT)
