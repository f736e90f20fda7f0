"""An agent's request, in whichever wire it speaks, in the channel's own terms: chat-style
``messages``, ``tools`` (``{"type": "function", "function": {...}}``), ``tool_choice`` and
``parallel_tool_calls`` — the reverse of ``channel/wires/*.py``.

- Chat Completions: passed through (messages, tools, tool_choice, parallel_tool_calls).
- Responses: ``instructions`` → a system message first; ``input`` (a string, or items) → messages:
  message items (``input_text``/``output_text`` parts; ``developer`` → system), ``function_call``
  and ``custom_tool_call`` items → the assistant's tool calls (a custom call's text as
  ``{"input": text}``), ``function_call_output``/``custom_tool_call_output`` → tool messages,
  ``reasoning`` items dropped (the proxy puts the reply's own reasoning back: ``server.py``);
  tools of type ``function`` as they are, type ``custom`` (Codex's freeform ``apply_patch``) → a
  function with one string parameter ``input`` (its grammar, if any, in the description), type
  ``namespace`` (a group of functions, as Codex offers an MCP server's tools: ``mcp__tau``) → each of
  its functions named ``<namespace>__<name>`` (``NAMESPACE_SEP``; a ``function_call`` item with a
  ``namespace`` is read under that name, and ``Inbound.namespaced`` maps it back); the
  built-in tool types no chat endpoint has (``web_search``, ``local_shell``…) are left out and
  named in ``Inbound.left_out``. The API used statelessly only: a ``previous_response_id`` is a
  400 (nothing is stored here).
- Anthropic Messages: ``system`` (a string or text blocks; ``cache_control`` ignored) → a system
  message; ``text``/``tool_use``/``tool_result`` (a string or blocks; ``is_error`` marked in the
  text) blocks → messages, ``thinking`` blocks dropped (the proxy puts the reply's own
  reasoning back: ``server.py``) (tool results before the turn's text, as chat wants them);
  an ``image`` → a text placeholder; tools (``name``/``description``/``input_schema``) and
  ``tool_choice`` (``disable_parallel_tool_use`` → ``parallel_tool_calls = false``).

The agent's sampling settings (temperature, max_tokens…) and its ``model`` are not read here: the
role's settings rule (``server.py``).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from agentrig.channel.wires.common import text_of as wire_text_of
from agentrig.errors import Signal

IMAGE = "[image]"  # what an image part becomes (the channel's wires carry text only)
TOOL_ERROR = "[tool error] "  # the start of an Anthropic tool_result whose is_error is set
_EMPTY_SCHEMA = {"type": "object", "properties": {}}
NAMESPACE_SEP = "__"  # a namespaced Responses function as one function name: <namespace>__<name>


class BadBody(Signal, ValueError):
    """A request body the proxy cannot read: answered 400 in the agent's wire."""


@dataclass
class Inbound:
    wire: str  # chat | responses | anthropic
    messages: list[dict]
    tools: list[dict] | None = None
    tool_choice: Any = None
    parallel_tool_calls: bool | None = None
    stream: bool = False
    include_usage: bool = False  # chat: stream_options.include_usage
    custom_tools: frozenset[str] = frozenset()  # responses: the tools of type custom (answered as custom_tool_call)
    # responses: the functions of a namespace tool, by the one name the model sees → (namespace, name)
    namespaced: dict[str, tuple[str, str]] = field(default_factory=dict)
    left_out: list[str] = field(default_factory=list)  # tool types not forwarded


def text_of(content: Any) -> str:
    """Text of a content given as a string or as parts/blocks, one a line (an image → a placeholder)."""
    return wire_text_of(content, "\n", IMAGE)


def function_tool(name: Any, description: Any, parameters: Any) -> dict:
    fn: dict[str, Any] = {"name": str(name or ""), "parameters": parameters if isinstance(parameters, dict) else dict(_EMPTY_SCHEMA)}
    if description:
        fn["description"] = str(description)
    return {"type": "function", "function": fn}


def _body(body: Any) -> dict:
    if not isinstance(body, dict):
        raise BadBody("the request body must be a JSON object")
    return body


# ------------------------------------------------------------------------------------ chat
def from_chat(body: Any) -> Inbound:
    body = _body(body)
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        raise BadBody("'messages' must be a non-empty list")
    tools = [t for t in body.get("tools") or () if isinstance(t, dict) and t.get("type", "function") == "function"]
    options = body.get("stream_options") if isinstance(body.get("stream_options"), dict) else {}
    return Inbound("chat", [m for m in messages if isinstance(m, dict)], tools or None, body.get("tool_choice"),
                   body.get("parallel_tool_calls") if isinstance(body.get("parallel_tool_calls"), bool) else None,
                   stream=body.get("stream") is True, include_usage=options.get("include_usage") is True)


