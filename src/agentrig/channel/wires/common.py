"""What the wire modules share (``wire_responses``, ``wire_anthropic``): the text of a chat
message's content."""

from __future__ import annotations

from typing import Any


def text_of(content: Any) -> str:
    """A chat message's content as text (a string, or a list of text parts)."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(p.get("text") or "" for p in content if isinstance(p, dict) and isinstance(p.get("text"), str))
    return str(content)
