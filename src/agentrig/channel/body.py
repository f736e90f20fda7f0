"""A request body's JSON, the same bytes as ``json.dumps(payload, ensure_ascii=False,
separators=(",", ":"))``, without encoding again what every request of a conversation repeats.

An agent's requests carry the same tool schemas and the same long system prompt each turn (on τ²'s
airline domain they are 80% of a body's bytes). ``dumps`` joins the body from its parts: the
``tools`` value and long strings (a system prompt, a policy) are encoded once and looked up by
value — a string by its own value (strings are immutable), a tools list by identity, checked
against a copy kept of what was encoded (a list changed in place since is a miss, save a number
turned into an equal one of another type, 1 into 1.0) — the rest as usual. ``tests/channel/test_body.py`` holds it to ``json.dumps``.
"""

from __future__ import annotations

import json
from typing import Any

LONG = 1024  # characters from which a string's encoding is kept
KEEP = 256  # long strings' encodings kept; all dropped when full (a run reuses a handful)
KEEP_TOOLS = 16  # tools lists' (one per agent, newest kept)

_encode = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode
_strings: dict[str, str] = {}
_tools: list[tuple[Any, Any, str]] = []  # (the list, a copy of it as encoded, its encoding), newest last


def _string(s: str) -> str:
    out = _strings.get(s)
    if out is None:
        if len(_strings) >= KEEP:
            _strings.clear()
        out = _strings[s] = _encode(s)
    return out


def _tools_json(tools: list) -> str:
    for i in range(len(_tools) - 1, -1, -1):
        kept, copy, out = _tools[i]
        if kept is tools:
            if copy == tools:
                return out
            del _tools[i]  # changed in place since
            break
    out = _encode(tools)
    if len(_tools) >= KEEP_TOOLS:
        del _tools[0]
    _tools.append((tools, json.loads(out), out))  # the copy stays what was encoded, whatever happens to tools
    return out


def _object(d: Any, value: Any) -> str:
    """A dict's JSON as ``_encode`` gives it, each value by ``value(key, v)``; anything else (or a
    dict with a key that is not a string) encoded whole."""
    if type(d) is not dict:
        return _encode(d)
    parts = []
    for k, v in d.items():
        if type(k) is not str:
            return _encode(d)
        parts.append(_encode(k) + ":" + value(k, v))
    return "{" + ",".join(parts) + "}"


def _message_value(_k: str, v: Any) -> str:
    return _string(v) if type(v) is str and len(v) >= LONG else _encode(v)


def _payload_value(k: str, v: Any) -> str:
    if k == "tools" and type(v) is list:
        return _tools_json(v)
    if k in ("messages", "input") and type(v) is list:
        return "[" + ",".join(_object(m, _message_value) for m in v) + "]"
    return _encode(v)


def dumps(payload: Any) -> str:
    """``json.dumps(payload, ensure_ascii=False, separators=(",", ":"))``, character for character."""
    return _object(payload, _payload_value)
