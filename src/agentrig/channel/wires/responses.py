"""``wire = "responses"``: the OpenAI Responses API (``POST {base_url}/responses``) through the
official SDK's client (the channel's: retries off, same pool, its auth and error classes). The
body is built here and posted as is, as the chat wire does: ``client.responses.create`` walks
the whole typed ``input`` of every request, about 8x the chat wire's client CPU per agent step
(perf/wire_overhead.py), which bounds a run with many trials in flight.

What maps to what (the channel keeps chat-style messages; see docs/channel.md):

- ``system``/``user`` messages → input messages of that role, in place; ``assistant`` text → an
  assistant input message; its ``tool_calls`` → ``function_call`` items (``call_id``, name,
  arguments); ``tool`` messages → ``function_call_output`` items;
- a reply's ``reasoning`` items (with their summaries) are kept in the message's
  ``extra["reasoning_items"]`` together with the items that followed them (the API wants a
  reasoning item sent back with its following item, by id): when the assistant message comes
  back unchanged they are sent back verbatim; an edited message (e.g. an elided one) is sent as
  plain items without its reasoning;
- tools → flat ``{"type": "function", "name", "description", "parameters", "strict": false}``;
  ``tool_choice`` "auto"/"required"/"none" as is, a named one as ``{"type": "function", "name"}``;
  ``max_tokens`` → ``max_output_tokens``; ``temperature`` and ``parallel_tool_calls`` as is;
  ``seed`` is not sent (the API has none); ``extra_body`` is merged into the request;
- usage: ``input_tokens`` (+ ``input_tokens_details.cached_tokens``), ``output_tokens``
  (+ ``output_tokens_details.reasoning_tokens``);
- finish: ``completed`` → ``stop`` or ``tool_calls``; ``incomplete`` for ``max_output_tokens``
  → ``length``, for ``content_filter`` → ``content_filter``; ``failed`` → a bad response (retried).
"""

from __future__ import annotations

from typing import Any

import openai
import openai._response as _sdk_response

from agentrig.config import ResolvedRole
from agentrig.redact import redact
from agentrig.types import AssistantMessage, ToolCall, Usage
from agentrig.channel.parse import Malformed, load_reply, not_a_reply, parse_arguments, parse_usage
from agentrig.channel import body
from agentrig.channel.faults import Fault
from agentrig.channel.wires.common import classify_api, text_of

PATH = "/responses"
MODELS = "openai"  # how its servers list their models (the doctor's models check): GET {base}/models, OpenAI's list
STATUS = openai.APIStatusError
TIMEOUT = (openai.APITimeoutError,)
CONNECTION = openai.APIConnectionError
# the HTTP library's Response class the SDK is built on (as in client.py)
_RAW = (getattr(_sdk_response, "httpx2", None) or getattr(_sdk_response, "httpx")).Response


# ------------------------------------------------------------------------------ request
def _fresh_items(text: str, calls: list[dict]) -> list[dict]:
    items: list[dict] = []
    if text:
        items.append({"role": "assistant", "content": text})
    for c in calls:
        fn = c.get("function") or {}
        items.append({"type": "function_call", "call_id": str(c.get("id") or ""), "name": fn.get("name") or "",
                      "arguments": fn.get("arguments") or "{}"})
    return items


def _unchanged(stored: list, text: str, calls: list[dict]) -> bool:
    """The stored output items say exactly what the assistant message says now."""
    said = "".join(p.get("text") or "" for i in stored if isinstance(i, dict) and i.get("type") == "message"
                   for p in i.get("content") or () if isinstance(p, dict))
    made = [(i.get("call_id"), i.get("arguments")) for i in stored if isinstance(i, dict) and i.get("type") == "function_call"]
    now = [(str(c.get("id") or ""), (c.get("function") or {}).get("arguments") or "{}") for c in calls]
    return said == text and made == now


def assistant_items(m: dict) -> list[dict]:
    text = text_of(m.get("content"))
    calls = [c for c in m.get("tool_calls") or () if isinstance(c, dict)]
    stored = m.get("reasoning_items")
    if isinstance(stored, list) and stored and _unchanged(stored, text, calls):
        return [dict(i) for i in stored]
    return _fresh_items(text, calls) or [{"role": "assistant", "content": ""}]


def to_input(messages: list[dict]) -> list[dict]:
    items: list[dict] = []
    for m in messages:
        role = m.get("role")
        if role == "assistant":
            items.extend(assistant_items(m))
        elif role == "tool":
            items.append({"type": "function_call_output", "call_id": str(m.get("tool_call_id") or ""),
                          "output": text_of(m.get("content"))})
        else:  # system, developer, user
            items.append({"role": role if role in ("system", "developer") else "user", "content": text_of(m.get("content"))})
    return items


