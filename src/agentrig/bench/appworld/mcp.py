"""AppWorld's tools over MCP: ``appworld_tool_server(session)`` is a ``TrialToolServer``
(``agentrig.agents.mcp``) over one trial's world (``episode.AppWorldSession``):

- ``execute(code)``: the code agent's own tool (its name, description and schema,
  ``prompts.EXECUTE_TOOL``) — the code runs in the world through ``session.execute``, as every
  AppWorld agent's code does (one of the run's ``max_steps`` executions, a ``world``/``execute``
  event), and is recorded as the native mode records a step: an assistant message with one
  ``execute`` call (the MCP call's id), then its output as the tool message (``error`` when the
  execution failed);
- ``complete_task(answer?)``: ``apis.supervisor.complete_task(...)`` run the same way (recorded as
  the ``execute`` call of that line of code, so analysis sees one kind of action).

The instructions are the code agent's system prompt in native mode (the environment, how to
finish, the limits); the task itself is the agent's instruction (``prompts.task_prompt``). A call of
another tool, or with arguments that do not fit, runs nothing: an error result, counted
(``unknown_tools`` / ``invalid_tool_args``), not recorded as an action. After
the world reports the task complete, a call reaches nothing and is answered with an error. A stop
of the session (``AgentStop``: the executions limit) or a worker fault (``WorkerError``) is raised
from the call: the server keeps it as its ``failure`` for the agent's runner to end the trial with.
"""

from __future__ import annotations

import json
from typing import Any

from agentrig.agents.mcp import McpTool, ToolResult, TrialToolServer
from agentrig.errors import AgentStop
from agentrig.types import Message, ToolCall

from . import prompts as texts

__all__ = ["COMPLETE_TOOL", "appworld_mcp_tools", "appworld_tool_server"]

COMPLETE_TOOL = "complete_task"
_COMPLETE = McpTool(
    name=COMPLETE_TOOL,
    description=("Mark the task as done (apis.supervisor.complete_task). If the task asks a question, pass the "
                 "answer, short: a number, a name, yes/no. Nothing runs after it."),
    input_schema={"type": "object",
                  "properties": {"answer": {"description": "the answer, when the task asks a question"}},
                  "additionalProperties": False},
)


def appworld_mcp_tools() -> list[McpTool]:
    f = texts.EXECUTE_TOOL["function"]
    return [McpTool(name=f["name"], description=f["description"], input_schema=f["parameters"]), _COMPLETE]


def _instructions(session: Any) -> str:
    s = session.settings
    limits = texts.limits_text(step_limit=None, execution_limit=s.limits.max_steps, cost_limit=None,
                               output_limit=s.output_limit, execute_timeout_s=s.execute_timeout_s)
    return texts.system_prompt(texts.preamble(s.agent.prompt), text_mode=False, limits=limits)


def _code_of(name: str, arguments: dict | None, arguments_error: str) -> tuple[str | None, str]:
    """The code a call runs, or (None, the error the agent gets)."""
    if arguments is None:
        return None, f"Error: the arguments of this call are not a JSON object ({arguments_error})"
    if name == texts.TOOL_NAME:
        code = arguments.get("code")
        if not isinstance(code, str) or set(arguments) - {"code"}:
            return None, "Error: execute takes one argument, `code`: a string of Python code"
        return code, ""
    if name == COMPLETE_TOOL:
        if set(arguments) - {"answer"}:
            return None, "Error: complete_task takes one optional argument, `answer`"
        if "answer" not in arguments or arguments["answer"] is None:
            return "apis.supervisor.complete_task()", ""
        return f"apis.supervisor.complete_task(answer={arguments['answer']!r})", ""
    return None, f"Error: there is no tool {name!r}; the tools are {texts.TOOL_NAME} and {COMPLETE_TOOL}"


def appworld_tool_server(session: Any) -> TrialToolServer:
    """One AppWorld trial's tools as an MCP server (not started: ``await server.start()``)."""

    async def call(name: str, arguments: dict | None, call_id: str, arguments_error: str = "") -> ToolResult:
        if session.completed:
            return ToolResult("Error: the task is complete; nothing runs after complete_task", True)
        code, problem = _code_of(name, arguments, arguments_error)
        if code is None:
            known = name in (texts.TOOL_NAME, COMPLETE_TOOL)
            session.ctx.trajectory.bump("invalid_tool_args" if known else "unknown_tools")
            return ToolResult(problem, True)
        session.add(Message(role="assistant", content="", tool_calls=[ToolCall(
            id=call_id, name=texts.TOOL_NAME, arguments={"code": code}, arguments_raw=json.dumps({"code": code}))]))
        try:
            result = await session.execute(code)
        except AgentStop as stop:  # raised on (kept as the server's failure); the call is answered first
            session.add(Message(role="tool", content=f"Error: {stop.detail or stop.termination}", tool_call_id=call_id,
                                requestor="assistant", error=True))
            raise
        text = texts.observation(result.output, result.omitted_chars)
        session.add(Message(role="tool", content=text, tool_call_id=call_id, requestor="assistant",
                            error=result.failed))
        return ToolResult(text, result.failed)

    return TrialToolServer(appworld_mcp_tools(), call, name="appworld", instructions=_instructions(session))
