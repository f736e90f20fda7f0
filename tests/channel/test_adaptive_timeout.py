"""Adaptive timeouts: after a warm-up, a hung request is cut at a multiple of the observed latency."""

from __future__ import annotations

from agentrig.channel import Channel
from agentrig.channel.adaptive import FLOOR_S, WARMUP, LatencyWindow
from agentrig.testing.fake_endpoint import Fault

from .conftest import make_config

MSG = [{"role": "user", "content": "hello"}]


def test_the_window_warms_up_then_follows_the_latency_with_a_floor_and_the_configured_cap():
    w = LatencyWindow()
    for _ in range(WARMUP - 1):
        w.observe(0.01)
    assert w.timeout_for(60.0) == (60.0, False)  # still warming up: the configured timeout
    w.observe(0.01)
    assert w.timeout_for(60.0) == (FLOOR_S, True)  # 4 × 10 ms is below the floor
    for _ in range(200):
        w.observe(2.0)
    assert w.timeout_for(60.0) == (8.0, True)  # 4 × p99
    assert w.timeout_for(60.0, timeouts_so_far=1) == (16.0, True)  # a call cut once gets twice as long
    assert w.timeout_for(60.0, timeouts_so_far=3) == (60.0, False)  # never above timeout_s
    assert w.timeout_for(5.0) == (5.0, False)


async def test_a_hung_request_is_cut_by_the_adaptive_limit_and_retried(fake, env):
    async with Channel(make_config(fake.base_url, timeout_s=30, max_attempts=3), env=env) as ch:
        for _ in range(WARMUP):
            await ch.complete("agent", MSG)
        fake.push(Fault("hang"))
        c = await ch.complete("agent", MSG)
        assert c.message.content == "OK"
        first, second = c.attempts
        assert first.cause == "timeout" and second.cause is None
        assert first.detail == f"no answer within {FLOOR_S:g}s (the adaptive limit; timeout_s=30)"
        agent = ch.usage.summary()["agent"]
        assert agent.retries_by_cause == {"timeout": 1}
        (ep,) = ch._endpoints.values()
        assert ep.window("fake-model").adaptive_s() == FLOOR_S


async def test_with_adaptation_off_the_configured_timeout_applies(fake, env):
    cfg = make_config(fake.base_url, timeout_s=2, max_attempts=2, adaptive_timeout=False)
    async with Channel(cfg, env=env) as ch:
        for _ in range(WARMUP):
            await ch.complete("agent", MSG)
        fake.push(Fault("hang"))
        c = await ch.complete("agent", MSG)
        first, second = c.attempts
        assert first.cause == "timeout" and first.detail == "no answer within 2s" and second.cause is None
        assert first.latency_s >= 1.8  # waited for the configured 2 s (a lower bound that proves the wait: not a time bound)
        (ep,) = ch._endpoints.values()
        assert ep.latencies == {}  # nothing observed, nothing adapted


async def test_a_request_hung_during_the_warm_up_is_cut_once_the_limit_is_known(fake, env):
    import asyncio

    async with Channel(make_config(fake.base_url, timeout_s=60, max_attempts=2), env=env) as ch:
        fake.push(Fault("hang"))
        hung = asyncio.create_task(ch.complete("agent", MSG))  # sent with the configured 60 s
        await asyncio.sleep(0.3)  # sent, and hanging
        assert not hung.done()
        for _ in range(WARMUP):  # the window warms up while it hangs
            await ch.complete("agent", MSG)
        c = await hung
        first, second = c.attempts
        assert first.cause == "timeout" and "the adaptive limit; timeout_s=60" in first.detail
        assert second.cause is None and c.message.content == "OK"
