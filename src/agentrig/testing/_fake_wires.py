"""The fake endpoint's other wires: ``POST {prefix}/responses`` (OpenAI Responses API) and
``POST {prefix}/messages`` (Anthropic Messages API; with the usual ``/v1`` prefix that is the
``/v1/messages`` the Anthropic SDK posts to).

Each request is turned into the chat completions body it means and answered by the endpoint's
own chat logic (faults, delay, scripted replies, the responder — so the gold and solution
endpoints answer in every wire), then the answer is put in the wire's shape: output items or
content blocks, the wire's usage fields, its error bodies (Anthropic's ``{"type": "error",
"error": {"type": "authentication_error" | "not_found_error" | "rate_limit_error" |
"overloaded_error" …}}``; a 529 fault is Anthropic's overloaded).

What the real APIs enforce and the channel must respect, the fake enforces too (400 otherwise):
Anthropic — ``x-api-key`` (or a Bearer key), ``anthropic-version``, ``max_tokens``, a user turn
first, each ``thinking`` block sent back with the signature this server gave it, and with
thinking on, a tool-use turn continued only with its thinking block first; Responses — a
``reasoning`` item sent back must be one this server gave out, followed by its next item.
A scripted reply's ``reasoning_content`` comes back as a reasoning item / a thinking block; its
``usage`` may set ``cache_read_input_tokens`` / ``cache_creation_input_tokens``.
"""

from __future__ import annotations

import hashlib
import json
import time
from functools import partial
from typing import Any

from aiohttp import web

_SECRET = b"agentrig-fake-thinking"
_UNPARSEABLE = object()
_ANTHROPIC_ERRORS = {400: "invalid_request_error", 401: "authentication_error", 403: "permission_error",
                     404: "not_found_error", 413: "request_too_large", 429: "rate_limit_error",
                     500: "api_error", 529: "overloaded_error"}


def signature(thinking: str) -> str:
    return hashlib.sha256(_SECRET + thinking.encode()).hexdigest()


def add_wire_routes(app: web.Application, ep: Any, request_headers: Any) -> dict[str, str]:
    """Routes for ``ep`` (a FakeEndpoint); returns {path: method} for its 405 answers.
    ``request_headers``: the server's ``REQUEST_HEADERS`` context variable, set for the responder."""
    paths = {ep.prefix + "/responses": "responses", ep.prefix + "/messages": "anthropic"}
    paths = {path: wire for path, wire in paths.items() if wire in ep.wires}
    for path, wire in paths.items():
        app.router.add_post(path, partial(_handle, ep, wire, request_headers))
    return {path: "POST" for path in paths}


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(p.get("text") or "" for p in content if isinstance(p, dict) and isinstance(p.get("text"), str))
    return ""


def _chat_tool(name: Any, description: Any, parameters: Any) -> dict:
    return {"type": "function", "function": {"name": name, "description": description or "",
                                             "parameters": parameters or {"type": "object", "properties": {}}}}


# ---------------------------------------------------------------------------- Responses
def _responses_problem(ep: Any, body: dict) -> str | None:
    items = body.get("input") if isinstance(body.get("input"), list) else []
    issued = getattr(ep, "_reasoning_ids", set())
    for i, item in enumerate(items):
        if isinstance(item, dict) and item.get("type") == "reasoning":
            if item.get("id") not in issued:
                return f"Item with id '{item.get('id')}' not found."
            nxt = items[i + 1] if i + 1 < len(items) else None
            if not isinstance(nxt, dict) or nxt.get("type") not in ("message", "function_call", "reasoning") or not nxt.get("id"):
                return (f"Item '{item.get('id')}' of type 'reasoning' was provided without its required following item.")
    return None


