"""The solution endpoint's memory replies: the gold endpoint's, plus lessons about commands.

The edit phase (the request offers the ``memory_*`` tools) makes, in one answer:

- the gold endpoint's knowledge note naming the task's first solution command, once (while the
  bank does not hold it yet);
- one procedural entry per failed command in the window (``exit code`` not 0, or killed at its
  timeout) that the request does not already hold: ``command `X` failed (exit code N): <its
  first output line>``;
- one procedural entry per fix: the first command after a failure that exits 0 —
  ``after `X` failed, `Y` worked (exit code 0)`` (the submission is no fix).

Everything is read from the request alone (the window as ``plugins/memory/window.py`` renders
it; the bank and the previous edits shown in the same request are how a lesson is known to be
saved), so a retried request gets the same answer. The decide phase is the gold endpoint's.
"""

from __future__ import annotations

import json
import re
from typing import Any

from agentrig.agents.bash import parse_action
from agentrig.agents.bash_prompts import SUBMIT_SENTINEL, TOOL_NAME
from agentrig.testing._scripted import MEMORY_NOTE, MEMORY_TOOL_PREFIX, SAVE_KNOWLEDGE, content_text, request_text
from agentrig.testing._scripted import memory_reply as gold_memory_reply

SAVE_PROCEDURAL = "memory_save_procedural"
SHOWN = 80  # characters of a command or output line kept in a lesson

_WINDOW = re.compile(r"<window>\n(.*)\n</window>", re.S)
_LINE = re.compile(r"^\[turn (\d+)\] ", re.M)
_CALL = re.compile(rf"^agent calls {TOOL_NAME}\((.*)\)$", re.S)
_WRITTEN = f"agent calls {TOOL_NAME} (arguments as in its text above)"
_RESULT = re.compile(rf"^(?:result of|error from) {TOOL_NAME}: exit code: (\S+)(.*)$", re.S)


def _short(text: str, first_line: bool = False) -> str:
    """A command (whitespace collapsed) or an output's first line, at most SHOWN characters."""
    if first_line:
        text = text.strip().splitlines()[0] if text.strip() else ""
    line = " ".join(text.split())
    return line if len(line) <= SHOWN else line[:SHOWN] + "…"


def _command(args: str) -> str:
    try:
        value = json.loads(args)
    except ValueError:
        return args  # cut by the window: the raw start
    return str(value.get("command", "")) if isinstance(value, dict) else args


def commands(window: str) -> list[tuple[str, str | None, str]]:
    """The window's commands in order: (command, exit code text or None when unanswered, first output line)."""
    items = [(m.start(), m.end()) for m in _LINE.finditer(window)]
    entries = [window[end:(items[k + 1][0] if k + 1 < len(items) else len(window))].rstrip("\n")
               for k, (_, end) in enumerate(items)]
    out: list[list[Any]] = []
    text = ""
    for entry in entries:
        if entry.startswith("agent: "):
            text = entry[len("agent: "):]
        elif entry == _WRITTEN:
            out.append([parse_action(text)[0] or text, None, ""])
        elif (call := _CALL.match(entry)) is not None:
            out.append([_command(call.group(1)), None, ""])
        elif (result := _RESULT.match(entry)) is not None and out and out[-1][1] is None:
            rest = result.group(2).split("output:\n", 1)
            out[-1][1] = result.group(1)
            out[-1][2] = _short(rest[1] if len(rest) > 1 else "", first_line=True)
    return [(c, code, first) for c, code, first in out]


def lessons(window: str) -> list[str]:
    """The procedural lessons the window teaches: failures, and the fix after each."""
    out: list[str] = []
    failed: str | None = None
    for command, code, first in commands(window):
        if code is None:
            continue
        shown = _short(command)
        if code != "0":
            out.append(f"command `{shown}` failed (exit code {code.rstrip(',')}): {first or '(no output)'}")
            failed = shown
        elif failed is not None and SUBMIT_SENTINEL not in command:
            out.append(f"after `{failed}` failed, `{shown}` worked (exit code 0)")
            failed = None
    return out


def memory_reply(script: Any, body: dict) -> dict:
    """The reply of the memory role for a terminal trial (see the module docstring)."""
    messages = body.get("messages") or []
    names = [((t or {}).get("function") or {}).get("name") or "" for t in body.get("tools") or []]
    if not any(n.startswith(MEMORY_TOOL_PREFIX) for n in names):
        return gold_memory_reply(script, body)
    text = request_text(messages)
    saves: list[tuple[str, str]] = []
    if MEMORY_NOTE not in text and SAVE_KNOWLEDGE in names:
        saves.append((SAVE_KNOWLEDGE, f"{MEMORY_NOTE} {script.first_step_text()}"[:300]))
    last = next((m for m in reversed(messages) if m.get("role") == "user"), None)
    found = _WINDOW.search(content_text(last.get("content")) if last else "")
    if found is not None and SAVE_PROCEDURAL in names:
        saves += [(SAVE_PROCEDURAL, lesson) for lesson in dict.fromkeys(lessons(found.group(1))) if lesson not in text]
    if not saves:
        return {"content": "The memory bank is up to date."}
    return {"content": None, "tool_calls": [{"id": f"sol_m{i + 1}", "name": name, "arguments": {"content": content}}
                                            for i, (name, content) in enumerate(saves)]}
