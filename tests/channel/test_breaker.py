"""The circuit breaker against a real local server that goes down and comes back on its port."""

from __future__ import annotations

import asyncio
import socket

import pytest

from agentrig.channel import Channel
from agentrig.channel.breaker import THRESHOLD, EndpointDown
from agentrig.errors import RetriesExhausted
from agentrig.testing.fake_endpoint import FakeEndpoint, Fault

from .conftest import KEY, make_config

MSG = [{"role": "user", "content": "hello"}]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def breaker_of(ch: Channel):
    (ep,) = ch._endpoints.values()
    return ep.breaker


async def test_an_outage_is_ridden_out_and_every_held_call_resumes(env):
    port = free_port()
    fake = FakeEndpoint(api_key=KEY, port=port)
    await fake.start()
    async with Channel(make_config(fake.base_url, max_attempts=2, outage_wait_s=60), env=env) as ch:
        await ch.complete("agent", MSG)  # the endpoint has answered: the breaker is armed
        await fake.stop()
        calls = [asyncio.create_task(ch.complete("agent", MSG)) for _ in range(6)]
        await asyncio.sleep(1.5)  # the calls fail on the closed port, open the breaker and wait
        b = breaker_of(ch)
        assert b.state == "open" and b.current() is not None and not any(c.done() for c in calls)
        back = FakeEndpoint(api_key=KEY, port=port)  # the same port: the server restarted
        await back.start()
        try:
            done = await asyncio.gather(*calls)
        finally:
            await back.stop()
    assert all(c.message.content == "OK" for c in done)
    for c in done:  # failed connections, then the answer; more attempts than max_attempts, none fatal
        assert [a.cause for a in c.attempts][-1] is None
        assert {a.cause for a in c.attempts[:-1]} == {"connection"}
    assert sum(a.wait_s for c in done for a in c.attempts) > 1.0  # the time the calls were held is recorded (a lower bound: not a time bound)
    (outage,) = b.history
    assert outage.resumed is True and outage.calls_held == 6 and outage.probes >= 1
    assert outage.ended_at is not None and outage.started_at <= outage.ended_at
    assert "connection refused" in outage.last_fault
    assert b.state == "closed" and b.current() is None


async def test_an_outage_longer_than_outage_wait_s_fails_every_waiting_call_with_its_diagnosis(env):
    port = free_port()
    fake = FakeEndpoint(api_key=KEY, port=port)
    await fake.start()
    async with Channel(make_config(fake.base_url, max_attempts=2, outage_wait_s=1.5), env=env) as ch:
        await ch.complete("agent", MSG)
        await fake.stop()
        results = await asyncio.gather(*(ch.complete("agent", MSG) for _ in range(3)), return_exceptions=True)
        assert all(isinstance(r, EndpointDown) for r in results), results
        err = results[0]
        assert err.code == "ENDPOINT_DOWN" and "outage_wait_s=1.5s" in err.diagnosis.message
        assert f"connection refused at 127.0.0.1:{port}" in err.diagnosis.message
        assert "rerun the same command" in err.diagnosis.fix
        assert err.attempts and {a.cause for a in err.attempts} == {"connection"}
        (outage,) = breaker_of(ch).history
        assert outage.resumed is False and outage.calls_held == 3
        with pytest.raises(EndpointDown):  # a later call is refused at once: the endpoint is down
            await ch.complete("agent", MSG)
        assert ch.usage.summary()["agent"].failed == 4


async def test_with_outage_wait_s_0_a_down_endpoint_fails_calls_as_before(env):
    port = free_port()
    fake = FakeEndpoint(api_key=KEY, port=port)
    await fake.start()
    async with Channel(make_config(fake.base_url, max_attempts=2, outage_wait_s=0), env=env) as ch:
        await ch.complete("agent", MSG)
        await fake.stop()
        with pytest.raises(RetriesExhausted) as exc:
            await ch.complete("agent", MSG)
        assert exc.value.code == "UNREACHABLE" and len(exc.value.attempts) == 2
        assert breaker_of(ch).history == []


async def test_a_never_answered_endpoint_is_not_waited_for(env):
    port = free_port()  # nothing listens: a wrong port, not an outage
    async with Channel(make_config(f"http://127.0.0.1:{port}/v1", max_attempts=THRESHOLD + 2), env=env) as ch:
        with pytest.raises(RetriesExhausted) as exc:
            await ch.complete("agent", MSG)
        assert exc.value.code == "UNREACHABLE" and len(exc.value.attempts) == THRESHOLD + 2
        assert breaker_of(ch).history == [] and not breaker_of(ch).armed


async def test_a_run_of_503s_opens_the_breaker_and_the_probe_closes_it(fake, env):
    async with Channel(make_config(fake.base_url, max_attempts=2, outage_wait_s=60), env=env) as ch:
        await ch.complete("agent", MSG)
        fake.push(*[Fault("server_error", status=503)] * 8)  # more than 4 calls × max_attempts
        done = await asyncio.gather(*(ch.complete("agent", MSG) for _ in range(4)))
        (outage,) = breaker_of(ch).history
    assert all(c.message.content == "OK" for c in done) and outage.resumed is True
    assert sum(a.status == 503 for c in done for a in c.attempts) == 8  # every fault was met by a call
    assert outage.calls_held >= 1 and "server_error 503" in outage.last_fault


async def test_plain_500s_are_a_server_fault_not_an_outage(fake, env):
    # a server that answers 500 to this request (a bug, a missing flag) is up: no waiting for it
    async with Channel(make_config(fake.base_url, max_attempts=THRESHOLD + 1, outage_wait_s=60), env=env) as ch:
        await ch.complete("agent", MSG)
        fake.push(*[Fault("server_error", status=500)] * (THRESHOLD + 1))
        with pytest.raises(RetriesExhausted) as exc:
            await ch.complete("agent", MSG)
        assert exc.value.code == "SERVER_ERROR" and breaker_of(ch).history == []
