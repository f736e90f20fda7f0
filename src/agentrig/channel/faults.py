"""What an HTTP failure means: retried or fatal, and the diagnosis a person can act on.

Shared by the channel's retry loop and the doctor, so both speak the same codes.
"""

from __future__ import annotations

import email.utils
import json
import re
import time
from dataclasses import dataclass
from typing import Any, Mapping

from ..errors import (
    AuthError,
    BadRequest,
    ContextOverflow,
    Diagnosis,
    EndpointNotFound,
    FatalChannelError,
    ModelNotFound,
    QuotaExhausted,
)
from ..redact import redact

_QUOTA = re.compile(
    r"insufficient[_ ]quota|exceeded your current quota|quota (?:exceeded|exhausted)|billing|"
    r"out of credits|insufficient (?:credits|balance|funds)|credit balance|payment required",
    re.I,
)
_CONTEXT = re.compile(
    r"context[_ ]length[_ ]exceeded|maximum context length|context window|prompt is too long|"
    r"too many tokens|input is too long|exceeds the (?:model'?s? )?(?:maximum )?context",
    re.I,
)
_MODEL = re.compile(
    r"model_not_found|model .{0,80}(?:does not exist|not found|not available|is not a valid|unknown|"
    r"not supported)|(?:unknown|invalid|no such) model|no endpoints found",
    re.I,
)


@dataclass(frozen=True)
class Fault:
    """A classified failed attempt."""

    cause: str  # rate_limited, server_error, request_timeout, conflict, timeout, connection, malformed, fatal
    status: int | None
    detail: str
    retry_after_s: float | None = None
    fatal: FatalChannelError | None = None

    @property
    def retryable(self) -> bool:
        return self.fatal is None


def server_message(body: Any, text: str = "") -> str:
    """The human part of an error body (OpenAI style ``{"error": {"message": ...}}`` and kin)."""
    if isinstance(body, (bytes, str)):
        try:
            body = json.loads(body)
        except (ValueError, TypeError):
            text = body.decode("utf-8", "replace") if isinstance(body, bytes) else body
            body = None
    msg = None
    if isinstance(body, dict):
        err = body.get("error", body)
        if isinstance(err, dict):
            msg = err.get("message") or err.get("detail") or err.get("msg")
            if msg is None and isinstance(err.get("error"), str):
                msg = err["error"]
        elif isinstance(err, str):
            msg = err
        if msg is None and isinstance(body.get("detail"), str):
            msg = body["detail"]
        if msg is None and isinstance(body.get("message"), str):
            msg = body["message"]
    if msg is None:
        msg = text
    msg = " ".join(str(msg).split())
    return redact(msg[:500])


def error_code(body: Any) -> str:
    """code and type of an OpenAI-style error body, joined (for pattern matching)."""
    if isinstance(body, dict):
        err = body.get("error", body)
        if isinstance(err, dict):
            return f"{err.get('code') or ''} {err.get('type') or ''}".strip()
    return ""


def parse_retry_after(headers: Mapping[str, str]) -> float | None:
    """Seconds to wait, from ``retry-after-ms`` or ``Retry-After`` (seconds or an HTTP date)."""
    ms = headers.get("retry-after-ms")
    if ms:
        try:
            return max(0.0, float(ms) / 1000.0)
        except ValueError:
            pass
    ra = headers.get("retry-after")
    if not ra:
        return None
    try:
        return max(0.0, float(ra))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(ra)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


