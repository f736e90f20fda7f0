"""A benchmark's tools over MCP, for agents that speak MCP (Codex CLI, Claude Code, an Agents SDK
agent): ``TrialToolServer`` serves one trial's tools on a streamable-HTTP endpoint in agentrig's
event loop, behind a per-trial bearer token, and hands every ``tools/call`` to the benchmark's
``call`` (which applies and records it); ``bridge.py`` is the stdio form of the same server, for an
agent that spawns its MCP servers. The benchmark's binding builds the tool list (τ²:
``agentrig.bench.tau.mcp``). Imported on its own: ``agentrig.agents.mcp``.
"""

from .server import McpTool, ServedCall, ToolResult, TrialToolServer

__all__ = ["McpTool", "ServedCall", "ToolResult", "TrialToolServer"]
