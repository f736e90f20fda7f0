"""What an experiment's agent sends first, for ``agentrig doctor --config`` to send alike.

The benchmark says what its agents send first (``Benchmark.first_requests``; τ²: for each arm whose
agent is the LLM agent and each domain, the agent built as a trial builds it — its system prompt
with the domain's policy, its tools in native mode — with the greeting and an opening user
message; terminal: for each arm whose agent is mini-swe-agent, Codex or Claude Code, the request
that installed agent really sends first, as its proxy forwards it, made by running it once on this
host: ``bench/terminal/first_request.py``; τ²'s Python agent, Codex or Claude Code arms alike, one step
of the first task: ``bench/tau/first_request.py``; AppWorld's Python agent: ``bench/appworld/first_request.py``); each is estimated (about 4 characters a token) and the
largest one of our own agents is the shape the doctor uses: the same tool list and ``tool_choice``
for the tools check, and its size (plus the agent role's ``max_tokens``) against the server's
window. An installed agent's request is kept apart (``RequestShape.agent``): the doctor sends it
as it is and compares its own size with the window (``channel/doctor/agent_request.py``).
"""

from __future__ import annotations

from pathlib import Path

from agentrig.channel.doctor.checks import RequestShape, estimate_tokens, largest
from agentrig.errors import AgentrigError


def first_request_shapes(path: str | Path) -> tuple[dict[str, RequestShape], str | None]:
    """(role → the largest first request on it, a note when the file gives none). Only the agent
    role is covered: ``"agent"`` over every arm, and ``"ARM: agent"`` (as the doctor's uses name
    it) for each arm's own, so an endpoint only some arms use is probed with (and names) theirs.
    A benchmark that says nothing of its first requests gives no shape (and says why)."""
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
    per_arm: dict[str, list[RequestShape]] = {}
    for req in requests:
        arm = next(a for a in r.arms if a.name == req.arm)
        max_tokens = arm.channel.resolve("agent", env={}).max_tokens
        per_arm.setdefault(req.arm, []).append(RequestShape(
            where=req.where, first_request_tokens=estimate_tokens(req.messages, req.tools), max_tokens=max_tokens,
            tools=list(req.tools), tools_where=req.tools_where, agent=req.agent,
            messages=list(req.messages) if req.agent else [], tool_choice=req.tool_choice,
            parallel_tool_calls=req.parallel_tool_calls, problem=req.problem, problem_code=req.problem_code,
            fix=req.fix))
    ours = [s for shapes in per_arm.values() for s in shapes if not s.agent]
    theirs = [s for shapes in per_arm.values() for s in shapes if s.agent]
    if not ours and not theirs:
        return {}, "no arm uses the LLM agent: a representative request is used"
    out: dict[str, RequestShape] = {}
    if ours:
        out["agent"] = largest(ours)
    for arm, shapes in per_arm.items():
        mine = [s for s in shapes if not s.agent]
        out[f"{arm}: agent"] = largest(mine) if mine else shapes[0]
    ran = sorted({s.agent for s in theirs if not s.problem})
    note = (f"ran {', '.join(ran)} once on this host (a temporary directory, a local stub endpoint) to get the "
            "request each really sends first" if ran else None)
    return out, note