def classify_status(
    status: int, body: Any, headers: Mapping[str, str], *, model: str | None, key_env: str, base_url: str
) -> Fault:
    """Classify a non-2xx answer of the chat completions route."""
    message = server_message(body)
    codes = error_code(body)
    said = f" The server said: {message}" if message else ""
    if status in (401, 403):
        return Fault("fatal", status, message, fatal=AuthError(auth_rejected(status, key_env, message), status=status))
    if status == 404:
        if _MODEL.search(codes) or _MODEL.search(message) or (model and model in message):
            return Fault("fatal", status, message, fatal=ModelNotFound(model_not_found(model, base_url, message), status=status))
        return Fault("fatal", status, message, fatal=EndpointNotFound(Diagnosis(
            "BASE_URL_PATH",
            f"{base_url}/chat/completions answered 404 Not Found: the base URL's path is wrong.{said}",
            "run `agentrig doctor` with this base URL: it probes the usual mistakes (a missing or doubled /v1, "
            "a trailing /chat/completions) and names the base URL that works",
        ), status=status))
    if status == 429:
        if _QUOTA.search(codes) or _QUOTA.search(message):
            return Fault("fatal", status, message, fatal=QuotaExhausted(Diagnosis(
                "QUOTA_EXHAUSTED",
                f"the endpoint refuses requests because the account's quota or credit is used up.{said}",
                "add credit or raise the spending limit with the provider, or use another key; "
                "retrying will not help",
            ), status=status))
        return Fault("rate_limited", status, message, parse_retry_after(headers))
    if status == 408:
        return Fault("request_timeout", status, message, parse_retry_after(headers))
    if status == 409:
        return Fault("conflict", status, message, parse_retry_after(headers))
    if status >= 500:
        return Fault("server_error", status, message, parse_retry_after(headers))
    if status == 402:
        return Fault("fatal", status, message, fatal=QuotaExhausted(Diagnosis(
            "QUOTA_EXHAUSTED", f"402 Payment Required.{said}", "add credit with the provider, or use another key",
        ), status=status))
    if _CONTEXT.search(codes) or _CONTEXT.search(message) or status == 413:
        return Fault("fatal", status, message, fatal=ContextOverflow(Diagnosis(
            "CONTEXT_OVERFLOW",
            f"the request is longer than the model's context.{said}",
            "use a model with a longer context, lower max_tokens, or lower the trial's max_steps",
        ), status=status))
    if _MODEL.search(codes) or (model and model in message and _MODEL.search(message)):
        return Fault("fatal", status, message, fatal=ModelNotFound(model_not_found(model, base_url, message), status=status))
    return Fault("fatal", status, message, fatal=BadRequest(Diagnosis(
        "BAD_REQUEST",
        f"the endpoint rejected the request with {status}.{said}",
        "check the role's settings named in the message (e.g. temperature, max_tokens, extra_body, tools) "
        "against what this model accepts",
    ), status=status))


def auth_rejected(status: int, key_env: str, message: str) -> Diagnosis:
    said = f" The server said: {message}" if message else ""
    return Diagnosis(
        "AUTH_REJECTED",
        f"the endpoint rejected the key in ${key_env} with {status}.{said}",
        f"check that ${key_env} holds a valid key for this endpoint (not another provider's), "
        "that it has not been revoked, and that it may use this model",
    )


def model_not_found(model: str | None, base_url: str, message: str, close: list[str] | None = None) -> Diagnosis:
    said = f" The server said: {message}" if message else ""
    hint = f" Closest ids it serves: {', '.join(close)}." if close else ""
    return Diagnosis(
        "MODEL_NOT_FOUND",
        f"the endpoint {base_url} does not serve the model '{model}'.{hint}{said}",
        "set the role's `model` to an id from `GET /models` of this endpoint (gateways often want a "
        "vendor prefix such as 'openai/gpt-4.1')",
    )


EXHAUSTED_CODES = {
    "rate_limited": ("RATE_LIMITED", "the endpoint kept answering 429 Too Many Requests",
                     "lower max_concurrency for this endpoint, raise max_attempts or deadline_s, or ask the provider for a higher rate limit"),
    "server_error": ("SERVER_ERROR", "the endpoint kept failing with server errors (5xx)",
                     "the provider is having trouble; retry later or use another endpoint"),
    "request_timeout": ("TIMEOUT", "the endpoint kept answering 408 Request Timeout",
                        "raise timeout_s, or lower max_concurrency"),
    "conflict": ("SERVER_ERROR", "the endpoint kept answering 409 Conflict", "retry later"),
    "timeout": ("TIMEOUT", "the endpoint did not answer within timeout_s",
                "raise timeout_s (slow models and long contexts need minutes), or check the server's load"),
    "connection": ("UNREACHABLE", "the endpoint could not be reached",
                   "check the base URL's host and port, your network and any HTTP(S)_PROXY settings; run `agentrig doctor`"),
    "malformed": ("BAD_RESPONSE", "the endpoint's answers were not OpenAI-style chat completions",
                  "check that the base URL points at an OpenAI-compatible API (usually ending in /v1), not a web page or another API"),
}


def exhausted(last: Fault, attempts: int, reason: str) -> Diagnosis:
    code, what, fix = EXHAUSTED_CODES.get(last.cause, ("CHANNEL_FAILED", "the call failed", "run `agentrig doctor`"))
    detail = f" Last: {last.detail}" if last.detail else ""
    return Diagnosis(code, f"{what}; gave up after {attempts} attempt(s) ({reason}).{detail}", fix)
