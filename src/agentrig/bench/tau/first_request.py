"""What an agent we did not write (a Python agent, Codex CLI, Claude Code) really sends first on a τ²
task, for ``agentrig doctor --config`` to send that very request to the agent role's endpoint.

``first_request(r, bench, arm)`` plays the start of one trial of the experiment's first task as a
trial plays it (the domain's tools over the episode, the user simulator, the agent built by the
episode), against a throwaway trial context whose channel goes to a local stub endpoint
(``agents/proxy/capture.py``: no request leaves the machine, the agent gets the throwaway proxy's
token). As soon as the agent's proxy has recorded a request with tools (or the agent's step ends,
or ``CAPTURE_S`` pass) the conversation is cancelled and the agent closed (its process group ended,
its home removed). Codex or Claude Code not installed yet are not installed here:
``FirstRequest.problem`` says so, with ``agentrig agents install KIND``.
"""

from __future__ import annotations

import time
from types import SimpleNamespace
from typing import Any

from agentrig.agents.proxy.capture import (captured, first_request_of, run_until_request, stub_endpoint,
                                          throwaway_context)
from agentrig.benchmark import FirstRequest, Limits
from agentrig.procs import finish_despite_cancel

CAPTURE_S = 120.0  # the longest an agent may take to send its first request with tools
CAPTURED_KINDS = ("python", "codex", "claude-code")
_NAMES = {"codex": "Codex CLI", "claude-code": "Claude Code"}


def _label(arm: Any, where: str) -> tuple[str, FirstRequest | None]:
    """The agent's name (and version), and a FirstRequest with the problem when it cannot run here."""
    a = arm.agent
    if a.kind == "python":
        return f"Python agent {a.entry}", None
    from agentrig.agents.installed.toolroot import check_kind_version, read_root, root_path

    version = check_kind_version(a.kind, a.version)
    label = f"{_NAMES[a.kind]} {version}"
    if read_root(root_path(a.kind, version)) is None:
        return label, FirstRequest(
            arm=arm.name, where=where, messages=[], tools=[], tools_where=where, agent=label,
            problem_code="AGENT_NOT_INSTALLED",
            problem=f"{where}: {label} is not installed yet, so its real first request was not checked (a trial would install it first)",
            fix=f"agentrig agents install {a.kind}" + (f" --version {version}" if a.version else "")
                + ", then run the doctor again")
    return label, None


async def _capture(r: Any, bench: Any, arm: Any, domain: str, task: Any, model: str, timeout_s: float) -> Any:
    from .episode import Episode, _build_agent
    from .user import build_user

    async with stub_endpoint() as stub:
        from agentrig.agents.python_agent.host import secret_variables

        real = secret_variables(SimpleNamespace(channel=SimpleNamespace(config=arm.channel)))
        ctx = throwaway_context(stub, model, domain=domain, task_id=task.id, task=task,
                                roles=("agent", "user", "judge"), secret_env=tuple(sorted(real)))
        try:
            bench.trial_context(r, SimpleNamespace(key=ctx.key, arm=arm), ctx)
            agent = _build_agent(arm.agent, ctx)
            try:
                episode = Episode(ctx, agent, build_user(r.exp.user, ctx), [], Limits())
                await run_until_request(ctx, episode.play(), timeout_s)
            finally:
                close = getattr(agent, "aclose", None)
                if close is not None:
                    await finish_despite_cancel(close(), 15.0)
        finally:
            await ctx.channel.aclose()
    return captured(ctx)


async def first_request(r: Any, bench: Any, arm: Any, timeout_s: float = CAPTURE_S) -> FirstRequest:
    """The arm's agent's first request on the experiment's first task (see the module's docstring)."""
    domain, task = r.tasks[0]
    where = f"arm {arm.name}, domain {domain}, task {task.id}"
    label, problem = _label(arm, where)
    if problem is not None:
        return problem
    model = arm.channel.resolve("agent", env={}).model or ""
    started = time.monotonic()
    said = ""
    try:
        best = await _capture(r, bench, arm, domain, task, model, timeout_s)
    except Exception as exc:  # the agent could not be started here
        best, said = None, f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
    return first_request_of(best, arm=arm.name, where=where, label=label, took_s=time.monotonic() - started, said=said)
