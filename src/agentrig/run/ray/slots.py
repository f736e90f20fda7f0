"""Endpoint bounds that hold across a Ray cluster: one ``EndpointSlots`` actor per endpoint.

A channel bounds the requests in flight to an endpoint (base URL + key) by ``max_concurrency``
with a semaphore of its process. On a cluster every worker has its own channel, so the driver
makes one slots actor per endpoint of the run and every worker's channel takes its slots from it
(``Channel(slots=…)``, the hook in channel/client.py): ten workers never send a gateway more
requests at once than one machine would.

A worker *leases* slots (``LeasedSlots``): it asks the actor for as many as it has calls waiting,
and a slot its call is done with stays with the worker for its next call — no round trip to the
actor per model call. The sum of every worker's leases never exceeds the limit. Fairness: the
actor tells each worker (an edge-triggered long poll, ``watch``) when *another* worker is waiting;
while that lasts, the worker gives every slot back as soon as it is free, and the actor hands it
on in the order the workers asked. Without contention there is no traffic at all.

Slots are held per *holder* (one token per worker incarnation): when a worker dies holding
slots, the driver gives them back with ``release_all(token)``.
"""

from __future__ import annotations

import asyncio
import hashlib
from collections import Counter, deque
from typing import Any


class EndpointSlots:
    """The slots of one endpoint (a Ray async actor: every method runs on its event loop)."""

    def __init__(self, limit: int):
        self.limit = limit
        self.free = limit
        self.held: Counter[str] = Counter()
        self.peak = 0
        self.granted = 0
        self.leases = 0
        self._waiting: dict[asyncio.Future, str] = {}  # the requests waiting, in arrival order → whose
        self._waiting_by: Counter[str] = Counter()
        self._watchers: list[tuple[str, bool, asyncio.Future]] = []

    def _pressure(self, holder: str) -> bool:
        """Is a holder other than ``holder`` waiting for a slot?"""
        return len(self._waiting) - self._waiting_by[holder] > 0

    def _not_waiting(self, fut: asyncio.Future) -> None:
        holder = self._waiting.pop(fut, None)
        if holder is not None:
            self._waiting_by[holder] -= 1
            if self._waiting_by[holder] <= 0:
                del self._waiting_by[holder]
            self._notify()

    def _notify(self) -> None:
        if not self._watchers:
            return
        keep = []
        for holder, known, fut in self._watchers:
            if fut.done():
                continue
            now = self._pressure(holder)
            if now != known:
                fut.set_result(now)
            else:
                keep.append((holder, known, fut))
        self._watchers = keep

    def _grant(self, holder: str) -> None:
        self.held[holder] += 1
        self.granted += 1
        self.peak = max(self.peak, self.limit - self.free)

    async def acquire(self, holder: str) -> None:
        if self.free > 0 and not self._waiting:
            self.free -= 1
            self._grant(holder)
            return
        fut = asyncio.get_running_loop().create_future()
        self._waiting[fut] = holder
        self._waiting_by[holder] += 1
        self._notify()
        try:
            await fut
        except asyncio.CancelledError:
            if fut.done() and not fut.cancelled():  # granted just before the cancellation: give it back
                self._give_back(holder, 1)
            else:
                self._not_waiting(fut)
            raise

    async def lease(self, holder: str, want: int) -> int:
        """Wait for one slot (in turn with every other waiter), then take up to ``want - 1`` more
        that are free with nobody waiting for them; the number granted."""
        await self.acquire(holder)
        self.leases += 1
        extra = 0 if self._waiting else max(0, min(want - 1, self.free))
        for _ in range(extra):
            self.free -= 1
            self._grant(holder)
        return 1 + extra

    async def give_back(self, holder: str, n: int) -> None:
        self._give_back(holder, n)

    async def watch(self, holder: str, known: bool) -> bool:
        """Answers once "another holder is waiting" differs from ``known`` (a long poll)."""
        now = self._pressure(holder)
        if now != known:
            return now
        fut = asyncio.get_running_loop().create_future()
        self._watchers.append((holder, known, fut))
        return await fut

    def _give_back(self, holder: str, n: int) -> None:
        n = min(n, self.held[holder])
        self.held[holder] -= n
        if self.held[holder] <= 0:
            del self.held[holder]
        for _ in range(n):
            while self._waiting:  # hand the slot straight to the first waiter
                fut, who = next(iter(self._waiting.items()))
                self._not_waiting(fut)
                if not fut.done():
                    self._grant(who)
                    fut.set_result(None)
                    break
            else:
                self.free += 1

    async def release(self, holder: str) -> None:
        self._give_back(holder, 1)

    async def release_all(self, holder: str) -> int:
        """Give back every slot a (lost) worker incarnation held; drop its waiting requests."""
        n = self.held.get(holder, 0)
        for fut, who in list(self._waiting.items()):
            if who == holder:
                self._not_waiting(fut)
                fut.cancel()
        for who, _, fut in self._watchers:
            if who == holder and not fut.done():
                fut.cancel()
        self._give_back(holder, n)
        return n

    async def stats(self) -> dict[str, int]:
        """``in_use``: slots leased to workers (busy or kept for their next call)."""
        return {"limit": self.limit, "peak": self.peak, "in_use": self.limit - self.free,
                "waiting": len(self._waiting), "granted": self.granted, "leases": self.leases}


