"""The answer to an agent in Anthropic's Messages wire, from the channel's ``Completion``: a
``message`` object, or the stream Anthropic's servers send (``message_start``, ``ping``,
``content_block_start`` / ``content_block_delta`` (``thinking_delta`` + ``signature_delta``,
``text_delta``, ``input_json_delta``) / ``content_block_stop`` per block, ``message_delta`` with the
stop reason and usage, ``message_stop``); Anthropic's error body; its model listing.

Thinking: the upstream's own ``thinking`` blocks (an Anthropic endpoint's, with their signatures)
when the reply has them, else the reply's reasoning text as a thinking block signed by the proxy
(an agent sends it back; the proxy replaces it with the upstream's own: ``server.py``).
"""

from __future__ import annotations

import hashlib

from agentrig.types import Completion

from .openai_out import dumps

STOP = {"stop": "end_turn", "tool_calls": "tool_use", "length": "max_tokens", "content_filter": "refusal"}
ERRORS = {400: "invalid_request_error", 401: "authentication_error", 402: "billing_error", 403: "permission_error",
          404: "not_found_error", 413: "request_too_large", 429: "rate_limit_error", 500: "api_error",
          502: "api_error", 503: "api_error", 529: "overloaded_error"}


def error_body(status: int, message: str) -> bytes:
    kind = ERRORS.get(status, "api_error" if status >= 500 else "invalid_request_error")
    return dumps({"type": "error", "error": {"type": kind, "message": message}}).encode()


def usage(done: Completion) -> dict:
    u = done.usage
    read, write = u.cached_tokens or 0, u.cache_write_tokens or 0
    return {"input_tokens": max(0, u.prompt_tokens - read - write), "cache_creation_input_tokens": write,
            "cache_read_input_tokens": read, "output_tokens": u.completion_tokens}


def _stop(done: Completion) -> str:
    if done.finish_reason in STOP:
        return STOP[done.finish_reason]
    return "tool_use" if done.message.tool_calls else "end_turn"


def blocks(done: Completion) -> list[dict]:
    m = done.message
    out: list[dict] = []
    kept = [b for b in m.extra.get("thinking_blocks") or () if isinstance(b, dict)]
    if kept:
        out.extend(dict(b) for b in kept)
    elif m.reasoning:
        out.append({"type": "thinking", "thinking": m.reasoning,
                    "signature": hashlib.sha256(b"agentrig-proxy:" + m.reasoning.encode()).hexdigest()})
    if m.content or not (m.tool_calls or out):
        out.append({"type": "text", "text": m.content or ""})
    for c in m.tool_calls:
        out.append({"type": "tool_use", "id": c.id, "name": c.name,
                    "input": c.arguments if isinstance(c.arguments, dict) else {}})
    return out


def _message(done: Completion, model: str, mid: str, content: list[dict], final: bool) -> dict:
    u = usage(done)
    if not final:
        u = dict(u, output_tokens=1)
    return {"id": mid, "type": "message", "role": "assistant", "model": model, "content": content,
            "stop_reason": _stop(done) if final else None, "stop_sequence": None, "usage": u}


def message_json(done: Completion, model: str, mid: str) -> bytes:
    return dumps(_message(done, model, mid, blocks(done), True)).encode()


def _event(kind: str, data: dict) -> bytes:
    return b"event: " + kind.encode() + b"\ndata: " + dumps({"type": kind, **data}).encode() + b"\n\n"


def _input_json(block: dict) -> str:
    return dumps(block["input"]) if block["input"] else ""


def message_events(done: Completion, model: str, mid: str) -> list[bytes]:
    out = [_event("message_start", {"message": _message(done, model, mid, [], False)}), _event("ping", {})]
    for i, b in enumerate(blocks(done)):
        kind = b["type"]
        if kind == "thinking":
            out.append(_event("content_block_start", {"index": i, "content_block": {"type": "thinking", "thinking": "", "signature": ""}}))
            out.append(_event("content_block_delta", {"index": i, "delta": {"type": "thinking_delta", "thinking": b.get("thinking") or ""}}))
            out.append(_event("content_block_delta", {"index": i, "delta": {"type": "signature_delta", "signature": b.get("signature") or ""}}))
        elif kind == "text":
            out.append(_event("content_block_start", {"index": i, "content_block": {"type": "text", "text": ""}}))
            out.append(_event("content_block_delta", {"index": i, "delta": {"type": "text_delta", "text": b["text"]}}))
        elif kind == "tool_use":
            out.append(_event("content_block_start", {"index": i, "content_block": dict(b, input={})}))
            out.append(_event("content_block_delta", {"index": i, "delta": {"type": "input_json_delta",
                                                                             "partial_json": _input_json(b)}}))
        else:  # redacted_thinking: whole in its start event
            out.append(_event("content_block_start", {"index": i, "content_block": b}))
        out.append(_event("content_block_stop", {"index": i}))
    u = usage(done)
    out.append(_event("message_delta", {"delta": {"stop_reason": _stop(done), "stop_sequence": None}, "usage": u}))
    out.append(_event("message_stop", {}))
    return out


def models_body(model: str) -> bytes:
    info = {"type": "model", "id": model, "display_name": model, "created_at": "2024-01-01T00:00:00Z"}
    return dumps({"data": [info], "has_more": False, "first_id": model, "last_id": model}).encode()


def model_body(model: str) -> bytes:
    return dumps({"type": "model", "id": model, "display_name": model, "created_at": "2024-01-01T00:00:00Z"}).encode()
