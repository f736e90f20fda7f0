"""What the scripted endpoints share: the gold endpoint (τ², ``gold_endpoint``), the solution
endpoint (terminal, ``solution_endpoint``) and the AppWorld endpoint (``appworld_endpoint``).

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
- ``serve_main`` (in ``fake_endpoint``, shared with the fake endpoint's own command line) runs
  each one's ``python -m agentrig.testing.<module>``.
"""

from __future__ import annotations

from typing import Any, Callable, ClassVar

from ._fake_bodies import Fault, doctor_reply
from ._fake_server import REQUEST_HEADERS
from ._gold_texts import GoldRequestError

__all__ = ["ScriptedResponder", "actions_played"]


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


def actions_played(messages: list[dict], native: bool, tool: str, one_action: Callable[[str], bool]) -> int:
    """The agent's actions already in the conversation: its calls of ``tool`` (``native``: the request
    offers tools), else its replies whose text holds exactly one action (``one_action(text)``)."""
    n = 0
    for m in messages:
        if m.get("role") != "assistant":
            continue
        if native:
            n += sum(1 for tc in m.get("tool_calls") or () if ((tc or {}).get("function") or {}).get("name") == tool)
        elif isinstance(m.get("content"), str) and one_action(m["content"]):
            n += 1
    return n
