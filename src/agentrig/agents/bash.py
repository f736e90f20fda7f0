"""The bash agent: an LLM works a terminal task by running shell commands (``agent.kind = "bash"``).

A small loop in the spirit of mini-SWE-agent, written for agentrig. One trial:

1. The conversation starts with a system prompt (preamble — replaceable by the arm's ``prompt``
   file — then the rules of the tool mode, how to submit, the limits) and a task prompt (the
   instruction and the working directory). Both are also the first messages of the trajectory.
2. Each step: the limits are checked (model calls, cost, tokens), the session's plug-ins may add
   transient context for this one call (``session.transient(step)``, as the τ episode's
   ``before_agent_step``), the conversation is fitted to the context window (old observations
   elided, see ``bash_context``), and the model is called through ``ctx.complete`` (recorded).
3. The reply's commands run in the sandbox through ``session.execute``:

   - ``tool_mode = "native"``: one function, ``bash(command)``; every call of a reply runs, in
     order; each result goes back as a ``tool`` message. A reply without a call is a format
     error; a call without a usable ``command`` is answered with an error and not run.
   - ``tool_mode = "text"``: the reply must hold exactly ONE fenced block labelled
     ``bash-action`` (``bash_prompts.ACTION_LABEL``); the result goes back as a ``user``
     message. No block, several blocks, an empty or unclosed block are format errors.
     The assistant message in the trajectory keeps the reply text and, when it was usable, a
     ``bash`` tool call (id ``text-<n>``) so that analysis sees the same actions in both modes.

   A format error sends a note back to the model (saying "your reply was cut off" when the
   reply ended at the length limit); ``max_format_errors`` in a row end the trial with
   ``AgentStop("format_errors")``.
4. A command whose first output line is ``AGENTRIG_SUBMIT`` (``bash_prompts.SUBMIT_SENTINEL``)
   ends the agent phase: the rest of its output is the submission (``session.submit``).

Limits raise ``AgentStop("limits_exceeded", detail)``: ``step_limit`` model calls (the session
bounds the commands: the run's ``max_steps``), ``cost_limit`` USD from the channel's price table (a model without a
price turns the cost limit off, once noted as an event; ``token_limit`` still applies),
``token_limit`` tokens. A conversation that does not fit the context window even with every
old observation elided raises ``AgentStop("context_overflow")``; when that happens before any
model call of the trial was answered (the task's first request alone is too long), the endpoint's
``ContextOverflow`` propagates instead: the window is too small for the task and the run stops.
Every completion counts, unusable ones too (they were billed). The wall
clock is the session's (``execute`` raises ``AgentStop("agent_timeout")``).

Reasoning the endpoint returns stays in the trajectory's messages and, with ``send_reasoning``,
goes back with its assistant message (as the τ agent sends it).
"""

from __future__ import annotations

import json
import re
from typing import Any

from agentrig.channel.usage import cost_of
from agentrig.channel.faults import WINDOW_FIX
from agentrig.trial.truncation import request_chars
from agentrig.errors import ContextOverflow, Diagnosis
from agentrig.types import Message, ToolCall

from . import bash_prompts as texts
from .base import AgentSettings, AgentStop
from .bash_context import ContextWindow
from .llm import assistant_dict, completion_message, provider_fields
from .transients import with_transients

_THINK = re.compile(r"<think>.*?</think>", re.DOTALL)
_OPEN = re.compile(r"^ {0,3}(`{3,})[ \t]*" + re.escape(texts.ACTION_LABEL) + r"[ \t]*$")
_CLOSE = re.compile(r"^ {0,3}(`{3,})[ \t]*$")
_OTHER_FENCE = re.compile(r"^ {0,3}`{3,}[ \t]*(bash|sh|shell|console)\b", re.M)
MAX_OVERFLOWS = 4  # context-overflow refusals in a row before the trial stops
REPLY_CLIP = 500


