"""The channel's other wire formats, behind the same ``send_once``: ``wire = "responses"`` (the
OpenAI Responses API) and ``wire = "anthropic"`` (the Anthropic Messages API).

A wire module (``wire_responses``, ``wire_anthropic``) has four parts, all from the channel's
own terms (chat-style ``messages``/``tools``/settings in, ``AssistantMessage``/``Usage``/
``finish_reason`` out), so that the one retry loop, the concurrency bounds, the X-Agentrig
headers, the usage ledger and the doctor stay shared with the chat wire:

- ``request(client, rr, params, headers, timeout_s) -> (body bytes, request id)``: builds the
  wire's request from ``params`` (``client.build_params``) and sends it with the official SDK
  (its own retries off); raises the SDK's exceptions;
- ``parse(body) -> (message, finish_reason, usage, model)`` or ``Malformed``;
- ``STATUS``, ``TIMEOUT``, ``CONNECTION``: the SDK's exception classes;
- ``PATH``: the route it posts to (named in a diagnosis).

Errors are classified by ``classify`` here: the chat wire's rules (``faults.classify_status``)
plus what the other APIs say differently (Anthropic's ``not_found_error`` for a model, its
credit-balance 400).
"""

from __future__ import annotations

import asyncio
import time
from types import ModuleType
from typing import Any

from agentrig.config import ResolvedRole
from agentrig.errors import Diagnosis, EndpointNotFound, ModelNotFound, QuotaExhausted
from agentrig.types import Completion
from agentrig.channel.wires import anthropic as wire_anthropic, responses as wire_responses
from agentrig.channel.faults import (
    _QUOTA,
    Fault,
    classify_status,
    connection_detail,
    model_not_found,
    refused,
    server_message,
)
from agentrig.channel.parse import Malformed

WIRES = ("chat", "responses", "anthropic")


def wire_module(wire: str) -> ModuleType:
    if wire == "responses":
        return wire_responses
    if wire == "anthropic":
        return wire_anthropic
    raise ValueError(f"wire {wire!r}: expected one of {', '.join(WIRES)}")


def error_type(body: Any) -> str:
    """The ``type`` of an error body: Anthropic's ``{"type": "error", "error": {"type": ...}}``
    and OpenAI's ``{"error": {"type": ..., "code": ...}}`` alike."""
    err = body.get("error") if isinstance(body, dict) else None
    if isinstance(err, dict):
        return str(err.get("type") or err.get("code") or "")
    return ""


def classify(status: int, body: Any, headers: Any, rr: ResolvedRole, path: str) -> Fault:
    fault = classify_status(status, body, headers, model=rr.model, key_env=rr.api_key_env, base_url=rr.base_url)
    message = server_message(body)
    said = f" The server said: {message}" if message else ""
    if isinstance(fault.fatal, EndpointNotFound):
        generic = message.strip(" .").lower() in ("", "not found", "404: not found")
        if error_type(body) == "not_found_error" and not generic:  # Anthropic: "model: claude-…"
            return Fault("fatal", status, message, fatal=ModelNotFound(
                model_not_found(rr.model, rr.base_url, message), status=status))
        return Fault("fatal", status, message, fatal=EndpointNotFound(Diagnosis(
            "BASE_URL_PATH", f"POST {path} at {rr.base_url} answered 404 Not Found: this endpoint does not serve "
            f"the {rr.wire} wire at that path.{said}",
            f"check that the endpoint serves {path} (or use wire = \"chat\" if it only serves chat completions); "
            "run `agentrig doctor`"), status=status))
    if status == 400 and fault.fatal is not None and _QUOTA.search(message):  # Anthropic's "credit balance is too low"
        return Fault("fatal", status, message, fatal=QuotaExhausted(Diagnosis(
            "QUOTA_EXHAUSTED", f"the endpoint refuses requests because the account's credit is used up.{said}",
            "add credit or raise the spending limit with the provider, or use another key; retrying will not help",
        ), status=status))
    return fault


Sent = tuple[Completion | None, Fault | None, float, str | None]  # client.Outcome's fields


async def send_wire(client: Any, rr: ResolvedRole, params: dict[str, Any], headers: dict[str, str],
                    timeout_s: float) -> Sent:
    """One attempt in ``rr.wire``, classified like ``client.send_once`` (which wraps the result in
    its ``Outcome``): never raises for HTTP or body trouble."""
    wire = wire_module(rr.wire)
    t0 = time.perf_counter()
    try:
        async with asyncio.timeout(timeout_s):
            body, request_id = await wire.request(client, rr, params, headers, timeout_s)
    except wire.STATUS as exc:
        raw = exc.body if exc.body is not None else exc.response.text
        return (None, classify(exc.status_code, raw, exc.response.headers, rr, wire.PATH), time.perf_counter() - t0, None)
    except (*wire.TIMEOUT, TimeoutError) as exc:
        elapsed = time.perf_counter() - t0
        if refused(exc) or elapsed < 0.9 * timeout_s:  # the aiohttp transport's label for a dropped connection
            return (None, Fault("connection", None, connection_detail(exc, rr.base_url)[:300]), elapsed, None)
        return (None, Fault("timeout", None, f"no answer within {timeout_s:g}s"), elapsed, None)
    except wire.CONNECTION as exc:
        return (None, Fault("connection", None, connection_detail(exc, rr.base_url)[:300]), time.perf_counter() - t0, None)
    latency = time.perf_counter() - t0
    try:
        message, finish, usage, model = wire.parse(body)
    except Malformed as exc:
        return (None, Fault("malformed", 200, str(exc)), latency, None)
    completion = Completion(role=rr.role, model=rr.model or model or "", message=message,
                            finish_reason=finish, usage=usage, latency_s=latency, request_id=request_id)
    return completion, None, latency, request_id
