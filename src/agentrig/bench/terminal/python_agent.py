"""A user's own Python agent on terminal tasks (``agent = { kind = "python", entry = "mod:make" }``).

The process, its proxy and the socket are ``agents/python_agent``'s (``AgentProcess``); this is the
terminal protocol on top: the instruction and a handle to run commands.

- **Where it runs.** On the host, as on τ² and AppWorld tasks: the agent itself is not in the
  task's sandbox; the commands it runs are.
- **Its one turn** (``agentrig_agent.TerminalTurn``): the task's instruction, the working directory
  as commands see it, and the limits (``commands``: ``[run] max_steps``; ``command_timeout_s``;
  ``agent_timeout_s``; ``shell``). The terminal episode has no user: one ``respond`` per trial.
- **Its commands** (``turn.run(command, timeout=None)``, over the socket as a ``run`` call): run by
  ``session.execute`` exactly as the bash agent's — the same ``sandbox``/``command`` event, the same
  limits (``max_steps`` commands, the per-command timeout, which ``timeout`` may shorten, never
  lengthen; the agent's deadline), the same ends (``limits_exceeded``, ``agent_timeout``) — and
  recorded as the bash agent's native mode records one: an assistant message with a ``bash`` call
  (naming the model call it came after), then the tool result in the bash agent's template. The
  agent gets the output, the exit code and whether it timed out.
- **Its reply** ends the agent phase: its text is the submission (``session.submit``, termination
  ``submitted``); tool calls or code in it are the agent's error. Then the verifier runs.
- **Its model calls** go through the proxy with the arm's ``step_limit`` / ``token_limit`` /
  ``cost_limit`` and the agent's deadline; with plug-ins on the arm the proxy asks them before each
  call (``before_call``: ``session.transient(n)``, ``n`` the calls sent before it), as for the
  installed agents — they read the trajectory as it is recorded here, command by command.

How it ends otherwise is the host's: a channel fault the proxy could not ride out makes the trial
invalid; the agent's own failure (it raised, its process died) is ``agent_error`` with the
traceback in an ``agent``/``error`` event. Its process is ended when the phase ends, whatever ended it.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

from agentrig.agents.base import AgentSettings
from agentrig.agents.bash_prompts import TOOL_NAME, observation
from agentrig.agents.python_agent.host import AgentProcess
from agentrig.types import Message, ToolCall

RUN_CALL = "run"  # the name TerminalTurn.run's calls carry over the socket


def turn_context(session: Any) -> dict[str, Any]:
    """The turn's fields: the instruction, the working directory, the limits."""
    s = session.settings
    return {"instruction": session.task.instruction, "workdir": session.workdir,
            "limits": {"commands": s.limits.max_steps, "command_timeout_s": s.command_timeout_s,
                       "agent_timeout_s": s.agent_timeout_s, "shell": s.sandbox.shell}}


class TerminalPythonAgent(AgentProcess):
    """``kind="python"`` on a terminal arm (see the module's docstring)."""

    TURN = "TerminalTurn"
    REPLY = "content"

    def __init__(self, settings: AgentSettings, session: Any):
        super().__init__(settings, session.ctx)
        self.session = session
        self._commands = 0

    async def run(self, session: Any = None) -> None:
        session = self.session
        try:
            context = turn_context(session)
            await self.open(context)
            self.proxy.deadline = session.deadline
            if session.plugins:
                self.proxy.before_call = self._plugins_hook()
            session.add(Message(role="user", content=session.task.instruction))
            reply = await self.step({"new": [{"role": "user", "content": session.task.instruction}]}, [])
            if reply is None:
                return
            if reply.get("tool_calls") or reply.get("code") is not None:
                self._failed({"stage": "respond", "error": "the reply has tool_calls or code; on terminal tasks run "
                                                           "commands with turn.run(...) and return your final text"})
            text = reply.get("content") if isinstance(reply.get("content"), str) else ""
            if text:
                session.add(Message(role="assistant", content=text, call=self.last_call()))
            session.submit(text)
        finally:
            await self.aclose()

    def _plugins_hook(self) -> Any:
        """The proxy's ``before_call``: the arm's plug-ins asked for this call's context, one call
        at a time."""
        lock = asyncio.Lock()

        async def before_call(n: int, request: list[dict]) -> list[Any]:
            async with lock:
                return list(await self.session.transient(n))

        return before_call

    async def tool_call(self, msg: dict) -> dict | None:  # type: ignore[override]
        """A command the agent ran (``turn.run``): run and recorded as the bash agent's."""
        session = self.session
        args = msg.get("arguments") if isinstance(msg.get("arguments"), dict) else {}
        command, timeout = args.get("command"), args.get("timeout")
        if msg.get("name") != RUN_CALL or not isinstance(command, str) or not command.strip():
            self._failed({"stage": "respond", "error": "terminal tasks offer no tools: run commands with "
                                                       "turn.run(command)"})
        bound = session.settings.command_timeout_s
        if isinstance(timeout, (int, float)) and not isinstance(timeout, bool) and timeout > 0:
            bound = min(float(timeout), bound)
        self._commands += 1
        cid = str(msg.get("id") or "") or f"run-{self._commands}"
        arguments = {"command": command}
        session.add(Message(role="assistant", content=None, call=self.last_call(),
                            tool_calls=[ToolCall(id=cid, name=TOOL_NAME, arguments=arguments,
                                                 arguments_raw=json.dumps(arguments, ensure_ascii=False))]))
        result = await session.execute(command, timeout_s=bound)
        note = getattr(result, "note", None)
        text = observation(result.exit_code, result.output, omitted_chars=result.omitted_chars,
                           timed_out=result.timed_out, timeout_s=bound, note=note)
        session.add(Message(role="tool", content=text, tool_call_id=cid, requestor="assistant",
                            error=bool(result.timed_out)))
        return {"content": json.dumps({"output": result.output, "exit_code": result.exit_code,
                                       "timed_out": result.timed_out, "omitted_chars": result.omitted_chars,
                                       "note": note}, ensure_ascii=False),
                "error": False}
