"""Codex CLI and Claude Code as the AppWorld agent (``agent = { kind = "codex" }`` / ``"claude-code"``).

The real binaries on this host, through ``agents/installed/cli_trial.py`` (what τ²'s CLI agent
uses too): the trial's measuring proxy as their model (``step_limit``, ``token_limit``,
``cost_limit`` enforced there), the trial's ``appworld_tool_server`` (``mcp.py``: ``execute`` and
``complete_task``, each call run in the world and recorded as the code agent's native mode records
its steps) as their only tools, their own tools off.

- **Instructions**: the code agent's native-mode system prompt (its preamble or the arm's
  ``prompt`` file, the environment, how to finish, the limits) in place of their own.
- **One turn**: the task prompt (``prompts.task_prompt``: the instruction and the supervisor) is the
  one user message; there is no simulated user.
- **The end**: the world reports the task complete (the ``complete_task`` tool, or
  ``apis.supervisor.complete_task`` inside ``execute``) — the agent's process group is killed at
  once, by that call, before its result goes back; the executions limit (``max_steps``: the tool
  server's ``failure``, ``AgentStop``) or a worker fault likewise, then raised; a limit at the
  proxy (``limits_exceeded``) or a channel fault it could not ride out (raised: invalid). A turn
  that ends without completing the task ends the trial as the code agent's would
  (``never_completed``, the episode's).
"""

from __future__ import annotations

from typing import Any

from agentrig.agents.base import CONVERSATION_KINDS, AgentSettings
from agentrig.types import Message

from . import prompts as texts

CLI_KINDS = CONVERSATION_KINDS
MCP_NAME = "appworld"  # the tool server's name in the agent's config: mcp__appworld__execute


def instructions(settings: AgentSettings, session: Any) -> str:
    """The code agent's native-mode system prompt, with the arm's limits."""
    s = session.settings
    limits = texts.limits_text(step_limit=settings.step_limit, execution_limit=s.limits.max_steps,
                               cost_limit=settings.cost_limit, output_limit=s.output_limit,
                               execute_timeout_s=s.execute_timeout_s)
    return texts.system_prompt(texts.preamble(settings.prompt), text_mode=False, limits=limits)


class CliAppWorldAgent:
    """One AppWorld trial's Codex or Claude Code (see the module's docstring)."""

    def __init__(self, settings: AgentSettings, session: Any):
        from agentrig.agents.installed.cli_trial import CliTrial

        self.settings, self.session = settings, session
        self.trial = CliTrial(settings, session.ctx)

    async def run(self, session: Any = None) -> None:
        from .mcp import appworld_tool_server

        s = self.session
        server = appworld_tool_server(s)
        server.instructions = ""  # the environment and the rules are the agent's own instructions: not twice
        system = instructions(self.settings, s)
        await self.trial.start(server, system, mcp_name=MCP_NAME, ended=lambda: s.completed)
        s.add(Message(role="system", content=system))
        task = s.add(Message(role="user", content=texts.task_prompt(s.task)))
        turn = await self.trial.turn(task.content or "")
        self.trial.raise_stop()
        if (turn.reply or "").strip() and not turn.stopped:  # its closing words, as the conversation's last message
            s.add(Message(role="assistant", content=turn.reply))

    async def aclose(self) -> None:
        await self.trial.aclose()
