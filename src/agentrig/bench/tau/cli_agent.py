"""Codex CLI and Claude Code as the τ² agent (``agent = { kind = "codex" }`` / ``"claude-code"``).

The real binaries (installed once, ``agents/installed``), run on this host (τ² has no sandbox), one
run per turn of the conversation (``agents/installed/conversation.py``: the first turn starts the
agent's session, every later one resumes it):

- **Their instructions**: the system prompt agentrig's LLM agent gets (its preamble, or the arm's
  ``prompt`` file, and the domain's policy) in place of their own (Codex's
  ``model_instructions_file``, Claude Code's ``--system-prompt-file``).
- **Their tools**: the domain's agent tools, served over MCP by the trial's ``tau_tool_server``
  (``mcp.py``), each call the episode's ``agent_tool_call``: recorded, applied, counted and ended as
  the turn loop does. Their own tools (shell, files, web, sub-agents…) are off.
- **Their model**: the trial's measuring proxy (``agents/proxy``), every call through the channel
  (retries, limits, usage) with a per-trial token; ``step_limit``, ``token_limit`` and
  ``cost_limit`` are enforced there. A plug-in's transient context of a step is the proxy's
  ``hints`` for that turn.
- **A step** (``respond``): the user's message is the turn's input; the turn's last message to the
  user is the step's reply. When the episode ends in the middle of a turn (a transfer, ``max_steps``,
  ``max_errors``) or the proxy ends the trial (a limit: ``limits_exceeded``; a channel fault the
  channel could not ride out: raised, the trial is invalid), the agent's process group is killed at
  once — by the tool call that ended the trial, before its result goes back, so the agent makes no
  model call after the end. A turn that ends without a message to the user (the agent crashed, or wrote nothing) ends
  the trial ``agent_error``.
- **What is recorded**: an ``agent``/``start`` event (kind, version, the command line), one
  ``agent``/``turn`` event per turn (exit code, whether it was stopped, its session, the MCP tool
  calls its own record shows, the errors it reported — an API error or a retry of its own — and
  Codex's warnings, ``notes``);
  the conversation itself is the episode's, each of the agent's messages (a tool call, its reply)
  naming the model call it came from (``Message.call``: the turn's last answered one), so
  ``agentrig instability`` finds its decision steps and resamples their recorded requests.

The agent's home (its config, session files and record) is a private temporary directory, removed
when the trial ends (``aclose``). The benchmark-neutral part (the proxy, the tool server, the kill at
the end, the turn's event) is ``agents/installed/cli_trial.py``, shared with AppWorld's.
"""

from __future__ import annotations

import asyncio
from typing import Any

from agentrig.agents import prompts
from agentrig.agents.base import CONVERSATION_KINDS, GREETING, AgentSettings, AgentStop
from agentrig.types import Message, Transient

CLI_KINDS = CONVERSATION_KINDS


def _said(m: Message) -> str:
    """One message of an earlier part of the conversation, as a line of its transcript."""
    if m.role == "tool":
        return f"[tool result] {m.content or ''}"
    calls = "; ".join(f"{c.name}({c.arguments_raw or c.arguments})" for c in m.tool_calls)
    who = "you" if m.role == "assistant" else "customer"
    return f"[{who}] " + " ".join(x for x in (m.content or "", f"(tool calls: {calls})" if calls else "") if x)


class CliTauAgent:
    """One trial's Codex or Claude Code (see the module's docstring)."""

    def __init__(self, settings: AgentSettings, ctx: Any):
        from agentrig.agents.installed.cli_trial import CliTrial

        self.settings, self.ctx = settings, ctx
        self.trial = CliTrial(settings, ctx)
        self._earlier: list[Message] = []
        self._first = 0  # the proxy's replies before this turn

    # the trial's parts, as the tests and the episode see them
    proxy = property(lambda self: self.trial.proxy)
    server = property(lambda self: self.trial.server)
    convo = property(lambda self: self.trial.convo)
    home = property(lambda self: self.trial.home)

    async def start(self, history: list[Message]) -> None:
        from .mcp import tau_tool_server

        a, ctx = self.settings, self.ctx
        server = tau_tool_server(ctx)
        server.instructions = ""  # the policy is in the agent's own instructions: not twice
        ended = getattr(ctx.bench, "ended", None)
        preamble = prompts.preamble(a.prompt, text_mode=False, parallel_tool_calls=a.parallel_tool_calls)
        server.call = self._naming_calls(server.call)
        await self.trial.start(server, prompts.system_prompt(preamble, ctx.bench.policy), mcp_name="tau",
                               ended=(lambda: ended.is_set()) if ended is not None else (lambda: False))
        self._earlier = [m for m in history if not (m.role == "assistant" and m.content == GREETING and not m.tool_calls)]

    def _naming_calls(self, call: Any) -> Any:
        """The tool server's call, the message it adds naming the model call it came from (the turn's
        last answered one): one decision step per model call, as ``agentrig instability`` reads them."""

        def call_naming(*args: Any, **kwargs: Any) -> Any:
            messages = self.ctx.trajectory.messages
            before = len(messages)
            result = call(*args, **kwargs)
            made = self._last_call()
            for m in messages[before:]:
                if m.role == "assistant" and m.tool_calls and m.call is None:
                    m.call = made
            return result

        return call_naming

    def _last_call(self) -> int | None:
        """The trajectory index of the turn's last model call (None: the turn made none yet)."""
        replies = self.proxy.replies
        return replies[-1].call if len(replies) > self._first else None

    def _prompt(self, incoming: list[Message]) -> str:
        now = "\n\n".join(m.content or "" if m.role == "user" and not m.tool_calls else _said(m) for m in incoming)
        if not self._earlier:
            return now
        earlier = "\n".join(_said(m) for m in self._earlier)
        self._earlier = []
        return f"The conversation so far:\n{earlier}\n\nThe customer's new message:\n{now}"

    async def respond(self, incoming: list[Message], transient: list[Transient]) -> Message:
        ctx = self.ctx
        ended = getattr(ctx.bench, "ended", None) or asyncio.Event()
        self.proxy.hints = list(transient)  # a proxy that adds hints puts them in this turn's requests
        self._first = len(self.proxy.replies)
        try:
            turn = await self.trial.turn(self._prompt(incoming), stop=(ended,))
        finally:
            self.proxy.hints = []
        if ended.is_set():  # the episode ended in the middle of the turn: this reply is dropped
            return Message(role="assistant", content="")
        self.trial.raise_stop(server=False)
        if not (turn.reply or "").strip():
            raise AgentStop("agent_error", f"the {self.settings.kind} turn ended without a message to the user "
                                           f"(exit code {turn.exit_code}): {self.trial.log_tail()}")
        return Message(role="assistant", content=turn.reply, call=self._last_call())

    async def aclose(self) -> None:
        """The trial's end: the proxy and the tool server stop, the agent's home goes."""
        await self.trial.aclose()
