"""What the memory model sees of the conversation: the user's requests and a window of steps.

Only what the agent under test itself sees counts (τ²-bench's agent view): the agent's messages,
the user's text messages, the results of the agent's tool calls. The user simulator's own tool
calls and their results (telecom's device actions) are left out.

- A **step** is one message of the agent (the opening greeting and a task's message history
  included): its text, or its tool calls each followed by its result.
- The **window** is the last ``window`` steps, shown in conversation order from the first of them
  to the newest message, one line per message, each headed by its turn (its index in the
  trajectory). The user's text messages inside that span are shown in place (they are not steps).
- The **requests** are the user's text messages before the window's first step (so every user
  message so far is shown once: before the window or in it). User text is never cut.
- **Command outputs as user messages** (a bash agent in text mode): a ``user`` message that comes
  while a tool call of the agent's last message is still unanswered is that call's result — shown
  as ``result of <tool>: …`` (cut like a tool result), never as a request. (τ²-bench never puts a
  user message there: tool calls are answered by ``tool`` messages.) When the agent's text already
  holds a call's arguments word for word (the action block of text mode), the call line does not
  repeat them.
- **Cutting**: an agent text, a tool call's arguments or a tool result longer than
  ``max_output_chars`` keeps its first ``max_output_chars`` characters followed by
  ``…[N more characters cut]``.
- The **query** (for BM25: retrieval mode, and the bank shown above 50 entries) is the window's
  own words — texts, tool names, arguments, results as shown — without the ``[turn n] agent:``
  labels.

``Conversation`` reads ``ctx.trajectory.messages`` incrementally (each message is looked at once
for the requests list); the window is re-rendered per trigger from its start.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any


def clip(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    return f"{text[:limit]} …[{len(text) - limit} more characters cut]"


def _arguments(call: Any) -> str:
    raw = call.arguments_raw
    if raw and raw.strip():
        return raw.strip()
    return json.dumps(call.arguments if call.arguments is not None else {}, ensure_ascii=False)


def _written_in(call: Any, text: str) -> bool:
    """Whether every argument of ``call`` is a non-empty string found word for word in ``text``."""
    args = call.arguments
    if not isinstance(args, dict) or not args:
        return False
    return all(isinstance(v, str) and v.strip() and v in text for v in args.values())


@dataclass(frozen=True)
class View:
    requests: list[tuple[int, str]]  # (turn, text) of the user's messages before the window
    window: str  # the rendered window
    query: str  # the window's own words (texts, tool names, arguments, results; no labels): for BM25
    start: int  # turn of the window's first step (len(messages) when there is none)
    steps: int  # steps in the window


class Conversation:
    def __init__(self, messages: list, max_output_chars: int):
        self.messages = messages  # the trajectory's list, read as it grows
        self.limit = max_output_chars
        self._user: list[tuple[int, str]] = []  # every user text message so far
        self._seen = 0
        self._pending = False  # a tool call of the latest agent message is unanswered

    def _catch_up(self) -> None:
        msgs = self.messages
        for i in range(self._seen, len(msgs)):
            m = msgs[i]
            if m.role == "assistant":
                self._pending = bool(m.tool_calls)
            elif m.role == "tool" and m.requestor != "user":
                self._pending = False
            elif m.role == "user" and m.content:
                if self._pending:  # the output of the agent's command (text mode), not a request
                    self._pending = False
                else:
                    self._user.append((i, m.content))
        self._seen = len(msgs)

    def window_start(self, k: int) -> tuple[int, int]:
        """(turn of the k-th last agent message, steps found)."""
        msgs = self.messages
        found = 0
        start = len(msgs)
        for i in range(len(msgs) - 1, -1, -1):
            if msgs[i].role == "assistant":
                found += 1
                start = i
                if found == k:
                    break
        return start, found

    def view(self, k: int) -> View:
        self._catch_up()
        start, steps = self.window_start(k)
        requests = [u for u in self._user if u[0] < start]
        window, query = self.render(start)
        return View(requests, window, query, start, steps)

    def render(self, start: int) -> tuple[str, str]:
        """(the window's text, its words for retrieval)."""
        msgs = self.messages
        limit = self.limit
        names: dict[str, str] = {}
        lines: list[str] = []
        words: list[str] = []
        pending: list[str] = []  # names of the latest agent message's unanswered calls
        for i in range(start, len(msgs)):
            m = msgs[i]
            role = m.role
            if role == "assistant":
                text = ""
                if m.content:
                    text = clip(m.content, limit)
                    lines.append(f"[turn {i}] agent: {text}")
                    words.append(text)
                pending = [c.name for c in m.tool_calls]
                for c in m.tool_calls:
                    names[c.id] = c.name
                    if text and _written_in(c, text):
                        lines.append(f"[turn {i}] agent calls {c.name} (arguments as in its text above)")
                        continue
                    args = clip(_arguments(c), limit)
                    lines.append(f"[turn {i}] agent calls {c.name}({args})")
                    words += (c.name, args)
                if not m.content and not m.tool_calls:
                    lines.append(f"[turn {i}] agent: (empty message)")
            elif role == "tool":
                if m.requestor == "user":
                    continue
                name = names.get(m.tool_call_id or "", "a tool")
                if name in pending:
                    pending.remove(name)
                head = "error from" if m.error else "result of"
                text = clip(m.content or "", limit)
                lines.append(f"[turn {i}] {head} {name}: {text}")
                words.append(text)
            elif role == "user":
                if m.content and pending:  # a command's output sent back as a user message (text mode)
                    text = clip(m.content, limit)
                    lines.append(f"[turn {i}] result of {pending[0]}: {text}")
                    words.append(text)
                    pending = []
                elif m.content:  # the user's own tool calls are not the agent's to see
                    lines.append(f"[turn {i}] user: {m.content}")
                    words.append(m.content)
        return "\n".join(lines), "\n".join(words)
