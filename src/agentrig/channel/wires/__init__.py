"""The wire seam: every wire format behind one ``send``.

A wire module (``chat``, ``responses``, ``anthropic``; the registry is ``REGISTRY`` below) speaks
one API in the channel's own terms (chat-style ``messages``/``tools``/settings in,
``AssistantMessage``/``Usage``/``finish_reason`` out), so that the one retry loop, the concurrency
bounds, the X-Agentrig headers, the usage ledger and the doctor are shared by every wire:

- ``request(client, rr, params, headers, timeout_s) -> (body bytes, request id)``: builds the
  wire's request from ``params`` (``client.build_params``) and sends it with the official SDK (its
  own retries off); raises the SDK's exceptions;
- ``parse(body) -> (message, finish_reason, usage, model)`` or ``Malformed``;
- ``classify(status, body, headers, rr) -> Fault``: what an error answer means (retried or fatal);
- ``STATUS``, ``TIMEOUT``, ``CONNECTION``: the SDK's exception classes; ``PATH``: its route;
- ``MODELS``: which model-listing API its servers have (``"openai"``: ``GET /models``;
  ``"anthropic"``), the doctor's models check (``channel/doctor/diagnose.py``'s ``_models_check``).

``send`` maps what can go wrong in an attempt to a ``Fault`` in one place for every wire (as httpx
maps its transport's exceptions once): a status error → the wire's ``classify``; a timeout → a
timeout, or a dropped connection when it came early (the aiohttp transport reports a refused
connection as a timeout); a connection error → a connection fault; a body that does not parse →
malformed. Adding a wire: one module here, one line in ``REGISTRY`` and its name in ``config.WIRES``
(the names a settings file may write; a test holds the two equal).
"""

from __future__ import annotations

import asyncio
import importlib
import time
from dataclasses import dataclass
from types import ModuleType
from typing import Any

from agentrig.channel.faults import Fault, connection_detail, refused
from agentrig.channel.parse import Malformed
from agentrig.config import ResolvedRole
from agentrig.types import Completion

# The wire registry: name → the module here that speaks it (imported on first use).
REGISTRY: dict[str, str] = {
    "chat": "agentrig.channel.wires.chat",  # chat completions (POST /chat/completions)
    "responses": "agentrig.channel.wires.responses",  # the OpenAI Responses API
    "anthropic": "agentrig.channel.wires.anthropic",  # the Anthropic Messages API
}
_LOADED: dict[str, ModuleType] = {}


def wire_module(wire: str) -> ModuleType:
    """The module that speaks ``wire`` (imported on first use: the Anthropic SDK only when asked for)."""
    module = _LOADED.get(wire)
    if module is None:
        if wire not in REGISTRY:
            raise ValueError(f"wire {wire!r}: expected one of {', '.join(REGISTRY)}")
        module = _LOADED[wire] = importlib.import_module(REGISTRY[wire])
    return module


@dataclass(frozen=True)
class Outcome:
    """What one HTTP attempt produced: a completion, or a classified fault."""

    completion: Completion | None
    fault: Fault | None
    latency_s: float
    request_id: str | None = None


async def send(client: Any, rr: ResolvedRole, params: dict[str, Any], headers: dict[str, str],
               timeout_s: float) -> Outcome:
    """One attempt in ``rr.wire``, classified. Never raises for HTTP or body trouble."""
    wire = wire_module(rr.wire)
    t0 = time.perf_counter()
    try:
        async with asyncio.timeout(timeout_s):
            body, request_id = await wire.request(client, rr, params, headers, timeout_s)
    except wire.STATUS as exc:
        raw = exc.body if exc.body is not None else exc.response.text
        return Outcome(None, wire.classify(exc.status_code, raw, exc.response.headers, rr), time.perf_counter() - t0)
    except (*wire.TIMEOUT, TimeoutError) as exc:
        elapsed = time.perf_counter() - t0
        if refused(exc) or elapsed < 0.9 * timeout_s:  # the aiohttp transport's label for a dropped connection
            return Outcome(None, Fault("connection", None, connection_detail(exc, rr.base_url)[:300]), elapsed)
        return Outcome(None, Fault("timeout", None, f"no answer within {timeout_s:g}s"), elapsed)
    except wire.CONNECTION as exc:
        return Outcome(None, Fault("connection", None, connection_detail(exc, rr.base_url)[:300]),
                       time.perf_counter() - t0)
    latency = time.perf_counter() - t0
    try:
        message, finish, usage, model = wire.parse(body)
    except Malformed as exc:
        return Outcome(None, Fault("malformed", 200, str(exc)), latency)
    completion = Completion(role=rr.role, model=rr.model or model or "", message=message,
                            finish_reason=finish, usage=usage, latency_s=latency, request_id=request_id)
    return Outcome(completion, None, latency, request_id)
