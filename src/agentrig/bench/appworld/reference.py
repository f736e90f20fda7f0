"""The agent of one AppWorld trial, as the arm's ``agent`` settings say, and the reference agents.

- ``kind = "llm"``: the code agent (``agent.CodeAgent``), native or text tool mode;
- ``kind = "oracle"``: plays the task's ground-truth solution as AppWorld's own ``verify`` does —
  the whole ``ground_truth/compiled_solution.py`` (else ``solution.py``: its imports and helpers
  too), then ``solution(apis, requester)`` — as one execution, recorded as the native mode records
  a step (an assistant message with one ``execute`` call, then its output). AppWorld ships
  solutions for train and dev only: an experiment with an oracle arm on tasks without one (its test
  sets) is refused before the run (``AppWorldBenchmark.check``); a task without a solution met
  anyway: an ``oracle``/``no_solution`` event and nothing runs;
- ``kind = "noop"``: runs nothing (AppWorld's no-op baseline: only tests labelled ``no_op_pass``
  can pass);
- ``kind = "python"``: a user's own Python agent (``python_agent.AppWorldPythonAgent``);
- ``kind = "codex"`` / ``"claude-code"``: Codex CLI or Claude Code (``cli_agent.CliAppWorldAgent``).
"""

from __future__ import annotations

import json
from typing import Any

from agentrig.agents.base import AgentSettings
from agentrig.errors import ConfigError
from agentrig.types import Message, ToolCall

from . import prompts as texts
from .data import solution_code

APPWORLD_KINDS = ("llm", "oracle", "noop", "python", "codex", "claude-code")


class OracleAgent:
    def __init__(self, session: Any, root: Any):
        self.session, self.root = session, root

    async def run(self, session: Any = None) -> None:
        s = self.session
        code = solution_code(self.root, s.task.id)
        if code is None:
            s.ctx.event("oracle", "no_solution", task=s.task.id)
            return
        call = ToolCall(id="oracle-1", name=texts.TOOL_NAME, arguments={"code": code},
                        arguments_raw=json.dumps({"code": code}))
        s.add(Message(role="assistant", content="", tool_calls=[call]))
        result = await s.execute(code)
        s.add(Message(role="tool", content=texts.observation(result.output, result.omitted_chars),
                      tool_call_id=call.id, requestor="assistant", error=result.failed))


class NoopAgent:
    async def run(self, session: Any = None) -> None:
        return None


def build_appworld_agent(settings: AgentSettings, session: Any, run: Any) -> Any:
    kind = settings.kind
    if kind == "llm":
        if session.ctx.channel is None:
            raise ConfigError("agent kind 'llm' needs a model, but the trial has no channel "
                              "(fix: configure [channel] / [roles.agent] with a base URL and a model)")
        from .agent import CodeAgent

        return CodeAgent(settings, session)
    if kind == "oracle":
        return OracleAgent(session, run.data_root)
    if kind == "noop":
        return NoopAgent()
    if kind == "python":
        from .python_agent import AppWorldPythonAgent

        return AppWorldPythonAgent(settings, session)
    if kind in ("codex", "claude-code"):
        from .cli_agent import CliAppWorldAgent

        return CliAppWorldAgent(settings, session)
    raise ConfigError(f"agent setting `kind`: {kind!r} cannot play AppWorld tasks (fix: use one of {', '.join(APPWORLD_KINDS)})")
