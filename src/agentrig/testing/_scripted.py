"""What the scripted endpoints share: the gold endpoint (τ², ``bench/tau/scripted/gold_endpoint``),
the solution endpoint (terminal, ``bench/terminal/scripted/solution_endpoint``), the AppWorld
endpoint (``bench/appworld/scripted/appworld_endpoint``) and any other benchmark's.

Each is a ``FakeEndpoint`` whose responder plays a task's script, answering every request from the
request alone (a retried request gets the same answer). The common part is here:

- ``ScriptedResponder``, the responder's base: it reads the ``X-Agentrig-Role`` header, answers
  ``agentrig doctor``'s probes (role ``doctor``) as any server that calls tools, refuses a role it
  does not play and a request without the headers that name the trial's task, and turns every
  request it cannot answer (a ``GoldRequestError``) into an HTTP 400 ``"<name>: <problem>"``. A
  subclass says which roles it plays and ``play``s them.
- ``actions_played``: how many of its actions the agent has played in a conversation, the count a
  stateless script resumes from (a call of the action tool in native mode; in text mode, an
  assistant reply that holds exactly one action, so format-error retries do not count).
- ``memory_reply``: the memory plug-in's replies, from a script's first step (``first_step_text``).
- ``header_form``: a value as an ``X-Agentrig-*`` header carries it (a task id looked up by its header).
- ``serve_main`` (in ``fake_endpoint``, shared with the fake endpoint's own command line) runs
  each one's ``python -m agentrig.bench.<name>.scripted.<module>``.

The scripted endpoints themselves are their benchmarks' (``bench/tau/scripted``,
``bench/terminal/scripted``, ``bench/appworld/scripted``); this module knows no benchmark.
"""

from __future__ import annotations

import hashlib
from typing import Any, Callable, ClassVar

from ..errors import Signal
from ..types import HEADER_MAX
from ._fake_bodies import Fault, doctor_reply
from ._fake_server import REQUEST_HEADERS

__all__ = ["GoldRequestError", "MEMORY_NOTE", "ScriptedResponder", "actions_played", "content_text", "header_form",
           "named", "offered_name",
           "memory_reply", "request_text"]

MEMORY_NOTE = "[gold] first step of the task:"  # how the edit phase's knowledge entry starts
MEMORY_TOOL_PREFIX = "memory_"
SAVE_KNOWLEDGE = "memory_save_knowledge"
NO_INTERVENTION = "<no_intervention/>"
REMIND_EVERY = 3


class GoldRequestError(Signal):
    """A request a scripted endpoint cannot answer: becomes a 400 with this message."""


def _and(words: tuple[str, ...]) -> str:
    return words[0] if len(words) == 1 else f"{', '.join(words[:-1])} and {words[-1]}"


class ScriptedResponder:
    """``responder(body, headers)`` for a FakeEndpoint whose requests carry agentrig's X-Agentrig-*
    headers (read from the request through a context variable when ``headers`` is not given)."""

    name: ClassVar[str] = "scripted endpoint"  # "the <name> plays …"; its 400s read "<name>: <problem>"
    roles: ClassVar[tuple[str, ...]] = ("agent", "memory")  # the roles played from a task's script
    free_roles: ClassVar[tuple[str, ...]] = ()  # roles answered from the request alone (τ²'s judge)
    task_headers: ClassVar[tuple[str, ...]] = ("X-Agentrig-Task",)  # the headers that name the task

    def __call__(self, body: dict, headers: Any = None) -> dict | Fault:
        headers = headers if headers is not None else REQUEST_HEADERS.get()
        try:
            return self.reply(body, headers or {})
        except GoldRequestError as exc:
            return Fault("bad_request", message=f"{self.name}: {exc}")

    def reply(self, body: dict, headers: Any) -> dict:
        """The reply to one request; a ``GoldRequestError`` for one it cannot answer."""
        role = headers.get("X-Agentrig-Role")
        if role in self.free_roles:
            return self.play_free(role, body)
        if role == "doctor":  # `agentrig doctor`'s probes: answered as any server that calls tools
            return doctor_reply(body)
        if role not in self.roles:
            raise GoldRequestError(f"X-Agentrig-Role is {role!r}; the {self.name} plays the roles "
                                   f"{_and(self.roles + self.free_roles)} (send requests through agentrig's channel)")
        if not all(headers.get(h) for h in self.task_headers):
            one = len(self.task_headers) == 1
            raise GoldRequestError(f"the request lacks the {' / '.join(self.task_headers)} header{'' if one else 's'} "
                                   f"that name{'s' if one else ''} the trial's task (agentrig's channel sends "
                                   f"{'it' if one else 'them'})")
        return self.play(role, body, headers)

    def play(self, role: str, body: dict, headers: Any) -> dict:
        """The reply of ``role`` (one of ``roles``), the task named by ``task_headers``."""
        raise NotImplementedError

    def play_free(self, role: str, body: dict) -> dict:
        """The reply of ``role`` (one of ``free_roles``), from the request alone."""
        raise NotImplementedError


