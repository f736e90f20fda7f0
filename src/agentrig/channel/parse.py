"""Reading a chat completion body defensively: whatever an endpoint sends, we either get an
``AssistantMessage`` or a ``Malformed`` (retried as a bad response), never a crash."""

from __future__ import annotations

import json
from typing import Any

from ..errors import Signal
from ..redact import redact
from ..types import AssistantMessage, ToolCall, Usage


class Malformed(Signal):
    """The body is not an OpenAI-style chat completion."""


def _text(content: Any) -> str | None:
    if content is None or isinstance(content, str):
        return content
    if isinstance(content, list):  # content parts
        parts = [p.get("text", "") for p in content if isinstance(p, dict) and isinstance(p.get("text"), str)]
        return "".join(parts)
    return str(content)


def parse_arguments(raw: Any) -> tuple[dict | None, str, str | None]:
    """(arguments, raw text, error). Arguments that are not a JSON object become an error the
    agent loop shows to the model."""
    if isinstance(raw, dict):
        return raw, json.dumps(raw), None
    if raw is None or (isinstance(raw, str) and not raw.strip()):
        return {}, raw or "", None
    text = raw if isinstance(raw, str) else json.dumps(raw)
    try:
        value = json.loads(text)
    except ValueError as exc:
        return None, text, f"the arguments are not valid JSON ({exc.msg} at position {exc.pos})"
    if not isinstance(value, dict):
        return None, text, f"the arguments must be a JSON object, got {type(value).__name__}"
    return value, text, None


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def parse_usage(data: Any) -> Usage:
    if not isinstance(data, dict):
        return Usage(reported=False)
    prompt = _int(data.get("prompt_tokens")) or _int(data.get("input_tokens")) or 0
    completion = _int(data.get("completion_tokens")) or _int(data.get("output_tokens")) or 0
    pdet = data.get("prompt_tokens_details") or data.get("input_tokens_details") or {}
    cdet = data.get("completion_tokens_details") or data.get("output_tokens_details") or {}
    cached = _int(pdet.get("cached_tokens")) if isinstance(pdet, dict) else None
    reasoning = _int(cdet.get("reasoning_tokens")) if isinstance(cdet, dict) else None
    return Usage(prompt_tokens=prompt, completion_tokens=completion, cached_tokens=cached, reasoning_tokens=reasoning)


def load_reply(body: bytes) -> dict:
    """A reply body's JSON object (every wire's answers are one), or ``Malformed``."""
    try:
        data = json.loads(body)
    except ValueError:
        snippet = body[:120].decode("utf-8", "replace")
        raise Malformed(f"the body is not JSON: {redact(snippet)!r}") from None
    if not isinstance(data, dict):
        raise Malformed("the body is JSON but not an object")
    return data


def not_a_reply(data: dict, field: str, api: str | None = None) -> Malformed:
    """What a JSON object without the wire's reply ``field`` is: an error sent with status 200, or
    another API's answer (``api``: the one expected)."""
    if "error" in data:
        err = data["error"]
        msg = err.get("message") if isinstance(err, dict) else err
        return Malformed(f"an error came back with status 200: {redact(str(msg))[:300]}")
    expected = f": not a {api} reply" if api else ""
    return Malformed(f"no {field} in the body (keys: {', '.join(sorted(map(str, data))[:8])}){expected}")


def parse_completion(body: bytes) -> tuple[AssistantMessage, str | None, Usage, str | None]:
    """(message, finish_reason, usage, model) from a response body, or raise ``Malformed``."""
    data = load_reply(body)
    choices = data.get("choices")
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        raise not_a_reply(data, "choices")
    choice = choices[0]
    msg = choice.get("message")
    if not isinstance(msg, dict):
        raise Malformed("the first choice has no message")
    calls: list[ToolCall] = []
    raw_calls = msg.get("tool_calls") or []
    if not isinstance(raw_calls, list):
        raise Malformed("tool_calls is not a list")
    for i, tc in enumerate(raw_calls):
        fn = tc.get("function") if isinstance(tc, dict) else None
        if not isinstance(fn, dict) or not isinstance(fn.get("name"), str):
            raise Malformed(f"tool call {i} has no function name")
        args, raw, err = parse_arguments(fn.get("arguments"))
        calls.append(ToolCall(id=str(tc.get("id") or f"call_{i}"), name=fn["name"], arguments=args,
                              arguments_raw=raw, arguments_error=err))
    reasoning = msg.get("reasoning_content")
    if not isinstance(reasoning, str):
        reasoning = msg.get("reasoning") if isinstance(msg.get("reasoning"), str) else None
    # provider fields to send back with the message, under the name they came in
    extra = {k: msg[k] for k in ("reasoning_details",) if msg.get(k) is not None}
    if isinstance(msg.get("reasoning"), str) and not isinstance(msg.get("reasoning_content"), str):
        extra["reasoning"] = msg["reasoning"]
    message = AssistantMessage(content=_text(msg.get("content")), tool_calls=calls, reasoning=reasoning, extra=extra)
    finish = choice.get("finish_reason")
    model = data.get("model") if isinstance(data.get("model"), str) else None
    return message, finish if isinstance(finish, str) else None, parse_usage(data.get("usage")), model
