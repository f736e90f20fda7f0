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
when the trial ends (``aclose``).
"""

from __future__ import annotations

import asyncio
import shutil
import tempfile
from pathlib import Path
from typing import Any

from agentrig.agents import prompts
from agentrig.agents.base import GREETING, AgentSettings, AgentStop
from agentrig.types import Message, Transient

CLI_KINDS = ("codex", "claude-code")
LOG_TAIL_CHARS = 1500


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
        self.settings, self.ctx = settings, ctx
        self.proxy: Any = None
        self.server: Any = None
        self.convo: Any = None
        self.home: Path | None = None
        self._earlier: list[Message] = []
        self._first = 0  # the proxy's replies before this turn

    async def start(self, history: list[Message]) -> None:
        from agentrig.agents.installed.conversation import CliConversation
        from agentrig.agents.installed.toolroot import ensure_tool_root
        from agentrig.agents.proxy import TrialProxy
        from agentrig.errors import ConfigError

        from .mcp import tau_tool_server

        a, ctx = self.settings, self.ctx
        if ctx.channel is None:
            raise ConfigError(f"agent kind {a.kind!r} needs a model, but the trial has no channel "
                              "(fix: configure [channel] / [roles.agent] with a base URL and a model)")
        root = await asyncio.to_thread(ensure_tool_root, a.kind, a.version)
        model = ctx.channel.role("agent").model or ""
        self.home = Path(tempfile.mkdtemp(prefix=f"agentrig-tau-{a.kind}-"))
        self.proxy = TrialProxy(ctx, step_limit=a.step_limit, token_limit=a.token_limit, cost_limit=a.cost_limit)
        proxy_url = await self.proxy.start()
        self.server = tau_tool_server(ctx)
        self.server.instructions = ""  # the policy is in the agent's own instructions: not twice
        self.server.call = self._stopping_at_the_end(self.server.call)
        mcp_url = await self.server.start()
        preamble = prompts.preamble(a.prompt, text_mode=False, parallel_tool_calls=a.parallel_tool_calls)
        self.convo = CliConversation(
            a.kind, root.path / root.entry, self.home, model=model,
            instructions=prompts.system_prompt(preamble, ctx.bench.policy), proxy_url=proxy_url,
            proxy_token=self.proxy.token, mcp_url=mcp_url, mcp_token=self.server.token, config=a.config,
            config_file=a.config_file, args=a.args)
        self._earlier = [m for m in history if not (m.role == "assistant" and m.content == GREETING and not m.tool_calls)]
        ctx.event("agent", "start", agent=a.kind, version=root.version, command=" ".join(self.convo.argv()))

    def _stopping_at_the_end(self, call: Any) -> Any:
        """The tool server's call, killing the agent's turn at once when the call ended the trial
        (a transfer, a limit): the agent never reads that result, so it makes no model call after."""
        ended = getattr(self.ctx.bench, "ended", None)

        def call_then_stop(*args: Any, **kwargs: Any) -> Any:
            messages = self.ctx.trajectory.messages
            before = len(messages)
            result = call(*args, **kwargs)
            made = self._last_call()
            for m in messages[before:]:  # the call's message names the model call it came from
                if m.role == "assistant" and m.tool_calls and m.call is None:
                    m.call = made
            if ended is not None and ended.is_set() and self.convo is not None:
                self.convo.kill()
            return result

        return call_then_stop

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
        ctx, convo = self.ctx, self.convo
        ended = getattr(ctx.bench, "ended", None) or asyncio.Event()
        self.proxy.hints = list(transient)  # a proxy that adds hints puts them in this turn's requests
        self._first = len(self.proxy.replies)
        try:
            turn = await convo.turn(self._prompt(incoming), stop=(ended, self.proxy.ended))
        finally:
            self.proxy.hints = []
        ctx.event("agent", "turn", agent=self.settings.kind, turn=convo.turns, session=convo.session,
                  exit_code=turn.exit_code, stopped=turn.stopped, tool_calls=turn.tool_calls,
                  failed_tool_calls=turn.failed_tool_calls[:20], errors=turn.record.errors[:20],
                  notes=turn.notes[:20], finished=turn.record.finished)
        if ended.is_set():  # the episode ended in the middle of the turn: this reply is dropped
            return Message(role="assistant", content="")
        if self.proxy.failure is not None:
            raise self.proxy.failure
        if self.proxy.stop is not None:
            raise self.proxy.stop
        if not (turn.reply or "").strip():
            raise AgentStop("agent_error", f"the {self.settings.kind} turn ended without a message to the user "
                                           f"(exit code {turn.exit_code}): {self._log_tail()}")
        return Message(role="assistant", content=turn.reply, call=self._last_call())

    def _log_tail(self) -> str:
        try:
            text = self.convo.log_path.read_text(encoding="utf-8", errors="replace")[-LOG_TAIL_CHARS:]
        except OSError:
            return ""
        for secret, shown in ((self.proxy.token, "[trial token]"), (self.server.token, "[mcp token]")):
            text = text.replace(secret, shown)
        return text

    async def aclose(self) -> None:
        """The trial's end: the proxy and the tool server stop, the agent's home goes."""
        try:
            if self.proxy is not None:
                await self.proxy.close()
            if self.server is not None:
                await self.server.close()
        finally:
            if self.home is not None:
                shutil.rmtree(self.home, ignore_errors=True)
