"""``wire = "anthropic"``: the Anthropic Messages API (``POST /v1/messages``) through the official
``anthropic`` SDK (``max_retries=0``: the channel's loop is the only retry loop). The key goes
in ``x-api-key``; the SDK's client shares the channel's connection pool for the endpoint.

The base URL: the SDK appends ``/v1/messages``, so a base URL ending in ``/v1`` (the form the
other wires use, e.g. a gateway's ``http://host:4000/v1``) loses that ``/v1`` here; one without
it (``https://api.anthropic.com``) is used as is.

What maps to what (the channel keeps chat-style messages; see docs/channel.md):

- every ``system`` message → the top-level ``system`` (joined in order with blank lines: the API
  has no system turns, so a system message late in the conversation moves there);
- ``user`` text → a user turn; ``tool`` messages → ``tool_result`` blocks of a user turn;
  ``assistant`` text and ``tool_calls`` → ``text`` and ``tool_use`` blocks (arguments as the
  ``input`` object); consecutive turns of one role are merged; a conversation that opens with
  the assistant (τ²'s greeting) gets a short user turn first (the API wants a user turn first);
- thinking: a reply's ``thinking``/``redacted_thinking`` blocks (with their signatures) are kept
  in the message's ``extra["thinking_blocks"]`` and sent back first in that assistant turn (the
  API requires them in a tool-use loop with thinking on); their text is the message's reasoning;
- tools → ``{"name", "description", "input_schema"}``; ``tool_choice`` auto/required/none →
  ``{"type": "auto"|"any"|"none"}``, a named one → ``{"type": "tool", "name"}``;
  ``parallel_tool_calls = false`` → ``disable_parallel_tool_use``; ``max_tokens`` (required by
  the API: 8192 when the role sets none, more when ``extra_body`` asks for a thinking budget);
  ``seed`` is not sent (the API has none); ``extra_body`` (e.g. ``thinking``) is merged in;
- usage: prompt = ``input_tokens`` + ``cache_read_input_tokens`` + ``cache_creation_input_tokens``
  (the OpenAI convention: cached tokens are part of the prompt), cached = cache reads,
  ``cache_write_tokens`` = cache creation; completion = ``output_tokens``;
- finish: ``end_turn``/``stop_sequence`` → ``stop``, ``tool_use`` → ``tool_calls``,
  ``max_tokens`` → ``length``, ``refusal`` → ``content_filter``.
"""

from __future__ import annotations

import re
import weakref
from typing import Any

import anthropic

from agentrig.config import ResolvedRole
from agentrig.types import AssistantMessage, ToolCall, Usage
from agentrig.channel.parse import Malformed, load_reply, not_a_reply, parse_arguments
from agentrig.channel.faults import Fault
from agentrig.channel.wires.common import classify_api, text_of

PATH = "/v1/messages"
MODELS = "anthropic"  # how its servers list their models (the doctor's models check): GET /v1/models the Anthropic way (x-api-key, anthropic-version)
STATUS = anthropic.APIStatusError
TIMEOUT = (anthropic.APITimeoutError,)
CONNECTION = anthropic.APIConnectionError
DEFAULT_MAX_TOKENS = 8192
OPENING = "(The conversation begins.)"
EMPTY = "(no text)"
_THINKING = ("thinking", "redacted_thinking")

# one Anthropic client per channel client (i.e. per endpoint), on the same connection pool
_CLIENTS: "weakref.WeakKeyDictionary[Any, anthropic.AsyncAnthropic]" = weakref.WeakKeyDictionary()


def sdk_base_url(base_url: str) -> str:
    return re.sub(r"/v1/?$", "", base_url.strip().rstrip("/"))


def client_for(client: Any) -> anthropic.AsyncAnthropic:
    """The Anthropic client that goes with the channel's OpenAI client: same key, same base URL
    (``sdk_base_url``), same HTTP pool when both SDKs speak the same HTTP library."""
    ac = _CLIENTS.get(client)
    if ac is None:
        base = sdk_base_url(str(client.base_url))
        pool = getattr(client, "_client", None)
        try:
            ac = anthropic.AsyncAnthropic(api_key=client.api_key, base_url=base, max_retries=0, http_client=pool)
        except TypeError:  # the two SDKs are built on different HTTP libraries: its own pool
            ac = anthropic.AsyncAnthropic(api_key=client.api_key, base_url=base, max_retries=0)
        _CLIENTS[client] = ac
    return ac


# ------------------------------------------------------------------------------ request
def _arguments(call: dict) -> dict:
    args, _, _ = parse_arguments((call.get("function") or {}).get("arguments"))
    return args if isinstance(args, dict) else {}


def _blocks(m: dict) -> tuple[str, list[dict]]:
    role = m.get("role")
    text = text_of(m.get("content"))
    if role == "assistant":
        blocks = [dict(b) for b in m.get("thinking_blocks") or () if isinstance(b, dict) and b.get("type") in _THINKING]
        if text:
            blocks.append({"type": "text", "text": text})
        for c in m.get("tool_calls") or ():
            if isinstance(c, dict):
                blocks.append({"type": "tool_use", "id": str(c.get("id") or ""),
                               "name": (c.get("function") or {}).get("name") or "", "input": _arguments(c)})
        return "assistant", blocks
    if role == "tool":
        block: dict[str, Any] = {"type": "tool_result", "tool_use_id": str(m.get("tool_call_id") or "")}
        if text:
            block["content"] = text
        return "user", [block]
    return "user", ([{"type": "text", "text": text}] if text else [])


