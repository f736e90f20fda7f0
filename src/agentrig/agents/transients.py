"""Where a plug-in's transient context goes in one model request (``Transient``, types.py).

One helper for every agent that sends chat-style messages: agentrig's own agents (``llm.py``,
``text.py``, ``bash.py``) and the measuring proxy (``proxy/server.py``: its ``hints``, added to the
requests of an agent we did not write). ``system`` texts become ONE extra system message at the
end of the request; ``user_append`` texts are appended to the text of the anchor message (the last
user message; no anchor: they join the system message). The list given is never changed: a
request with transients is a shallow variant of it.
"""

from __future__ import annotations

from typing import Any

from agentrig.types import Transient

SEPARATOR = "\n\n"


def last_user_index(messages: list[dict]) -> int | None:
    """The index of the last ``user`` message (None when there is none)."""
    for i in range(len(messages) - 1, -1, -1):
        if messages[i].get("role") == "user":
            return i
    return None


def _appended(content: Any, text: str) -> Any:
    """A message content with ``text`` after it: a string gets it after a blank line; content
    parts (a list) get it as one more text part."""
    if isinstance(content, list):
        return [*content, {"type": "text", "text": text}]
    return (content or "") + SEPARATOR + text


def with_transients(messages: list[dict], last_user: int | None, transient: list[Transient]) -> list[dict]:
    """The request for one call: ``messages`` itself (the same list) when there is no transient
    context; else a new list with it added (see the module's docstring)."""
    if not transient:
        return messages
    system = [t.text for t in transient if t.placement == "system" and t.text]
    append = [t.text for t in transient if t.placement == "user_append" and t.text]
    out = messages
    if append:
        if last_user is None:  # no user message yet: the context still reaches the model
            system += append
        else:
            out = list(messages)
            original = out[last_user]
            out[last_user] = {**original, "content": _appended(original.get("content"), SEPARATOR.join(append))}
    if system:
        out = out + [{"role": "system", "content": SEPARATOR.join(system)}]
    return out
