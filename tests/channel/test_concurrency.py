"""Concurrency is bounded per endpoint (base URL + key); roles sharing one share its bound."""

from __future__ import annotations

import asyncio

from agentrig.channel import Channel
from agentrig.config import ChannelConfig, ChannelSettings, RoleConfig
from agentrig.testing.fake_endpoint import FakeEndpoint

from .conftest import KEY, KEY_ENV

MSG = [{"role": "user", "content": "hi"}]


def cfg(base_url: str, agent: dict, user: dict) -> ChannelConfig:
    return ChannelConfig(
        channel=ChannelSettings(base_url=base_url, api_key_env=KEY_ENV, model="fake-model"),
        roles={"agent": RoleConfig(**agent), "user": RoleConfig(**user)},
    )


async def test_bound_is_enforced_and_reached():
    async with FakeEndpoint(api_key=KEY, delay_s=0.15) as fake:
        async with Channel(cfg(fake.base_url, {"max_concurrency": 3}, {"max_concurrency": 3}), env={KEY_ENV: KEY}) as ch:
            await asyncio.gather(*(ch.complete("agent", MSG) for _ in range(12)))
        assert fake.max_in_flight == 3


async def test_roles_on_one_endpoint_share_the_smallest_bound():
    async with FakeEndpoint(api_key=KEY, delay_s=0.15) as fake:
        async with Channel(cfg(fake.base_url, {"max_concurrency": 6}, {"max_concurrency": 2}), env={KEY_ENV: KEY}) as ch:
            calls = [ch.complete("agent", MSG) for _ in range(6)] + [ch.complete("user", MSG) for _ in range(6)]
            await asyncio.gather(*calls)
        assert fake.max_in_flight == 2


async def test_distinct_endpoints_have_their_own_bounds():
    async with FakeEndpoint(api_key=KEY, delay_s=0.15) as a, FakeEndpoint(api_key=KEY, delay_s=0.15) as b:
        config = cfg(a.base_url, {"max_concurrency": 2}, {"max_concurrency": 3, "base_url": b.base_url})
        async with Channel(config, env={KEY_ENV: KEY}) as ch:
            await asyncio.gather(*([ch.complete("agent", MSG) for _ in range(8)] + [ch.complete("user", MSG) for _ in range(8)]))
        assert (a.max_in_flight, b.max_in_flight) == (2, 3)