class LeasedSlots:
    """One worker's share of an endpoint's cluster-wide slots: what its channels use in place of
    the endpoint's semaphore (``async with slots:``). Every method runs on the worker's event loop."""

    def __init__(self, handle: Any, holder: str):
        self.handle, self.holder = handle, holder
        self.idle = 0  # leased and free: kept for this worker's next call
        self.in_use = 0
        self.waiters: deque[asyncio.Future] = deque()
        self.pressure = False  # another worker waits: free slots go back to the actor at once
        self._fetch: asyncio.Task | None = None
        self._watch: asyncio.Task | None = None

    async def __aenter__(self) -> None:
        if self.idle and not self.waiters:
            self.idle -= 1
            self.in_use += 1
            return
        if self._watch is None:
            self._watch = asyncio.ensure_future(self._watch_pressure())
        fut = asyncio.get_running_loop().create_future()
        self.waiters.append(fut)
        if self._fetch is None or self._fetch.done():
            self._fetch = asyncio.ensure_future(self._lease())
        try:
            await fut
        except asyncio.CancelledError:
            if fut.done() and not fut.cancelled():  # handed a slot just as it was cancelled
                self.in_use -= 1
                self._free(1)
            else:
                self.waiters = deque(f for f in self.waiters if f is not fut)
            raise

    async def __aexit__(self, *exc: object) -> None:
        self.in_use -= 1
        self._free(1)

    def _hand_out(self, n: int) -> int:
        """Give up to ``n`` slots to this worker's waiting calls; how many were left over."""
        while n and self.waiters:
            fut = self.waiters.popleft()
            if not fut.done():
                self.in_use += 1
                fut.set_result(None)
                n -= 1
        return n

    def _free(self, n: int) -> None:
        if self.pressure:  # another worker waits: the actor hands the slot on, in turn
            self.handle.give_back.remote(self.holder, n)
            return
        self.idle += self._hand_out(n)

    async def _lease(self) -> None:
        try:
            while want := sum(1 for f in self.waiters if not f.done()):
                n = await self.handle.lease.remote(self.holder, want)
                if left := self._hand_out(n):
                    self._free(left)
        except Exception as e:  # the actor is gone: the calls waiting here fail with its error
            for fut in self.waiters:
                if not fut.done():
                    fut.set_exception(e)
            self.waiters.clear()

    async def _watch_pressure(self) -> None:
        known = False
        try:
            while True:
                known = await self.handle.watch.remote(self.holder, known)
                self.pressure = known
                if known and self.idle:
                    n, self.idle = self.idle, 0
                    self.handle.give_back.remote(self.holder, n)
        except Exception:  # noqa: BLE001 - the actor is gone (the run is over): nothing to watch
            self.pressure = False


def endpoint_id(base_url: str, fingerprint: str) -> str:
    """A short name for an endpoint (its URL and key fingerprint, hashed): the slots table's key."""
    return hashlib.blake2b(f"{base_url}\x1f{fingerprint}".encode(), digest_size=8).hexdigest()


async def endpoint_limits(r: Any) -> dict[str, int]:
    """Every endpoint the run's arms call, with its bound, computed by the channel itself (the
    smallest ``max_concurrency`` of the roles that share it). An endpoint whose key is missing is
    left out: its first call fails on the worker as it would locally (KEY_MISSING)."""
    from agentrig.channel.client import Channel
    from agentrig.errors import AgentrigError

    out: dict[str, int] = {}
    endpoints: dict = {}
    channels = [Channel(arm.channel, endpoints=endpoints) for arm in r.arms]
    for arm, ch in zip(r.arms, channels):
        for role in arm.roles_needed:
            try:
                ep = ch.endpoint(ch.role(role))
            except AgentrigError:
                continue
            out[endpoint_id(ep.base_url, ep.fingerprint)] = ep.limit
    await channels[0].aclose()  # the endpoints dict is shared: this closes every client made here
    return out


def slots_hook(handles: dict[str, Any], holder: str):
    """The ``Channel(slots=…)`` hook of a worker: the endpoint's slots actor, or its own semaphore
    for an endpoint the driver did not know (a missing key: the call fails before it is sent)."""

    leased: dict[str, LeasedSlots] = {}  # one share per endpoint, whichever arm's channel calls it

    def hook(ep: Any) -> Any:
        eid = endpoint_id(ep.base_url, ep.fingerprint)
        handle = handles.get(eid)
        if handle is None:
            return asyncio.Semaphore(ep.limit)
        if eid not in leased:
            leased[eid] = LeasedSlots(handle, holder)
        return leased[eid]

    return hook
