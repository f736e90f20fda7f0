"""Workers' leases of an endpoint's cluster-wide slots (run/ray/slots.py), without a cluster: the
slots actor is the plain class, and a handle turns ``method.remote(...)`` into a task on the same
event loop, as Ray's asynchronous actor calls are (sent now, answered later, in order)."""

from __future__ import annotations

import asyncio
import random

from agentrig.run.ray.slots import EndpointSlots, LeasedSlots


class _Method:
    def __init__(self, handle: "Handle", name: str):
        self.handle, self.name = handle, name

    def remote(self, *args):
        self.handle.calls[self.name] = self.handle.calls.get(self.name, 0) + 1
        return asyncio.ensure_future(getattr(self.handle.actor, self.name)(*args))


class Handle:
    def __init__(self, actor: EndpointSlots):
        self.actor, self.calls = actor, {}

    def __getattr__(self, name: str) -> _Method:
        return _Method(self, name)


class Workers:
    """Several workers' leases of one endpoint, with the number of calls in flight across all."""

    def __init__(self, limit: int, names: str):
        self.actor = EndpointSlots(limit)
        self.handle = Handle(self.actor)
        self.slots = {n: LeasedSlots(self.handle, n) for n in names}
        self.in_flight = self.peak = 0
        self.order: list[str] = []

    async def call(self, worker: str, seconds: float = 0.005) -> None:
        async with self.slots[worker]:
            self.in_flight += 1
            self.peak = max(self.peak, self.in_flight)
            self.order.append(worker)
            await asyncio.sleep(seconds)
            self.in_flight -= 1

    async def calls(self, worker: str, n: int, seconds: float = 0.005) -> None:
        for _ in range(n):
            await self.call(worker, seconds)

    def leased(self) -> int:
        return self.actor.limit - self.actor.free


async def until(condition, what: str) -> None:
    """Let the event loop run until ``condition()`` holds (the actor's answers land)."""
    for _ in range(10_000):
        if condition():
            return
        await asyncio.sleep(0.001)
    raise AssertionError(f"never: {what}")


async def test_a_worker_reuses_its_slots_without_asking_the_actor_per_call():
    w = Workers(4, "a")
    await asyncio.gather(*(w.calls("a", 25, 0.001) for _ in range(4)))  # 100 calls, 4 at a time
    assert w.peak == 4
    assert w.handle.calls.get("lease", 0) <= 4  # the first calls lease; the 96 others reuse
    assert w.handle.calls.get("give_back", 0) == 0  # nobody else waits: nothing goes back
    assert w.slots["a"].idle == 4 and w.leased() == 4 and w.slots["a"].in_use == 0


async def test_a_lease_takes_what_is_waiting_at_once_and_never_more_than_the_limit():
    w = Workers(8, "a")
    await asyncio.gather(*(w.call("a") for _ in range(5)))
    assert w.handle.calls["lease"] <= 2 and w.leased() == 5  # one or two leases for five calls
    await asyncio.gather(*(w.call("a") for _ in range(20)))
    assert w.peak == 8 and w.leased() == 8


async def test_a_waiting_worker_gets_slots_from_a_busy_one_and_the_bound_holds():
    w = Workers(3, "ab")
    busy = asyncio.gather(*(w.calls("a", 40) for _ in range(6)))  # "a" alone could use every slot
    await until(lambda: w.slots["a"].in_use == 3, '"a" uses every slot')
    assert w.leased() == 3
    t = asyncio.ensure_future(w.calls("b", 5))
    await asyncio.wait_for(t, timeout=30)  # "b" is served while "a" still has calls waiting
    assert not busy.done()
    await busy
    assert w.peak == 3  # never more than the limit in flight, across both workers
    assert w.order.count("b") == 5 and w.order.index("b") < len(w.order) - 5
    # contention over: the slots settle where they are, and none is lost
    assert w.leased() == w.slots["a"].idle + w.slots["b"].idle
    assert w.actor.free + w.leased() == 3


async def test_an_idle_worker_gives_its_kept_slots_to_one_that_waits():
    w = Workers(2, "ab")
    await asyncio.gather(w.call("a"), w.call("a"))
    assert w.slots["a"].idle == 2 and w.actor.free == 0  # "a" keeps both for its next calls
    await asyncio.wait_for(asyncio.gather(w.call("b"), w.call("b")), timeout=30)  # "a" is told, gives them back
    assert w.slots["a"].idle == 0 and w.slots["b"].idle == 2


async def test_a_cancelled_call_loses_no_slot_and_a_lost_worker_gives_back_its_lease():
    w = Workers(2, "ab")
    hold = asyncio.gather(w.call("a", 0.2), w.call("a", 0.2))
    await until(lambda: w.slots["a"].in_use == 2, '"a" holds both slots')
    waiting = asyncio.ensure_future(w.call("b"))
    await until(lambda: len(w.actor._waiting) == 1, '"b" waits at the actor')
    waiting.cancel()
    await asyncio.gather(waiting, return_exceptions=True)
    await hold
    # the give-backs and the late lease of "b" land: every slot is free or kept, none lost
    await until(lambda: w.actor.free + w.slots["a"].idle + w.slots["b"].idle == 2, "no slot lost")
    assert w.slots["a"].in_use == w.slots["b"].in_use == 0
    held_by_a = w.actor.held.get("a", 0)
    assert await w.actor.release_all("a") == held_by_a  # "a" died: what it kept is free again
    assert w.actor.free == 2 - w.actor.held.get("b", 0)


async def test_random_load_over_three_workers_never_exceeds_the_limit_and_every_call_ends():
    rng = random.Random(7)
    w = Workers(5, "abc")
    jobs = [w.calls(rng.choice("abc"), rng.randint(1, 8), rng.choice((0.0, 0.001, 0.003)))
            for _ in range(40)]
    await asyncio.wait_for(asyncio.gather(*jobs), timeout=60)
    assert 1 <= w.peak <= 5
    assert sum(s.in_use for s in w.slots.values()) == 0
    assert w.actor.free + sum(s.idle for s in w.slots.values()) == 5
    assert w.actor.held.total() == sum(s.idle for s in w.slots.values())