# ------------------------------------------------------------------------------- responses
def _custom_tool(t: dict) -> dict:
    description = str(t.get("description") or "")
    fmt = t.get("format") if isinstance(t.get("format"), dict) else {}
    if fmt.get("type") == "grammar" and fmt.get("definition"):
        description += (f"\n\nThe input is free text following this {fmt.get('syntax') or ''} grammar:\n"
                        f"{fmt['definition']}").rstrip()
    schema = {"type": "object", "properties": {"input": {"type": "string", "description": "the tool's input, as raw text"}},
              "required": ["input"], "additionalProperties": False}
    return function_tool(t.get("name"), description.strip(), schema)


def namespaced_name(namespace: str, name: str) -> str:
    """The one function name a namespaced Responses function is offered under."""
    return f"{namespace}{NAMESPACE_SEP}{name}" if namespace else name


def _assistant(messages: list[dict]) -> dict:
    """The assistant message a function call joins: the last one, if it is the newest message."""
    if messages and messages[-1].get("role") == "assistant":
        return messages[-1]
    msg: dict[str, Any] = {"role": "assistant", "content": ""}
    messages.append(msg)
    return msg


def _responses_item(item: Any, messages: list[dict]) -> None:
    if isinstance(item, str):
        messages.append({"role": "user", "content": item})
        return
    if not isinstance(item, dict):
        return
    kind = item.get("type") or "message"
    if kind == "message":
        role = item.get("role")
        role = "system" if role in ("developer", "system") else role if role in ("assistant", "user") else "user"
        text = text_of(item.get("content"))
        last = messages[-1] if messages else None
        if role == "assistant" and last is not None and last.get("role") == "assistant" and not last.get("tool_calls"):
            last["content"] = (last.get("content") or "") + text  # output text parts of one turn
        else:
            messages.append({"role": role, "content": text})
    elif kind in ("function_call", "custom_tool_call"):
        if kind == "function_call":
            args = item.get("arguments")
            args = args if isinstance(args, str) else json.dumps(args or {})
        else:
            args = json.dumps({"input": item.get("input") if isinstance(item.get("input"), str) else ""}, ensure_ascii=False)
        name = namespaced_name(str(item.get("namespace") or ""), str(item.get("name") or ""))
        call = {"id": str(item.get("call_id") or item.get("id") or ""), "type": "function",
                "function": {"name": name, "arguments": args}}
        _assistant(messages).setdefault("tool_calls", []).append(call)
    elif kind in ("function_call_output", "custom_tool_call_output"):
        messages.append({"role": "tool", "tool_call_id": str(item.get("call_id") or ""),
                         "content": text_of(item.get("output"))})
    # reasoning and every other item type: nothing the channel sends


def from_responses(body: Any) -> Inbound:
    body = _body(body)
    if body.get("previous_response_id"):
        raise BadBody("previous_response_id is not supported here: this endpoint keeps no responses; send the whole "
                      "conversation in 'input' (store=false)")
    messages: list[dict] = []
    if isinstance(body.get("instructions"), str) and body["instructions"]:
        messages.append({"role": "system", "content": body["instructions"]})
    items = body.get("input")
    if isinstance(items, str):
        items = [items]
    if not isinstance(items, list):
        raise BadBody("'input' must be a string or a list of items")
    for item in items:
        _responses_item(item, messages)
    if not messages:
        raise BadBody("'input' holds no message")
    tools, custom, left_out = [], set(), []
    namespaced: dict[str, tuple[str, str]] = {}
    for t in body.get("tools") or ():
        kind = t.get("type") if isinstance(t, dict) else None
        if kind == "function":
            tools.append(function_tool(t.get("name"), t.get("description"), t.get("parameters")))
        elif kind == "custom":
            tools.append(_custom_tool(t))
            custom.add(str(t.get("name") or ""))
        elif kind == "namespace" and t.get("name"):
            space = str(t["name"])
            for f in t.get("tools") or ():
                if isinstance(f, dict) and f.get("type", "function") == "function" and f.get("name"):
                    flat = namespaced_name(space, str(f["name"]))
                    namespaced[flat] = (space, str(f["name"]))
                    tools.append(function_tool(flat, f.get("description"), f.get("parameters")))
                elif isinstance(f, dict):
                    left_out.append(f"{space}.{f.get('type') or '?'}")
        else:
            left_out.append(str(kind or "?"))
    choice = body.get("tool_choice")
    if isinstance(choice, dict):
        if choice.get("type") in ("function", "custom") and choice.get("name"):
            name = namespaced_name(str(choice.get("namespace") or ""), str(choice["name"]))
            choice = {"type": "function", "function": {"name": name}}
        else:
            choice = choice.get("mode") if choice.get("mode") in ("auto", "required") else None
    elif choice not in ("auto", "required", "none"):
        choice = None
    parallel = body.get("parallel_tool_calls")
    return Inbound("responses", messages, tools or None, choice, parallel if isinstance(parallel, bool) else None,
                   stream=body.get("stream") is True, custom_tools=frozenset(custom), left_out=left_out,
                   namespaced=namespaced)


