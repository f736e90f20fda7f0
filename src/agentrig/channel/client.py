"""The channel: the one door to models. ``Channel.complete(role, messages, tools, context)``.

Built on the official ``openai`` SDK (async client) with the SDK's own retries off; the loop in
``Channel._call`` is the only retry loop in agentrig (see ``faults.py`` for what is retried).
Concurrency is bounded per endpoint (base URL + key): roles that share an endpoint share its
limit, the smallest ``max_concurrency`` any of them sets.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import random
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import openai
import openai._response as _sdk_response

from ..config import ROLES, ChannelConfig, ResolvedRole
from ..errors import AuthError, ConfigError, Diagnosis, RetriesExhausted
from ..redact import get_logger, read_secret, redact
from ..types import Attempt, CallContext, Completion
from .faults import Fault, classify_status, exhausted
from .parse import Malformed, parse_completion
from .usage import UsageLedger

log = get_logger("agentrig.channel")


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


# the HTTP library's Response class the SDK is built on (httpx2 for openai >= 3, httpx before)
_RAW = (getattr(_sdk_response, "httpx2", None) or getattr(_sdk_response, "httpx")).Response


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

    def __post_init__(self) -> None:
        self.semaphore = asyncio.Semaphore(self.limit)


@dataclass(frozen=True)
class Outcome:
    """What one HTTP attempt produced: a completion, or a classified fault."""

    completion: Completion | None
    fault: Fault | None
    latency_s: float
    request_id: str | None = None


async def send_once(client: openai.AsyncOpenAI, rr: ResolvedRole, params: dict[str, Any],
                    headers: dict[str, str], timeout_s: float) -> Outcome:
    """One attempt, classified. Never raises for HTTP or body trouble."""
    t0 = time.perf_counter()
    try:
        # The body is serialized here and posted as is: the SDK's request-building walks every
        # message and tool schema of every request (a third of a run's CPU with long
        # conversations); auth, headers, the connection pool and error classes stay the SDK's.
        payload = {**params, **rr.extra_body} if rr.extra_body else params
        data = json.dumps(payload, ensure_ascii=False, separators=(",", ":")).encode()
        async with asyncio.timeout(timeout_s):
            raw = await client.post("/chat/completions", cast_to=_RAW, content=data,
                                    options={"headers": {**headers, "Content-Type": "application/json"},
                                             "timeout": timeout_s})
        body = raw.content
        request_id = raw.headers.get("x-request-id")
    except openai.APIStatusError as exc:
        body = exc.body if exc.body is not None else exc.response.text
        fault = classify_status(exc.status_code, body, exc.response.headers, model=rr.model,
                                key_env=rr.api_key_env, base_url=rr.base_url)
        return Outcome(None, fault, time.perf_counter() - t0)
    except (openai.APITimeoutError, TimeoutError) as exc:
        elapsed = time.perf_counter() - t0
        if elapsed < 0.9 * timeout_s:  # the aiohttp transport reports a dropped connection as a timeout
            cause = exc.__cause__ or exc
            return Outcome(None, Fault("connection", None, redact(f"{type(cause).__name__}: {cause}")[:300]), elapsed)
        return Outcome(None, Fault("timeout", None, f"no answer within {timeout_s:g}s"), elapsed)
    except openai.APIConnectionError as exc:
        cause = exc.__cause__ or exc
        detail = redact(f"{type(cause).__name__}: {cause}")[:300]
        return Outcome(None, Fault("connection", None, detail), time.perf_counter() - t0)
    latency = time.perf_counter() - t0
    try:
        message, finish, usage, model = parse_completion(body)
    except Malformed as exc:
        return Outcome(None, Fault("malformed", 200, str(exc)), latency)
    completion = Completion(role=rr.role, model=rr.model or model or "", message=message,
                            finish_reason=finish, usage=usage, latency_s=latency, request_id=request_id)
    return Outcome(completion, None, latency, request_id)


def build_params(rr: ResolvedRole, messages: list[dict], tools: list[dict] | None,
                 tool_choice: Any = None, parallel_tool_calls: bool | None = None) -> dict[str, Any]:
    params: dict[str, Any] = {"model": rr.model, "messages": messages}
    if tools:
        params["tools"] = tools
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
                 endpoints: dict | None = None):
        """``endpoints``: pass the same (initially empty) dict to several channels (one per arm of
        a run) so that they share each endpoint's connection pool and concurrency bound."""
        self.config = config or ChannelConfig()
        self.run_id = run_id
        self._env = env
        self._rng = rng or random.Random()
        self._roles: dict[str, ResolvedRole] = {}
        self._endpoints: dict[tuple[str, str], Endpoint] = {} if endpoints is None else endpoints
        self.usage = UsageLedger(self.config.prices)

    def role(self, role: str) -> ResolvedRole:
        rr = self._roles.get(role)
        if rr is None:
            rr = self._roles[role] = self.config.resolve(role, self._env)
        return rr

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
            ep = Endpoint(ident[0], ident[1], make_client(ident[0], key, rr.timeout_s), min(limits))
            self._endpoints[ident] = ep
        return ep

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
        for n in range(1, rr.max_attempts + 1):
            async with ep.semaphore:
                now = time.perf_counter()
                if deadline is None:
                    deadline = now + rr.deadline_s
                remaining = deadline - now
                if remaining <= 0:
                    reason = f"deadline_s={rr.deadline_s:g}"
                    break
                ep.in_flight += 1
                try:
                    out = await send_once(ep.client, rr, params, headers, min(rr.timeout_s, remaining))
                finally:
                    ep.in_flight -= 1
            if out.completion is not None:
                attempts.append(Attempt(latency_s=out.latency_s))
                done = out.completion.model_copy(update={"attempts": attempts, "latency_s": time.perf_counter() - start})
                self.usage.record(done)
                return done
            last = out.fault
            assert last is not None
            attempt = Attempt(cause=last.cause, status=last.status, latency_s=out.latency_s, detail=last.detail[:300] or None)
            attempts.append(attempt)
            if last.fatal is not None:
                self.usage.record_failure(rr.role, attempts)
                last.fatal.attempts = attempts
                raise last.fatal
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
        self.usage.record_failure(rr.role, attempts)
        if last is None:
            last = Fault("timeout", None, "the deadline passed before the first attempt")
        diag = exhausted(last, len(attempts), reason)
        log.warning("role=%s gave up: %s", rr.role, diag.message)
        raise RetriesExhausted(diag, status=last.status, attempts=attempts)

    async def aclose(self) -> None:
        for ep in self._endpoints.values():
            await ep.client.close()
        self._endpoints.clear()

    async def __aenter__(self) -> "Channel":
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()