def to_messages(messages: list[dict]) -> tuple[str | None, list[dict]]:
    system: list[str] = []
    turns: list[dict] = []
    for m in messages:
        if m.get("role") in ("system", "developer"):
            text = text_of(m.get("content"))
            if text:
                system.append(text)
            continue
        role, blocks = _blocks(m)
        if turns and turns[-1]["role"] == role:
            turns[-1]["content"].extend(blocks)
        else:
            turns.append({"role": role, "content": blocks})
    for turn in turns:
        if not any(b.get("type") != "thinking" and b.get("type") != "redacted_thinking" for b in turn["content"]):
            turn["content"].append({"type": "text", "text": EMPTY})  # the API refuses an empty turn
        # tool results first in a user turn, as the API expects them
        turn["content"].sort(key=lambda b: 0 if b.get("type") == "tool_result" else 1)
    if turns and turns[0]["role"] != "user":
        turns.insert(0, {"role": "user", "content": [{"type": "text", "text": OPENING}]})
    return ("\n\n".join(system) or None), turns


def to_tool(t: dict) -> dict:
    fn = t.get("function") or {}
    tool = {"name": fn.get("name") or "", "input_schema": fn.get("parameters") or {"type": "object", "properties": {}}}
    if fn.get("description"):
        tool["description"] = fn["description"]
    return tool


def to_tool_choice(choice: Any, parallel: bool | None) -> dict | None:
    if isinstance(choice, dict):
        out: dict[str, Any] = {"type": "tool", "name": (choice.get("function") or {}).get("name") or choice.get("name")}
    elif choice in ("auto", "required", "none"):
        out = {"type": {"auto": "auto", "required": "any", "none": "none"}[choice]}
    elif parallel is False:
        out = {"type": "auto"}
    else:
        return None
    if parallel is False and out["type"] != "none":
        out["disable_parallel_tool_use"] = True
    return out


def build_request(params: dict[str, Any], extra_body: dict[str, Any]) -> dict[str, Any]:
    system, turns = to_messages(params["messages"])
    max_tokens = params.get("max_tokens")
    if max_tokens is None:
        thinking = extra_body.get("thinking") if isinstance(extra_body.get("thinking"), dict) else {}
        budget = thinking.get("budget_tokens")
        max_tokens = DEFAULT_MAX_TOKENS + (budget if isinstance(budget, int) else 0)
    kw: dict[str, Any] = {"model": params["model"], "max_tokens": max_tokens, "messages": turns}
    if system:
        kw["system"] = system
    if params.get("tools"):
        kw["tools"] = [to_tool(t) for t in params["tools"]]
        choice = to_tool_choice(params.get("tool_choice"), params.get("parallel_tool_calls"))
        if choice is not None:
            kw["tool_choice"] = choice
    if params.get("temperature") is not None:
        kw["temperature"] = params["temperature"]
    return kw


async def request(client: Any, rr: ResolvedRole, params: dict[str, Any], headers: dict[str, str],
                  timeout_s: float) -> tuple[bytes, str | None]:
    raw = await client_for(client).messages.with_raw_response.create(
        **build_request(params, rr.extra_body), extra_headers=headers, extra_body=rr.extra_body or None,
        timeout=timeout_s)
    return raw.http_response.content, raw.headers.get("request-id") or raw.headers.get("x-request-id")


# ------------------------------------------------------------------------------ reply
_STOP = {"end_turn": "stop", "stop_sequence": "stop", "tool_use": "tool_calls", "max_tokens": "length",
         "refusal": "content_filter", "pause_turn": "stop"}


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def parse_usage(data: Any) -> Usage:
    if not isinstance(data, dict):
        return Usage(reported=False)
    fresh, read, write = _int(data.get("input_tokens")), _int(data.get("cache_read_input_tokens")), \
        _int(data.get("cache_creation_input_tokens"))
    return Usage(prompt_tokens=fresh + read + write, completion_tokens=_int(data.get("output_tokens")),
                 cached_tokens=read, cache_write_tokens=write)


def parse(body: bytes) -> tuple[AssistantMessage, str | None, Usage, str | None]:
    data = load_reply(body)
    content = data.get("content")
    if data.get("type") == "error" or not isinstance(content, list):
        raise not_a_reply(data, "content", "Messages API")
    texts, thoughts, kept = [], [], []
    calls: list[ToolCall] = []
    for i, block in enumerate(content):
        kind = block.get("type") if isinstance(block, dict) else None
        if kind == "text" and isinstance(block.get("text"), str):
            texts.append(block["text"])
        elif kind == "tool_use":
            if not isinstance(block.get("name"), str):
                raise Malformed(f"content block {i} is a tool_use without a name")
            args, raw, err = parse_arguments(block.get("input"))
            calls.append(ToolCall(id=str(block.get("id") or f"toolu_{i}"), name=block["name"], arguments=args,
                                  arguments_raw=raw, arguments_error=err))
        elif kind in _THINKING:
            kept.append(block)
            if isinstance(block.get("thinking"), str):
                thoughts.append(block["thinking"])
    message = AssistantMessage(content="".join(texts) if texts or not calls else None, tool_calls=calls,
                               reasoning="\n\n".join(thoughts) or None,
                               extra={"thinking_blocks": kept} if kept else {})
    stop = data.get("stop_reason")
    finish = _STOP.get(stop, stop if isinstance(stop, str) else None)
    model = data.get("model") if isinstance(data.get("model"), str) else None
    return message, finish, parse_usage(data.get("usage")), model


def classify(status: int, body: Any, headers: Any, rr: ResolvedRole) -> Fault:
    return classify_api(status, body, headers, rr, PATH)
