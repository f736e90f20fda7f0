"""The cluster-wide circuit breaker without a cluster (run/ray/breaker.py): the breaker actor's
state machine as a plain object, and two "workers" (two channels with their own endpoints and
breakers, as two Ray workers have) tied to it, against a real local endpoint that goes down."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace

import pytest

from agentrig.channel import Channel
from agentrig.channel.breaker import EndpointDown
from agentrig.run.ray.breaker import BreakerLink, ClusterOutages, EndpointBreaker
from agentrig.testing.fake_endpoint import FakeEndpoint

from tests.channel.conftest import make_config
from tests.support import KEY, KEY_ENV

MSG = [{"role": "user", "content": "hello"}]


class Local:
    """A handle to a plain object on this event loop, called as Ray calls an actor:
    ``handle.method.remote(*args)`` starts the method and gives something to await (or drop)."""

    def __init__(self, obj):
        self.obj = obj
        self.running: set[asyncio.Task] = set()

    def __getattr__(self, name):
        method = getattr(self.obj, name)

        def remote(*args):
            task = asyncio.ensure_future(method(*args))
            self.running.add(task)
            task.add_done_callback(self.running.discard)
            return task

        return SimpleNamespace(remote=remote)


async def settle() -> None:
    for _ in range(5):
        await asyncio.sleep(0)


# ----------------------------------------------------------------------- the actor on its own


async def test_an_open_is_broadcast_one_probe_at_a_time_and_the_answer_closes_it_everywhere():
    actor = EndpointBreaker()
    first = await actor.watch(-1)  # a newcomer learns the state at once
    assert first["state"] == "closed" and first["epoch"] == 0
    w2_watch = asyncio.create_task(actor.watch(0))
    await settle()
    assert not w2_watch.done()  # no change, no answer
    await actor.opened("w1", 0, "http://gw/v1", 0.2, "connection: refused", 60.0)
    snap = await asyncio.wait_for(w2_watch, 5)  # the other worker hears the open at once
    # the outage counts from the worker's first failed attempt, 0.2 s before it told (a lower
    # bound that a slow machine only makes larger: not a time limit)
    assert snap["state"] == "open" and snap["epoch"] == 1 and snap["age_s"] >= 0.2
    assert snap["last_fault"] == "connection: refused"
    await actor.opened("w2", 1, "http://gw/v1", 0.1, "connection: refused", 60.0)  # a second opener
    assert actor.epoch == 1 and actor.outage is not None and actor.outage.probes == 0

    a = asyncio.create_task(actor.probe("w1", 11))
    b = asyncio.create_task(actor.probe("w2", 21))
    done, _ = await asyncio.wait({a, b}, timeout=5, return_when=asyncio.FIRST_COMPLETED)
    assert len(done) == 1 and done.pop().result() is True  # one prober across the cluster
    prober, waiter = (a, b) if a.done() else (b, a)
    holder, call = actor.prober
    await asyncio.sleep(0.3)
    assert not waiter.done()  # nobody else probes while the probe is out
    await actor.probe_failed(holder, call, "connection: reset")
    assert await asyncio.wait_for(waiter, 5) is True  # after the doubled pause, the other one
    assert actor.pause == 1.0 and actor.outage.probes == 2 and actor.outage.last_fault == "connection: reset"

    third = asyncio.create_task(actor.probe(holder, call + 1))
    watching = asyncio.create_task(actor.watch(1))
    await actor.held("w1", 1, 3)
    await actor.held("w2", 0, 4)  # w2 opened on its own, before it saw epoch 1: the same outage
    await actor.answered(*actor.prober[:1], 1)
    assert await asyncio.wait_for(third, 5) is False  # the outage is over: no probe
    closed = await asyncio.wait_for(watching, 5)
    assert closed["state"] == "closed" and closed["epoch"] == 2
    (outage,) = await actor.outages()
    assert outage["resumed"] is True and outage["probes"] == 2 and outage["calls_held"] == 7


async def test_stale_words_are_ignored_and_a_lost_or_silent_prober_does_not_block_probing():
    actor = EndpointBreaker(lease_s=0.5)
    await actor.opened("w1", 0, "http://gw/v1", 0.6, "timeout: no answer", 60.0)  # first probe due at once
    assert await actor.probe("w1", 1) is True
    waiting = asyncio.create_task(actor.probe("w2", 1))
    await settle()
    assert not waiting.done()
    assert await actor.release_all("w1") is True  # the prober's worker died (the driver's worker_lost path)
    assert await asyncio.wait_for(waiting, 5) is True
    assert await actor.probe("w1", 2) is False  # a dead incarnation probes no more
    late = asyncio.create_task(actor.probe("w3", 1))
    assert await asyncio.wait_for(late, 5) is True  # w2 never reported: its lease ran out
    assert actor.prober == ("w3", 1) and actor.outage.probes == 3
    await actor.answered("w9", -5)  # a word from before the outage (the worker had not seen it open)
    assert actor.state == "open"
    cancelled = asyncio.create_task(actor.probe("w4", 7))
    await settle()
    await actor.released("w4", 7)  # its call was cancelled while it waited for its turn
    assert await asyncio.wait_for(cancelled, 5) is False
    await actor.answered("w3", 1)
    assert actor.state == "closed" and actor.epoch == 2
    await actor.opened("w5", 1, "http://gw/v1", 0.0, "x", 60.0)  # w5 had not seen the close: stale
    assert actor.state == "closed" and actor.epoch == 2


async def test_the_cluster_gives_up_after_outage_wait_s_and_says_so():
    actor = EndpointBreaker()
    await actor.opened("w1", 0, "http://gw/v1", 0.0, "connection: refused", 1.0)
    watching = asyncio.create_task(actor.watch(1))
    assert await asyncio.wait_for(actor.probe("w1", 1), 5) is True
    await actor.probe_failed("w1", 1, "connection: refused")
    assert await asyncio.wait_for(actor.probe("w2", 1), 5) is False  # outage_wait_s ran out while it waited
    down = await asyncio.wait_for(watching, 5)
    assert down["state"] == "down" and down["epoch"] == 2
    (outage,) = await actor.outages()
    assert outage["resumed"] is False and outage["ended_at"] is not None


# ------------------------------------------------------- two workers' channels and the actor


def worker_channel(base_url: str, handle: Local, holder: str, links: list, **channel) -> Channel:
    """A channel as a Ray worker builds it: its own endpoints and breaker, tied to the actor."""

    def hook(ep):
        links.append(BreakerLink(ep.breaker, handle, holder))
        return asyncio.Semaphore(ep.limit)

    channel.setdefault("max_attempts", 2)
    config = make_config(base_url, **channel)
    return Channel(config, env={KEY_ENV: KEY}, slots=hook)


def breaker_of(ch: Channel):
    (ep,) = ch._endpoints.values()
    return ep.breaker


async def wait_until(cond, timeout: float = 20.0) -> None:
    loop = asyncio.get_running_loop()
    end = loop.time() + timeout
    while not cond():
        assert loop.time() < end, "the condition never held"
        await asyncio.sleep(0.02)


async def test_one_workers_outage_holds_the_other_one_probe_at_a_time_and_all_resume():
    actor = EndpointBreaker()
    handle, links = Local(actor), []
    fake = FakeEndpoint(api_key=KEY)
    await fake.start()
    driver = ClusterOutages({"ep": handle})
    driver.REFRESH_S = 0.1
    driver.start()
    w1 = worker_channel(fake.base_url, handle, "w1", links, outage_wait_s=60)
    w2 = worker_channel(fake.base_url, handle, "w2", links, outage_wait_s=60)
    try:
        await w1.complete("agent", MSG)
        await w2.complete("agent", MSG)  # both armed
        # the endpoint drops every connection, after holding it a little: attempts take time there
        fake.push(*[{"kind": "disconnect", "delay_s": 0.2}] * 1000)
        first = [asyncio.create_task(w1.complete("agent", MSG)) for _ in range(6)]
        b1, b2 = breaker_of(w1), breaker_of(w2)
        await wait_until(lambda: b1.state == "open" and b2.state == "open")  # w2 never failed: it heard
        assert b2.current() is not None and b2.current().started_at == actor.outage.started_at
        later = [asyncio.create_task(w2.complete("agent", MSG)) for _ in range(4)]
        await wait_until(lambda: fake.in_flight == 0)  # the attempts that opened it are over
        fake.max_in_flight = fake.in_flight
        sent = fake.chat_count
        await wait_until(lambda: actor.outage is not None and actor.outage.probes >= 3)  # 0.5 s, 1 s, 2 s
        shown = driver.ongoing()  # what the driver's progress display shows
        assert shown is not None and shown.calls_held == 10 and shown.probes >= 2
        assert fake.max_in_flight == 1  # every probe alone: one request at a time, from either worker
        assert fake.chat_count - sent <= actor.outage.probes  # nothing but probes went out
        assert not any(c.done() for c in first + later)
        fake.reset()  # the endpoint answers again: the next probe closes the breaker everywhere
        done = await asyncio.wait_for(asyncio.gather(*first, *later), 30)
        assert all(c.message.content == "OK" for c in done)
        # w2's calls never failed before they waited: their only failed attempts were probes
        w2_failed = [a.cause for c in done[6:] for a in c.attempts[:-1]]
        assert set(w2_failed) <= {"connection"} and len(w2_failed) < actor.history[-1].probes
        assert all(c.attempts[-1].cause is None for c in done)
        assert b1.state == b2.state == "closed" and actor.state == "closed"
        # a trial of w2 knows its calls were held (OUTAGE verdicts): the outage lasted through
        # three probe pauses (0.5 + 1 s at least) — a lower bound, not a time limit
        assert w2.outage_seconds(60) > 1.0
        (outage,) = await driver.collect()
        # at least the three seen before the reset (the third may itself be the one answered,
        # when the reset came while it was in flight)
        assert outage.resumed is True and outage.calls_held == 10 and outage.probes >= 3
        assert "connection" in outage.last_fault
        await wait_until(lambda: driver.ongoing() is None)
    finally:
        driver.stop()
        for link in links:
            link.close()
        await w1.aclose()
        await w2.aclose()
        await fake.stop()


async def test_giving_up_happens_on_every_worker():
    actor = EndpointBreaker()
    handle, links = Local(actor), []
    fake = FakeEndpoint(api_key=KEY)
    await fake.start()
    # enough attempts that the 503s open the breaker before any call runs out of them
    w1 = worker_channel(fake.base_url, handle, "w1", links, outage_wait_s=1.5, max_attempts=8)
    w2 = worker_channel(fake.base_url, handle, "w2", links, outage_wait_s=1.5, max_attempts=8)
    try:
        await w1.complete("agent", MSG)
        await w2.complete("agent", MSG)
        fake.push(*[{"kind": "server_error", "status": 503}] * 1000)
        first = [asyncio.create_task(w1.complete("agent", MSG)) for _ in range(5)]
        await wait_until(lambda: breaker_of(w2).state == "open")
        later = [asyncio.create_task(w2.complete("agent", MSG)) for _ in range(2)]
        results = await asyncio.wait_for(asyncio.gather(*first, *later, return_exceptions=True), 30)
        assert all(isinstance(r, EndpointDown) for r in results), results
        assert all(r.diagnosis.code == "ENDPOINT_DOWN" for r in results)
        assert breaker_of(w1).state == breaker_of(w2).state == actor.state == "down"
        (outage,) = await actor.outages()
        assert outage["resumed"] is False and outage["calls_held"] == 7
        with pytest.raises(EndpointDown):  # and any later call
            await w2.complete("agent", MSG)
    finally:
        for link in links:
            link.close()
        await w1.aclose()
        await w2.aclose()
        await fake.stop()