def parse_action(reply: str, finish_reason: str | None = None) -> tuple[str | None, str | None]:
    """Text mode: (the command, None) for a reply with exactly one action block, else (None, why)."""
    text = _THINK.sub("", reply or "")
    lines = text.split("\n")
    blocks: list[str] = []
    i, unclosed = 0, False
    while i < len(lines):
        opened = _OPEN.match(lines[i])
        if opened is None:
            i += 1
            continue
        fence, body, j = len(opened.group(1)), [], i + 1
        while j < len(lines):
            closing = _CLOSE.match(lines[j])
            if closing is not None and len(closing.group(1)) >= fence:
                break
            body.append(lines[j])
            j += 1
        if j == len(lines):
            unclosed = True
            break
        blocks.append("\n".join(body))
        i = j + 1
    cut = finish_reason == "length"
    if len(blocks) > 1:
        return None, f"your reply holds {len(blocks)} action blocks, but exactly one is allowed per reply"
    if len(blocks) == 1 and not unclosed:
        command = blocks[0].strip("\n")
        if not command.strip():
            return None, "the action block is empty"
        return command, None
    if cut:
        return None, texts.CUT_OFF.format(what="a complete action block")
    if unclosed:
        return None, "the action block was opened but never closed with a line of ```"
    if _OTHER_FENCE.search(text):
        return None, (f"your reply holds no action block: a ```bash (or sh) block is only text; the command "
                      f"to run goes in a block labelled ```{texts.ACTION_LABEL}")
    return None, f"your reply holds no action block (a fence labelled ```{texts.ACTION_LABEL})"


def submission(output: str) -> str | None:
    """The submission when the output's first line is the sentinel, else None."""
    first, _, rest = (output or "").lstrip().partition("\n")
    return rest if first.strip() == texts.SUBMIT_SENTINEL else None


def _opt(obj: Any, *path: str) -> Any:
    """A number the session offers (``session.settings.limits.max_steps`` …), or None."""
    for name in path:
        obj = getattr(obj, name, None)
    return obj if isinstance(obj, (int, float)) and not isinstance(obj, bool) else None