def to_tool(t: dict) -> dict:
    fn = t.get("function") or {}
    tool = {"type": "function", "name": fn.get("name") or "", "parameters": fn.get("parameters") or
            {"type": "object", "properties": {}}, "strict": False}
    if fn.get("description"):
        tool["description"] = fn["description"]
    return tool


def to_tool_choice(choice: Any) -> Any:
    if isinstance(choice, dict):
        return {"type": "function", "name": (choice.get("function") or {}).get("name") or choice.get("name")}
    return choice


def build_request(params: dict[str, Any]) -> dict[str, Any]:
    kw: dict[str, Any] = {"model": params["model"], "input": to_input(params["messages"])}
    if params.get("tools"):
        kw["tools"] = [to_tool(t) for t in params["tools"]]
        if params.get("tool_choice") is not None:
            kw["tool_choice"] = to_tool_choice(params["tool_choice"])
        if params.get("parallel_tool_calls") is not None:
            kw["parallel_tool_calls"] = params["parallel_tool_calls"]
    if params.get("temperature") is not None:
        kw["temperature"] = params["temperature"]
    if params.get("max_tokens") is not None:
        kw["max_output_tokens"] = params["max_tokens"]
    return kw


async def request(client: openai.AsyncOpenAI, rr: ResolvedRole, params: dict[str, Any], headers: dict[str, str],
                  timeout_s: float) -> tuple[bytes, str | None]:
    payload = build_request(params)
    if rr.extra_body:
        payload.update(rr.extra_body)
    data = body.dumps(payload).encode()
    raw = await client.post(PATH, cast_to=_RAW, content=data,
                            options={"headers": {**headers, "Content-Type": "application/json"}, "timeout": timeout_s})
    return raw.content, raw.headers.get("x-request-id")


# ------------------------------------------------------------------------------ reply
_INCOMPLETE = {"max_output_tokens": "length", "content_filter": "content_filter"}


def parse(body: bytes) -> tuple[AssistantMessage, str | None, Usage, str | None]:
    data = load_reply(body)
    output = data.get("output")
    if not isinstance(output, list):
        raise not_a_reply(data, "output", "Responses API")
    status = data.get("status")
    if status == "failed":
        err = data.get("error") if isinstance(data.get("error"), dict) else {}
        raise Malformed(f"the response failed: {redact(str(err.get('message') or err.get('code') or 'no detail'))[:300]}")
    texts: list[str] = []
    reasoning: list[str] = []
    calls: list[ToolCall] = []
    for i, item in enumerate(output):
        kind = item.get("type") if isinstance(item, dict) else None
        if kind == "message":
            for part in item.get("content") or ():
                if isinstance(part, dict) and isinstance(part.get("text"), str):
                    texts.append(part["text"])
                elif isinstance(part, dict) and isinstance(part.get("refusal"), str):
                    texts.append(part["refusal"])
        elif kind == "function_call":
            if not isinstance(item.get("name"), str):
                raise Malformed(f"output item {i} is a function_call without a name")
            args, raw, err = parse_arguments(item.get("arguments"))
            calls.append(ToolCall(id=str(item.get("call_id") or item.get("id") or f"call_{i}"), name=item["name"],
                                  arguments=args, arguments_raw=raw, arguments_error=err))
        elif kind == "reasoning":
            for part in (item.get("summary") or []) + (item.get("content") or []):
                if isinstance(part, dict) and isinstance(part.get("text"), str):
                    reasoning.append(part["text"])
    has_reasoning = any(isinstance(i, dict) and i.get("type") == "reasoning" for i in output)
    extra = {"reasoning_items": output} if has_reasoning else {}
    message = AssistantMessage(content="".join(texts) if texts or not calls else None, tool_calls=calls,
                               reasoning="\n\n".join(reasoning) or None, extra=extra)
    if status == "incomplete":
        reason = (data.get("incomplete_details") or {}).get("reason") if isinstance(data.get("incomplete_details"), dict) else None
        finish = _INCOMPLETE.get(reason, "length")
    else:
        finish = "tool_calls" if calls else "stop"
    model = data.get("model") if isinstance(data.get("model"), str) else None
    return message, finish, parse_usage(data.get("usage")), model


def classify(status: int, body: Any, headers: Any, rr: ResolvedRole) -> Fault:
    return classify_api(status, body, headers, rr, PATH)
