"""Agents against a real local endpoint and the built-in bikeshop domain."""

from __future__ import annotations

import pytest

from agentrig.bench.tau.data import domain_dir, load_policy, load_tasks
from agentrig.bench.tau.domains import get_domain
from agentrig.channel.client import Channel
from agentrig.config import ChannelConfig, ChannelSettings, RoleConfig
from agentrig.run.context import TrialContext
from agentrig.testing.fake_endpoint import FakeEndpoint
from agentrig.types import Message, TrialKey

KEY = "sk-fake-agents-0123456789abcdef"
KEY_ENV = "AGENTRIG_TEST_KEY"
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
                        spec=get_domain(domain), domain_dir=domain_dir(root, domain),
                        policy=load_policy(root, domain), seed=seed, channel=channel)


def user(text: str) -> Message:
    return Message(role="user", content=text)


def tool(call_id: str, text: str, error: bool = False) -> Message:
    return Message(role="tool", content=text, tool_call_id=call_id, requestor="assistant", error=error)


@pytest.fixture
async def fake():
    ep = FakeEndpoint(api_key=KEY)
    await ep.start()
    yield ep
    await ep.stop()


@pytest.fixture
async def channel(fake):
    cfg = ChannelConfig(channel=ChannelSettings(base_url=fake.base_url, api_key_env=KEY_ENV, model="fake-model",
                                                timeout_s=5, max_attempts=2, backoff_base_s=0.01,
                                                backoff_max_s=0.02),
                        roles={"agent": RoleConfig()})
    ch = Channel(cfg, env={KEY_ENV: KEY})
    yield ch
    await ch.aclose()


def chat_bodies(fake) -> list[dict]:
    return [r.json for r in fake.requests if r.path.endswith("/chat/completions")]
