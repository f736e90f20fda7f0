"""What an HTTP failure means: retried or fatal, and the diagnosis a person can act on.

Shared by the channel's retry loop and the doctor, so both speak the same codes.
"""

from __future__ import annotations

import email.utils
import errno
import json
import re
import socket
import time
from dataclasses import dataclass
from typing import Any, Mapping
from urllib.parse import urlsplit

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
_VALIDATION = re.compile(r"\b\d+ validation errors? for \w+")  # pydantic's wording (FastAPI-based servers)
_CONTEXT = re.compile(
    r"context[_ ]length[_ ]exceeded|maximum context length|context window|prompt is too long|"
    r"too many tokens|input is too long|exceeds the (?:model'?s? )?(?:maximum )?context|"
    # llama.cpp (400 exceed_context_size_error; older builds: 500 "Context size has been exceeded.")
    r"exceed_context_size|exceeds the available context size|context size has been exceeded|"
    # llama-cpp-python's own text; vLLM V1's decoder check; SGLang; Gemini; Mistral
    r"exceed context window|longer than the maximum model length|longer than the model'?s context length|"
    r"input token count .{0,40}exceeds|too large for model with \d+ maximum context length|"
    r"exceeds (?:the )?(?:maximum )?context length",
    re.I,
)
# the sizes an overflow message names: (pattern, which group is the prompt, which the window)
_SIZES = [
    (re.compile(r"request \((\d+) tokens\) exceeds the available context size \((\d+) tokens\)", re.I), 1, 2),
    (re.compile(r"requested tokens \((\d+)\) exceed context window of (\d+)", re.I), 1, 2),
    (re.compile(r"decoder prompt \(length (\d+)\) is longer than the maximum model length of (\d+)", re.I), 1, 2),
    (re.compile(r"input \((\d+) tokens\) is longer than the model'?s context length \((\d+) tokens\)", re.I), 1, 2),
    (re.compile(r"prompt is too long: (\d+) tokens > (\d+)", re.I), 1, 2),
    (re.compile(r"input token count \((\d+)\) exceeds the maximum number of tokens allowed \((\d+)\)", re.I), 1, 2),
    # vLLM / OpenAI / llama-cpp-python's server: the window first, then what was asked
    (re.compile(r"maximum context length is (\d+) tokens.{0,40}?(?:you requested|request has|resulted in) (\d+)",
                re.I), 2, 1),
]
_WINDOW_ONLY = re.compile(r"(?:maximum context length is|context (?:length|window|size)(?: of)?) \(?(\d{3,9})", re.I)
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


def _chain(exc: BaseException) -> list[BaseException]:
    """``exc`` and the exceptions it wraps (``__cause__``, else ``__context__``), outermost first."""
    out: list[BaseException] = []
    x: BaseException | None = exc
    while x is not None and all(x is not y for y in out):
        out.append(x)
        x = x.__cause__ or x.__context__
    return out


def refused(exc: BaseException) -> bool:
    """The connection was refused (nothing listens at the host and port), however the HTTP
    library wrapped it: the SDK's aiohttp transport reports it as a ``ConnectTimeout``."""
    return any(isinstance(x, ConnectionRefusedError)
               or (isinstance(x, OSError) and x.errno == errno.ECONNREFUSED) for x in _chain(exc))


def connection_detail(exc: BaseException, base_url: str) -> str:
    """A failed connection named by its root cause, not by the wrapper the HTTP library chose
    (the SDK's aiohttp transport labels a refused connection ``ConnectTimeout``): the same words
    as the doctor's for a refused connection, an unknown host, a reset or closed connection."""
    where = urlsplit(base_url)
    host, port = where.hostname or "?", where.port or (443 if where.scheme == "https" else 80)
    chain = _chain(exc)
    if refused(exc):
        return f"connection refused at {host}:{port}: nothing listens there"
    for x in chain:
        if isinstance(x, socket.gaierror):
            return f"the host name {host} could not be resolved ({x.strerror or x})"
        if isinstance(x, ConnectionResetError):
            return f"the connection to {host}:{port} was reset by the server"
        if type(x).__name__ in ("ServerDisconnectedError", "RemoteProtocolError"):
            return f"the server at {host}:{port} closed the connection without answering ({x})"
    root = chain[-1]
    return redact(f"{type(root).__name__}: {root}" if str(root) else type(root).__name__)


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
            return model_fault(status, message, model, base_url)
        return Fault("fatal", status, message, fatal=EndpointNotFound(Diagnosis(
            "BASE_URL_PATH",
            f"{base_url}/chat/completions answered 404 Not Found: the base URL's path is wrong.{said}",
            "run `agentrig doctor` with this base URL: it probes the usual mistakes (a missing or doubled /v1, "
            "a trailing /chat/completions) and names the base URL that works",
        ), status=status))
    if status == 429:
        if _QUOTA.search(codes) or _QUOTA.search(message):
            return quota_fault(status, message, "the endpoint refuses requests because the account's quota or credit "
                               "is used up.")
        return Fault("rate_limited", status, message, parse_retry_after(headers))
    if status == 408:
        return Fault("request_timeout", status, message, parse_retry_after(headers))
    if status == 409:
        return Fault("conflict", status, message, parse_retry_after(headers))
    # before the 5xx branch: an old llama.cpp answers an overflow with 500, and retrying cannot help
    if _CONTEXT.search(codes) or _CONTEXT.search(message) or status == 413:
        return Fault("fatal", status, message, fatal=context_overflow(status, body, message))
    if status >= 500 and _VALIDATION.search(message):  # a server that answers its own request validation with 5xx
        return Fault("fatal", status, message, fatal=BadRequest(Diagnosis(
            "BAD_REQUEST",
            f"the endpoint answered {status}, but its message is a validation error of the request itself "
            f"(the same request would fail again).{said}",
            "the server does not accept this request's shape: check its version and chat format, and the role's "
            "settings (tools, tool_choice, extra_body) against what it accepts",
        ), status=status))
    if status >= 500:
        return Fault("server_error", status, message, parse_retry_after(headers))
    if status == 402:
        return quota_fault(status, message, "402 Payment Required.", "add credit with the provider, or use another key")
    if _MODEL.search(codes) or (model and model in message and _MODEL.search(message)):
        return model_fault(status, message, model, base_url)
    return Fault("fatal", status, message, fatal=BadRequest(Diagnosis(
        "BAD_REQUEST",
        f"the endpoint rejected the request with {status}.{said}",
        "check the role's settings named in the message (e.g. temperature, max_tokens, extra_body, tools) "
        "against what this model accepts",
    ), status=status))