# ------------------------------------------------------------------------------- anthropic
def _blocks(content: Any) -> list[dict]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    return [b for b in content if isinstance(b, dict)] if isinstance(content, list) else []


def _anthropic_turn(turn: dict, messages: list[dict]) -> None:
    blocks = _blocks(turn.get("content"))
    if turn.get("role") == "assistant":
        texts = [b.get("text") or "" for b in blocks if b.get("type") == "text"]
        msg: dict[str, Any] = {"role": "assistant", "content": "".join(texts)}
        calls = [{"id": str(b.get("id") or ""), "type": "function",
                  "function": {"name": str(b.get("name") or ""),
                               "arguments": json.dumps(b.get("input") if isinstance(b.get("input"), dict) else {},
                                                       ensure_ascii=False)}}
                 for b in blocks if b.get("type") == "tool_use"]
        if calls:
            msg["tool_calls"] = calls
        messages.append(msg)
        return
    texts: list[str] = []
    for b in blocks:
        kind = b.get("type")
        if kind == "tool_result":
            text = text_of(b.get("content"))
            messages.append({"role": "tool", "tool_call_id": str(b.get("tool_use_id") or ""),
                             "content": (TOOL_ERROR + text) if b.get("is_error") else text})
        elif kind == "text":
            texts.append(b.get("text") or "")
        elif kind in ("image", "document"):
            texts.append(IMAGE if kind == "image" else "[document]")
    if texts:
        messages.append({"role": "user", "content": "\n\n".join(t for t in texts if t)})


def from_anthropic(body: Any) -> Inbound:
    body = _body(body)
    turns = body.get("messages")
    if not isinstance(turns, list) or not turns:
        raise BadBody("messages: Field required")
    messages: list[dict] = []
    system = body.get("system")
    text = system if isinstance(system, str) else "\n\n".join(b.get("text") or "" for b in _blocks(system) if b.get("type") == "text")
    if text:
        messages.append({"role": "system", "content": text})
    for turn in turns:
        if isinstance(turn, dict):
            _anthropic_turn(turn, messages)
    tools, left_out = [], []
    for t in body.get("tools") or ():
        if not isinstance(t, dict):
            continue
        if t.get("type") in (None, "custom") and t.get("name"):
            tools.append(function_tool(t["name"], t.get("description"), t.get("input_schema")))
        else:  # a server tool (web_search_…, bash_…, text_editor_…): the role's endpoint has none
            left_out.append(str(t.get("type") or t.get("name") or "?"))
    choice, parallel = body.get("tool_choice"), None
    if isinstance(choice, dict):
        kind = choice.get("type")
        if choice.get("disable_parallel_tool_use"):
            parallel = False
        choice = ({"type": "function", "function": {"name": choice.get("name")}} if kind == "tool" and choice.get("name")
                  else {"auto": "auto", "any": "required", "none": "none"}.get(kind))
    else:
        choice = None
    return Inbound("anthropic", messages, tools or None, choice, parallel, stream=body.get("stream") is True,
                   left_out=left_out)


READERS = {"chat": from_chat, "responses": from_responses, "anthropic": from_anthropic}


def estimate_tokens(body: Any) -> int:
    """Anthropic's count_tokens, estimated: about four characters a token of the request's text."""
    try:
        inbound = from_anthropic(body)
    except BadBody:
        return 0
    chars = sum(len(text_of(m.get("content"))) + sum(len(c["function"]["arguments"]) for c in m.get("tool_calls") or ())
                for m in inbound.messages)
    if inbound.tools:
        chars += len(json.dumps(inbound.tools, ensure_ascii=False))
    return max(1, chars // 4)
