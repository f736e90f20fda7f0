"""Agents under test and reference agents; ``build_agent(settings, ctx)`` makes one per trial.

- ``kind="llm"``: the LLM agent, ``tool_mode="native"`` (``llm.LLMAgent``, OpenAI function calling)
  or ``tool_mode="text"`` (``text.TextAgent``, one JSON action per reply);
- ``kind="gold"`` / ``"flaky-gold"`` / ``"noop"``: reference agents needing no model
  (``reference.py``);
- ``kind="python"``: a user's own Python agent in its own interpreter, its model calls through the
  trial's proxy (``python_agent/``).

Terminal tasks: ``kind="bash"`` is the LLM bash agent (``bash.BashAgent``); the terminal episode
builds it, or one of its reference agents, with ``agentrig.bench.terminal.agents.build_terminal_agent``.

An agent we did not write (an installed CLI, a user's command) reaches its model through
``agents/proxy/``'s ``TrialProxy``: one trial's endpoint in the wire the agent speaks, every call
sent through the channel and recorded (imported on its own: ``agentrig.agents.proxy``).
"""

from __future__ import annotations

from typing import Any

from agentrig.errors import ConfigError

from .base import GREETING, Agent, AgentSettings, AgentStop
from .llm import LLMAgent
from .reference import GoldAgent, NoopAgent
from .text import TextAgent

__all__ = ["GREETING", "Agent", "AgentSettings", "AgentStop", "GoldAgent", "LLMAgent", "NoopAgent",
           "TextAgent", "build_agent"]


def build_agent(settings: AgentSettings, ctx: Any) -> Agent:
    """The agent of one trial, as the arm's ``agent`` settings say."""
    kind = settings.kind
    if kind == "llm":
        if ctx.channel is None:
            raise ConfigError("agent kind 'llm' needs a model, but the trial has no channel "
                              "(fix: configure [channel] / [roles.agent] with a base URL and a model)")
        if settings.tool_mode == "text":
            return TextAgent(settings, ctx)
        return LLMAgent(settings, ctx)
    if kind == "gold":
        return GoldAgent(settings, ctx)
    if kind == "flaky-gold":
        return GoldAgent(settings, ctx, flaky=True)
    if kind == "noop":
        return NoopAgent(settings, ctx)
    if kind == "python":
        from .python_agent import PythonAgent

        return PythonAgent(settings, ctx)
    raise ConfigError(f"agent setting `kind`: unknown kind {kind!r} (fix: use one of llm, gold, flaky-gold, noop, python)")

