"""Response bodies for the fake endpoint: faults, chat completions, stream chunks.

Everything here is pure (no aiohttp): the server in ``fake_endpoint`` turns the
``(status, headers, body)`` triples into responses. Bodies imitate what OpenAI-style
servers send, because ``agentrig doctor`` and the channel diagnose from them.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from ..errors import Signal

JSON_CT = "application/json"

FAULT_KINDS = frozenset({
    "unauthorized", "forbidden", "rate_limit", "quota", "server_error", "request_timeout", "conflict",
    "delay", "malformed", "not_completion", "html", "context_overflow", "bad_request", "unprocessable",
    "disconnect", "hang",
})
FAULT_TARGETS = ("chat", "models", "any")


@dataclass
class Fault:
    """One injected failure; a bare string ``"rate_limit"`` means ``Fault("rate_limit")``."""

    kind: str
    retry_after: float | None = None
    retry_after_ms: int | None = None
    status: int | None = None
    delay_s: float | None = None
    message: str | None = None
    on: str = "chat"

    def __post_init__(self) -> None:
        if self.kind not in FAULT_KINDS:
            raise ValueError(f"unknown fault kind {self.kind!r}; expected one of {sorted(FAULT_KINDS)}")
        if self.on not in FAULT_TARGETS:
            raise ValueError(f"fault {self.kind!r}: on={self.on!r}, expected one of {FAULT_TARGETS}")

    @classmethod
    def coerce(cls, value: "Fault | str | dict") -> "Fault":
        if isinstance(value, Fault):
            return value
        if isinstance(value, str):
            return cls(value)
        if isinstance(value, dict):
            return cls(**value)
        raise TypeError(f"a fault is a Fault, a kind string or a dict, not {type(value).__name__}")


def mask_key(key: str) -> str:
    """The form in which an OpenAI-style server echoes a rejected key: first 5, ``***``, last 4."""
    if len(key) <= 12:
        return key[:2] + "***"
    return f"{key[:5]}***{key[-4:]}"


def _error(message: str, type_: str, code: str | None, param: str | None = None) -> bytes:
    return json.dumps({"error": {"message": message, "type": type_, "param": param, "code": code}}).encode()


def unauthorized_body(sent_key: str | None) -> bytes:
    if not sent_key:
        return _error(
            "You didn't provide an API key. Send it in the Authorization header as "
            "'Authorization: Bearer YOUR_KEY'.", "invalid_request_error", None)
    return _error(
        f"Incorrect API key provided: {mask_key(sent_key)}. You can find your API key at "
        "https://platform.openai.com/account/api-keys.", "invalid_request_error", "invalid_api_key")


def model_not_found_body(model: str) -> bytes:
    return _error(f"The model `{model}` does not exist or you do not have access to it.",
                  "invalid_request_error", "model_not_found")


def invalid_request_body(message: str, code: str | None = None, param: str | None = None) -> bytes:
    return _error(message, "invalid_request_error", code, param)


TOOLS_REJECTED = invalid_request_body("tools is not supported by this model", "unsupported_parameter", "tools")

_SERVER_MESSAGES = {
    500: "The server had an error while processing your request. Sorry about that!",
    502: "Bad gateway: the upstream model server did not answer.",
    503: "The engine is currently overloaded, please try again later.",
    504: "Gateway timeout: the upstream model server took too long.",
}
_HTML = (b"<!DOCTYPE html>\n<html><head><title>Welcome</title></head>"
         b"<body><h1>It works!</h1><p>This is a web page, not an API.</p></body></html>\n")


def fault_response(fault: Fault, model: str, sent_key: str | None) -> tuple[int, dict[str, str], bytes, str]:
    """``(status, headers, body, content_type)`` for every kind but ``delay`` and ``disconnect``."""
    k, msg, headers = fault.kind, fault.message, {}
    if k == "unauthorized":
        status, body = 401, (_error(msg, "invalid_request_error", "invalid_api_key") if msg
                             else unauthorized_body(sent_key))
    elif k == "forbidden":
        status, body = 403, _error(msg or "You do not have permission to use this project or model.",
                                   "invalid_request_error", "permission_denied")
    elif k == "rate_limit":
        if fault.retry_after_ms is not None:
            headers["retry-after-ms"] = str(int(fault.retry_after_ms))
            wait = f"{fault.retry_after_ms / 1000:g}s"
        else:
            ra = 1 if fault.retry_after is None else fault.retry_after
            headers["Retry-After"] = f"{ra:g}"
            wait = f"{ra:g}s"
        status, body = 429, _error(
            msg or f"Rate limit reached for {model} on requests per min (RPM): Limit 60, Used 60, "
                   f"Requested 1. Please try again in {wait}.", "rate_limit_exceeded", "rate_limit_exceeded")
    elif k == "quota":
        status, body = 429, _error(
            msg or "You exceeded your current quota, please check your plan and billing details.",
            "insufficient_quota", "insufficient_quota")
    elif k == "server_error":
        status = fault.status or 500
        body = _error(msg or _SERVER_MESSAGES.get(status, "Internal server error."), "server_error", None)
    elif k == "request_timeout":
        status, body = 408, _error(msg or "Request timed out.", "timeout", None)
    elif k == "conflict":
        status, body = 409, _error(msg or "Another request is modifying this resource; retry.", "conflict", None)
    elif k == "malformed":
        return fault.status or 200, headers, b'{"id": "chatcmpl-x", "choi', JSON_CT
    elif k == "not_completion":
        return fault.status or 200, headers, b'{"status": "ok"}', JSON_CT
    elif k == "html":
        return fault.status or 200, headers, _HTML, "text/html"
    elif k == "context_overflow":
        status, body = 400, _error(
            msg or "This model's maximum context length is 8192 tokens. However, your messages resulted in "
                   "9000 tokens. Please reduce the length of the messages.",
            "invalid_request_error", "context_length_exceeded", "messages")
    elif k == "bad_request":
        status, body = 400, _error(msg or "Invalid value for 'temperature'", "invalid_request_error", None)
    elif k == "unprocessable":
        status, body = 422, json.dumps({"detail": [{
            "loc": ["body", "messages"], "msg": msg or "field required", "type": "value_error.missing"}]}).encode()
    else:  # pragma: no cover - delay/disconnect are handled by the server
        raise ValueError(f"fault {k!r} has no body")
    return fault.status or status, headers, body, JSON_CT


# ---------------------------------------------------------------- replies

_SCHEMA_DEFAULTS = {"string": "x", "integer": 1, "number": 1.0, "boolean": True, "array": [], "object": {}, "null": None}


def example_value(schema: Any) -> Any:
    """A value that satisfies the simple parts of a JSON schema (enum → first; type → a stock value)."""
    if not isinstance(schema, dict):
        return "x"
    if schema.get("enum"):
        return schema["enum"][0]
    if "const" in schema:
        return schema["const"]
    t = schema.get("type")
    if isinstance(t, list):
        t = next((x for x in t if x != "null"), t[0] if t else None)
    if t is None:
        for key in ("anyOf", "oneOf", "allOf"):
            if schema.get(key):
                return example_value(schema[key][0])
        return "x"
    if t == "object":
        return example_arguments(schema) if schema.get("required") else {}
    value = _SCHEMA_DEFAULTS.get(t, "x")
    return list(value) if isinstance(value, list) else value


def example_arguments(params: Any) -> dict:
    if not isinstance(params, dict):
        return {}
    props = params.get("properties") or {}
    return {name: example_value(props.get(name)) for name in params.get("required") or ()}


def default_reply(body: dict, tool_support: str) -> dict | str:
    """The reply with no script and no responder; a ``str`` is an error message for a 400."""
    tools = body.get("tools") or []
    choice = body.get("tool_choice")
    if not tools or tool_support != "full" or choice in (None, "auto", "none"):
        return {"content": "OK"}
    fn = None
    if isinstance(choice, dict):
        name = (choice.get("function") or {}).get("name")
        fn = next((t.get("function") for t in tools if (t.get("function") or {}).get("name") == name), None)
        if fn is None:
            return f"Invalid value for 'tool_choice': no function named `{name}` in 'tools'."
    elif choice == "required":
        fn = tools[0].get("function") or {}
    else:
        return {"content": "OK"}
    return {"content": None, "tool_calls": [{"name": fn.get("name"), "arguments": example_arguments(fn.get("parameters"))}]}


def doctor_reply(body: dict) -> dict:
    """What a scripted endpoint (gold, solution, AppWorld) answers ``agentrig doctor``'s probes with
    (role ``doctor``): what a model that calls tools answers — a tool call when tools are offered
    (the named one when forced), else "OK"."""
    tools = [t.get("function") or {} for t in body.get("tools") or [] if isinstance(t, dict)]
    choice = body.get("tool_choice")
    if not tools or choice == "none":
        return {"content": "OK"}
    fn = tools[0]
    if isinstance(choice, dict):
        name = (choice.get("function") or {}).get("name")
        fn = next((f for f in tools if f.get("name") == name), fn)
    return {"content": None, "tool_calls": [{"name": fn.get("name"), "arguments": example_arguments(fn.get("parameters"))}]}


def _chars(content: Any) -> int:
    if isinstance(content, str):
        return len(content)
    if isinstance(content, list):
        return sum(len(p.get("text") or "") for p in content if isinstance(p, dict))
    return 0


def prompt_chars(messages: Any) -> int:
    n = 0
    for m in messages if isinstance(messages, list) else ():
        if isinstance(m, dict):
            n += _chars(m.get("content"))
            for tc in m.get("tool_calls") or ():
                n += len(str(((tc or {}).get("function") or {}).get("arguments") or ""))
    return n


class ReplyError(Signal, ValueError):
    """A scripted or responder reply that is not a reply dict."""


def build_completion(reply: Any, model: str, body: dict, cid: str, created: int, next_call_id) -> dict:
    """A full ``chat.completion`` object from a reply dict (see ``FakeEndpoint.push_reply``)."""
    if not isinstance(reply, dict):
        raise ReplyError(f"a reply must be a dict, got {type(reply).__name__}")
    content = reply.get("content")
    message: dict[str, Any] = {"role": "assistant", "content": content}
    out_chars = len(content) if isinstance(content, str) else 0
    raw_calls = reply.get("tool_calls")
    if raw_calls:
        calls = []
        for tc in raw_calls:
            fn = tc.get("function") if isinstance(tc.get("function"), dict) else tc
            args = fn.get("arguments", {})
            if not isinstance(args, str):
                args = json.dumps(args)
            out_chars += len(args)
            calls.append({"id": tc.get("id") or next_call_id(), "type": "function",
                          "function": {"name": fn.get("name"), "arguments": args}})
        message["tool_calls"] = calls
    reasoning = reply.get("reasoning_content")
    reasoning_tokens = 0
    if reasoning is not None:
        message["reasoning_content"] = reasoning
        reasoning_tokens = len(reasoning) // 4
    prompt = max(1, prompt_chars(body.get("messages")) // 4)
    completion = max(1, out_chars // 4 + reasoning_tokens)
    usage = {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion,
             "prompt_tokens_details": {"cached_tokens": 0},
             "completion_tokens_details": {"reasoning_tokens": reasoning_tokens}}
    if reply.get("usage"):
        usage.update(reply["usage"])
        if "total_tokens" not in reply["usage"]:
            usage["total_tokens"] = (usage.get("prompt_tokens") or 0) + (usage.get("completion_tokens") or 0)
    finish = reply.get("finish_reason") or ("tool_calls" if raw_calls else "stop")
    return {"id": cid, "object": "chat.completion", "created": created, "model": model,
            "choices": [{"index": 0, "message": message, "logprobs": None, "finish_reason": finish}],
            "usage": usage, "system_fingerprint": "fp_agentrig_fake"}


def stream_events(completion: dict, include_usage: bool) -> list[bytes]:
    """The completion as server-sent ``chat.completion.chunk`` events, ending with ``[DONE]``."""
    choice = completion["choices"][0]
    msg = choice["message"]
    head = {"id": completion["id"], "object": "chat.completion.chunk", "created": completion["created"],
            "model": completion["model"], "system_fingerprint": completion["system_fingerprint"]}
    delta: dict[str, Any] = {"role": "assistant", "content": msg.get("content")}
    if "reasoning_content" in msg:
        delta["reasoning_content"] = msg["reasoning_content"]
    if msg.get("tool_calls"):
        delta["tool_calls"] = [dict(tc, index=i) for i, tc in enumerate(msg["tool_calls"])]
    chunks = [dict(head, choices=[{"index": 0, "delta": delta, "logprobs": None, "finish_reason": None}]),
              dict(head, choices=[{"index": 0, "delta": {}, "logprobs": None, "finish_reason": choice["finish_reason"]}])]
    if include_usage:
        chunks.append(dict(head, choices=[], usage=completion["usage"]))
    return [b"data: " + json.dumps(c).encode() + b"\n\n" for c in chunks] + [b"data: [DONE]\n\n"]
