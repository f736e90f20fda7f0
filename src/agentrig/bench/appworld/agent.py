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

import re
from typing import Any

from agentrig.agents.base import AgentSettings
from agentrig.agents.bash import BashAgent
from agentrig.types import Message

from . import prompts as texts

_THINK = re.compile(r"<think>.*?</think>", re.DOTALL)
_FENCE = re.compile(r"^ {0,3}(`{3,})[ \t]*([\w+-]*)[ \t]*$")


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
    call, the two tool modes, format errors) with AppWorld's actions: code, not commands;
    completion, not submission."""

    texts = texts
    ARG = "code"
    parse = staticmethod(parse_code)

    def __init__(self, settings: AgentSettings, session: Any):  # its own prompts and tool; the loop's state
        self.settings, self.session, self.ctx = settings, session, session.ctx
        if self.ctx.channel is None:
            raise RuntimeError("the AppWorld code agent needs a model, but this trial has no channel")
        self.text_mode = settings.tool_mode == "text"
        s = session.settings
        limits = texts.limits_text(step_limit=settings.step_limit, execution_limit=s.limits.max_steps,
                                   cost_limit=settings.cost_limit, output_limit=s.output_limit,
                                   execute_timeout_s=s.execute_timeout_s)
        self._begin(texts.system_prompt(texts.preamble(settings.prompt), text_mode=self.text_mode, limits=limits),
                    texts.task_prompt(session.task), texts.EXECUTE_TOOL)

    def _ended(self) -> bool:
        return self.session.completed

    async def _run(self, code: str, call_id: str | None) -> bool:
        """Run one block of code in the world and show its output; True when it completed the task."""
        result = await self.session.execute(code)
        text = texts.observation(result.output, result.omitted_chars)
        if call_id is not None:
            self._tool_result(call_id, text, error=result.failed)
        else:
            self.messages.append({"role": "user", "content": text})
            self.session.add(Message(role="user", content=text))
        self.observations.append(len(self.messages) - 1)
        return bool(self.session.completed)
