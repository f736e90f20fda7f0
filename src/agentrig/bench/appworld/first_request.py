"""What a user's Python agent (``kind = "python"``) really sends first on an AppWorld task, for
``agentrig doctor --config`` to send that very request to the agent role's endpoint.

``first_request(r, bench, arm)`` opens the experiment's first task in a worker of the run's pool
and starts the agent as a trial does (``python_agent.py``), against a throwaway trial context whose
channel goes to a local stub endpoint (``agents/proxy/capture.py``: no request leaves the machine,
the agent gets the throwaway proxy's token, never the key). Once its proxy has recorded a request
with tools, or a few requests (an agent that writes code as text), the agent is stopped and closed.
"""

from __future__ import annotations

import time
from types import SimpleNamespace
from typing import Any

from agentrig.agents.proxy.capture import (captured, first_request_of, run_until_request, stub_endpoint,
                                          throwaway_context)
from agentrig.benchmark import FirstRequest, Limits
from agentrig.procs import finish_despite_cancel

CAPTURE_S = 120.0  # the longest an agent may take to send its first request


async def _capture(r: Any, bench: Any, arm: Any, group: str, task: Any, model: str, timeout_s: float) -> Any:
    from agentrig.agents.python_agent.host import secret_variables

    from .episode import OPEN_TIMEOUT_S, AppWorldSession, SessionSettings
    from .reference import build_appworld_agent

    run = bench._run(r)
    limits = Limits(max_steps=r.exp.run.max_steps)
    real = secret_variables(SimpleNamespace(channel=SimpleNamespace(config=arm.channel)))
    async with stub_endpoint() as stub:
        ctx = throwaway_context(stub, model, domain=group, task_id=task.id, task=task, secret_env=tuple(sorted(real)))
        try:
            async with run.pool.lease() as worker:
                await worker.call("open", task_id=task.id, exec_timeout_s=run.execute_timeout_s,
                                  max_interactions=max(limits.max_steps, 1) + 1, random_seed=run.random_seed,
                                  raise_on_failure=True, timeout_s=OPEN_TIMEOUT_S)
                settings = SessionSettings(agent=arm.agent, limits=limits, execute_timeout_s=run.execute_timeout_s,
                                           output_limit=run.output_limit, grace_s=run.grace_s)
                session = AppWorldSession(ctx, task, worker, settings, [])
                agent = build_appworld_agent(arm.agent, session, run)
                try:
                    await run_until_request(ctx, agent.run(session), timeout_s)
                finally:
                    await finish_despite_cancel(agent.aclose(), 15.0)
        finally:
            await ctx.channel.aclose()
    return captured(ctx)


async def first_request(r: Any, bench: Any, arm: Any, timeout_s: float = CAPTURE_S) -> FirstRequest:
    """The arm's Python agent's first request on the experiment's first task (see the module's docstring)."""
    group, task = r.tasks[0]
    where = f"arm {arm.name}, task {task.id}"
    label = f"Python agent {arm.agent.entry}"
    model = arm.channel.resolve("agent", env={}).model or ""
    started = time.monotonic()
    said = ""
    try:
        best = await _capture(r, bench, arm, group, task, model, timeout_s)
    except Exception as exc:  # the world or the agent could not be started here
        best, said = None, f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
    return first_request_of(best, arm=arm.name, where=where, label=label, took_s=time.monotonic() - started, said=said)
