"""Agents against a real local endpoint and the built-in bikeshop domain."""

from __future__ import annotations

import pytest

from agentrig.bench.tau.data import domain_dir, load_policy, load_tasks
from agentrig.bench.tau.domains import get_domain
from agentrig.channel.client import Channel
from agentrig.bench.tau.domain import TauTrial
from agentrig.trial.context import TrialContext
from agentrig.types import Message, TrialKey

from tests.support import make_channel

DOMAIN = "bikeshop"


def bikeshop_task(task_id: str):
    for t in load_tasks(None, DOMAIN):
        if t.id == task_id:
            return t
    raise KeyError(task_id)


def make_ctx(task_id: str = "rent_city_bike", *, channel: Channel | None = None, seed: int = 7,
             domain: str = DOMAIN, root=None, task=None) -> TrialContext:
    task = task if task is not None else bikeshop_task(task_id)
    return TrialContext(key=TrialKey(arm="a", domain=domain, task_id=task.id, trial=0), task=task,
                        bench=TauTrial(get_domain(domain), domain_dir(root, domain), load_policy(root, domain)),
                        seed=seed, channel=channel)


def user(text: str) -> Message:
    return Message(role="user", content=text)


def tool(call_id: str, text: str, error: bool = False) -> Message:
    return Message(role="tool", content=text, tool_call_id=call_id, requestor="assistant", error=error)


@pytest.fixture
async def channel(fake):
    ch = make_channel(fake.base_url)
    yield ch
    await ch.aclose()


def chat_bodies(fake) -> list[dict]:
    return [r.json for r in fake.requests if r.path.endswith("/chat/completions")]
