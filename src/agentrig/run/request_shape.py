"""What an experiment's agent sends first, for ``agentrig doctor --config`` to send alike.

The benchmark says what its agents send first (``Benchmark.first_requests``; τ²: for each arm whose
agent is the LLM agent and each domain, the agent built as a trial builds it — its system prompt
with the domain's policy, its tools in native mode — with the greeting and an opening user
message); each is estimated (about 4 characters a token) and the largest one is the shape the
doctor uses: the same tool list and ``tool_choice`` for the tools check, and its size
(plus the agent role's ``max_tokens``) against the server's window.
"""

from __future__ import annotations

from pathlib import Path

from agentrig.channel.doctor.checks import RequestShape, estimate_tokens
from agentrig.errors import AgentrigError

def first_request_shapes(path: str | Path) -> tuple[dict[str, RequestShape], str | None]:
    """(role → the largest first request on it, a note when the file gives none). Only the agent
    role is covered; a benchmark that says nothing of its first requests gives no shape (and says why)."""
    from .experiment import load

    try:
        r = load(path)
    except AgentrigError as exc:
        return {}, f"the experiment could not be read ({str(exc).splitlines()[0]}): a representative request is used"
    try:
        requests = r.benchmark.first_requests(r)
    except AgentrigError as exc:
        return {}, f"the agent could not be built ({str(exc).splitlines()[0]}): a representative request is used"
    if requests is None:
        return {}, f"benchmark {r.exp.benchmark.kind!r}: a representative request is used"
    best: RequestShape | None = None
    tools, tools_where = [], ""
    for req in requests:
        arm = next(a for a in r.arms if a.name == req.arm)
        max_tokens = arm.channel.resolve("agent", env={}).max_tokens
        if len(req.tools) > len(tools):
            tools, tools_where = list(req.tools), req.tools_where
        shape = RequestShape(where=req.where, first_request_tokens=estimate_tokens(req.messages, req.tools),
                             max_tokens=max_tokens)
        if best is None or shape.first_request_tokens + (shape.max_tokens or 0) > \
                best.first_request_tokens + (best.max_tokens or 0):
            best = shape
    if best is None:
        return {}, "no arm uses the LLM agent: a representative request is used"
    return {"agent": best.model_copy(update={"tools": tools, "tools_where": tools_where})}, None