class BashAgent:
    """``kind="bash"``: see the module docstring. ``run(session)`` plays the agent phase.

    The loop (limits, accounting, the context window, the model call, the two tool modes, format
    errors) is shared with agents that act otherwise (AppWorld's code agent): a subclass gives its
    prompts module (``texts``: ``TOOL_NAME``, ``CUT_OFF``, ``bad_arguments``, ``skipped_after_end``,
    ``text_format_error``, ``native_format_error``), the tool's argument (``ARG``), the text mode's
    parser (``parse``), when the phase is over (``_ended``) and how an action runs (``_run``)."""

    texts = texts
    ARG = "command"
    parse = staticmethod(parse_action)

    def __init__(self, settings: AgentSettings, session: Any):
        self.settings = settings
        self.session = session
        self.ctx = session.ctx
        if self.ctx.channel is None:
            raise RuntimeError("the bash agent needs a model, but this trial has no channel")
        self.text_mode = settings.tool_mode == "text"
        task = session.task
        # what the session (bench/terminal/episode.py) bounds: shown in the prompt
        self.command_timeout_s = _opt(session, "settings", "command_timeout_s")
        limits = texts.limits_text(agent_timeout_s=_opt(session, "settings", "agent_timeout_s") or task.agent_timeout_s,
                                   command_timeout_s=self.command_timeout_s, step_limit=settings.step_limit,
                                   command_limit=_opt(session, "settings", "limits", "max_steps"),
                                   cost_limit=settings.cost_limit,
                                   output_limit=_opt(session, "settings", "sandbox", "output_limit"))
        system = texts.system_prompt(texts.preamble(settings.prompt), text_mode=self.text_mode,
                                     workdir=session.workdir, command_timeout_s=self.command_timeout_s,
                                     limits=limits, persistent=getattr(getattr(getattr(
                                         session, "settings", None), "sandbox", None), "shell", None) == "persistent")
        self._begin(system, texts.task_prompt(task.instruction, session.workdir), texts.BASH_TOOL)

    def _begin(self, system: str, task_text: str, tool: dict) -> None:
        """The loop's state: the two opening messages, the tool (native mode), the window, the counters."""
        self.system, self.task_text = system, task_text
        self.messages: list[dict] = [{"role": "system", "content": system}, {"role": "user", "content": task_text}]
        self.observations: list[int] = []  # indexes in self.messages of action outputs, oldest first
        self.tools = None if self.text_mode else [tool]
        self.window = ContextWindow(self.settings.context_tokens, self.settings.elided_keep_chars,
                                    self.ctx.channel.role("agent").max_tokens)
        self.prices = self.ctx.channel.config.prices
        self.steps = self.tokens = self.errors_in_row = self.n_text = 0
        self.cost, self.cost_known = 0.0, True

    # ------------------------------------------------------------------ the loop

    async def run(self, session: Any = None) -> None:
        """Play the agent phase in the session given at construction (``session`` is the same one,
        passed again as ``TerminalAgent.run`` does)."""
        session = self.session
        session.add(Message(role="system", content=self.system))
        session.add(Message(role="user", content=self.task_text))
        while not self._ended():
            self._check_limits()
            hook = getattr(session, "transient", None)
            transient = list(await hook(self.steps)) if hook is not None else []
            done, call = await self._complete(transient)
            self._account(done)
            await (self._text_step if self.text_mode else self._native_step)(done, call)

    def _ended(self) -> bool:
        return self.session.submitted

    def _check_limits(self) -> None:
        s = self.settings
        if s.step_limit and self.steps >= s.step_limit:
            raise AgentStop("limits_exceeded", f"step limit: {self.steps} model calls (step_limit={s.step_limit})")
        if s.cost_limit and self.cost_known and self.cost >= s.cost_limit:
            raise AgentStop("limits_exceeded", f"cost limit: {self.cost:.4f} USD spent (cost_limit={s.cost_limit:g})")
        if s.token_limit and self.tokens >= s.token_limit:
            raise AgentStop("limits_exceeded", f"token limit: {self.tokens} tokens used (token_limit={s.token_limit})")

    def _account(self, done: Any) -> None:
        self.steps += 1
        self.ctx.trajectory.bump("agent_steps")
        self.tokens += done.usage.prompt_tokens + done.usage.completion_tokens
        cost = cost_of(done, self.prices)
        if cost is not None:
            self.cost += cost
        elif self.cost_known:
            self.cost_known = False
            if self.settings.cost_limit:
                self.ctx.event("agent", "cost_limit_off", model=done.model,
                               reason="no price for this model (or no usage reported): the cost limit does not apply"
                                      + ("; token_limit still does" if self.settings.token_limit else ""))

    def _anchor(self) -> int | None:
        """Where a ``user_append`` transient goes: the newest observation or user message."""
        for i in range(len(self.messages) - 1, 0, -1):
            if self.messages[i]["role"] in ("user", "tool"):
                return i
        return None

    async def _complete(self, transient: list) -> tuple[Any, int]:
        refused: ContextOverflow | None = None
        for _ in range(MAX_OVERFLOWS):
            before = self.window.estimate(self.messages)
            fits, elided = self.window.fit(self.messages, self.observations)
            if elided:
                self.ctx.event("agent", "context_elided", observations=elided, window=self.window.tokens,
                               tokens_before=before, tokens_after=self.window.estimate(self.messages))
            if not fits:
                self._too_small(refused, before)
                raise AgentStop("context_overflow", f"the conversation does not fit the model's context window "
                                                    f"({self.window.tokens} tokens) even with old outputs elided")
            request = with_transients(self.messages, self._anchor(), transient)
            try:
                done, call = await self.ctx.complete("agent", request, self.tools, purpose="agent",
                                                     **({} if self.text_mode else
                                                        {"parallel_tool_calls": self.settings.parallel_tool_calls}))
            except ContextOverflow as exc:
                refused = exc
                window = self.window.learn(exc.diagnosis.message, request, exc.window)
                self.ctx.event("agent", "context_overflow", window=window, estimate=self.window.estimate(request))
                continue
            self.window.calibrate(request, done.usage.prompt_tokens, done.usage.reported)
            return done, call
        self._too_small(refused, self.window.estimate(self.messages))
        raise AgentStop("context_overflow", f"the endpoint refused {MAX_OVERFLOWS} requests in a row as longer "
                                            "than the model's context")

    def _too_small(self, refused: ContextOverflow | None, estimate: int) -> None:
        """Before any answered call, eliding cannot help: the task's first request alone is too
        long. Raise the overflow (the run stops: the window is too small for the task)."""
        if self.steps:
            return
        if refused is None:  # the configured context_tokens refused it before it was sent
            refused = ContextOverflow(Diagnosis(
                "CONTEXT_OVERFLOW", f"the first request (about {estimate:,} tokens) does not fit the agent's "
                                    f"context_tokens = {self.window.tokens:,}", WINDOW_FIX))
            refused.window = self.window.tokens
            refused.request_chars = request_chars(self.messages) + (len(json.dumps(self.tools)) if self.tools else 0)
        raise refused

    # ------------------------------------------------------------------ the two modes

    async def _native_step(self, done: Any, call: int) -> None:
        t = self.texts
        message = completion_message(done, call)
        self.messages.append(assistant_dict(message, self.settings.send_reasoning))
        self.session.add(message)
        if not message.tool_calls:
            problem = (t.CUT_OFF.format(what="it made a tool call") if done.finish_reason == "length"
                       else f"your reply made no `{t.TOOL_NAME}` call")
            self._format_error(problem, call, message.content or "")
            return
        ran = ended = False
        for c in message.tool_calls:
            if ended:
                self._tool_result(c.id, t.skipped_after_end(), error=True)
                continue
            action = (c.arguments or {}).get(self.ARG) if isinstance(c.arguments, dict) else None
            if c.name != t.TOOL_NAME or not isinstance(action, str) or not action.strip():
                self.ctx.trajectory.bump("invalid_tool_args")
                self._tool_result(c.id, t.bad_arguments(self._bad_call(c, done.finish_reason)), error=True)
                continue
            ran = True
            ended = await self._run(action, c.id)
        if ran:
            self.errors_in_row = 0
        else:
            self._format_error(f"no call of your reply had a usable `{self.ARG}`", call, "", note=False)

    def _bad_call(self, c: ToolCall, finish_reason: str | None) -> str:
        if c.name != self.texts.TOOL_NAME:
            return f"there is no tool {c.name!r}; the only tool is `{self.texts.TOOL_NAME}`"
        if c.arguments is None:
            cut = "; the reply was cut off at the length limit" if finish_reason == "length" else ""
            return f"the arguments are not a JSON object: {c.arguments_error or 'unparseable'}{cut}"
        return f"no non-empty `{self.ARG}` string"

    async def _text_step(self, done: Any, call: int) -> None:
        reply = done.message.content or ""
        action, problem = self.parse(reply, done.finish_reason)
        message = completion_message(done, call, content=reply, tool_calls=[])
        if action is not None:
            self.n_text += 1
            args = {self.ARG: action}
            message.tool_calls = [ToolCall(id=f"text-{self.n_text}", name=self.texts.TOOL_NAME, arguments=args,
                                           arguments_raw=json.dumps(args, ensure_ascii=False))]
        d: dict[str, Any] = {"role": "assistant", "content": reply}
        if message.extra or message.reasoning:
            d.update(provider_fields(message, self.settings.send_reasoning))
        self.messages.append(d)
        self.session.add(message)
        if action is None:
            self._format_error(problem or "unusable reply", call, reply)
            return
        self.errors_in_row = 0
        await self._run(action, None)

    # ------------------------------------------------------------------ commands and notes

    async def _run(self, command: str, call_id: str | None) -> bool:
        """Run one command and show its result; True when it submitted."""
        result = await self.session.execute(command)
        text = texts.observation(result.exit_code, result.output, omitted_chars=result.omitted_chars,
                                 timed_out=result.timed_out, timeout_s=self.command_timeout_s,
                                 note=getattr(result, "note", None))
        if call_id is not None:
            self._tool_result(call_id, text, error=bool(result.timed_out))
        else:
            self.messages.append({"role": "user", "content": text})
            self.session.add(Message(role="user", content=text))
        self.observations.append(len(self.messages) - 1)
        rest = submission(result.output)
        if rest is None:
            return False
        self.session.submit(rest)
        return True

    def _tool_result(self, call_id: str, text: str, *, error: bool) -> None:
        self.messages.append({"role": "tool", "tool_call_id": call_id, "content": text})
        self.session.add(Message(role="tool", content=text, tool_call_id=call_id, requestor="assistant", error=error))

    def _format_error(self, problem: str, call: int, reply: str, *, note: bool = True) -> None:
        self.errors_in_row += 1
        self.ctx.trajectory.bump("format_errors")
        self.ctx.event("agent", "format_error", problem=problem, call=call, reply=reply[:REPLY_CLIP])
        if self.errors_in_row >= self.settings.max_format_errors:
            raise AgentStop("format_errors", f"{self.errors_in_row} replies in a row could not be run; last: {problem}")
        if note:  # (native calls with bad arguments were already answered one by one)
            text = (self.texts.text_format_error if self.text_mode else self.texts.native_format_error)(problem)
            self.messages.append({"role": "user", "content": text})
            self.session.add(Message(role="user", content=text))
