"""τ²'s domain tools over MCP: ``tau_tool_server(ctx)`` is a ``TrialToolServer``
(``agentrig.agents.mcp``) serving the agent tools of the trial's domain exactly as agentrig's LLM
agent is offered them (the same names, descriptions and parameter schemas, ``llm.openai_tools``),
with the domain's policy as the server's instructions.

Each ``tools/call`` is the episode's ``agent_tool_call`` (``ctx.bench.call_tool``, set when the
episode starts — the server may be built before): recorded in the trajectory as the agent's tool
call, applied to the trial's environment, counted (unknown tools and non-object arguments too) and
ending the trial at a limit or a transfer, exactly as a call of the turn loop; the result message is
the MCP result (``isError`` for an ``Error:`` result).
"""

from __future__ import annotations

from typing import Any

from agentrig.agents.llm import openai_tools
from agentrig.agents.mcp import McpTool, ToolResult, TrialToolServer

__all__ = ["tau_tool_server", "tau_mcp_tools"]


def tau_mcp_tools(ctx: Any) -> list[McpTool]:
    """The agent tools of the trial's domain, as the LLM agent's function schemas give them."""
    tools = []
    for schema in openai_tools(ctx.bench.spec.agent_toolkit):
        f = schema["function"]
        tools.append(McpTool(name=f["name"], description=f.get("description") or "",
                             input_schema=f["parameters"]))
    return tools


def tau_tool_server(ctx: Any) -> TrialToolServer:
    """One trial's τ² tools as an MCP server (not started: ``await server.start()``)."""

    def call(name: str, arguments: dict | None, call_id: str, arguments_error: str = "") -> ToolResult:
        call_tool = ctx.bench.call_tool
        if call_tool is None:
            raise RuntimeError("a τ² tool was called over MCP before the trial's episode started")
        message = call_tool(name, arguments, call_id=call_id, arguments_error=arguments_error)
        return ToolResult(message.content or "", bool(message.error))

    return TrialToolServer(tau_mcp_tools(ctx), call, name=f"tau2-{ctx.bench.spec.name}",
                           instructions=ctx.bench.policy)