def responses_to_chat(body: dict) -> dict:
    messages: list[dict] = []
    if body.get("instructions"):
        messages.append({"role": "system", "content": body["instructions"]})
    items = body.get("input")
    if isinstance(items, str):
        items = [{"role": "user", "content": items}]
    for item in items if isinstance(items, list) else ():
        kind = item.get("type", "message") if isinstance(item, dict) else None
        last = messages[-1] if messages else None
        if kind == "message":
            role = "system" if item.get("role") == "developer" else item.get("role")
            text = _text(item.get("content"))
            if role == "assistant" and last and last["role"] == "assistant" and last.get("tool_calls") is None and not last["content"]:
                last["content"] = text
            else:
                messages.append({"role": role, "content": text})
        elif kind == "function_call":
            call = {"id": item.get("call_id"), "type": "function",
                    "function": {"name": item.get("name"), "arguments": item.get("arguments") or "{}"}}
            if last and last["role"] == "assistant":
                last.setdefault("tool_calls", []).append(call)
            else:
                messages.append({"role": "assistant", "content": None, "tool_calls": [call]})
        elif kind == "function_call_output":
            messages.append({"role": "tool", "tool_call_id": item.get("call_id"), "content": _text(item.get("output"))})
    out: dict[str, Any] = {"model": body.get("model"), "messages": messages}
    if body.get("tools"):
        out["tools"] = [_chat_tool(t.get("name"), t.get("description"), t.get("parameters")) for t in body["tools"]]
    choice = body.get("tool_choice")
    if isinstance(choice, dict):
        out["tool_choice"] = {"type": "function", "function": {"name": choice.get("name")}}
    elif choice is not None:
        out["tool_choice"] = choice
    for src, dst in (("temperature", "temperature"), ("max_output_tokens", "max_tokens"),
                     ("parallel_tool_calls", "parallel_tool_calls")):
        if body.get(src) is not None:
            out[dst] = body[src]
    return out


def chat_to_responses(ep: Any, completion: dict) -> dict:
    choice, usage = completion["choices"][0], completion.get("usage") or {}
    msg, n = choice["message"], completion["id"].removeprefix("chatcmpl-")
    output: list[dict] = []
    if msg.get("reasoning_content") is not None:
        rid = f"rs_{n}"
        if not hasattr(ep, "_reasoning_ids"):
            ep._reasoning_ids = set()
        ep._reasoning_ids.add(rid)
        output.append({"type": "reasoning", "id": rid, "summary": [{"type": "summary_text", "text": msg["reasoning_content"]}]})
    if msg.get("content"):
        output.append({"type": "message", "id": f"msg_{n}", "role": "assistant", "status": "completed",
                       "content": [{"type": "output_text", "text": msg["content"], "annotations": []}]})
    for i, tc in enumerate(msg.get("tool_calls") or ()):
        output.append({"type": "function_call", "id": f"fc_{n}_{i}", "call_id": tc["id"], "status": "completed",
                       "name": tc["function"]["name"], "arguments": tc["function"]["arguments"]})
    incomplete = choice.get("finish_reason") == "length"
    return {"id": f"resp_{n}", "object": "response", "created_at": completion["created"], "model": completion["model"],
            "status": "incomplete" if incomplete else "completed", "error": None,
            "incomplete_details": {"reason": "max_output_tokens"} if incomplete else None, "output": output,
            "usage": {"input_tokens": usage.get("prompt_tokens", 0),
                      "input_tokens_details": usage.get("prompt_tokens_details") or {"cached_tokens": 0},
                      "output_tokens": usage.get("completion_tokens", 0),
                      "output_tokens_details": usage.get("completion_tokens_details") or {"reasoning_tokens": 0},
                      "total_tokens": usage.get("total_tokens", 0)}}