_SEPARATORS = ("__", ".")


def named(name: str, tool: str) -> bool:
    """Whether ``name`` is ``tool`` itself or ``tool`` under an MCP client's prefix (``mcp__tau__tool``,
    ``appworld.tool``: it ends with ``__tool`` or ``.tool``)."""
    return name == tool or any(name.endswith(sep + tool) for sep in _SEPARATORS)


def offered_name(name: str, body: dict | None) -> str:
    """The name the request's tools offer ``name`` by: ``name`` itself, else the one offered tool
    whose name ends with ``__name`` or ``.name`` (an MCP client's prefix: ``mcp__tau__name``); ``name``
    when the request offers neither. Several such tools are a request the script cannot answer."""
    names = [((t or {}).get("function") or {}).get("name") or (t or {}).get("name") or ""
             for t in (body or {}).get("tools") or () if isinstance(t, dict)]
    if name in names:
        return name
    found = [n for n in names if n != name and named(n, name)]
    if len(found) > 1:
        raise GoldRequestError(f"the request offers several tools named like the scripted step's {name!r}: "
                               f"{', '.join(found[:5])}")
    return found[0] if found else name


def actions_played(messages: list[dict], native: bool, tool: str, one_action: Callable[[str], bool]) -> int:
    """The agent's actions already in the conversation: its calls of ``tool`` (``native``: the request
    offers tools; under an MCP client's prefix too, ``named``), else its replies whose text holds
    exactly one action (``one_action(text)``)."""
    n = 0
    for m in messages:
        if m.get("role") != "assistant":
            continue
        if native:
            n += sum(1 for tc in m.get("tool_calls") or () if named(((tc or {}).get("function") or {}).get("name") or "", tool))
        elif isinstance(m.get("content"), str) and one_action(m["content"]):
            n += 1
    return n


def memory_reply(script: Any, body: dict) -> dict:
    """The memory plug-in's edit phase (one knowledge note naming the task's first step, from
    ``script.first_step_text()``, once) or decide phase (mostly silence; a reminder for about one
    request in three, deterministically)."""
    messages = body.get("messages") or []
    names = [((t or {}).get("function") or {}).get("name") or "" for t in body.get("tools") or []]
    text = request_text(messages)
    if any(n.startswith(MEMORY_TOOL_PREFIX) for n in names):  # edit phase
        if MEMORY_NOTE in text or SAVE_KNOWLEDGE not in names:
            return {"content": "The memory bank is up to date."}
        calls = sum(len(m.get("tool_calls") or []) for m in messages if m.get("role") == "assistant")
        note = f"{MEMORY_NOTE} {script.first_step_text()}"[:300]
        return {"content": None, "tool_calls": [
            {"id": f"gold_m{calls + 1}", "name": SAVE_KNOWLEDGE, "arguments": {"content": note}}]}
    last = next((m for m in reversed(messages) if m.get("role") != "system"), messages[-1] if messages else {})
    digest = hashlib.blake2b(content_text(last.get("content")).encode("utf-8"), digest_size=4).digest()
    if NO_INTERVENTION in text and int.from_bytes(digest, "big") % REMIND_EVERY:
        return {"content": NO_INTERVENTION}
    reminder = f"Before the next action, check it against the task: its first step is {script.first_step_text()}."
    return {"content": f"<context_for_action>{reminder[:400]}</context_for_action>"}


def header_form(value: str) -> str:
    """What ``CallContext.headers`` sends for a value: printable ASCII only, cut at HEADER_MAX."""
    return "".join(ch for ch in value if 32 <= ord(ch) < 127)[:HEADER_MAX]


def content_text(content: Any) -> str:
    """A message's text: its string content, or its text parts joined."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(p.get("text") or "" for p in content if isinstance(p, dict))
    return ""


def request_text(messages: list[dict]) -> str:
    """Every text of a request: contents and tool-call arguments."""
    parts = []
    for m in messages:
        parts.append(content_text(m.get("content")))
        for tc in m.get("tool_calls") or []:
            fn = tc.get("function") or {}
            parts.append(str(fn.get("arguments") or ""))
    return "\n".join(parts)

