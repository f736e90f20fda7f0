"""Capturing an agent's first model request for ``agentrig doctor --config`` (whatever the benchmark).

An agent we did not write (an installed CLI, a user's Python agent) is run for one step against a
throwaway trial whose channel goes to a local stub endpoint (127.0.0.1, a one-word answer: no
request leaves the machine, the stub's key is not a real one). Its proxy hands each of the agent's
model calls to ``ctx.complete``, which records it (``ctx.trajectory.agent_requests``); ``captured``
reads them back. Each benchmark says how its agent is run (terminal: ``bench/terminal/first_request.py``;
τ²: ``bench/tau/first_request.py``), with ``run_until_request`` to end the run once a request
with tools is in hand.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from typing import Any

from aiohttp import web

from agentrig.benchmark import FirstRequest

STUB_KEY_ENV = "AGENTRIG_DOCTOR_STUB_KEY"


async def _stub_chat(request: web.Request) -> web.Response:
    """A Chat Completions answer of one word (the agent is ended once its request is in hand)."""
    try:
        raw = await request.read()
    except ConnectionResetError:  # the agent was ended while it sent this one: no one to answer
        return web.Response(status=400, text="the request was cut off")
    body = json.loads(raw or b"{}")
    return web.json_response({
        "id": "chatcmpl-doctor", "object": "chat.completion", "created": int(time.time()),
        "model": body.get("model") or "stub",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": "Done."}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": max(1, len(raw) // 4), "completion_tokens": 1, "total_tokens": max(1, len(raw) // 4) + 1}})


@contextlib.asynccontextmanager
async def stub_endpoint():
    """A local Chat Completions endpoint answering every request with one word; yields its base URL."""
    app = web.Application(client_max_size=64 * 1024 * 1024)
    app.router.add_post("/v1/chat/completions", _stub_chat)
    runner = web.AppRunner(app, access_log=None, handle_signals=False)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = runner.addresses[0][1]
    try:
        yield f"http://127.0.0.1:{port}/v1"
    finally:
        await runner.cleanup()


def throwaway_context(base_url: str, model: str, *, domain: str = "doctor", task_id: str = "doctor", task: Any = None,
                      roles: tuple[str, ...] = ("agent",), secret_env: tuple[str, ...] = ()) -> Any:
    """A trial context whose channel (every role of ``roles``) goes to ``base_url`` with the stub's key;
    ``secret_env``: the variables the real channel reads keys from, kept out of an agent's environment
    as a trial keeps its own (``python_agent.host.secret_variables``)."""
    from agentrig.channel.client import Channel
    from agentrig.config import ChannelConfig, ChannelSettings, RoleConfig
    from agentrig.trial.context import TrialContext
    from agentrig.types import TrialKey

    cfg = ChannelConfig(channel=ChannelSettings(base_url=base_url, api_key_env=STUB_KEY_ENV, model=model or "stub",
                                                timeout_s=30, max_attempts=1, wire="chat"),
                        roles={role: RoleConfig() for role in roles})
    channel = Channel(cfg, env={STUB_KEY_ENV: "stub"})
    ctx = TrialContext(key=TrialKey(arm="doctor", domain=domain, task_id=task_id, trial=0), task=task, seed=0,
                       channel=channel, send_seed=False)
    ctx.secret_env = tuple(secret_env)
    return ctx


def recorded_requests(ctx: Any) -> list[tuple[list[dict], list[dict] | None, dict]]:
    """Every agent request of the throwaway trial, rebuilt from its deltas (``AgentRequest``)."""
    out, messages, tools = [], [], None
    for req in ctx.trajectory.agent_requests:
        messages = messages[:req.keep] + list(req.tail)
        tools = tools if req.same_tools else req.tools
        out.append((messages, tools, dict(req.params)))
    return out


def captured(ctx: Any) -> tuple[list[dict], list[dict] | None, dict] | None:
    """The first recorded request with tools, else the largest one, else None."""
    found = recorded_requests(ctx)
    with_tools = [r for r in found if r[1]]
    return with_tools[0] if with_tools else max(found, key=lambda r: len(json.dumps(r[0])), default=None)


async def run_until_request(ctx: Any, run: Any, timeout_s: float, ended: Any = None, max_requests: int = 3) -> None:
    """Run the coroutine ``run`` (the agent's step) until a request with tools is recorded, or
    ``max_requests`` requests (an agent without tools), ``ended`` (an ``asyncio.Event``, e.g. the
    proxy's) is set, ``run`` returns, or ``timeout_s`` pass; then cancel it. Whatever ``run`` raises
    is dropped (the captured request is what matters)."""
    task = asyncio.ensure_future(run)
    deadline = time.monotonic() + timeout_s
    try:
        while not task.done() and time.monotonic() < deadline:
            found = recorded_requests(ctx)
            if (ended is not None and ended.is_set()) or len(found) >= max_requests or any(t for _, t, _ in found):
                break
            await asyncio.wait({task}, timeout=0.1)
    finally:
        if not task.done():
            task.cancel()
        with contextlib.suppress(Exception, asyncio.CancelledError):
            await task


def first_request_of(best: Any, *, arm: str, where: str, label: str, took_s: float, said: str = "") -> FirstRequest:
    """The ``FirstRequest`` of a capture (``captured``'s answer), or one whose ``problem`` says that
    the agent sent no request (with what it said: ``said``)."""
    if best is None:
        return FirstRequest(arm=arm, where=where, messages=[], tools=[], tools_where=where, agent=label,
                            problem_code="AGENT_NOT_CHECKED",
                            problem=f"{where}: {label} sent no model request within {took_s:.0f} s when run on this "
                                    "host" + (f" ({said[:200]})" if said else ""),
                            fix="run one trial with `agentrig run --smoke` to see the agent's own log")
    messages, tools, params = best
    return FirstRequest(arm=arm, where=where, messages=messages, tools=list(tools or []), tools_where=where,
                        agent=label, tool_choice=params.get("tool_choice"),
                        parallel_tool_calls=params.get("parallel_tool_calls"))