# ---------------------------------------------------------------------------- Anthropic
def _anthropic_problem(request: web.Request, body: dict) -> str | None:
    if not request.headers.get("anthropic-version"):
        return "anthropic-version: header is required"
    if not isinstance(body.get("max_tokens"), int):
        return "max_tokens: Field required"
    turns = body.get("messages")
    if not isinstance(turns, list) or not turns:
        return "messages: Field required"
    if not isinstance(turns[0], dict) or turns[0].get("role") != "user":
        return 'messages: first message must use the "user" role'
    for i, turn in enumerate(turns):
        blocks = turn.get("content") if isinstance(turn, dict) else None
        for j, b in enumerate(blocks if isinstance(blocks, list) else ()):
            if isinstance(b, dict) and b.get("type") == "thinking" and b.get("signature") != signature(b.get("thinking") or ""):
                return f"messages.{i}.content.{j}: Invalid `signature` in `thinking` block"
            if isinstance(b, dict) and b.get("type") == "text" and not b.get("text"):
                return f"messages.{i}.content.{j}: text content blocks must be non-empty"
    thinking_on = isinstance(body.get("thinking"), dict) and body["thinking"].get("type") == "enabled"
    last = next((t for t in reversed(turns) if t.get("role") == "assistant"), None)
    if thinking_on and last and isinstance(last.get("content"), list) and last["content"]:
        kinds = [b.get("type") for b in last["content"] if isinstance(b, dict)]
        if "tool_use" in kinds and kinds[0] not in ("thinking", "redacted_thinking"):
            return ("messages: Expected `thinking` or `redacted_thinking`, but found `%s`. When `thinking` is enabled, "
                    "a final `assistant` message must start with a thinking block." % kinds[0])
    return None


def anthropic_to_chat(body: dict) -> dict:
    messages: list[dict] = []
    system = body.get("system")
    if system:
        messages.append({"role": "system", "content": _text(system)})
    for turn in body.get("messages") or ():
        blocks = turn.get("content")
        if isinstance(blocks, str):
            blocks = [{"type": "text", "text": blocks}]
        if turn.get("role") == "assistant":
            text = "".join(b.get("text") or "" for b in blocks if b.get("type") == "text")
            calls = [{"id": b.get("id"), "type": "function",
                      "function": {"name": b.get("name"), "arguments": json.dumps(b.get("input") or {})}}
                     for b in blocks if b.get("type") == "tool_use"]
            messages.append({"role": "assistant", "content": text or None, **({"tool_calls": calls} if calls else {})})
            continue
        for b in blocks:
            if b.get("type") == "tool_result":
                messages.append({"role": "tool", "tool_call_id": b.get("tool_use_id"), "content": _text(b.get("content"))})
        text = "".join(b.get("text") or "" for b in blocks if b.get("type") == "text")
        if text:
            messages.append({"role": "user", "content": text})
    out: dict[str, Any] = {"model": body.get("model"), "messages": messages, "max_tokens": body.get("max_tokens")}
    if body.get("tools"):
        out["tools"] = [_chat_tool(t.get("name"), t.get("description"), t.get("input_schema")) for t in body["tools"]]
    choice = body.get("tool_choice")
    if isinstance(choice, dict):
        kind = choice.get("type")
        out["tool_choice"] = ({"type": "function", "function": {"name": choice.get("name")}} if kind == "tool"
                              else {"auto": "auto", "any": "required", "none": "none"}.get(kind, "auto"))
        if choice.get("disable_parallel_tool_use"):
            out["parallel_tool_calls"] = False
    if body.get("temperature") is not None:
        out["temperature"] = body["temperature"]
    return out


def chat_to_anthropic(completion: dict) -> dict:
    choice, usage = completion["choices"][0], completion.get("usage") or {}
    msg = choice["message"]
    content: list[dict] = []
    if msg.get("reasoning_content") is not None:
        content.append({"type": "thinking", "thinking": msg["reasoning_content"], "signature": signature(msg["reasoning_content"])})
    if msg.get("content"):
        content.append({"type": "text", "text": msg["content"]})
    for tc in msg.get("tool_calls") or ():
        try:
            args = json.loads(tc["function"]["arguments"] or "{}")
        except ValueError:
            args = {}
        content.append({"type": "tool_use", "id": tc["id"], "name": tc["function"]["name"], "input": args})
    read, write = usage.get("cache_read_input_tokens", 0), usage.get("cache_creation_input_tokens", 0)
    stop = {"tool_calls": "tool_use", "length": "max_tokens"}.get(choice.get("finish_reason"), "end_turn")
    return {"id": "msg_" + completion["id"].removeprefix("chatcmpl-"), "type": "message", "role": "assistant",
            "model": completion["model"], "content": content, "stop_reason": stop, "stop_sequence": None,
            "usage": {"input_tokens": max(0, usage.get("prompt_tokens", 0) - read - write),
                      "cache_creation_input_tokens": write, "cache_read_input_tokens": read,
                      "output_tokens": usage.get("completion_tokens", 0)}}


