"""The agent of one terminal trial, as the arm's ``agent`` settings say: ``kind="bash"`` is the LLM
bash agent (``agentrig.agents.bash``); ``"oracle"`` / ``"flaky-oracle"`` / ``"noop"`` are the
reference agents (``reference.py``); ``"mini-swe-agent"`` / ``"codex"`` / ``"claude-code"`` / ``"command"``
are agents we did not write, run inside the sandbox through the trial's proxy (``installed.py``);
``"python"`` is a user's own Python agent, on the host, its commands run in the sandbox
(``python_agent.py``). Each has ``async run(session)``."""

from __future__ import annotations

from typing import Any

from agentrig.agents.base import AgentSettings
from agentrig.errors import ConfigError

TERMINAL_KINDS = ("bash", "oracle", "flaky-oracle", "noop", "mini-swe-agent", "codex", "claude-code", "command", "python")


def build_terminal_agent(settings: AgentSettings, session: Any) -> Any:
    kind = settings.kind
    if kind == "bash":
        if session.ctx.channel is None:
            raise ConfigError("agent kind 'bash' needs a model, but the trial has no channel "
                              "(fix: configure [channel] / [roles.agent] with a base URL and a model)")
        from agentrig.agents.bash import BashAgent

        return BashAgent(settings, session)
    if kind == "python":
        from .python_agent import TerminalPythonAgent

        return TerminalPythonAgent(settings, session)
    from .installed import EXTERNAL_KINDS

    if kind in EXTERNAL_KINDS:
        from .installed import InstalledAgent

        return InstalledAgent(settings, session)
    if kind in ("oracle", "flaky-oracle", "noop"):
        from .reference import build_reference

        return build_reference(settings, session)
    raise ConfigError(f"agent setting `kind`: {kind!r} cannot play terminal tasks "
                      f"(fix: use one of {', '.join(TERMINAL_KINDS)})")
