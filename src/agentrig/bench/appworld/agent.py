"""The AppWorld code agent: a ReAct loop of our own (``agent.kind = "llm"`` on an AppWorld arm).

One trial: the system prompt (preamble — replaceable by the arm's ``prompt`` file — the rules of
the tool mode, the environment, how to finish, the limits) and the task prompt (the supervisor's
name, email, phone, the instruction, the task's date), then steps until the world says the task
is complete:

1. limits are checked (model calls ``step_limit``, ``cost_limit`` USD, ``token_limit`` tokens);
   plug-ins add transient context for this call (``session.transient``); the conversation is
   fitted to the context window (old outputs elided); the model is called through
   ``ctx.complete`` (recorded in the trajectory) — all of it the bash agent's own loop
   (``agents/bash.py``), which this agent extends;
2. the reply is checked and run:
   the code runs in the world (``session.execute``): ``tool_mode = "native"`` — each ``execute(code)``
   call of the reply, in order, each output back as a ``tool`` message; ``tool_mode = "text"`` —
   the reply must hold exactly one fenced ``python`` block, its output back as a ``user``
   message (the assistant message keeps an ``execute`` tool call, id ``text-<n>``, so analysis sees
   the same actions in both modes). Unusable replies are format errors (a note goes back;
   ``max_format_errors`` in a row end the trial with ``format_errors``).

The output is what the code printed, or AppWorld's "Execution failed" with its traceback, cut in
the middle to ``[benchmark] output_limit`` characters. The API docs are reached as AppWorld
intends, from the code: ``apis.api_docs.show_api_doc(...)``. ``apis.supervisor.complete_task(...)``
ends the trial (the session asks the world after each execution).
"""

from __future__ import annotations

import json
import re
from typing import Any

from agentrig.agents.base import AgentSettings, AgentStop
from agentrig.agents.bash import BashAgent
from agentrig.agents.bash_context import ContextWindow
from agentrig.agents.llm import assistant_dict, completion_message, provider_fields
from agentrig.types import Message, ToolCall

from . import prompts as texts

_THINK = re.compile(r"<think>.*?</think>", re.DOTALL)
_FENCE = re.compile(r"^ {0,3}(`{3,})[ \t]*([\w+-]*)[ \t]*$")
REPLY_CLIP = 500


def parse_code(reply: str, finish_reason: str | None = None) -> tuple[str | None, str | None]:
    """Text mode: (the code, None) for a reply with exactly one ```python block, else (None, why)."""
    lines = _THINK.sub("", reply or "").split("\n")
    blocks: list[str] = []
    i, unclosed = 0, False
    while i < len(lines):
        opened = _FENCE.match(lines[i])
        if opened is None:
            i += 1
            continue
        fence, label, body, j = len(opened.group(1)), opened.group(2).lower(), [], i + 1
        while j < len(lines):
            closing = _FENCE.match(lines[j])
            if closing is not None and not closing.group(2) and len(closing.group(1)) >= fence:
                break
            body.append(lines[j])
            j += 1
        if j == len(lines):
            unclosed = label in texts.CODE_LABELS
            break
        if label in texts.CODE_LABELS:
            blocks.append("\n".join(body))
        i = j + 1
    if len(blocks) > 1:
        return None, f"your reply holds {len(blocks)} python blocks, but exactly one is allowed per reply"
    if len(blocks) == 1:
        return (blocks[0], None) if blocks[0].strip() else (None, "the python block is empty")
    if finish_reason == "length":
        return None, texts.CUT_OFF.format(what="a complete python block")
    if unclosed:
        return None, "the python block was opened but never closed with a line of ```"
    return None, "your reply holds no python block (a fence labelled ```python)"