def anthropic_error(status: int, body: bytes, model: str) -> bytes:
    try:
        err = json.loads(body).get("error") or {}
    except (ValueError, AttributeError):
        return body  # not JSON (a malformed or HTML fault): as is
    kind = _ANTHROPIC_ERRORS.get(status, "api_error" if status >= 500 else "invalid_request_error")
    message = err.get("message") if isinstance(err, dict) else str(err)
    if status == 401:
        message = "invalid x-api-key"
    elif status == 404 and isinstance(err, dict) and err.get("code") == "model_not_found":
        message = f"model: {model}"
    elif status == 529:
        message = "Overloaded"
    return json.dumps({"type": "error", "error": {"type": kind, "message": message}}).encode()


# ---------------------------------------------------------------------------- handler
async def _handle(ep: Any, wire: str, request_headers: Any, request: web.Request) -> web.StreamResponse:
    ep.chat_count += 1
    t0 = ep._enter()
    body: Any = None
    auth_ok, status = False, None
    try:
        raw = await request.read()
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = _UNPARSEABLE  # the chat logic answers any non-object body with its 400
        sent, auth_ok = ep._sent_key(request)
        request_headers.set(request.headers)
        model = body.get("model") if isinstance(body, dict) else ""
        chat_body: Any = body
        if isinstance(body, dict) and auth_ok:
            problem = _anthropic_problem(request, body) if wire == "anthropic" else _responses_problem(ep, body)
            if problem:
                resp = ep._json(400, json.dumps({"error": {"message": problem, "type": "invalid_request_error"}}).encode())
                status = 400
                return _reshape(resp, wire, model, ep)
            chat_body = anthropic_to_chat(body) if wire == "anthropic" else responses_to_chat(body)
        resp = await ep._chat_inner(request, chat_body, sent, auth_ok)
        if not isinstance(resp, web.StreamResponse):  # the chat logic dropped the connection
            return web.Response()
        resp = _reshape(resp, wire, model if isinstance(model, str) else "", ep)
        status = resp.status
        return resp
    finally:
        ep.in_flight -= 1
        if ep.recording:
            ep._record(request, None if body is _UNPARSEABLE else body, auth_ok, t0, status)


def _reshape(resp: web.StreamResponse, wire: str, model: str, ep: Any) -> web.StreamResponse:
    if not isinstance(resp, web.Response) or resp.body is None:
        return resp
    data = resp.body if isinstance(resp.body, bytes) else bytes(resp.body)
    headers = {k: v for k, v in resp.headers.items() if k.lower() in ("retry-after", "retry-after-ms", "x-request-id")}
    if resp.status != 200:
        if wire == "anthropic":
            data = anthropic_error(resp.status, data, model)
        return web.Response(status=resp.status, body=data, content_type=resp.content_type, headers=headers)
    try:
        completion = json.loads(data)
        out = chat_to_anthropic(completion) if wire == "anthropic" else chat_to_responses(ep, completion)
    except (ValueError, KeyError, TypeError, IndexError, AttributeError):
        return resp  # a malformed-body fault: as is
    if wire == "anthropic":
        headers["request-id"] = "req_fake_" + str(int(time.time() * 1000))
    return web.Response(status=200, body=json.dumps(out).encode(), content_type="application/json", headers=headers)
