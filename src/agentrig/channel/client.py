"""The channel: the one door to models. ``Channel.complete(role, messages, tools, context)``.

Built on the official ``openai`` SDK (async client) with the SDK's own retries off; the loop in
``Channel._call`` is the only retry loop in agentrig (see ``faults.py`` for what is retried).
Concurrency is bounded per endpoint (base URL + key): roles that share an endpoint share its
limit, the smallest ``max_concurrency`` any of them sets.
"""

from __future__ import annotations

import asyncio
import hashlib
import itertools
import random
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import openai

from ..config import ROLES, ChannelConfig, ResolvedRole
from ..errors import AuthError, ConfigError, Diagnosis, RetriesExhausted
from ..redact import get_logger, read_secret
from ..types import Attempt, CallContext, Completion
from .adaptive import LatencyWindow
from .breaker import Breaker, EndpointDown, is_outage_fault
from .faults import Fault, exhausted
from .servers import ServerInfo, identify, sdk_fetch
from .usage import UsageLedger
from .wires import Outcome, send

log = get_logger("agentrig.channel")
_CALLS = itertools.count(1)  # a token per call, for the breaker
SERVER_INFO_TIMEOUT_S = 10.0  # per request of Channel.server_info's questions to the server


def normalize_base_url(url: str) -> str:
    return url.strip().rstrip("/")


