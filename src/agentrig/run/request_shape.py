"""What an experiment's agent sends first, for ``agentrig doctor --config`` to send alike.

For each arm whose agent is the LLM agent and each τ²-bench domain of the experiment, the agent is
built as a trial would build it (its system prompt: preamble and the domain's policy; its tools in
native mode, none in text mode) and its first request is estimated: the system prompt, the tools,
the greeting and an opening user message (about 4 characters a token). The largest one is the
shape the doctor uses: the same tool list and ``tool_choice`` for the tools check, and its size
(plus the agent role's ``max_tokens``) against the server's window.
"""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

from agentrig.agents.base import GREETING
from agentrig.channel.doctor.checks import RequestShape, estimate_tokens
from agentrig.errors import AgentrigError

# what a user's first message usually takes (the user simulator writes it; about 100 tokens)
OPENING = "x" * 400


def first_request_shapes(path: str | Path) -> tuple[dict[str, RequestShape], str | None]:
    """(role → the largest first request on it, a note when the file gives none). Only the agent
    role is covered; a file that is not a τ²-bench experiment gives no shape (and says why)."""
    from agentrig.agents import build_agent

    from .experiment import load

    try:
        r = load(path)
    except AgentrigError as exc:
        return {}, f"the experiment could not be read ({str(exc).splitlines()[0]}): a representative request is used"
    if r.exp.benchmark.kind != "tau2":
        return {}, f"benchmark {r.exp.benchmark.kind!r}: a representative request is used"
    best: RequestShape | None = None
    tools, tools_where = [], ""
    for arm in r.arms:
        if arm.agent.kind != "llm":
            continue
        max_tokens = arm.channel.resolve("agent", env={}).max_tokens
        for domain in dict.fromkeys(d for d, _ in r.tasks):
            ctx = SimpleNamespace(channel=object())
            r.benchmark.trial_context(r, SimpleNamespace(key=SimpleNamespace(domain=domain), arm=arm), ctx)
            try:
                agent = build_agent(arm.agent, ctx)
            except AgentrigError as exc:
                return {}, f"arm {arm.name}'s agent could not be built ({str(exc).splitlines()[0]}): " \
                           "a representative request is used"
            arm_tools = list(getattr(agent, "tools", None) or [])
            where = f"arm {arm.name}, domain {domain}, tool_mode {arm.agent.tool_mode}"
            if len(arm_tools) > len(tools):
                tools, tools_where = arm_tools, f"arm {arm.name}, domain {domain}"
            messages = [*agent.messages, {"role": "assistant", "content": GREETING},
                        {"role": "user", "content": OPENING}]
            shape = RequestShape(where=where, first_request_tokens=estimate_tokens(messages, arm_tools),
                                 max_tokens=max_tokens)
            if best is None or shape.first_request_tokens + (shape.max_tokens or 0) > \
                    best.first_request_tokens + (best.max_tokens or 0):
                best = shape
    if best is None:
        return {}, "no arm uses the LLM agent: a representative request is used"
    return {"agent": best.model_copy(update={"tools": tools, "tools_where": tools_where})}, None
