"""A user's own Python agent on AppWorld tasks (``agent = { kind = "python", entry = "mod:make" }``).

The process, its proxy and the socket are ``agents/python_agent``'s (``AgentProcess``); this is the
AppWorld protocol on top: the task and the last execution's output in, code out.

- **At the start** the agent gets (in every turn, ``agentrig_agent.AppWorldTurn``) the task (id,
  instruction, supervisor, date), the task prompt our code agent gets (``prompts.task_prompt``) and
  the guide its system prompt holds without the preamble and the tool mode's rules (the
  environment, the API docs reached from the code, how to finish, the limits).
- **Per step** the conversation so far as chat messages (the task prompt, then each reply and its
  output, as the text mode has them), the last execution's output (``prompts.observation``: cut to
  ``[benchmark] output_limit``, "Execution failed" and the traceback when it failed) and whether
  it failed. The step's transient context (plug-ins) goes to the proxy, which adds it to the
  agent's model requests.
- **Its reply** is code (a str, ``Reply(code=...)``, ``{"code": ...}``): run by
  ``session.execute`` exactly as our code agent's (the run's ``max_steps`` executions,
  AppWorld's execution timeout, ``world``/``execute`` events, ``complete_task`` ends the task) and
  recorded as the text mode records a step: an assistant message (the reply's text, the code in a
  fence when the text does not hold it, and an ``execute`` tool call ``text-<n>``) naming the model
  call it came from, then the output as a user message. A reply without code ends the agent's
  phase (``never_completed`` unless the task was completed); tool calls are refused (the agent's
  error).

How it ends is the host's: a channel fault the proxy could not ride out makes the trial invalid; a
proxy limit (``step_limit``, ``token_limit``, ``cost_limit``) is ``limits_exceeded``; the agent's
own failure (it raised, its process died, an unusable reply) is ``agent_error`` with the traceback
in an ``agent``/``error`` event. The episode evaluates the world whatever ended the phase.
"""

from __future__ import annotations

import json
from typing import Any

from agentrig.agents.base import AgentSettings
from agentrig.agents.python_agent.host import AgentProcess
from agentrig.types import Message, ToolCall

from . import prompts as texts


def task_context(session: Any) -> dict[str, Any]:
    """The turn's fields that stay the same through the trial: the task, its prompt, the guide."""
    task, s = session.task, session.settings
    a = s.agent
    limits = texts.limits_text(step_limit=a.step_limit, execution_limit=s.limits.max_steps,
                               cost_limit=a.cost_limit, output_limit=s.output_limit,
                               execute_timeout_s=s.execute_timeout_s)
    return {"task": {"id": task.id, "instruction": task.instruction, "supervisor": dict(task.supervisor),
                     "datetime": task.datetime},
            "prompt": texts.task_prompt(task), "guide": texts.guide(limits)}


class AppWorldPythonAgent(AgentProcess):
    """``kind="python"`` on an AppWorld arm (see the module's docstring)."""

    TURN = "AppWorldTurn"
    REPLY = "code"

    def __init__(self, settings: AgentSettings, session: Any):
        super().__init__(settings, session.ctx)
        self.session = session

    async def run(self, session: Any = None) -> None:
        session = self.session
        context = task_context(session)
        await self.open(context)
        prompt = session.add(Message(role="user", content=context["prompt"]))
        new: list[dict] = [{"role": "user", "content": prompt.content}]
        output: str | None = None
        failed = False
        n = 0
        while not session.completed:
            transient = await session.transient(n)
            reply = await self.step({"new": new, "output": output, "failed": failed}, transient)
            if reply is None:
                return
            if reply.get("tool_calls"):
                self._failed({"stage": "respond", "error": "the reply has tool_calls; on AppWorld tasks reply with "
                                                           "the code to run (a str, or Reply(code=...))"})
            code, content = reply.get("code"), reply.get("content")
            if not isinstance(code, str) or not code.strip():
                self.ctx.event("agent", "stopped", reason="its reply held no code", step=n)
                if content:
                    session.add(Message(role="assistant", content=content, call=self.last_call()))
                return
            n += 1
            args = {"code": code}
            session.add(Message(role="assistant", content=content if isinstance(content, str) else None,
                                call=self.last_call(),
                                tool_calls=[ToolCall(id=f"text-{n}", name=texts.TOOL_NAME, arguments=args,
                                                     arguments_raw=json.dumps(args, ensure_ascii=False))]))
            result = await session.execute(code)
            output, failed = texts.observation(result.output, result.omitted_chars), result.failed
            session.add(Message(role="user", content=output))
            new = [{"role": "user", "content": output}]
