"""Usage accounting per role: tokens, retries by cause, latency percentiles, cost."""

from __future__ import annotations

import pytest

from agentrig.channel import Channel
from agentrig.channel.usage import percentile
from agentrig.config import ChannelConfig, ChannelSettings, Price, RoleConfig

from .conftest import KEY, KEY_ENV

MSG = [{"role": "user", "content": "hi"}]


def test_percentile_interpolates():
    assert percentile([], 50) is None
    assert percentile([1.0], 99) == 1.0
    assert percentile([1.0, 2.0, 3.0, 4.0], 50) == pytest.approx(2.5)
    assert percentile([0.0, 10.0], 90) == pytest.approx(9.0)


async def test_usage_per_role_with_prices(fake):
    fake.push_reply(
        {"content": "a", "usage": {"prompt_tokens": 1000, "completion_tokens": 200,
                                    "prompt_tokens_details": {"cached_tokens": 400},
                                    "completion_tokens_details": {"reasoning_tokens": 50}}},
    )
    cfg = ChannelConfig(
        channel=ChannelSettings(base_url=fake.base_url, api_key_env=KEY_ENV, backoff_base_s=0.01),
        roles={"agent": RoleConfig(model="fake-model"), "user": RoleConfig(model="fake-model-mini")},
        prices={"fake-model": Price(input=2.0, output=8.0, cached_input=0.5)},
    )
    async with Channel(cfg, env={KEY_ENV: KEY}) as ch:
        await ch.complete("agent", MSG)
        fake.push("server_error")
        await ch.complete("user", MSG)
        await ch.complete("user", MSG)
        s = ch.usage.summary()
    agent, user = s["agent"], s["user"]
    assert (agent.prompt_tokens, agent.completion_tokens, agent.cached_tokens, agent.reasoning_tokens) == (1000, 200, 400, 50)
    # (600 * 2.0 + 400 * 0.5 + 200 * 8.0) / 1e6
    assert agent.cost_usd == pytest.approx(3.0e-3)
    assert user.cost_usd is None  # no price for fake-model-mini: unknown
    assert (user.requests, user.attempts, user.retries, user.retries_by_cause) == (2, 3, 1, {"server_error": 1})
    assert user.latency_p50_s is not None and user.latency_p50_s <= user.latency_p99_s  # percentiles in order, not a time bound
    assert user.models == ["fake-model-mini"]
