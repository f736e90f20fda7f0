"""The bash agent's context window: how long a request is, and eliding old observations to fit.

The window is ``context_tokens`` when configured, else unknown until the endpoint refuses a
request as too long (a ``ContextOverflow`` from the channel): the window is then read from the
error's text ("maximum context length is 8192 tokens") or, when the text names no number, set
just below the refused request's size. A request's size is estimated from its characters, with
the ratio of tokens to characters calibrated on every completion whose usage the endpoint
reported (the first estimate assumes 4 characters a token).

Eliding changes only the agent's own request history, never the stored trajectory: the oldest
observations first, each cut to its first and last ``keep`` characters with a note saying how
much was left out; the newest observation last. When even that does not fit, nothing more can
be done (``fit`` returns False) and the agent stops with ``context_overflow`` (or, before any
answered call, lets the overflow stop the run: the window is too small for the task).
"""

from __future__ import annotations

import re

from . import bash_prompts as texts

_WINDOW = re.compile(r"(?:maximum context length|context (?:length|window)|context limit)\D{0,40}?(\d{3,9})", re.I)
DEFAULT_RATIO = 0.25  # tokens per character before any usage was reported
REPLY_RESERVE = 1024  # tokens kept free for the reply (at most a quarter of the window)


def _chars(m: dict) -> int:
    n = len(m.get("content") or "") if isinstance(m.get("content"), str) else 0
    for tc in m.get("tool_calls") or ():
        n += len(str(((tc or {}).get("function") or {}).get("arguments") or "")) + 16
    for key in ("reasoning_content", "reasoning"):
        value = m.get(key)
        if isinstance(value, str):
            n += len(value)
    return n + 8  # role and framing


def window_from_error(message: str) -> int | None:
    """The context length an overflow error names, if it names one."""
    found = _WINDOW.search(message or "")
    return int(found.group(1)) if found else None


class ContextWindow:
    def __init__(self, tokens: int | None, keep: int, max_tokens: int | None = None):
        self.tokens = tokens
        self.keep = keep
        self.max_tokens = max_tokens
        self.ratio = DEFAULT_RATIO
        self.elided: set[int] = set()  # indexes of the request history's elided observations

    def estimate(self, messages: list[dict]) -> int:
        return int(sum(_chars(m) for m in messages) * self.ratio) + 1

    def calibrate(self, messages: list[dict], prompt_tokens: int, reported: bool) -> None:
        chars = sum(_chars(m) for m in messages)
        if reported and prompt_tokens > 0 and chars > 0:
            self.ratio = max(0.05, min(2.0, prompt_tokens / chars))

    def budget(self) -> int | None:
        if self.tokens is None:
            return None
        reserve = min(self.max_tokens or REPLY_RESERVE, self.tokens // 4)
        return self.tokens - reserve

    def learn(self, error_message: str, request: list[dict], named: int | None = None) -> int:
        """Set the window after an overflow (``named``: the window the error carries, when the
        channel read one); returns it."""
        named = named or window_from_error(error_message)
        size = self.estimate(request)
        if named is not None:
            self.tokens = min(named, self.tokens or named)
            if size <= named:  # the refused request was longer than the window: make the estimate agree
                self.ratio = min(2.0, self.ratio * (named / size) * 1.05)
        else:  # no number: just below what was refused
            self.tokens = max(256, int(min(size, self.tokens or size) * 0.8))
        return self.tokens

    def fit(self, messages: list[dict], observations: list[int]) -> tuple[bool, int]:
        """Elide observations (indexes into ``messages``, oldest first) until the request fits.
        Returns (fits, how many were elided now)."""
        budget = self.budget()
        if budget is None or self.estimate(messages) <= budget:
            return True, 0
        done = 0
        for i in observations:
            if i not in self.elided and self._elide(messages, i):
                done += 1
                if self.estimate(messages) <= budget:
                    break
        return self.estimate(messages) <= budget, done

    def _elide(self, messages: list[dict], i: int) -> bool:
        text = messages[i].get("content")
        if not isinstance(text, str) or len(text) <= self.keep + 120:
            return False
        head = text[: self.keep // 2]
        tail = text[len(text) - (self.keep - self.keep // 2):] if self.keep else ""
        messages[i] = {**messages[i], "content": texts.elided(head, tail, len(text) - len(head) - len(tail))}
        self.elided.add(i)
        return True
