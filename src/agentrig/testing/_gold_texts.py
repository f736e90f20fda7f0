"""The gold endpoint's texts and its stateless replies for the judge and the memory plug-in
(see ``gold_endpoint`` for what each role gets)."""

from __future__ import annotations

import hashlib
import json
import re
from typing import Any

from ..agents.base import GREETING
from ..errors import Signal
from ..types import HEADER_MAX

_OUTCOMES = re.compile(r"<expected_outcomes>(.*?)</expected_outcomes>", re.S)
MEMORY_NOTE = "[gold] first step of the task:"  # how the edit phase's knowledge entry starts
MEMORY_TOOL_PREFIX = "memory_"
SAVE_KNOWLEDGE = "memory_save_knowledge"
NO_INTERVENTION = "<no_intervention/>"
REMIND_EVERY = 3


class GoldRequestError(Signal):
    """A request the gold endpoint cannot answer: becomes a 400 with this message."""


def judge_reply(messages: list[dict]) -> dict:
    """Every expected outcome met, in the NL judge's answer format."""
    last = next((m for m in reversed(messages) if m.get("role") == "user"), None)
    text = _content_text(last.get("content")) if last else ""
    found = _OUTCOMES.search(text)
    if found is None:
        raise GoldRequestError("judge request: the last user message holds no <expected_outcomes>[...]"
                               "</expected_outcomes> block (a JSON array of the outcomes to judge)")
    try:
        outcomes = json.loads(found.group(1))
    except ValueError as exc:
        raise GoldRequestError(f"judge request: <expected_outcomes> is not a JSON array ({exc})") from None
    if not isinstance(outcomes, list):
        raise GoldRequestError("judge request: <expected_outcomes> must hold a JSON array")
    results = [{"expectedOutcome": o, "reasoning": "The gold conversation meets this outcome.",
                "metExpectation": True} for o in outcomes]
    return {"content": json.dumps({"results": results})}


def memory_reply(script: Any, body: dict) -> dict:
    """The memory plug-in's edit phase (one knowledge note naming the task's first gold step, once) or
    decide phase (mostly silence; a reminder for about one request in three, deterministically)."""
    messages = body.get("messages") or []
    names = [((t or {}).get("function") or {}).get("name") or "" for t in body.get("tools") or []]
    text = _request_text(messages)
    if any(n.startswith(MEMORY_TOOL_PREFIX) for n in names):  # edit phase
        if MEMORY_NOTE in text or SAVE_KNOWLEDGE not in names:
            return {"content": "The memory bank is up to date."}
        calls = sum(len(m.get("tool_calls") or []) for m in messages if m.get("role") == "assistant")
        note = f"{MEMORY_NOTE} {script.first_step_text()}"[:300]
        return {"content": None, "tool_calls": [
            {"id": f"gold_m{calls + 1}", "name": SAVE_KNOWLEDGE, "arguments": {"content": note}}]}
    last = next((m for m in reversed(messages) if m.get("role") != "system"), messages[-1] if messages else {})
    digest = hashlib.blake2b(_content_text(last.get("content")).encode("utf-8"), digest_size=4).digest()
    if NO_INTERVENTION in text and int.from_bytes(digest, "big") % REMIND_EVERY:
        return {"content": NO_INTERVENTION}
    reminder = f"Before the next action, check it against the task: its first step is {script.first_step_text()}."
    return {"content": f"<context_for_action>{reminder[:400]}</context_for_action>"}


def header_form(value: str) -> str:
    """What ``CallContext.headers`` sends for a value: printable ASCII only, cut at HEADER_MAX."""
    return "".join(ch for ch in value if 32 <= ord(ch) < 127)[:HEADER_MAX]



def _is_text(m: dict) -> bool:
    if m.get("tool_calls"):
        return False
    text = _content_text(m.get("content"))
    return bool(text) and text != GREETING


def _content_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(p.get("text") or "" for p in content if isinstance(p, dict))
    return ""


def _request_text(messages: list[dict]) -> str:
    """Every text of a request: contents and tool-call arguments."""
    parts = []
    for m in messages:
        parts.append(_content_text(m.get("content")))
        for tc in m.get("tool_calls") or []:
            fn = tc.get("function") or {}
            parts.append(str(fn.get("arguments") or ""))
    return "\n".join(parts)


def _call_text(name: str, arguments: Any) -> str:
    args = ", ".join(f"{k}={json.dumps(v, ensure_ascii=False)}" for k, v in (arguments or {}).items())
    return f"{name}({args})"


def _info_text(info: list[str]) -> str:
    if not info:
        return "Everything you asked for is done. Is there anything else I can help with?"
    return "Everything is done. Here is what you need to know: " + "; ".join(info) + "."


def _opening(task: Any) -> str:
    ins = task.user_scenario.instructions
    text = ins if isinstance(ins, str) else ins.reason_for_call
    text = " ".join(str(text).split())
    return ("Hi, I need some help. " + text)[:600]
