"""A real local endpoint that answers the agent, the user simulator and the memory model of a
trial, told apart by the ``X-Agentrig-Role`` header agentrig's channel sends."""

from __future__ import annotations

import contextvars
import json
from typing import Any, Callable

import pytest

from agentrig.agents.base import AgentSettings
from agentrig.bench.tau.data import domain_dir, load_policy, load_tasks
from agentrig.bench.tau.domains import get_domain
from agentrig.bench.tau.user import UserSettings
from agentrig.channel.client import Channel
from agentrig.plugins.base import PluginSettings
from agentrig.bench.tau.domain import TauTrial
from agentrig.trial.context import TrialContext
from agentrig.bench.tau.episode import Limits, play_trial
from agentrig.testing.fake_endpoint import FakeEndpoint
from agentrig.types import TrialKey, TrialRecord

from tests.support import KEY, make_channel
LLM = AgentSettings(kind="llm")
LLM_USER = UserSettings(kind="llm", guidelines="builtin")
_role: contextvars.ContextVar[str | None] = contextvars.ContextVar("memory_test_role", default=None)


class RoleEndpoint(FakeEndpoint):
    """``handlers[role](body)`` answers the requests of that role (``memory.edit`` requests are
    the memory requests that offer tools, ``memory.decide`` the ones that do not)."""

    def __init__(self, **kwargs: Any):
        self.handlers: dict[str, Callable[[dict], Any]] = {}
        super().__init__(responder=self._route, **kwargs)

    async def _chat_inner(self, request, body, sent, auth_ok):
        _role.set(request.headers.get("X-Agentrig-Role"))
        return await super()._chat_inner(request, body, sent, auth_ok)

    def _route(self, body: dict) -> Any:
        role = _role.get()
        if role == "memory":
            role = "memory.edit" if body.get("tools") else "memory.decide"
        return self.handlers[role](body)

    def bodies(self, role: str) -> list[dict]:
        out = []
        for r in self.requests:
            if not r.path.endswith("/chat/completions") or not isinstance(r.json, dict):
                continue
            got = r.headers.get("x-agentrig-role")
            if got == "memory":
                got = "memory.edit" if r.json.get("tools") else "memory.decide"
            if got == role or (role == "memory" and got.startswith("memory")):
                out.append(r.json)
        return out


def script(replies: list[Any], then: Any) -> Callable[[dict], Any]:
    """A handler that plays ``replies`` in order, then ``then`` forever (a reply or a callable)."""
    it = iter(replies)

    def handle(body: dict) -> Any:
        for reply in it:
            return reply(body) if callable(reply) else reply
        return then(body) if callable(then) else then

    return handle


def users(n: int) -> Callable[[dict], Any]:
    """A user that sends n messages, the last one ending the conversation (n - 1 agent steps)."""
    return script([{"content": f"user message {i}"} for i in range(1, n)], {"content": "Thanks, bye ###STOP###"})


def tool_reply(name: str, arguments: Any, call_id: str | None = None) -> dict:
    call = {"name": name, "arguments": arguments}
    if call_id:
        call["id"] = call_id
    return {"content": None, "tool_calls": [call]}


def edits(*calls: tuple[str, dict]) -> dict:
    return {"content": None, "tool_calls": [{"name": n, "arguments": a} for n, a in calls]}


SILENT = {"content": "<no_intervention/>"}
NO_EDIT = {"content": "Nothing to change."}


def last_user_text(body: dict) -> str:
    return body["messages"][-1]["content"]


def section(text: str, tag: str) -> str:
    start = text.index(f"<{tag}>\n") + len(tag) + 3
    return text[start:text.index(f"\n</{tag}>", start)]


def agent_texts(fake: RoleEndpoint) -> list[str]:
    return [json.dumps(b) for b in fake.bodies("agent")]


@pytest.fixture
async def fake():
    ep = RoleEndpoint(api_key=KEY)
    ep.handlers["agent"] = lambda body: {"content": "Could you tell me more?"}
    ep.handlers["memory.edit"] = lambda body: NO_EDIT
    ep.handlers["memory.decide"] = lambda body: SILENT
    await ep.start()
    yield ep
    await ep.stop()


@pytest.fixture
async def channel(fake):
    ch = make_channel(fake.base_url, ("agent", "user", "memory"), key=KEY)
    yield ch
    await ch.aclose()


def ctx_for(channel: Channel, *, task_id: str = "rent_city_bike", trial: int = 0) -> TrialContext:
    task = next(t for t in load_tasks(None, "bikeshop") if t.id == task_id)
    return TrialContext(key=TrialKey(arm="mem", domain="bikeshop", task_id=task.id, trial=trial), task=task,
                        bench=TauTrial(get_domain("bikeshop"), domain_dir(None, "bikeshop"), load_policy(None, "bikeshop")),
                        seed=5, channel=channel, run_id="r1")


async def play(channel: Channel, trial: int = 0, **settings: Any) -> TrialRecord:
    return await play_trial(ctx_for(channel, trial=trial), agent=LLM, user=LLM_USER,
                            plugins=[PluginSettings(kind="memory", **settings)], limits=Limits(max_steps=60),
                            nl_judge="never")


def triggers(record: TrialRecord) -> list[dict]:
    return [e.data for e in record.trajectory.events if e.kind == "memory.trigger"]
