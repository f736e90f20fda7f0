"""Silent truncation: a server that cuts a prompt to fit its window and answers 200 as if nothing
happened (Ollama's OpenAI-compatible endpoint with its default ``num_ctx``). The model then never
sees the start of the conversation — for τ², the policy — and the score means nothing.

Without a tokenizer, each answered request is held against two things (``TruncationWatch.check``):

- **its own size.** No tokenizer packs more than ``MAX_CHARS_PER_TOKEN`` (12) characters of a
  chat request into one token on average (English prose is about 4, JSON and code 3, and the
  template adds tokens, never removes them). A server counting fewer prompt tokens than the
  request's size / 12 did not read all of it. The size is the messages' text plus HALF the tool
  schemas' JSON (a server that does not render the tools must not look like a cutting one: that
  holds while the schemas are under four times the messages' text), and ``<think>`` blocks left
  in assistant messages are not counted (chat templates often drop them from earlier turns).
- **the role's previous request in the trial.** A conversation only grows: when the request grew
  by ``GROWTH_MIN_CHARS`` (48) characters or more — at least 4 tokens by the bound above — and
  the server's count did not grow at all, the prompt was cut at the window.

- **the server's window, on the role's first request in the trial** (which has no previous request
  to compare with). When the channel learned the server's context window (``Channel.server_info``:
  Ollama's ``/api/ps`` or ``/api/show``) and the server is not one that refuses longer prompts
  (``ServerInfo.cuts_silently``), a first request that the doctor's size estimate
  (``estimate_tokens``, about 4 characters a token) puts over the window was cut, whatever the
  server's count says: a prompt over the window is never a valid result.

For the first two the count must also sit at the role's ceiling (at least ``MIN_CUT_TOKENS`` = 512 tokens
and at least 90 % of the largest count seen for the role in the trial): a cut prompt fills the
window, whereas a server that leaves cached tokens out of ``prompt_tokens`` (which the OpenAI API
does not do, but a proxy might) reports small, varying counts. Cached tokens a server does report
(``prompt_tokens_details.cached_tokens``) are added to the count, which can only make it larger.
A response without usage is never judged.

What one trial cannot tell — a role's only request cut behind a gateway that hides the server's
window — the run tells across trials, from the ceiling other trials' counts stopped at
(``run/truncation.py``).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from agentrig.channel.servers import GROWTH_MIN_TOKENS, ServerInfo, estimate_tokens, fix_window, stopped_growing
from agentrig.errors import Diagnosis

MAX_CHARS_PER_TOKEN = 12
GROWTH_MIN_CHARS = 4 * GROWTH_MIN_TOKENS  # 48: a clear growth (channel/servers.py's stopped_growing)
MIN_CUT_TOKENS = 512
CEILING = 0.9

TRUNCATION_FIX = ("give the server a context window larger than the longest prompt: Ollama — `num_ctx` "
                  "(a Modelfile `PARAMETER num_ctx 32768`, or start the server with OLLAMA_CONTEXT_LENGTH=32768); "
                  "llama.cpp — `-c` / `--ctx-size`; then rerun the same command (truncated trials are replayed)")


_THINK = re.compile(r"<think>.*?</think>", re.DOTALL)


def request_chars(messages: list[dict]) -> int:
    """Characters of the text a request's messages carry (content, tool call names and arguments;
    ``<think>`` blocks of assistant messages left out)."""
    n = 0
    for m in messages:
        content = m.get("content")
        if isinstance(content, str):
            if m.get("role") == "assistant" and "<think>" in content:
                content = _THINK.sub("", content)
            n += len(content)
        elif isinstance(content, list):
            for part in content:
                if isinstance(part, dict) and isinstance(part.get("text"), str):
                    n += len(part["text"])
        for call in m.get("tool_calls") or ():
            fn = (call or {}).get("function") or {}
            n += len(str(fn.get("name") or "")) + len(str(fn.get("arguments") or ""))
    return n


@dataclass
class _Seen:
    chars: int
    counted: int
    peak: int


@dataclass
class TruncationWatch:
    """One per trial: the previous answered request of each role."""

    seen: dict[str, _Seen] = field(default_factory=dict)
    _tools: tuple[Any, int] = (None, 0)  # (the last tools list, its JSON's length): agents reuse theirs

    def _tools_chars(self, tools: list[dict] | None) -> int:
        if not tools:
            return 0
        if self._tools[0] is not tools:
            self._tools = (tools, len(json.dumps(tools, ensure_ascii=False, separators=(",", ":"))))
        return self._tools[1]

    def first_request(self, role: str) -> bool:
        """Whether the role has no answered request in this trial yet (the window check applies)."""
        return role not in self.seen

    def check(self, role: str, messages: list[dict], usage: Any, tools: list[dict] | None = None,
              server: ServerInfo | None = None) -> Diagnosis | None:
        """The diagnosis when the answer to this request shows a cut prompt, else None.
        ``server``: what the channel knows of the server (its window), for a role's first request."""
        if server is not None and server.cuts_silently and self.first_request(role):
            over = _over_window(role, messages, tools, usage, server)
            if over is not None:
                return over
        if not getattr(usage, "reported", False) or (usage.prompt_tokens or 0) <= 0:
            return None
        counted = usage.prompt_tokens + (usage.cached_tokens or 0)
        chars = request_chars(messages) + self._tools_chars(tools) // 2
        before = self.seen.get(role)
        peak = max(counted, before.peak if before is not None else 0)
        self.seen[role] = _Seen(chars, counted, peak)
        if counted < MIN_CUT_TOKENS or counted < CEILING * peak:
            return None
        floor = chars // MAX_CHARS_PER_TOKEN
        if counted < floor:
            return Diagnosis("PROMPT_TRUNCATED", (
                f"the server cut role '{role}''s prompt: it counted {counted:,} prompt tokens for a request of "
                f"{chars:,} characters (at least {floor:,} tokens by any tokenizer); the model did "
                f"not see the whole conversation, so the trial measures nothing"), TRUNCATION_FIX)
        if before is not None and stopped_growing((chars - before.chars) / 4, before.counted, counted, share=0):
            return Diagnosis("PROMPT_TRUNCATED", (
                f"the server cut role '{role}''s prompt: the conversation grew by {chars - before.chars:,} characters "
                f"since the previous request, but the server's prompt token count did not grow "
                f"({before.counted:,} → {counted:,}): the prompt was cut at a window of about {before.counted:,} "
                f"tokens, so the model did not see the start of the conversation"), TRUNCATION_FIX)
        return None


def _over_window(role: str, messages: list[dict], tools: list[dict] | None, usage: Any,
                 server: ServerInfo) -> Diagnosis | None:
    """PROMPT_TRUNCATED when the first request's estimated size is over the server's known window
    (the server answered rather than refused: it cut the prompt to fit)."""
    window = server.window or 0
    needed = estimate_tokens(messages, tools)
    if needed <= window:
        return None
    counted = usage.prompt_tokens + (usage.cached_tokens or 0) if getattr(usage, "reported", False) else None
    said = f"; it counted {counted:,} prompt tokens" if counted else ""
    return Diagnosis("PROMPT_TRUNCATED", (
        f"role '{role}''s first request is about {needed:,} tokens (estimated at ~4 characters a token over "
        f"messages and tools), over {server.label}'s context window of {window:,} tokens ({server.window_source}), "
        f"and {server.label} answered it without an error{said}: the prompt was cut to fit the window, so the model "
        f"never saw all of it and the trial measures nothing"),
        fix_window(server, needed) + "; then rerun the same command (truncated trials are replayed)")
