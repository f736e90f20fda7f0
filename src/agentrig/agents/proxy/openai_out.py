"""The answer to an agent in OpenAI's two wires, from the channel's ``Completion``: Chat Completions
(a ``chat.completion``, or ``chat.completion.chunk`` events ending with ``data: [DONE]``) and
Responses (a ``response`` object, or its typed events, each ``event:`` + ``data:`` with a
``sequence_number``), as OpenAI's servers send them; and OpenAI's error body.

A whole reply is in hand when the answer starts (the proxy never streams its upstream call), so each
text, reasoning text and argument string goes out as one delta.
"""

from __future__ import annotations

import json
import time
from typing import Any

from agentrig.types import Completion

_FINISH = {"stop", "tool_calls", "length", "content_filter"}


def dumps(data: Any) -> str:
    return json.dumps(data, ensure_ascii=False, separators=(",", ":"))


def error_body(status: int, message: str, kind: str, code: str | None) -> bytes:
    return dumps({"error": {"message": message, "type": kind, "param": None, "code": code}}).encode()


def arguments(call: Any) -> str:
    return call.arguments_raw if call.arguments_raw.strip() else dumps(call.arguments or {})


# ------------------------------------------------------------------------------------ chat
def chat_usage(done: Completion) -> dict:
    u = done.usage
    return {"prompt_tokens": u.prompt_tokens, "completion_tokens": u.completion_tokens, "total_tokens": u.total_tokens,
            "prompt_tokens_details": {"cached_tokens": u.cached_tokens or 0},
            "completion_tokens_details": {"reasoning_tokens": u.reasoning_tokens or 0}}


def _chat_finish(done: Completion) -> str:
    finish = done.finish_reason
    if finish in _FINISH:
        return finish
    return "tool_calls" if done.message.tool_calls else "stop"


def chat_json(done: Completion, model: str, rid: str) -> bytes:
    m = done.message
    message: dict[str, Any] = {"role": "assistant", "content": m.content if m.content or not m.tool_calls else None,
                               "refusal": None}
    if m.tool_calls:
        message["tool_calls"] = [{"id": c.id, "type": "function", "function": {"name": c.name, "arguments": arguments(c)}}
                                 for c in m.tool_calls]
    if m.reasoning:
        message["reasoning_content"] = m.reasoning
    return dumps({"id": rid, "object": "chat.completion", "created": int(time.time()), "model": model,
                  "choices": [{"index": 0, "message": message, "logprobs": None, "finish_reason": _chat_finish(done)}],
                  "usage": chat_usage(done), "system_fingerprint": None}).encode()


def chat_events(done: Completion, model: str, rid: str, include_usage: bool) -> list[bytes]:
    m = done.message
    head = '{"id":%s,"object":"chat.completion.chunk","created":%d,"model":%s,"system_fingerprint":null,' % (
        dumps(rid), int(time.time()), dumps(model))
    tail = ',"usage":null}' if include_usage else "}"

    def chunk(delta: dict, finish: str | None = None) -> bytes:
        choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}
        return b"data: " + (head + '"choices":[' + dumps(choice) + "]" + tail).encode() + b"\n\n"

    out = [chunk({"role": "assistant", "content": "", "refusal": None})]
    if m.reasoning:
        out.append(chunk({"reasoning_content": m.reasoning}))
    if m.content:
        out.append(chunk({"content": m.content}))
    for i, c in enumerate(m.tool_calls):
        out.append(chunk({"tool_calls": [{"index": i, "id": c.id, "type": "function",
                                          "function": {"name": c.name, "arguments": ""}}]}))
        out.append(chunk({"tool_calls": [{"index": i, "function": {"arguments": arguments(c)}}]}))
    out.append(chunk({}, _chat_finish(done)))
    if include_usage:
        out.append(b"data: " + (head + '"choices":[],"usage":' + dumps(chat_usage(done)) + "}").encode() + b"\n\n")
    out.append(b"data: [DONE]\n\n")
    return out


# ------------------------------------------------------------------------------- responses
def responses_usage(done: Completion) -> dict:
    u = done.usage
    return {"input_tokens": u.prompt_tokens,
            "input_tokens_details": {"cached_tokens": u.cached_tokens or 0, "cache_write_tokens": u.cache_write_tokens or 0},
            "output_tokens": u.completion_tokens,
            "output_tokens_details": {"reasoning_tokens": u.reasoning_tokens or 0}, "total_tokens": u.total_tokens}