WINDOW_FIX = ("serve the model with a larger context window (llama.cpp: -c / --ctx-size; vLLM: --max-model-len; "
              "Ollama: num_ctx or OLLAMA_CONTEXT_LENGTH), use a model with a longer context, or lower max_tokens")


def overflow_sizes(body: Any, message: str) -> tuple[int | None, int | None]:
    """(prompt tokens, window) as an overflow error names them; None where it names none.
    llama.cpp gives both as fields (``n_prompt_tokens``, ``n_ctx``); the others in their text."""
    err = body.get("error", body) if isinstance(body, dict) else None
    if isinstance(err, dict) and isinstance(err.get("n_ctx"), int):
        prompt = err.get("n_prompt_tokens")
        return (prompt if isinstance(prompt, int) else None), err["n_ctx"]
    for pattern, p, w in _SIZES:
        found = pattern.search(message)
        if found:
            return int(found.group(p)), int(found.group(w))
    found = _WINDOW_ONLY.search(message)
    return None, (int(found.group(1)) if found else None)


def context_overflow(status: int, body: Any, message: str) -> ContextOverflow:
    if isinstance(body, (bytes, str)):
        try:
            body = json.loads(body)
        except (ValueError, TypeError):
            body = None
    prompt, window = overflow_sizes(body, message)
    sizes = ""
    if prompt is not None or window is not None:
        sizes = (f" ({'a request of ' + format(prompt, ',') + ' tokens' if prompt is not None else 'the request'}"
                 f"{', a window of ' + format(window, ',') + ' tokens' if window is not None else ''})")
    said = f" The server said ({status}): {message}" if message else f" The server answered {status}."
    exc = ContextOverflow(Diagnosis(
        "CONTEXT_OVERFLOW", f"the request is longer than the model's context window{sizes}.{said}", WINDOW_FIX,
    ), status=status)
    exc.prompt_tokens, exc.window = prompt, window
    return exc


def window_too_small(exc: ContextOverflow, role: str | None, trial: str) -> ContextOverflow:
    """The run-stopping form of an overflow on a role's first request of a trial: the window is
    too small for the experiment, whatever the agent does. Both sizes, as far as they are known
    (the request's own estimate: about 4 characters a token, when the server named no count)."""
    if exc.prompt_tokens is not None:
        need = f"{exc.prompt_tokens:,} tokens (the server's count)"
    elif exc.request_chars:
        need = (f"about {exc.request_chars // 4:,} tokens ({exc.request_chars:,} characters of messages and "
                "tools, at about 4 a token)")
    else:
        need = "more than the window"
    if exc.prompt_tokens is not None and exc.window is not None and exc.prompt_tokens < exc.window:
        need += " plus room for the reply (max_tokens)"
    window = f"{exc.window:,} tokens" if exc.window is not None else "not named by the server"
    who = f"role '{role}'" if role else "a role"
    out = ContextOverflow(Diagnosis(
        "CONTEXT_TOO_SMALL",
        f"the model's context window is too small for this experiment: the first request of {who} in trial "
        f"{trial} needs {need}; the window is {window}. ({exc.diagnosis.message})",
        WINDOW_FIX,
    ), status=exc.status, attempts=exc.attempts)
    out.prompt_tokens, out.window, out.request_chars, out.first = exc.prompt_tokens, exc.window, exc.request_chars, True
    return out


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


def model_fault(status: int, message: str, model: str | None, base_url: str) -> Fault:
    """The fatal fault of an answer saying the endpoint does not serve the model."""
    return Fault("fatal", status, message, fatal=ModelNotFound(model_not_found(model, base_url, message), status=status))


QUOTA_FIX = "add credit or raise the spending limit with the provider, or use another key; retrying will not help"


def quota_fault(status: int, message: str, what: str, fix: str = QUOTA_FIX) -> Fault:
    """The fatal fault of an answer saying the account's quota or credit is used up (``what``: the
    diagnosis's sentence, the server's own message added)."""
    said = f" The server said: {message}" if message else ""
    return Fault("fatal", status, message, fatal=QuotaExhausted(Diagnosis("QUOTA_EXHAUSTED", f"{what}{said}", fix),
                                                                status=status))


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
