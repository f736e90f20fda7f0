"""The doctor's check of an installed agent's real first request (mini-swe-agent, Codex CLI,
Claude Code on terminal tasks): the request the agent really sends, as its trial's proxy forwards
it — its own system prompt, its tools with their schemas, its ``tool_choice`` and
``parallel_tool_calls`` — sent once to the role's endpoint, in the role's wire and with the role's
settings, as a trial's channel sends it (``bench/terminal/first_request.py`` captures it).

  agent  AGENT_NOT_INSTALLED / AGENT_NOT_CHECKED (warnings: the real request could not be had, with
         the fix), CONTEXT_TOO_SMALL (fail: the server refused the request as longer than its window,
         or answered it having counted well under the size of its messages: it cut the agent's prompt), the tools
         faults of ``checks.py`` (AUTO_TOOL_CHOICE_OFF, NO_TOOL_SUPPORT…), NO_TOOL_CALLS (warning: a
         text answer to a first message that asks for a command)
"""

from __future__ import annotations

import json

import openai

from agentrig.channel.client import build_params, send_once
from agentrig.channel.doctor.checks import CONTEXT_TOO_SMALL, NO_TOOL_CALLS, RequestShape, _tool_fault
from agentrig.channel.doctor.preflight import Check, _ms, _ok
from agentrig.channel.servers import ServerInfo, estimate_tokens, fix_no_tool_calls, fix_window
from agentrig.config import ResolvedRole

SHOWN_TOOLS = 6  # tool names listed in a message
CUT_SHARE = 0.6  # a server that counted under this share of the messages' estimated size cut them
CUT_MIN_TOKENS = 1000  # … when they are at least this long (estimated)


def _described(shape: RequestShape, rr: ResolvedRole) -> str:
    names = [str((t.get("function") or {}).get("name") or "?") for t in shape.tools]
    more = f", … ({len(names)} in all)" if len(names) > SHOWN_TOOLS else ""
    tools = f"tools {', '.join(names[:SHOWN_TOOLS])}{more}" if names else "no tools"
    if shape.tool_choice is not None:
        choice = f"tool_choice {json.dumps(shape.tool_choice)}"
    elif names and rr.tool_choice != "omit":
        choice = f"no tool_choice (the role's {json.dumps(rr.tool_choice)} sent)"
    else:
        choice = "no tool_choice"
    parallel = "" if shape.parallel_tool_calls is None else f", parallel_tool_calls {str(shape.parallel_tool_calls).lower()}"
    return f"{shape.where}: {tools}; ~{shape.first_request_tokens} tokens; {choice}{parallel}"


async def check_agent_request(client: openai.AsyncOpenAI, rr: ResolvedRole, headers: dict[str, str],
                              shape: RequestShape, info: ServerInfo) -> Check:
    """One call: ``shape``'s messages and tools as they are, under the role's settings."""
    if shape.problem:
        return Check(name="agent", status="warn", code=shape.problem_code or "AGENT_NOT_CHECKED",
                     message=shape.problem, fix=shape.fix)
    what = f"{shape.agent}'s first request ({_described(shape, rr)})"
    params = build_params(rr, shape.messages, shape.tools or None, shape.tool_choice, shape.parallel_tool_calls)
    out = await send_once(client, rr, params, headers, max(rr.timeout_s, 120.0))
    ms = _ms(out.latency_s)
    needed = shape.first_request_tokens + (shape.max_tokens or 0)
    if out.completion is None:
        f = out.fault
        if f.fatal is not None and f.fatal.diagnosis.code == "CONTEXT_OVERFLOW":
            window = f" (its window: {info.window} tokens, {info.window_source})" if info.window else ""
            return Check(name="agent", status="fail", code=CONTEXT_TOO_SMALL, latency_ms=ms,
                         message=f"{info.label} refused {what} as longer than its context window{window}: the "
                                 f"window is too small for {shape.agent}, every trial's first call would fail",
                         fix=fix_window(info, needed))
        check = _tool_fault(out, rr, what, info)
        return check.model_copy(update={"name": "agent"})
    c = out.completion
    u = c.usage
    # the messages' own size is the least any server counts (some count the tools, some do not)
    least = estimate_tokens(shape.messages)
    if u.reported and u.prompt_tokens and least >= CUT_MIN_TOKENS and u.prompt_tokens < CUT_SHARE * least:
        window = f"; its window is {info.window} tokens ({info.window_source})" if info.window else ""
        return Check(name="agent", status="fail", code=CONTEXT_TOO_SMALL, latency_ms=ms,
                     message=f"{info.label} answered {what} having counted {u.prompt_tokens} prompt tokens: it cut "
                             f"the agent's prompt to its window and answered (the window is too small for "
                             f"{shape.agent}; every trial would be invalid){window}",
                     fix=fix_window(info, needed))
    counted = f", {u.prompt_tokens} prompt tokens counted" if u.reported else ""
    if c.message.tool_calls:
        return _ok("agent", f"the model called {c.message.tool_calls[0].name} in answer to {what}{counted}", ms)
    if not shape.tools:  # an agent that reads commands from the text (mini-swe-agent's text-based config)
        return _ok("agent", f"the model answered {what} in text{counted}", ms)
    return Check(name="agent", status="warn", code=NO_TOOL_CALLS, latency_ms=ms,
                 message=f"the model answered {what} in text{counted}, although its first message asks for a "
                         "command: the agent may make no tool calls",
                 fix=_fix_no_calls(info))


def _fix_no_calls(info: ServerInfo) -> str:
    """The server's own fix (the generic one names our agents' text mode, which these agents lack)."""
    fix = fix_no_tool_calls(info, "auto")
    own = fix.split("; or ")[0] if "; or " in fix else ""
    return (own + "; or " if own else "") + "use a model that calls tools (function calling)"