def key_fingerprint(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest()[:16]


def missing_key(env_var: str) -> Diagnosis:
    return Diagnosis(
        "KEY_MISSING",
        f"the environment variable ${env_var} is unset or empty",
        f"export {env_var}=<your key> (a local server that needs no key accepts any value, e.g. 'local'), "
        "or set api_key_env in [channel] / [roles.X] to the variable that holds it",
    )


def _aiohttp_transport() -> Any:
    """The SDK's own aiohttp transport (``openai.DefaultAioHttpClient``) when this SDK has it:
    about a third of the default transport's CPU per request, which is what bounds a run with
    many trials in flight. None → the SDK's default transport."""
    factory = getattr(openai, "DefaultAioHttpClient", None)
    if factory is None:
        return None
    try:
        return factory()
    except Exception:  # noqa: BLE001 - the optional aiohttp bridge is not installed
        return None


def make_client(base_url: str, key: str, timeout_s: float) -> openai.AsyncOpenAI:
    transport = _aiohttp_transport()
    extra = {"http_client": transport} if transport is not None else {}
    return openai.AsyncOpenAI(api_key=key, base_url=base_url, max_retries=0, timeout=timeout_s, **extra)


@dataclass
class Endpoint:
    base_url: str
    fingerprint: str
    client: openai.AsyncOpenAI
    limit: int
    semaphore: asyncio.Semaphore = field(init=False)
    in_flight: int = 0
    breaker: Breaker = field(init=False)  # rides out an outage (channel/breaker.py)
    outage_wait_s: float = 600.0
    latencies: dict[str, LatencyWindow] = field(default_factory=dict)  # per model (channel/adaptive.py)
    # per model: which server answers and its context window, learned once (channel/servers.py)
    servers: dict[str, "asyncio.Task[ServerInfo]"] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.semaphore = asyncio.Semaphore(self.limit)
        self.breaker = Breaker(self.base_url, self.outage_wait_s)

    def window(self, model: str) -> LatencyWindow:
        w = self.latencies.get(model)
        if w is None:
            w = self.latencies[model] = LatencyWindow()
        return w


async def send_once(client: openai.AsyncOpenAI, rr: ResolvedRole, params: dict[str, Any],
                    headers: dict[str, str], timeout_s: float) -> Outcome:
    """One attempt in the role's wire, classified (channel/wires/: the wire seam). Never raises for
    HTTP or body trouble."""
    return await send(client, rr, params, headers, timeout_s)


async def _send_watched(window: LatencyWindow, token: int, timeouts: int, ep: Endpoint, rr: ResolvedRole,
                        params: dict[str, Any], headers: dict[str, str], limit_s: float,
                        cap_s: float) -> tuple[Outcome, bool]:
    """``send_once`` under a deadline the latency window may bring forward while the attempt is in
    flight (channel/adaptive.py). Returns the outcome and whether the window cut it."""
    loop = asyncio.get_running_loop()
    sent = loop.time()
    try:
        async with asyncio.timeout(None) as cm:
            window.watch(token, sent, timeouts, cap_s, cm)
            return await send_once(ep.client, rr, params, headers, limit_s), False
    except TimeoutError:
        cut = loop.time() - sent
        return Outcome(None, Fault("timeout", None, f"no answer within {cut:.2g}s"), cut), True
    finally:
        window.unwatch(token)


def build_params(rr: ResolvedRole, messages: list[dict], tools: list[dict] | None,
                 tool_choice: Any = None, parallel_tool_calls: bool | None = None) -> dict[str, Any]:
    params: dict[str, Any] = {"model": rr.model, "messages": messages}
    if tools:
        params["tools"] = tools
        if tool_choice is None and rr.tool_choice != "omit":
            tool_choice = rr.tool_choice  # the role's setting, sent explicitly (servers differ on the default)
        if tool_choice is not None:
            params["tool_choice"] = tool_choice
        if parallel_tool_calls is not None:
            params["parallel_tool_calls"] = parallel_tool_calls
    for name in ("temperature", "max_tokens", "seed"):
        value = getattr(rr, name)
        if value is not None:
            params[name] = value
    return params


class Channel:
    """Every model call of the program goes through one of these (one per process / run)."""

    def __init__(self, config: ChannelConfig | None = None, *, run_id: str | None = None,
                 env: Mapping[str, str] | None = None, rng: random.Random | None = None,
                 endpoints: dict | None = None, slots: Any = None):
        """``endpoints``: pass the same (initially empty) dict to several channels (one per arm of
        a run) so that they share each endpoint's connection pool and concurrency bound.
        ``slots``: ``(Endpoint) -> async context manager`` that bounds an endpoint's requests in
        place of its own semaphore (the Ray executor's cluster-wide slots, run/ray/slots.py)."""
        self.config = config or ChannelConfig()
        self.run_id = run_id
        self._env = env
        self._rng = rng or random.Random()
        self._roles: dict[str, ResolvedRole] = {}
        self._endpoints: dict[tuple[str, str], Endpoint] = {} if endpoints is None else endpoints
        self.usage = UsageLedger(self.config.prices)
        self._slots = slots

    def role(self, role: str) -> ResolvedRole:
        rr = self._roles.get(role)
        if rr is None:
            rr = self._roles[role] = self.config.resolve(role, self._env)
        return rr

    def outage_seconds(self, within_s: float) -> float:
        """Seconds, within the last ``within_s``, that an endpoint of this channel was out (its
        breaker open): a trial whose clock ran out then was stopped by the outage, not by its agent."""
        t0 = time.monotonic() - within_s
        return max((ep.breaker.down_seconds_since(t0) for ep in self._endpoints.values()), default=0.0)

    def _key(self, rr: ResolvedRole) -> str:
        key = read_secret(rr.api_key_env, self._env)
        if not key or not key.strip():
            raise AuthError(missing_key(rr.api_key_env))
        return key

    def endpoint(self, rr: ResolvedRole) -> Endpoint:
        key = self._key(rr)
        ident = (normalize_base_url(rr.base_url), key_fingerprint(key))
        ep = self._endpoints.get(ident)
        if ep is None:
            limits = [rr.max_concurrency]
            for other in ROLES:  # roles sharing this endpoint share its bound
                o = self.role(other)
                if normalize_base_url(o.base_url) == ident[0]:
                    okey = read_secret(o.api_key_env, self._env)
                    if okey and key_fingerprint(okey) == ident[1]:
                        limits.append(o.max_concurrency)
            ep = Endpoint(ident[0], ident[1], make_client(ident[0], key, rr.timeout_s), min(limits),
                          outage_wait_s=self.config.channel.outage_wait_s)
            if self._slots is not None:
                ep.semaphore = self._slots(ep)
            self._endpoints[ident] = ep
        return ep

    async def server_info(self, role: str) -> ServerInfo:
        """Which server answers ``role`` and its context window, as the doctor learns them
        (``servers.identify``), asked once per endpoint and model and shared by every trial and arm.
        Never raises: a server that tells nothing (or cannot be asked) is simply not recognised."""
        rr = self.role(role)
        ep = self.endpoint(rr)
        model = rr.model or ""
        task = ep.servers.get(model)
        if task is None:
            task = ep.servers[model] = asyncio.ensure_future(self._identify(ep, rr))
        try:
            return await asyncio.shield(task)
        except Exception:  # noqa: BLE001 - identify never raises; a loop torn down under it is no window
            return ServerInfo()

    async def _identify(self, ep: Endpoint, rr: ResolvedRole) -> ServerInfo:
        if rr.wire == "anthropic":  # the Anthropic Messages API: none of the model servers' routes
            return ServerInfo()
        async with ep.semaphore:  # its questions count against the endpoint's bound like any call
            timeout = min(rr.timeout_s, SERVER_INFO_TIMEOUT_S)  # asked on the endpoint's own pool: no client to set up
            return await identify(ep.base_url, self._key(rr), rr.model, timeout, sdk_fetch(ep.client, timeout))

    def endpoint_limit(self, role: str) -> int:
        return self.endpoint(self.role(role)).limit

    async def complete(self, role: str, messages: list[dict], tools: list[dict] | None = None,
                       context: CallContext | None = None, *, tool_choice: Any = None,
                       parallel_tool_calls: bool | None = None, seed: int | None = None) -> Completion:
        """One chat completion for ``role``; retried per the channel's rules. ``seed`` is sent
        when the role's settings set none (a trial's own seed).

        Raises ``FatalChannelError`` (401/403, 404, quota, context overflow, 400) at once, and
        ``RetriesExhausted`` when transient faults outlast ``max_attempts`` or ``deadline_s``.
        """
        rr = self.role(role)
        if not rr.model:
            raise ConfigError(f"no model for role '{role}': set `model` in [roles.{role}] or [channel]")
        ep = self.endpoint(rr)
        ctx = (context or CallContext()).model_copy(update={"role": role, "run": (context.run if context and context.run else self.run_id)})
        headers = {**rr.headers, **ctx.headers()}
        for header, var in rr.headers_from_env.items():
            value = read_secret(var, self._env)
            if value:
                headers[header] = value
        params = build_params(rr, messages, tools, tool_choice, parallel_tool_calls)
        if seed is not None and "seed" not in params:
            params["seed"] = seed
        return await self._call(rr, ep, params, headers)

    async def _call(self, rr: ResolvedRole, ep: Endpoint, params: dict, headers: dict[str, str]) -> Completion:
        attempts: list[Attempt] = []
        start = time.perf_counter()
        deadline: float | None = None
        reason = f"max_attempts={rr.max_attempts}"
        last: Fault | None = None
        breaker, token = ep.breaker, next(_CALLS)
        window = ep.window(rr.model or "") if self.config.channel.adaptive_timeout else None
        n = timeouts = 0  # attempts counted against max_attempts (not those failed in an outage); timeouts met
        try:
            while n < rr.max_attempts:
                held = await breaker.admit(token)  # waits while the endpoint is down (breaker.py)
                if held:
                    if attempts:
                        attempts[-1].wait_s = round(attempts[-1].wait_s + held, 3)
                    if deadline is not None:
                        deadline += held  # waiting for the endpoint costs no deadline
                async with ep.semaphore:
                    now = time.perf_counter()
                    if deadline is None:
                        deadline = now + rr.deadline_s
                    remaining = deadline - now
                    if remaining <= 0:
                        reason = f"deadline_s={rr.deadline_s:g}"
                        break
                    limit, adaptive = window.timeout_for(rr.timeout_s, timeouts) if window else (rr.timeout_s, False)
                    ep.in_flight += 1
                    try:
                        if window is None:
                            out = await send_once(ep.client, rr, params, headers, min(limit, remaining))
                        else:
                            out, cut = await _send_watched(window, token, timeouts, ep, rr, params, headers,
                                                           min(limit, remaining), min(rr.timeout_s, remaining))
                            adaptive = adaptive or cut
                    finally:
                        ep.in_flight -= 1
                if out.completion is not None:
                    breaker.answered(token)
                    if window is not None:
                        window.observe(out.latency_s)
                    attempts.append(Attempt(latency_s=out.latency_s))
                    done = out.completion.model_copy(update={"attempts": attempts, "latency_s": time.perf_counter() - start})
                    self.usage.record(done)
                    return done
                last = out.fault
                assert last is not None
                detail = last.detail
                if adaptive and last.cause == "timeout":
                    detail += f" (the adaptive limit; timeout_s={rr.timeout_s:g})"
                attempt = Attempt(cause=last.cause, status=last.status, latency_s=out.latency_s, detail=detail[:300] or None)
                attempts.append(attempt)
                if last.fatal is not None:
                    breaker.answered(token)
                    self.usage.record_failure(rr.role, attempts)
                    last.fatal.attempts = attempts
                    last.fatal.elapsed_s = time.perf_counter() - start
                    raise last.fatal
                n += 1
                timeouts += last.cause == "timeout"
                if not is_outage_fault(last):
                    breaker.answered(token)
                elif breaker.failed(token, last, last_try=n >= rr.max_attempts or time.perf_counter() >= deadline):
                    n -= 1  # the endpoint is down: this attempt is not counted; wait in admit
                    continue
                if n == rr.max_attempts:
                    break
                wait = last.retry_after_s
                if wait is None:
                    wait = self._rng.uniform(0, min(rr.backoff_max_s, rr.backoff_base_s * 2 ** (n - 1)))
                if time.perf_counter() + wait >= deadline:
                    reason = (f"the server asked to wait {wait:.1f}s, past deadline_s={rr.deadline_s:g}"
                              if last.retry_after_s is not None else f"deadline_s={rr.deadline_s:g}")
                    break
                attempt.wait_s = wait
                log.info("role=%s attempt %d/%d failed (%s%s); retrying in %.2fs", rr.role, n, rr.max_attempts,
                         last.cause, f" {last.status}" if last.status else "", wait)
                await asyncio.sleep(wait)
        except EndpointDown as down:  # the outage outlasted outage_wait_s: a fatal error, with the attempts
            self.usage.record_failure(rr.role, attempts)
            failure = EndpointDown(down.diagnosis, attempts=list(attempts))
            failure.elapsed_s = time.perf_counter() - start
            raise failure from None
        finally:
            breaker.release(token)
        self.usage.record_failure(rr.role, attempts)
        if last is None:
            last = Fault("timeout", None, "the deadline passed before the first attempt")
        diag = exhausted(last, len(attempts), reason)
        log.warning("role=%s gave up: %s", rr.role, diag.message)
        failure = RetriesExhausted(diag, status=last.status, attempts=attempts)
        failure.elapsed_s = time.perf_counter() - start
        raise failure

    async def aclose(self) -> None:
        for ep in self._endpoints.values():
            for task in ep.servers.values():
                task.cancel()
            await ep.client.close()
        self._endpoints.clear()

    async def __aenter__(self) -> "Channel":
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()
