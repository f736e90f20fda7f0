"""The literal values of a task's data — ids, names, e-mails, amounts, paths, quoted strings — that
a guideline derived from the task must not repeat (``Benchmark.task_values``; the value-leak check
of ``agentrig guidelines derive``). Generic: a benchmark says which parts of its tasks to read."""

from __future__ import annotations

import re
from typing import Any

__all__ = ["literal_values"]

_PROSE_TOKEN = re.compile(r"[\w@.$#/:+-]+")
_QUOTED = re.compile(r"(?<![A-Za-z])'([^'\n]{3,80})'(?![A-Za-z])|\"([^\"\n]{3,80})\"|`([^`\n]{3,80})`")
_SHARED_PATHS = ("/bin/", "/usr/", "/dev/", "/etc/", "/proc/", "/sys/", "/lib")
_SKIPPED_KEYS = frozenset(("action_id", "nl_assertions", "reward_basis", "env_type", "requestor"))


def _token_ok(tok: str) -> bool:
    """A token of free text worth guarding: an id or amount (two or more digits, or a digit with
    a separator: ``user_1``), an email, or a path that is not a shared system path."""
    if len(tok) < 3:
        return False
    if "/" in tok:
        return ":" not in tok and not tok.startswith(_SHARED_PATHS) and sum(c.isalnum() for c in tok) >= 3
    if "@" in tok:
        return "." in tok.split("@")[-1]
    digits = sum(c.isdigit() for c in tok)
    return digits >= 2 or (digits == 1 and any(c in "_-." for c in tok))


def _value_ok(text: str) -> bool:
    """A literal worth guarding: an id, amount, name, email or path — not a common word."""
    if len(text) < 3 or len(text) > 120:
        return False
    if any(c.isdigit() for c in text) or "@" in text or "/" in text:
        return True
    return text[0].isupper() and any(c.islower() for c in text)  # a name ("Yusuf", "Important Meeting")


def literal_values(data: Any, *, prose: bool = False, quoted: bool = True) -> set[str]:
    """The literal values in a task's data (a JSON-like value): strings that look like ids,
    names, emails or paths, and numbers of two or more digits. ``prose``: ``data`` is free text
    (or code): only its tokens that look like ids, amounts, emails or paths are taken, and with
    ``quoted`` its quoted phrases. Bookkeeping keys (``action_id``, …) are skipped."""
    out: set[str] = set()
    if isinstance(data, bool) or data is None:
        return out
    if isinstance(data, (int, float)):
        if abs(data) >= 10:
            out.add(str(data))
            if isinstance(data, float) and data.is_integer():
                out.add(str(int(data)))
        return out
    if isinstance(data, str):
        text = data.strip()
        if prose or len(text) > 120:
            for tok in _PROSE_TOKEN.findall(text):
                tok = tok.strip(".,:;-+#$")
                if _token_ok(tok):
                    out.add(tok)
            for m in _QUOTED.finditer(text) if quoted else ():
                phrase = next(g for g in m.groups() if g is not None).strip()
                if len(phrase) >= 3 and any(c.isalnum() for c in phrase) and not phrase.isalpha() or (
                        phrase.isalpha() and not phrase.islower()):  # a plain lower-case word is no value
                    out.add(phrase)
        elif _value_ok(text):
            out.add(text)
        return out
    if isinstance(data, dict):
        for k, v in data.items():
            if k not in _SKIPPED_KEYS:
                out |= literal_values(v, prose=prose, quoted=quoted)
    elif isinstance(data, (list, tuple)):
        for v in data:
            out |= literal_values(v, prose=prose, quoted=quoted)
    return out