class CodeAgent(BashAgent):
    """The bash agent's loop (``agents/bash.py``: limits, accounting, the context window, the model
    call, tool results) with AppWorld's actions: code, not commands; completion, not submission."""

    def __init__(self, settings: AgentSettings, session: Any):  # its own prompts and tool; the loop's state
        self.settings, self.session, self.ctx = settings, session, session.ctx
        if self.ctx.channel is None:
            raise RuntimeError("the AppWorld code agent needs a model, but this trial has no channel")
        self.text_mode = settings.tool_mode == "text"
        s = session.settings
        limits = texts.limits_text(step_limit=settings.step_limit, execution_limit=s.limits.max_steps,
                                   cost_limit=settings.cost_limit, output_limit=s.output_limit,
                                   execute_timeout_s=s.execute_timeout_s)
        self.system = texts.system_prompt(texts.preamble(settings.prompt), text_mode=self.text_mode, limits=limits)
        self.task_text = texts.task_prompt(session.task)
        self.messages: list[dict] = [{"role": "system", "content": self.system},
                                     {"role": "user", "content": self.task_text}]
        self.observations: list[int] = []
        self.tools = None if self.text_mode else [texts.EXECUTE_TOOL]
        self.window = ContextWindow(settings.context_tokens, settings.elided_keep_chars,
                                    self.ctx.channel.role("agent").max_tokens)
        self.prices = self.ctx.channel.config.prices
        self.steps = self.tokens = self.errors_in_row = self.n_text = 0
        self.cost, self.cost_known = 0.0, True

    async def run(self, session: Any = None) -> None:
        session = self.session
        session.add(Message(role="system", content=self.system))
        session.add(Message(role="user", content=self.task_text))
        while not session.completed:
            self._check_limits()
            transient = list(await session.transient(self.steps))
            done, call = await self._complete(transient)
            self._account(done)
            await (self._text_step if self.text_mode else self._native_step)(done, call)

    # ------------------------------------------------------------------ the two modes

    async def _native_step(self, done: Any, call: int) -> None:
        message = completion_message(done, call)
        self.messages.append(assistant_dict(message, self.settings.send_reasoning))
        self.session.add(message)
        if not message.tool_calls:
            problem = (texts.CUT_OFF.format(what="it made a tool call") if done.finish_reason == "length"
                       else f"your reply made no `{texts.TOOL_NAME}` call")
            self._format_error(problem, call, message.content or "")
            return
        ran = False
        for c in message.tool_calls:
            if self.session.completed:
                self._tool_result(c.id, texts.skipped_after_completion(), error=True)
                continue
            code = (c.arguments or {}).get("code") if isinstance(c.arguments, dict) else None
            if c.name != texts.TOOL_NAME or not isinstance(code, str) or not code.strip():
                self.ctx.trajectory.bump("invalid_tool_args")
                why = (f"there is no tool {c.name!r}; the only tool is `{texts.TOOL_NAME}`" if c.name != texts.TOOL_NAME
                       else "no non-empty `code` string")
                self._tool_result(c.id, texts.bad_arguments(why), error=True)
                continue
            ran = True
            await self._run(code, c.id)
        if ran:
            self.errors_in_row = 0
        else:
            self._format_error("no call of your reply had a usable `code`", call, "", note=False)

    async def _text_step(self, done: Any, call: int) -> None:
        reply = done.message.content or ""
        code, problem = parse_code(reply, done.finish_reason)
        message = completion_message(done, call, content=reply, tool_calls=[])
        call_id = None
        if code is not None:
            self.n_text += 1
            call_id = f"text-{self.n_text}"
            message.tool_calls = [ToolCall(id=call_id, name=texts.TOOL_NAME, arguments={"code": code},
                                           arguments_raw=json.dumps({"code": code}, ensure_ascii=False))]
        d: dict[str, Any] = {"role": "assistant", "content": reply}
        if message.extra or message.reasoning:
            d.update(provider_fields(message, self.settings.send_reasoning))
        self.messages.append(d)
        self.session.add(message)
        if code is None:
            self._format_error(problem or "unusable reply", call, reply)
            return
        self.errors_in_row = 0
        await self._run(code, None)

    async def _run(self, code: str, call_id: str | None) -> None:
        result = await self.session.execute(code)
        text = texts.observation(result.output, result.omitted_chars)
        if call_id is not None:
            self._tool_result(call_id, text, error=result.failed)
        else:
            self.messages.append({"role": "user", "content": text})
            self.session.add(Message(role="user", content=text))
        self.observations.append(len(self.messages) - 1)

    def _format_error(self, problem: str, call: int, reply: str, *, note: bool = True) -> None:
        self.errors_in_row += 1
        self.ctx.trajectory.bump("format_errors")
        self.ctx.event("agent", "format_error", problem=problem, call=call, reply=reply[:REPLY_CLIP])
        if self.errors_in_row >= self.settings.max_format_errors:
            raise AgentStop("format_errors", f"{self.errors_in_row} replies in a row could not be run; last: {problem}")
        if note:
            text = (texts.text_format_error if self.text_mode else texts.native_format_error)(problem)
            self.messages.append({"role": "user", "content": text})
            self.session.add(Message(role="user", content=text))