def responses_items(done: Completion, rid: str, custom: frozenset[str],
                    namespaced: dict[str, tuple[str, str]] | None = None) -> list[dict]:
    """The reply's output items: reasoning (its text as a summary), the message, the calls (a call
    to a custom tool as a ``custom_tool_call`` whose input is the ``input`` argument; a call of a
    namespaced function, offered as ``<namespace>__<name>``, with its ``namespace`` and ``name``)."""
    m, n = done.message, rid.removeprefix("resp_")
    items: list[dict] = []
    if m.reasoning:
        items.append({"id": f"rs_{n}", "type": "reasoning", "summary": [{"type": "summary_text", "text": m.reasoning}]})
    if m.content:
        items.append({"id": f"msg_{n}", "type": "message", "role": "assistant", "status": "completed",
                      "content": [{"type": "output_text", "text": m.content, "annotations": [], "logprobs": []}]})
    for i, c in enumerate(m.tool_calls):
        if c.name in custom:
            text = (c.arguments or {}).get("input") if isinstance(c.arguments, dict) else None
            items.append({"id": f"ctc_{n}_{i}", "type": "custom_tool_call", "status": "completed", "call_id": c.id,
                          "name": c.name, "input": text if isinstance(text, str) else arguments(c)})
        else:
            item = {"id": f"fc_{n}_{i}", "type": "function_call", "status": "completed", "call_id": c.id,
                    "name": c.name, "arguments": arguments(c)}
            space = (namespaced or {}).get(c.name)
            if space is not None:
                item["namespace"], item["name"] = space
            items.append(item)
    return items


def _response(rid: str, model: str, created: int, status: str, output: list[dict], done: Completion | None) -> dict:
    incomplete = None
    if status == "incomplete" and done is not None:
        incomplete = {"reason": "content_filter" if done.finish_reason == "content_filter" else "max_output_tokens"}
    return {"id": rid, "object": "response", "created_at": created, "status": status, "error": None,
            "incomplete_details": incomplete, "instructions": None, "max_output_tokens": None, "model": model,
            "output": output, "parallel_tool_calls": True, "previous_response_id": None, "reasoning": None,
            "store": False, "temperature": None, "text": {"format": {"type": "text"}}, "tool_choice": "auto",
            "tools": [], "top_p": None, "truncation": "disabled",
            "usage": responses_usage(done) if done is not None and status != "in_progress" else None,
            "metadata": {}}


def _status(done: Completion) -> str:
    return "incomplete" if done.finish_reason in ("length", "content_filter") else "completed"


def responses_json(done: Completion, model: str, rid: str, custom: frozenset[str],
                   namespaced: dict[str, tuple[str, str]] | None = None) -> bytes:
    items = responses_items(done, rid, custom, namespaced)
    return dumps(_response(rid, model, int(time.time()), _status(done), items, done)).encode()


def _started(item: dict) -> dict:
    kind = item["type"]
    if kind == "message":
        return dict(item, status="in_progress", content=[])
    if kind == "reasoning":
        return dict(item, summary=[])
    if kind == "function_call":
        return dict(item, status="in_progress", arguments="")
    return dict(item, status="in_progress", input="")


def responses_events(done: Completion, model: str, rid: str, custom: frozenset[str],
                     namespaced: dict[str, tuple[str, str]] | None = None) -> list[bytes]:
    created, items = int(time.time()), responses_items(done, rid, custom, namespaced)
    out: list[bytes] = []

    def event(kind: str, **data: Any) -> None:
        data = {"type": kind, "sequence_number": len(out), **data}
        out.append(b"event: " + kind.encode() + b"\ndata: " + dumps(data).encode() + b"\n\n")

    event("response.created", response=_response(rid, model, created, "in_progress", [], None))
    event("response.in_progress", response=_response(rid, model, created, "in_progress", [], None))
    for i, item in enumerate(items):
        at = {"item_id": item["id"], "output_index": i}
        event("response.output_item.added", output_index=i, item=_started(item))
        kind = item["type"]
        if kind == "message":
            part = item["content"][0]
            event("response.content_part.added", **at, content_index=0,
                  part={"type": "output_text", "text": "", "annotations": [], "logprobs": []})
            event("response.output_text.delta", **at, content_index=0, delta=part["text"], logprobs=[])
            event("response.output_text.done", **at, content_index=0, text=part["text"], logprobs=[])
            event("response.content_part.done", **at, content_index=0, part=part)
        elif kind == "reasoning":
            text = item["summary"][0]["text"]
            event("response.reasoning_summary_part.added", **at, summary_index=0, part={"type": "summary_text", "text": ""})
            event("response.reasoning_summary_text.delta", **at, summary_index=0, delta=text)
            event("response.reasoning_summary_text.done", **at, summary_index=0, text=text)
            event("response.reasoning_summary_part.done", **at, summary_index=0, part={"type": "summary_text", "text": text})
        elif kind == "function_call":
            event("response.function_call_arguments.delta", **at, delta=item["arguments"])
            event("response.function_call_arguments.done", **at, name=item["name"], arguments=item["arguments"])
        else:
            event("response.custom_tool_call_input.delta", **at, delta=item["input"])
            event("response.custom_tool_call_input.done", **at, input=item["input"])
        event("response.output_item.done", output_index=i, item=item)
    status = _status(done)
    event("response.completed" if status == "completed" else "response.incomplete",
          response=_response(rid, model, created, status, items, done))
    return out
